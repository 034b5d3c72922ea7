#!/usr/bin/env bash
# prefill_wgmma.sh — one device call for issue 18's wgmma prefill attention: correctness of both
# kernel paths, then the old (RIG_PREFILL_WGMMA=0) and new (=1) kernels timed in turn in the same
# call, same binary. On the GPU machine, from the directory holding the bundle (tools/bundle.sh):
#   BUNDLE=bundle tools/gpu/prefill_wgmma.sh [tests|bench|all]   (default all; logs under $OUT)
# Prints a short summary last.
set -uo pipefail
what=${1:-all}
out=${OUT:-/tmp/prefill_wgmma}
mkdir -p "$out"
bundle=${BUNDLE:-bundle}
rig() { timeout "$1" "$bundle/run.sh" bin/rig "${@:2}"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
if command -v cuobjdump >/dev/null; then
    cuobjdump --dump-resource-usage "$bundle/bin/rig" 2>/dev/null |
        grep -A1 "wg_kernel\|fa_kernelILi128" |
        grep -o "Function [^ ]*\|REG:[0-9]*\|STACK:[0-9]*\|SHARED:[0-9]*\|LOCAL:[0-9]*" |
        paste -sd' ' | sed 's/Function /\n/g' | tee "$out/resources.txt"
    echo
fi
# A hang (a pipeline deadlock) shows up here in seconds, not in the test's minutes.
for w in 1 0; do
    echo "== smoke: RIG_PREFILL_WGMMA=$w attention --quick"
    RIG_PREFILL_WGMMA=$w rig 60 bench attention --backend cuda --quick --repeats 5 --out none \
        2>&1 | grep -E "prefill|rror" | tail -3
done
if [[ $what == tests || $what == all ]]; then
    echo "== test_attention_prefill (both paths)"
    RIG_TEST_FILTER=test_attention_prefill timeout 170 "$bundle/run.sh" tests/test_cuda_ops \
        >"$out/test.log" 2>&1
    echo "rc=$?"
    grep -E "^\[|FAIL|fail|error|NaN" "$out/test.log" | tail -25
fi
if [[ $what == bench || $what == all ]]; then
    for round in 1 2; do
        for w in 0 1; do
            for quick in "" --quick; do
                RIG_PREFILL_WGMMA=$w rig 90 bench attention --backend cuda $quick --repeats 20 \
                    --out none >"$out/attn-$w-$round$quick.log" 2>&1
                echo "round $round wgmma=$w ${quick:-8192}: $(grep -E '^  prefill' \
                    "$out/attn-$w-$round$quick.log")"
            done
        done
    done
    for w in 0 1; do
        RIG_PREFILL_WGMMA=$w rig 120 bench ops --backend cuda --quick --repeats 20 --out none \
            >"$out/ops-$w.log" 2>&1
        echo "ops --quick wgmma=$w: $(grep -E '^  attention_prefill' "$out/ops-$w.log")"
    done
    for w in 0 1; do
        RIG_PREFILL_WGMMA=$w rig 150 bench prefill --backend cuda --out none \
            >"$out/prefill-$w.log" 2>&1
        echo "== bench prefill wgmma=$w"
        grep -E "^ +[0-9]+ +[0-9]+ |MFU|chunk" "$out/prefill-$w.log"
    done
fi
