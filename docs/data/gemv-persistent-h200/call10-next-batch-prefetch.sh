#!/usr/bin/env bash
# Experiment: L2 prefetch of a warp's next batch in the per-tile small-batch GEMM (RIG_GEMV_NEXT_PREFETCH).
set -u
B=bundle-main; O=${OUT:-/tmp/tc10}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"
RIG_GEMV_NEXT_PREFETCH=1 RIG_TEST_FILTER='test_gemm*' timeout 100 $B/run.sh tests/test_cuda_ops > $O/logs/test.txt 2>&1
say "== test_gemm* with the prefetch rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED" $O/logs/test.txt | tail -2 | tee -a $S
for round in 1 2; do for m in qwen3-8b qwen3-32b llama-3.2-1b; do for g in 0 1; do
  RIG_GEMV_NEXT_PREFETCH=$g timeout 60 $B/run.sh bin/rig bench decode --model $m --backend cuda --repeats 5 --out none > $O/logs/decode-$m-n$g-r$round.txt 2>&1
  say "-- round $round $m NEXT_PREFETCH=$g rc=$? ($SECONDS s)"; grep -E "^ +(1|8) +(512|2048) " $O/logs/decode-$m-n$g-r$round.txt | tee -a $S
done; done; done
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
