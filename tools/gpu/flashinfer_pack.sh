#!/usr/bin/env bash
# flashinfer_pack.sh — packs FlashInfer for the GPU machine (no network there), small enough to
# carry in one device call beside this checkout (64 MiB in all): docs/performance.md, "Peers".
#
# flashinfer-python is a 62 MB wheel; with the checkout (~19 MB) it is over the limit. Its JIT
# needs the Python package, the attention sources (data/csrc: decode, prefill, page), the
# headers (data/include, cutlass, cccl, spdlog) and tvm-ffi; the MoE/GEMM/Blackwell sources are
# dropped, and the rest is one xz tarball (~30 MB). Writes OUT (default <repo>/bundle-fi, which
# git must ignore: add it to .git/info/exclude) with fitrim.tar.xz and the cp312 tvm-ffi wheel.
# On the GPU machine (device tool, carry ["bundle-fi"]):
#   mkdir -p /tmp/fisite && tar xJf bundle-fi/fitrim.tar.xz -C /tmp/fisite
#   pip install --no-deps --target /tmp/fisite bundle-fi/apache_tvm_ffi-*.whl
#   PYTHONPATH=/tmp/fisite FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16 \
#       python3 tools/gpu/peers.py --skip-hf --bench-h5 docs/data/bench-h100-da0dcf9.h5
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/bundle-fi}
version=${FLASHINFER_VERSION:-0.7.2.post1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pip download --no-deps -q -d "$work/wheels" "flashinfer-python==$version" nvidia-ml-py
pip download --no-deps -q -d "$work/tvm" apache-tvm-ffi --python-version 3.12 \
    --only-binary=:all: --platform manylinux_2_28_x86_64
pip install -q --no-deps --target "$work/site" "$work"/wheels/*.whl
csrc=$work/site/flashinfer/data/csrc
keep='^(batch_decode|batch_prefill|batch_attention|single_prefill|single_decode|page'
keep+='|pytorch|tvm_ffi|utils|flashinfer_ops|.*\.h$|.*\.cuh$)'
find "$csrc" -mindepth 1 -maxdepth 1 -printf '%f\n' | grep -vE "$keep" |
    while read -r name; do rm -rf "${csrc:?}/$name"; done
mkdir -p "$out"
tar cJf "$out/fitrim.tar.xz" -C "$work/site" .
cp "$work"/tvm/*.whl "$out/"
du -sh "$out"
