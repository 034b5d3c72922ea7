#!/usr/bin/env bash
# The persistent small-batch GEMM with its activations held in registers: 8 rows too?
set -u
B=bundle-main; O=${OUT:-/tmp/tc7}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"
RIG_TEST_FILTER='test_gemm*' timeout 150 $B/run.sh tests/test_cuda_ops > $O/logs/test.txt 2>&1
say "== test_cuda_ops test_gemm* rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|FAIL|differs" $O/logs/test.txt | tail -4 | tee -a $S
for round in 1 2; do for g in 0 1 2; do
  RIG_GEMV_PERSISTENT=$g timeout 60 $B/run.sh bin/rig bench decode --model qwen3-8b --backend cuda --repeats 5 --out none > $O/logs/decode-p$g-r$round.txt 2>&1
  say "-- round $round qwen3-8b PERSISTENT=$g rc=$? ($SECONDS s)"; grep -E "^ +(1|8) +(512|2048) " $O/logs/decode-p$g-r$round.txt | tee -a $S
done; done
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
