#!/usr/bin/env bash
# hf_check.sh — issue 7's end-to-end check against Hugging Face transformers at Qwen3-0.6B
# shape, on the GPU machine, in one call (docs/gpu.md, "Pending: the transformers check at
# Qwen3-0.6B shape"). Needs the bundle from tools/bundle.sh in bundle/ (or $RIG_BUNDLE) and
# python3 with torch, transformers and safetensors. Writes hf_check.json, hf_check.log, the
# rig version and the device to $OUT (default ./hf-check-out). Extra arguments go to
# tools/gpu/hf_check.py (e.g. --preset tiny). Exit status: hf_check.py's (0: PASS).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundle=${RIG_BUNDLE:-$root/bundle}
out=${OUT:-$root/hf-check-out}
mkdir -p "$out"

"$bundle/run.sh" bin/rig --version | tee "$out/rig-version.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt" || true
python3 -c 'import torch, transformers, safetensors
print("torch", torch.__version__, "transformers", transformers.__version__)'

python3 "$root/tools/gpu/hf_check.py" --preset qwen3-0.6b --backend cuda \
    --rig "$bundle/run.sh bin/rig" --out "$out" "$@" 2>&1 | tee "$out/hf_check.log"
exit "${PIPESTATUS[0]}"
