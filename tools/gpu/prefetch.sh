#!/usr/bin/env bash
# prefetch.sh — one device call for issue 18's L2 prefetch hints (struct rig_op.prefetch, pulled
# into L2 by cuda/ops/prefetch.cu): the GPU tests that cover them, then decode steps and the
# prefill step with the hints off (RIG_CUDA_PREFETCH=0) and on, interleaved, same binary, two
# rounds for Qwen3-0.6B and one (decode only) for Llama-3.2-1B. On the GPU machine, from the
# repository:
#   BUNDLE=bundle-main OUT=$OUT tools/gpu/prefetch.sh
set -uo pipefail
bundle=${BUNDLE:-bundle-main}
out=${OUT:-/tmp/prefetch}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
"$bundle/run.sh" bin/rig --version | head -1
for name in test_prefetch_hint; do
    RIG_TEST_FILTER=$name timeout 120 "$bundle/run.sh" tests/test_cuda_ops >"$out/$name.log" 2>&1
    echo "$name rc=$? $(grep -cE 'nmse' "$out/$name.log") comparisons; worst: $(grep -oE 'nmse [0-9.e+-]+' "$out/$name.log" | sort -g -k2 | tail -1)"
done
timeout 200 "$bundle/run.sh" tests/test_engine_cuda >"$out/test_engine_cuda.log" 2>&1
echo "test_engine_cuda rc=$? $(grep -E 'PASSED|FAILED' "$out/test_engine_cuda.log" | tail -1)"
run() { # MODEL ROUND HINTS BENCHMARKS...
    local log=$out/decode-$1-$2-hints$3.txt
    RIG_CUDA_PREFETCH=$3 timeout 150 "$bundle/run.sh" bin/rig bench "${@:4}" --backend cuda \
        --model "$1" --repeats 10 --out none >"$log" 2>&1
    echo "== $1 round $2 hints $3 (rc $?)"
    grep -E "^ +[0-9]+ +(512|2048) +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$|^ +(512|8192) +0 " "$log"
}
for round in 1 2; do
    for hints in 0 1; do run qwen3-0.6b $round $hints decode prefill; done
done
for hints in 0 1; do run llama-3.2-1b 1 $hints decode; done
