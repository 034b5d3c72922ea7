#!/usr/bin/env bash
# A/B: tensor-core decode as committed (form 0), with the halved softmax (1), and at D 64 two blocks an SM (2).
set -u
B=bundle-main; O=${OUT:-/tmp/c8}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
for f in 2 0; do
  RIG_DECODE_TC_FORM=$f RIG_TEST_FILTER='test_attention_decode*' timeout 120 $B/run.sh tests/test_cuda_ops > $O/logs/test-decode-form$f.txt 2>&1
  say "== test_attention_decode* form $f rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|FAIL" $O/logs/test-decode-form$f.txt | tail -3 | tee -a $S
  grep -E "tensor cores|TC=1" $O/logs/test-decode-form$f.txt | grep nmse > $O/logs/tc-nmse-form$f.txt
done
say "TC cases: $(wc -l < $O/logs/tc-nmse-form2.txt); lines that differ between form 2 and 0: $(diff $O/logs/tc-nmse-form2.txt $O/logs/tc-nmse-form0.txt | grep -c '^<')"
for round in 1 2; do for f in 0 1 2; do
  RIG_DECODE_TC_FORM=$f timeout 90 $B/run.sh bin/rig bench attention decode --model llama-3.2-1b --backend cuda --repeats 5 --out none > $O/logs/bench-llama-f$f-r$round.txt 2>&1
  say "-- round $round llama form $f rc=$? ($SECONDS s)"; grep -E "^ +(1|8|64|256) +(512|2048) |^  decode  " $O/logs/bench-llama-f$f-r$round.txt | tee -a $S
done; done
for f in 0 2; do
  RIG_DECODE_TC_FORM=$f timeout 90 $B/run.sh bin/rig bench offline --model llama-3.2-1b --overlap on --backend cuda --out none > $O/logs/offline-llama-f$f.txt 2>&1
  say "-- offline llama form $f rc=$? ($SECONDS s)"; grep -E "of its floor" $O/logs/offline-llama-f$f.txt | tee -a $S
done
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
