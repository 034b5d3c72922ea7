#!/usr/bin/env bash
set -u
B=bundle-main; O=${OUT:-/tmp/wide2}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"
RIG_TEST_FILTER=test_attention_decode timeout 100 $B/run.sh tests/test_cuda_ops > $O/logs/test.txt 2>&1
say "== test_cuda_ops test_attention_decode (wide default) rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|OK|FAIL" $O/logs/test.txt | tail -12 | tee -a $S
for m in qwen3-32b llama-3.2-1b; do for w in 0 1; do
  RIG_DECODE_WIDE=$w timeout 60 $B/run.sh bin/rig bench attention decode --model $m --backend cuda --repeats 5 --out none > $O/logs/bench-$m-w$w.txt 2>&1
  say "-- $m WIDE=$w rc=$? ($SECONDS s)"; grep -E "^ +(1|8|64|256) +(512|2048) |^  decode |skipped" $O/logs/bench-$m-w$w.txt | tee -a $S
done; done
for w in 0 1; do
  RIG_DECODE_WIDE=$w timeout 60 $B/run.sh bin/rig bench offline --model llama-3.2-1b --overlap on --backend cuda --out none > $O/logs/offline-w$w.txt 2>&1
  say "-- offline llama-3.2-1b WIDE=$w rc=$? ($SECONDS s)"; grep -E "of its floor" $O/logs/offline-w$w.txt | tee -a $S
done
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
