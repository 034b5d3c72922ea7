#!/usr/bin/env bash
# Decode attention on the wgmma kernel (RIG_DECODE_TC) against the register path.
set -u
B=bundle-main; O=${OUT:-/tmp/tc1}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
RIG_TEST_FILTER='test_attention_*' timeout 200 $B/run.sh tests/test_cuda_ops > $O/logs/test.txt 2>&1
say "== test_cuda_ops test_attention_* rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|OK \]|FAIL|nmse|differs" $O/logs/test.txt | tail -20 | tee -a $S
for m in qwen3-8b llama-3.2-1b qwen3-32b; do for t in 0 1; do
  RIG_DECODE_TC=$t timeout 60 $B/run.sh bin/rig bench attention decode --model $m --backend cuda --repeats 5 --out none > $O/logs/bench-$m-tc$t.txt 2>&1
  say "-- $m TC=$t rc=$? ($SECONDS s)"; grep -E "^ +(1|8|64|256) +(512|2048) |^  decode |skipped" $O/logs/bench-$m-tc$t.txt | tee -a $S
done; done
for t in 0 1 auto; do
  if [ $t = auto ]; then unset RIG_DECODE_TC; else export RIG_DECODE_TC=$t; fi
  timeout 90 $B/run.sh bin/rig profile --backend cuda --out $O/profile-tc$t.h5 > $O/logs/profile-tc$t.txt 2>&1
  say "-- profile TC=$t rc=$? ($SECONDS s)"; tail -2 $O/logs/profile-tc$t.txt | tee -a $S
done
unset RIG_DECODE_TC
for t in 0 1; do
  RIG_DECODE_TC=$t timeout 60 $B/run.sh bin/rig bench offline --model qwen3-8b --overlap on --backend cuda --out none > $O/logs/offline-tc$t.txt 2>&1
  say "-- offline qwen3-8b TC=$t rc=$? ($SECONDS s)"; grep -E "of its floor" $O/logs/offline-tc$t.txt | tee -a $S
done
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
