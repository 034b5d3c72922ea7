#!/usr/bin/env bash
# elementwise.sh — one device call for issue 18's prefill-step element-wise kernels: the fused
# q/k norm + RoPE + K/V store (a block per token, RIG_QKRS_TOKEN=0: the warp-per-head kernel)
# and SiLU·mul (4 vectors a thread, RIG_SILU_UNROLL=1: one). Their GPU tests first, then the old
# and new kernels in turn, same binary, two rounds: `rig bench ops` (every op of a decode and a
# prefill step alone) and `rig bench prefill` (the 8192-token step's MFU) per model.
# On the GPU machine, from the repository:  BUNDLE=bundle-main tools/gpu/elementwise.sh
set -uo pipefail
bundle=${BUNDLE:-bundle-main}
out=${OUT:-/tmp/elementwise}
models=${MODELS:-qwen3-0.6b llama-3.2-1b}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
"$bundle/run.sh" bin/rig --version | head -1
for name in test_qk_norm_rope_store test_silu_mul; do
    RIG_TEST_FILTER=$name timeout 120 "$bundle/run.sh" tests/test_cuda_ops >"$out/$name.log" 2>&1
    echo "$name rc=$? $(grep -cE 'nmse' "$out/$name.log") comparisons; worst: $(grep -oE 'nmse [0-9.e+-]+' "$out/$name.log" | sort -g -k2 | tail -1)"
done
old=(RIG_QKRS_TOKEN=0 RIG_SILU_UNROLL=1)
for round in 1 2; do
    for model in $models; do
        for mode in old new; do
            envs=()
            [[ $mode == old ]] && envs=("${old[@]}")
            log=$out/ops-$model-$mode-$round.txt
            env "${envs[@]}" timeout 120 "$bundle/run.sh" bin/rig bench ops prefill --backend cuda \
                --model "$model" --repeats 10 --out none >"$log" 2>&1
            echo "== $model $mode round $round (rc $?)"
            grep -E "^  (qk_norm_rope_store|silu_mul|add_rms_norm|attention_prefill) |^  +8192 +0 |^  sum" "$log"
        done
    done
done
