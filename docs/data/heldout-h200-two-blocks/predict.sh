#!/bin/bash
# usage: predict.sh LABEL [PROFILE]: the simulator's predictions (timing only, profile h200 unless
# named) of tools/validate/heldout.sh's runs, measured on one H200 with the tree of this
# directory's commit (call9.sh: decode at D 64 two blocks an SM), under /tmp/h200-pred-two/LABEL, then `rig compare` of each against its
# measurement (measured.tar.xz beside this script) into LABEL/cmp/. Run after a build.
set -u
cd "$(dirname "$0")/../../.."
label=$1 prof=${2:-h200} meas=/tmp/h200-measured-two out=/tmp/h200-pred-two/$1
mkdir -p "$meas" "$out/cmp" && tar -xf docs/data/heldout-h200-two-blocks/measured.tar.xz -C "$meas" || exit 1
sim="{profile: $prof, timing_only: true}"
m=$meas/heldout v=tools/validate
build/rig bench offline decode --backend sim --profile "$prof" --model llama-3.2-1b --out "$out/llama" > "$out/llama.log" 2>&1
build/rig bench online --backend sim --profile "$prof" --model qwen3-0.6b --rates 4,8,16,32 --requests 64 \
   --out "$out/qwen06" > "$out/qwen06.log" 2>&1
build/rig run $v/qwen3-32b-8l.yaml --set backend=sim --set "sim=$sim" --set "model.config=$v/qwen3-32b-8l.json" \
   --out "$out/qwen32b-8l.h5" --rows 0 > "$out/qwen32b-8l.log" 2>&1
for s in shared-prefix trace-replay; do
  build/rig run scenarios/$s.yaml --set backend=sim --set "sim=$sim" --set model.preset=llama-3.2-1b \
     --out "$out/$s.h5" --rows 0 > "$out/$s.log" 2>&1
done
for r in llama/offline llama/offline-no-overlap qwen06/online-4 qwen06/online-8 qwen06/online-16 \
         qwen06/online-32 qwen32b-8l shared-prefix trace-replay; do
  build/rig compare "$m/$r.h5" "$out/$r.h5" > "$out/cmp/${r//\//-}.txt" 2>&1
done
grep -H -E '^duration' "$out"/cmp/*.txt
