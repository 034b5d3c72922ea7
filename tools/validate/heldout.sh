#!/usr/bin/env bash
# heldout.sh — the simulator's held-out validation runs (docs/simulator.md, "Held-out
# validation"), the same commands on either backend: measured on a GPU, predicted on the
# simulator, then paired with `rig compare MEASURED.h5 PREDICTED.h5`.
#
# usage: tools/validate/heldout.sh BACKEND OUT [RIG]
#   BACKEND  cuda (measured) or sim (predicted: timing only, the h100 profile)
#   OUT      results folder (created); one .h5 per run, a .txt log per command
#   RIG      the rig command (default: rig; e.g. "bundle/run.sh bundle/bin/rig")
# Runs, none of them in the op table's sweep (qwen3-0.6b and qwen3-8b shapes only):
#   llama/      Llama-3.2-1B offline (overlap on and off) and the decode rows
#   qwen06/     Qwen3-0.6B Poisson online at 4, 8, 16 and 32 requests/s, 64 requests each
#               (the first in a fresh process: the engine's own warm-up, GEMM plans, is what
#               keeps a new prompt length from paying cuBLAS's first use; docs/performance.md)
#   qwen32b-8l  Qwen3-32B's layer shapes, 8 layers on one GPU, 64 requests at 8/s
#   shared-prefix, trace-replay  scenarios/ on Llama-3.2-1B
# The invariant checker runs once at the end, not every step, so that it adds no host time.
set -uo pipefail

if [[ $# -lt 2 ]]; then
    echo "usage: $0 sim|cuda OUT [RIG]" >&2
    exit 2
fi
backend=$1
out=$2
read -r -a rig <<<"${3:-rig}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
scenarios=$here/../scenarios # in the repository and in a bundle (tools/bundle.sh) alike
[[ -d $scenarios ]] || scenarios=$here/../../scenarios
mkdir -p "$out"
status=0

step() { # NAME COMMAND...: runs it, logs to OUT/NAME.txt, says how long it took
    local name=$1
    shift
    local t0=$SECONDS
    "$@" >"$out/$name.txt" 2>&1 || { echo "heldout.sh: $name failed" >&2; status=1; }
    echo "heldout.sh: $name $((SECONDS - t0)) s"
}

step llama "${rig[@]}" bench offline decode --backend "$backend" --model llama-3.2-1b \
    --out "$out/llama"
step qwen06 "${rig[@]}" bench online --backend "$backend" --model qwen3-0.6b \
    --rates 4,8,16,32 --requests 64 --out "$out/qwen06"
step qwen32b-8l "${rig[@]}" run "$here/qwen3-32b-8l.yaml" --backend "$backend" \
    --set "model.config=$here/qwen3-32b-8l.json" --out "$out/qwen32b-8l.h5" --rows 0 --check end
for scenario in shared-prefix trace-replay; do
    step "$scenario" "${rig[@]}" run "$scenarios/$scenario.yaml" --backend "$backend" \
        --set model.preset=llama-3.2-1b --out "$out/$scenario.h5" --rows 0 --check end
done
exit $status
