#!/usr/bin/env bash
# Decode on tensor cores with the exact P V (RIG__WG_DECODE) and the auto rule: tests, op table, benches.
set -u
B=bundle-main; O=${OUT:-/tmp/tc2}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
timeout 90 $B/run.sh bin/rig profile --backend cuda --out $O/h200.h5 > $O/logs/profile.txt 2>&1
say "-- profile rc=$? ($SECONDS s)"; tail -1 $O/logs/profile.txt | tee -a $S
for m in qwen3-8b llama-3.2-1b qwen3-32b; do
  timeout 60 $B/run.sh bin/rig bench attention decode --model $m --backend cuda --repeats 5 --out none > $O/logs/bench-$m.txt 2>&1
  say "-- $m rc=$? ($SECONDS s)"; grep -E "^ +(1|8|64|256) +(512|2048) |^  decode |skipped" $O/logs/bench-$m.txt | tee -a $S
done
for m in qwen3-8b llama-3.2-1b; do
  timeout 60 $B/run.sh bin/rig bench offline --model $m --overlap on --backend cuda --out none > $O/logs/offline-$m.txt 2>&1
  say "-- offline $m rc=$? ($SECONDS s)"; grep -E "of its floor" $O/logs/offline-$m.txt | tee -a $S
done
RIG_LOG_DIR=$O/logs/gpu-tests timeout 330 $B/run-gpu-tests.sh > $O/logs/gpu-tests.txt 2>&1
say "== run-gpu-tests rc=$? ($SECONDS s)"; tail -6 $O/logs/gpu-tests.txt | tee -a $S
grep -hE "decode .*(tensor cores|TC=1).* nmse" $O/logs/gpu-tests/test_cuda_ops.log | sort -k1,1 | awk '{print}' > $O/tc-nmse.txt
say "TC-path decode cases: $(wc -l < $O/tc-nmse.txt); largest nmse:"; sed -E 's/.*nmse ([^ ]+).*/\1 &/' $O/tc-nmse.txt | sort -g | tail -3 | tee -a $S
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
