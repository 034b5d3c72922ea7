#!/usr/bin/env bash
# Held-out runs of tools/validate/heldout.sh (Llama offline + decode rows, Qwen3-0.6B online 4-32 req/s, Qwen3-32B x 8 layers, shared-prefix, trace-replay) on the H200, dmon beside.
set -u
export RIG_DECODE_TC_HALF=0 # this bundle (call 5) has the dropped variant on by default: the committed kernel
B=bundle-main; O=${OUT:-/tmp/c7}; W=/tmp/c7w; mkdir -p $O $W; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
nvidia-smi dmon -s pc -d 1 > $O/dmon.txt 2>&1 &
DMON=$!
timeout 420 bash tools/validate/heldout.sh cuda $W/heldout "$PWD/$B/run.sh $PWD/$B/bin/rig" 2>&1 | tee -a $S
say "heldout rc=$? ($SECONDS s)"
kill $DMON
for f in $W/heldout/*.txt; do echo "== $f"; tail -4 $f; done > $O/tails.txt
tar -C $W -czf $O/heldout.tar.gz heldout
say "done ($SECONDS s)"
