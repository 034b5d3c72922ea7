#!/bin/bash
# usage: predict.sh LABEL [PROFILE]: the simulator's predictions of the held-out TP 1 runs measured
# on one H200 with the bundle of the final tree of 2026-11-29 (call4.sh: tools/gpu/tp/decode.yaml for Qwen3-8B and
# Qwen3-32B x 32 layers, `rig bench offline` for Qwen3-8B and Llama-3.2-1B), under
# /tmp/h200-pred-final/LABEL, then `rig compare` of each against its measurement (unpacked from
# measured.tar.xz beside this script) into LABEL/cmp/. PROFILE: a profile name (default h200) or a
# YAML path (a copy of h200.yaml naming another op_table). Run from anywhere, after a build.
set -u
cd "$(dirname "$0")/../../.."
label=$1 prof=${2:-h200} meas=/tmp/h200-measured-final out=/tmp/h200-pred-final/$1
mkdir -p "$meas" "$out/cmp" && tar -xf docs/data/heldout-h200-final/measured.tar.xz -C "$meas" || exit 1
sim="{profile: $prof, timing_only: true}"
here=tools/gpu
for model in qwen3-8b qwen3-32b-32l; do
  spec='{preset: qwen3-8b}'; [[ $model == qwen3-32b-32l ]] && spec="{config: $here/tp/qwen3-32b-32l.json}"
  build/rig run $here/tp/decode.yaml --set "model=$spec" --set engine.tp_size=1 --set backend=sim \
     --set "sim=$sim" --rows 0 --quiet --out "$out/decode-$model-tp1.h5" > "$out/decode-$model.log" 2>&1
  build/rig compare "$meas/h5/decode-$model-tp1.h5" "$out/decode-$model-tp1.h5" > "$out/cmp/decode-$model.txt" 2>&1
done
for model in qwen3-8b llama-3.2-1b; do
  mkdir -p "$out/offline-$model"
  build/rig bench offline --backend sim --profile "$prof" --model "$model" --tp 1 --overlap on \
     --repeats 5 --out "$out/offline-$model" > "$out/offline-$model.log" 2>&1
  build/rig compare "$meas/h5/offline-$model-tp1/offline.h5" "$out/offline-$model/offline.h5" \
     > "$out/cmp/offline-$model.txt" 2>&1
done
grep -H -E '^duration' "$out"/cmp/*.txt
