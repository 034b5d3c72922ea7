#!/usr/bin/env bash
# Diagnosis: kernel timelines of Llama-3.2-1B and Qwen3-0.6B decode (every batch); ncu of tensor-core decode attention at D 64 and D 128.
set -u
B=bundle-main; O=${OUT:-/tmp/c3}; mkdir -p $O/logs; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
for m in llama-3.2-1b qwen3-0.6b; do
  CUDA_INJECTION64_PATH=$PWD/$B/lib/libktrace.so KTRACE_OUT=$O/trace-$m.csv timeout 90 $B/run.sh bin/rig bench decode --model $m --backend cuda --out none > $O/logs/ktrace-$m.txt 2>&1
  say "-- ktrace $m rc=$? ($SECONDS s)"; grep -E "^ +(1|8|64|256) +(512|2048) |ktrace" $O/logs/ktrace-$m.txt | tee -a $S
done
which ncu | tee -a $S
for pair in "llama-3.2-1b Li64ELi39E" "qwen3-8b Li128ELi39E"; do set -- $pair
  timeout 150 ncu --clock-control none --kernel-name-base mangled -k regex:$2 -c 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
    --section ComputeWorkloadAnalysis --section SchedulerStats --section Occupancy \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio|sm__pipe_tensor.*cycles_active.avg.pct_of_peak_sustained_active|smsp__inst_executed_pipe_.*sum|dram__bytes_read.sum" \
    $B/run.sh bin/rig bench attention decode --model $1 --backend cuda --repeats 1 --out none > $O/ncu-$1.txt 2>&1
  say "== ncu $1 rc=$? ($SECONDS s)"
  grep -E "Grid Size|Duration|DRAM Throughput|Memory Throughput|SM\) Throughput|Issue Slots|Registers|pipe_tensor_op_hmma_cycles|Eligible|No Eligible" $O/ncu-$1.txt | head -14 | tee -a $S
  grep -E "issue_stalled" $O/ncu-$1.txt | sort -k3 -g -r | head -8 | tee -a $S
done
tar -C $O -czf $O/traces.tar.gz trace-llama-3.2-1b.csv trace-qwen3-0.6b.csv && rm -f $O/trace-*.csv
tar -C $O -czf $O/logs.tar.gz logs && rm -rf $O/logs
say "done ($SECONDS s)"
