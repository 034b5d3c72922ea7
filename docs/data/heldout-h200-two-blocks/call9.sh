#!/usr/bin/env bash
# The final tree (two blocks an SM for D 64 decode on tensor cores): op table, Llama attention/decode, heldout.sh runs with dmon, GPU tests.
set -u
B=bundle-main; O=${OUT:-/tmp/c9}; W=/tmp/c9w; mkdir -p $O $W/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
timeout 120 $B/run.sh bin/rig profile --backend cuda --out $O/h200.h5 > $W/logs/profile.txt 2>&1
say "-- profile rc=$? ($SECONDS s)"; tail -1 $W/logs/profile.txt | tee -a $S
timeout 90 $B/run.sh bin/rig bench attention decode --model llama-3.2-1b --backend cuda --repeats 5 --out none > $W/logs/bench-llama.txt 2>&1
say "-- llama attention decode rc=$? ($SECONDS s)"; grep -E "^ +(1|8|64|256) +(512|2048) |^  decode  " $W/logs/bench-llama.txt | tee -a $S
nvidia-smi dmon -s pc -d 1 > $O/dmon.txt 2>&1 &
DMON=$!
timeout 300 bash tools/validate/heldout.sh cuda $W/heldout "$PWD/$B/run.sh $PWD/$B/bin/rig" 2>&1 | tee -a $S
kill $DMON
grep -E "of its floor" $W/heldout/llama.txt | tee -a $S
tar -C $W -czf $O/heldout.tar.gz heldout && rm -rf $W/heldout
RIG_LOG_DIR=$W/logs/gpu-tests timeout 300 $B/run-gpu-tests.sh > $W/logs/gpu-tests.txt 2>&1
say "== run-gpu-tests rc=$? ($SECONDS s)"; tail -6 $W/logs/gpu-tests.txt | tee -a $S
grep -hE "32/8 heads D64" $W/logs/gpu-tests/test_cuda_ops.log | tail -3 | tee -a $S
tar -C $W -czf $O/logs.tar.gz logs
say "done ($SECONDS s)"
