#!/usr/bin/env bash
# A/B: tensor-core decode with the softmax over rows 0-7 only (RIG_DECODE_TC_HALF 1) against both row halves (0).
set -u
B=bundle-main; O=${OUT:-/tmp/c5}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
for h in 1 0; do
  RIG_DECODE_TC_HALF=$h RIG_TEST_FILTER='test_attention_decode*' timeout 120 $B/run.sh tests/test_cuda_ops > $O/logs/test-decode-half$h.txt 2>&1
  say "== test_attention_decode* half $h rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|FAIL" $O/logs/test-decode-half$h.txt | tail -3 | tee -a $S
  grep -E "tensor cores|TC=1" $O/logs/test-decode-half$h.txt | grep nmse > $O/logs/tc-nmse-half$h.txt
done
say "TC cases: $(wc -l < $O/logs/tc-nmse-half1.txt); lines that differ between half 1 and 0: $(diff $O/logs/tc-nmse-half1.txt $O/logs/tc-nmse-half0.txt | grep -c '^<')"
for round in 1 2; do for m in llama-3.2-1b qwen3-8b qwen3-32b; do for h in 0 1; do
  RIG_DECODE_TC_HALF=$h timeout 90 $B/run.sh bin/rig bench attention decode --model $m --backend cuda --repeats 5 --out none > $O/logs/bench-$m-h$h-r$round.txt 2>&1
  say "-- round $round $m half $h rc=$? ($SECONDS s)"; grep -E "^ +(64|256) +(512|2048) |^  decode  " $O/logs/bench-$m-h$h-r$round.txt | tee -a $S
done; done; done
for m in llama-3.2-1b qwen3-8b; do for h in 0 1; do
  RIG_DECODE_TC_HALF=$h timeout 90 $B/run.sh bin/rig bench offline --model $m --overlap on --backend cuda --out none > $O/logs/offline-$m-h$h.txt 2>&1
  say "-- offline $m half $h rc=$? ($SECONDS s)"; grep -E "of its floor" $O/logs/offline-$m-h$h.txt | tee -a $S
done; done
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
