#!/usr/bin/env bash
# The final tree: op table (with the D 64 decode axis), held-out TP 1 runs, decode steps, GPU tests.
set -u
B=bundle-main; O=${OUT:-/tmp/c4}; W=/tmp/c4w; mkdir -p $O $W/logs $W/h5; S=$O/summary.txt
say() { echo "$*" | tee -a $S; }
say "$($B/run.sh bin/rig --version | head -1)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee -a $S
timeout 120 $B/run.sh bin/rig profile --backend cuda --out $O/h200.h5 > $W/logs/profile.txt 2>&1
say "-- profile rc=$? ($SECONDS s)"; tail -1 $W/logs/profile.txt | tee -a $S
nvidia-smi dmon -s pc -d 1 > $W/logs/dmon.txt 2>&1 &
DMON=$!
here=tools/gpu
for model in qwen3-8b qwen3-32b-32l; do
  spec='{preset: qwen3-8b}'; [[ $model == qwen3-32b-32l ]] && spec="{config: $here/tp/qwen3-32b-32l.json}"
  echo "start decode-$model $(date +%s)" >> $W/logs/marks.txt
  timeout 120 $B/run.sh bin/rig run $here/tp/decode.yaml --set "model=$spec" --set engine.tp_size=1 --set backend=cuda \
     --rows 0 --out $W/h5/decode-$model-tp1.h5 > $W/logs/decode-$model.txt 2>&1
  say "-- decode $model rc=$? ($SECONDS s)"; tail -2 $W/logs/decode-$model.txt | tee -a $S
done
for model in qwen3-8b llama-3.2-1b; do
  mkdir -p $W/h5/offline-$model-tp1
  echo "start offline-$model $(date +%s)" >> $W/logs/marks.txt
  timeout 150 $B/run.sh bin/rig bench offline --backend cuda --model $model --tp 1 --overlap on --repeats 5 \
     --out $W/h5/offline-$model-tp1 > $W/logs/offline-$model.txt 2>&1
  say "-- offline $model rc=$? ($SECONDS s)"; grep -E "of its floor" $W/logs/offline-$model.txt | tee -a $S
done
echo "end $(date +%s)" >> $W/logs/marks.txt
kill $DMON
for m in qwen3-8b qwen3-32b llama-3.2-1b qwen3-0.6b; do
  timeout 90 $B/run.sh bin/rig bench decode --model $m --backend cuda --repeats 5 --out none > $W/logs/decode-bench-$m.txt 2>&1
  say "-- bench decode $m rc=$? ($SECONDS s)"; grep -E "^ +(1|8|64|256) +(512|2048) " $W/logs/decode-bench-$m.txt | tee -a $S
done
tar -C $W -czf $O/heldout.tar.gz h5 && rm -rf $W/h5
RIG_LOG_DIR=$W/logs/gpu-tests timeout 330 $B/run-gpu-tests.sh > $W/logs/gpu-tests.txt 2>&1
say "== run-gpu-tests rc=$? ($SECONDS s)"; tail -6 $W/logs/gpu-tests.txt | tee -a $S
grep -hE "persistent|differs" $W/logs/gpu-tests/test_cuda_ops.log | tail -3 | tee -a $S
tar -C $W -czf $O/logs.tar.gz logs
say "done ($SECONDS s)"
