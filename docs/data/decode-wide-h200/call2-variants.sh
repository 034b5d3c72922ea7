#!/usr/bin/env bash
# The RIG_DECODE_WIDE values 0-3 here were the four layouts of that call's bundle (0 narrow, 1 keys x 2,
# 2 heads x 2, 3 both); since then 0 is the narrow layout and 1 (the default) is what 3 was.
# one device call: decode attention variants for G >= 4 (RIG_DECODE_WIDE 0..3)
set -u
B=bundle-main; O=${OUT:-/tmp/wide}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader)"
say "$($B/run.sh bin/rig --version | head -1)"
for w in 1 3; do
  RIG_DECODE_WIDE=$w timeout 150 $B/run.sh tests/test_cuda_ops > $O/logs/test-w$w.txt 2>&1
  say "== test_cuda_ops WIDE=$w rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|\[  FAILED" $O/logs/test-w$w.txt | head -8 | tee -a $S
done
for m in qwen3-8b llama-3.2-1b; do for w in 0 1 2 3; do
  RIG_DECODE_WIDE=$w timeout 60 $B/run.sh bin/rig bench attention decode --model $m --backend cuda --repeats 5 --out none > $O/logs/bench-$m-w$w.txt 2>&1
  say "-- $m WIDE=$w rc=$? ($SECONDS s)"
  grep -E "^ +(1|8|64|256) +(512|2048) |^  decode " $O/logs/bench-$m-w$w.txt | tee -a $S
done; done
for w in 0 1 2 3; do
  RIG_DECODE_WIDE=$w timeout 60 $B/run.sh bin/rig bench attention --model qwen3-8b --backend cuda --repeats 10 --out none > $O/logs/att2-w$w.txt 2>&1
  say "-- attention again qwen3-8b WIDE=$w rc=$? ($SECONDS s)"; grep -E "^  decode " $O/logs/att2-w$w.txt | tee -a $S
done
for w in 1 3; do
  RIG_DECODE_WIDE=$w timeout 60 $B/run.sh bin/rig profile --backend cuda --out $O/h200-w$w.h5 > $O/logs/profile-w$w.txt 2>&1
  say "== profile WIDE=$w rc=$? ($SECONDS s)"
done
for w in 0 3 1; do
  RIG_DECODE_WIDE=$w timeout 90 $B/run.sh bin/rig bench offline --model qwen3-8b --overlap on --backend cuda --out none > $O/logs/offline-w$w.txt 2>&1
  say "-- offline qwen3-8b WIDE=$w rc=$? ($SECONDS s)"; grep -E "output tok/s|of its floor" $O/logs/offline-w$w.txt | tee -a $S
done
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
