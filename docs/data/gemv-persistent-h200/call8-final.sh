#!/usr/bin/env bash
# The final tree: the persistent small-batch GEMM up to 8 rows (activations in registers): tests, op table, steps.
set -u
B=bundle-main; O=${OUT:-/tmp/tc8}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
timeout 90 $B/run.sh bin/rig profile --backend cuda --out $O/h200.h5 > $O/logs/profile.txt 2>&1
say "-- profile rc=$? ($SECONDS s)"; tail -1 $O/logs/profile.txt | tee -a $S
RIG_TEST_FILTER='test_gemm*' timeout 150 $B/run.sh tests/test_cuda_ops > $O/logs/test.txt 2>&1
say "== test_cuda_ops test_gemm* rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|FAIL|differs" $O/logs/test.txt | tail -4 | tee -a $S
timeout 60 $B/run.sh tests/test_engine_cuda > $O/logs/engine.txt 2>&1
say "== test_engine_cuda rc=$? ($SECONDS s)"; tail -2 $O/logs/engine.txt | tee -a $S
for m in qwen3-8b llama-3.2-1b qwen3-0.6b qwen3-32b; do for g in 0 1; do
  RIG_GEMV_PERSISTENT=$g timeout 60 $B/run.sh bin/rig bench decode --model $m --backend cuda --repeats 5 --out none > $O/logs/decode-$m-p$g.txt 2>&1
  say "-- $m PERSISTENT=$g rc=$? ($SECONDS s)"; grep -E "^ +(1|8|64|256) +(512|2048) " $O/logs/decode-$m-p$g.txt | head -8 | tee -a $S
done; done
timeout 60 $B/run.sh bin/rig bench offline --model qwen3-8b --overlap on --backend cuda --out none > $O/logs/offline-qwen3-8b.txt 2>&1
say "-- offline qwen3-8b rc=$? ($SECONDS s)"; grep -E "of its floor" $O/logs/offline-qwen3-8b.txt | tee -a $S
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
