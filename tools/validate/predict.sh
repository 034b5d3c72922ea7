#!/usr/bin/env bash
# predict.sh — the simulator's predictions of heldout.sh's runs (timing only), each paired with
# its measurement by `rig compare` (docs/simulator.md, "Held-out validation").
#
# usage: tools/validate/predict.sh MEASURED OUT [PROFILE] [RIG]
#   MEASURED  a folder heldout.sh wrote on the GPU (llama/, qwen06/, qwen32b-8l.h5, ...), or a
#             tarball of one, .tar.gz or .tar.xz (unpacked under OUT/measured)
#   OUT       predictions (.h5, .log) and OUT/cmp/*.txt, one comparison per run
#   PROFILE   the simulator's device profile (default h200)
#   RIG       the rig binary (default build/rig)
# Prints each comparison's duration line.
set -uo pipefail
if [[ $# -lt 2 ]]; then
    echo "usage: $0 MEASURED OUT [PROFILE] [RIG]" >&2
    exit 2
fi
meas=$1 out=$2 prof=${3:-h200} rig=${4:-build/rig}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/../..
mkdir -p "$out/cmp" || exit 1
if [[ -f $meas ]]; then
    mkdir -p "$out/measured" && tar -xf "$meas" -C "$out/measured" || exit 1
    meas=$(dirname "$(find "$out/measured" -name qwen32b-8l.h5 | head -1)")
fi
sim="{profile: $prof, timing_only: true}"
"$rig" bench offline decode --backend sim --profile "$prof" --model llama-3.2-1b \
    --out "$out/llama" >"$out/llama.log" 2>&1
"$rig" bench online --backend sim --profile "$prof" --model qwen3-0.6b --rates 4,8,16,32 \
    --requests 64 --out "$out/qwen06" >"$out/qwen06.log" 2>&1
"$rig" run "$here/qwen3-32b-8l.yaml" --set backend=sim --set "sim=$sim" \
    --set "model.config=$here/qwen3-32b-8l.json" --out "$out/qwen32b-8l.h5" --rows 0 \
    >"$out/qwen32b-8l.log" 2>&1
for s in shared-prefix trace-replay; do
    "$rig" run "$root/scenarios/$s.yaml" --set backend=sim --set "sim=$sim" \
        --set model.preset=llama-3.2-1b --out "$out/$s.h5" --rows 0 >"$out/$s.log" 2>&1
done
for r in llama/offline llama/offline-no-overlap qwen06/online-4 qwen06/online-8 qwen06/online-16 \
    qwen06/online-32 qwen32b-8l shared-prefix trace-replay; do
    "$rig" compare "$meas/$r.h5" "$out/$r.h5" >"$out/cmp/${r//\//-}.txt" 2>&1
done
grep -H -E '^duration' "$out"/cmp/*.txt
