#!/usr/bin/env bash
# A/B: decode on tensor cores with the next item's Q prefetched (RIG_DECODE_TC_PREFETCH); the kernel timeline of Qwen3-8B decode with the batch-unit GEMM off / on.
set -u
B=bundle-main; O=${OUT:-/tmp/c2}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
RIG_DECODE_TC_PREFETCH=1 RIG_TEST_FILTER='test_attention_decode*' timeout 120 $B/run.sh tests/test_cuda_ops > $O/logs/test-decode-prefetch.txt 2>&1
say "== test_attention_decode* prefetch rc=$? ($SECONDS s)"; grep -E "PASSED|FAILED|FAIL" $O/logs/test-decode-prefetch.txt | tail -3 | tee -a $S
grep -hE "decode .*(tensor cores|TC=1).* nmse" $O/logs/test-decode-prefetch.txt | sed -E 's/.*nmse ([^ ]+).*/\1/' | sort -g | tail -1 | sed 's/^/largest TC nmse: /' | tee -a $S
for round in 1 2; do for m in qwen3-8b llama-3.2-1b qwen3-32b; do for pf in 0 1; do
  RIG_DECODE_TC_PREFETCH=$pf timeout 90 $B/run.sh bin/rig bench attention decode --model $m --backend cuda --repeats 5 --out none > $O/logs/bench-$m-pf$pf-r$round.txt 2>&1
  say "-- round $round $m prefetch $pf rc=$? ($SECONDS s)"; grep -E "^ +(64|256) +(512|2048) |^  decode  " $O/logs/bench-$m-pf$pf-r$round.txt | tee -a $S
done; done; done
for rows in 0 2; do
  RIG_GEMV_PERSISTENT_ROWS=$rows CUDA_INJECTION64_PATH=$PWD/$B/lib/libktrace.so KTRACE_OUT=$O/trace-8b-rows$rows.csv timeout 90 $B/run.sh bin/rig bench decode --model qwen3-8b --backend cuda --out none > $O/logs/ktrace-rows$rows.txt 2>&1
  say "-- ktrace qwen3-8b rows<=$rows rc=$? ($SECONDS s)"; grep -E "^ +(1|8) +512 |ktrace" $O/logs/ktrace-rows$rows.txt | tee -a $S
done
tar -C $O -czf $O/traces.tar.gz trace-8b-rows0.csv trace-8b-rows2.csv && rm -f $O/trace-*.csv
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
