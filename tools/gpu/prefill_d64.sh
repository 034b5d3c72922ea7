#!/usr/bin/env bash
# prefill_d64.sh — one device call for the wgmma prefill kernel at head dim 64 (Llama-3.2-1B:
# 32 query / 8 KV heads): a smoke run of each path (a pipeline deadlock shows in seconds),
# test_attention_prefill on every path, then the mma.sync (RIG_PREFILL_WGMMA=0) and wgmma
# kernels timed in turn, same call, same binary. On the GPU machine:
#   BUNDLE=bundle tools/gpu/prefill_d64.sh [tests|attn|variants|prefill|all]...  (logs under $OUT)
set -uo pipefail
out=${OUT:-/tmp/prefill_d64}
logs=/tmp/prefill_d64_logs
mkdir -p "$out" "$logs"
bundle=${BUNDLE:-bundle}
model=${MODEL:-llama-3.2-1b}
want() { [[ " $WHAT " == *" all "* ]] || [[ " $WHAT " == *" $1 "* ]]; }
WHAT=" ${*:-all} "
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
# attn LABEL ENV... : one `rig bench attention` run at $model, its prefill row printed
attn() {
    local label=$1
    shift
    env "$@" timeout 40 "$bundle/run.sh" bin/rig bench attention --backend cuda --model "$model" \
        --repeats 20 --out none >"$logs/attn-$label.log" 2>&1
    printf '%-30s %s\n' "$label" "$(grep -E '^  prefill' "$logs/attn-$label.log" | head -1)"
}
for w in 0 1 2; do
    echo "== smoke: RIG_PREFILL_WGMMA=$w attention --quick $model"
    RIG_PREFILL_WGMMA=$w timeout 30 "$bundle/run.sh" bin/rig bench attention --backend cuda \
        --model "$model" --quick --repeats 5 --out none 2>&1 | grep -E "prefill|rror" | tail -2
done
if want tests; then
    echo "== test_attention_prefill (every path)"
    start=$(date +%s)
    RIG_TEST_FILTER=test_attention_prefill timeout ${TEST_TIMEOUT:-150} "$bundle/run.sh" \
        tests/test_cuda_ops >"$out/test.log" 2>&1
    echo "rc=$? in $(($(date +%s) - start)) s"
    grep -E "^\[|FAIL|fail|error|NaN" "$out/test.log" | tail -12
fi
if want attn; then
    for round in 1 2; do
        attn "8192.old.$round" RIG_PREFILL_WGMMA=0
        attn "8192.new.$round" RIG_PREFILL_WGMMA=1
        attn "512.old.$round" RIG_PREFILL_WGMMA=0 RIG_BENCH_ATTENTION_PREFILL=512
        attn "512.new.$round" RIG_PREFILL_WGMMA=1 RIG_BENCH_ATTENTION_PREFILL=512
    done
fi
if want variants; then
    attn "8192.new-3stages" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_STAGES=3
    attn "8192.new-nopingpong" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_PINGPONG=0
    attn "8192.new-nopersistent" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_PERSISTENT=0
    attn "512.new-2consumers" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_CONSUMERS=2 \
        RIG_BENCH_ATTENTION_PREFILL=512
    attn "512.new-3stages" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_STAGES=3 \
        RIG_BENCH_ATTENTION_PREFILL=512
fi
if want wg3; then
    for round in 1 2 3; do
        attn "8192.old.$round" RIG_PREFILL_WGMMA=0
        attn "8192.new-2wg.$round" RIG_PREFILL_WGMMA=1
        attn "8192.new-3wg.$round" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_CONSUMERS=3
        attn "8192.new-3wg-3st.$round" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_CONSUMERS=3 \
            RIG_PREFILL_WGMMA_STAGES=3
        attn "8192.new-2wg-3st.$round" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_STAGES=3
        attn "512.old.$round" RIG_PREFILL_WGMMA=0 RIG_BENCH_ATTENTION_PREFILL=512
        attn "512.new-auto.$round" RIG_PREFILL_WGMMA=1 RIG_BENCH_ATTENTION_PREFILL=512
        attn "512.new-3wg.$round" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_CONSUMERS=3 \
            RIG_BENCH_ATTENTION_PREFILL=512
        attn "2048.new-auto.$round" RIG_PREFILL_WGMMA=1 RIG_BENCH_ATTENTION_PREFILL=2048
        attn "2048.new-3wg.$round" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_CONSUMERS=3 \
            RIG_BENCH_ATTENTION_PREFILL=2048
    done
fi
if want prefill; then
    # PREFILL_PATHS: words WGMMA:CONSUMERS (RIG_PREFILL_WGMMA, RIG_PREFILL_WGMMA_CONSUMERS)
    for w in ${PREFILL_PATHS:-0: 1:}; do
        RIG_PREFILL_WGMMA=${w%%:*} RIG_PREFILL_WGMMA_CONSUMERS=${w#*:} \
            RIG_BENCH_PREFILL_CHUNK=${CHUNK:-8192} timeout 60 "$bundle/run.sh" bin/rig bench \
            prefill --backend cuda --model "$model" --out none >"$out/prefill-${w/:/-}.log" 2>&1
        echo "== bench prefill $model wgmma:consumers $w"
        grep -E "^ +[0-9]+ +[0-9]+ |MFU|chunk|rror" "$out/prefill-${w/:/-}.log" | head -6
    done
fi
