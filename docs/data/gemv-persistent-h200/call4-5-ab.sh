#!/usr/bin/env bash
# The persistent small-batch GEMM (RIG_GEMV_PERSISTENT) against the per-tile kernel.
# (Call 4, the register double buffer, ran it with qwen3-32b in the model list too, into /tmp/tc4.)
set -u
B=bundle-main; O=${OUT:-/tmp/tc5}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
RIG_TEST_FILTER='test_gemm*' timeout 150 $B/run.sh tests/test_cuda_ops > $O/logs/test.txt 2>&1
say "== test_cuda_ops test_gemm* rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|OK \]|FAIL|differs" $O/logs/test.txt | tail -14 | tee -a $S
for round in 1 2; do for m in qwen3-8b llama-3.2-1b qwen3-0.6b; do for g in 0 1; do
  RIG_GEMV_PERSISTENT=$g timeout 60 $B/run.sh bin/rig bench decode --model $m --backend cuda --repeats 5 --out none > $O/logs/decode-$m-p$g-r$round.txt 2>&1
  say "-- round $round $m PERSISTENT=$g rc=$? ($SECONDS s)"; grep -E "^ +(1|8|64|256) +(512|2048) " $O/logs/decode-$m-p$g-r$round.txt | head -8 | tee -a $S
done; done; done
for m in qwen3-8b llama-3.2-1b; do
  timeout 60 $B/run.sh bin/rig bench offline --model $m --overlap on --backend cuda --out none > $O/logs/offline-$m.txt 2>&1
  say "-- offline $m rc=$? ($SECONDS s)"; grep -E "of its floor" $O/logs/offline-$m.txt | tee -a $S
done
CUDA_INJECTION64_PATH=$PWD/$B/lib/libktrace.so KTRACE_OUT=$O/logs/ktrace-qwen3-8b.csv timeout 120 \
  $B/run.sh bin/rig bench decode --model qwen3-8b --backend cuda --repeats 5 --out none > $O/logs/ktrace-qwen3-8b.txt 2>&1
python3 $B/ktrace_steps.py $O/logs/ktrace-qwen3-8b.csv --graph 2 --nodes > $O/logs/ktrace-steps-8b.txt 2>&1
head -14 $O/logs/ktrace-steps-8b.txt | tee -a $S
rm -f $O/logs/ktrace-qwen3-8b.csv
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
