#!/usr/bin/env bash
# A/B: the persistent GEMM with batch units (K > 4,096) at rows <= 0 / 2 / 8; decode on tensor cores with 2 / 3 / 4 K/V stages.
set -u
B=bundle-main; O=${OUT:-/tmp/c1}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
RIG_TEST_FILTER='test_gemm_persistent' timeout 120 $B/run.sh tests/test_cuda_ops > $O/logs/test-gemm.txt 2>&1
say "== test_gemm_persistent rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|FAIL|differs" $O/logs/test-gemm.txt | tail -4 | tee -a $S
for st in 3 4; do
  RIG_DECODE_TC_STAGES=$st RIG_TEST_FILTER='test_attention_decode*' timeout 120 $B/run.sh tests/test_cuda_ops > $O/logs/test-decode-st$st.txt 2>&1
  say "== test_attention_decode* stages $st rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|FAIL" $O/logs/test-decode-st$st.txt | tail -3 | tee -a $S
done
for round in 1 2; do for m in qwen3-8b llama-3.2-1b qwen3-32b; do for v in 0 1 2; do
  case $v in 0) rows=0; st=2;; 1) rows=2; st=3;; 2) rows=8; st=3; [ $m = llama-3.2-1b ] && st=4;; esac
  RIG_GEMV_PERSISTENT_ROWS=$rows RIG_DECODE_TC_STAGES=$st timeout 90 $B/run.sh bin/rig bench attention decode --model $m --backend cuda --repeats 5 --out none > $O/logs/bench-$m-v$v-r$round.txt 2>&1
  say "-- round $round $m rows<=$rows stages $st rc=$? ($SECONDS s)"; grep -E "^ +(1|8|64|256) +(512|2048) |^  decode  " $O/logs/bench-$m-v$v-r$round.txt | tee -a $S
done; done; done
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
