#!/usr/bin/env bash
# prefill_variants.sh — one device call for issue 18's wgmma prefill attention variants
# (RIG_PREFILL_WGMMA_VARIANT, the kernel's bits: 1 lean producer gather, 2 tree reductions in
# the softmax, 4 skip O's rescale where no max changed, 8 rescale at FA3's place): a smoke run
# (a pipeline deadlock shows in seconds), test_attention_prefill on a variant, then variants
# timed interleaved in the same call, same binary, ncu's stall breakdown, the prefill step.
# Everything under a time budget (BUDGET seconds, steps that would not fit are skipped). On the
# GPU machine, from the directory holding the bundle:
#   BUNDLE=bundle-prefill TEST_V=15 VARIANTS="0 1 15" NCU_V="0 15" ROUNDS=3 \
#       bundle-prefill/prefill_variants.sh          (logs under $OUT)
set -uo pipefail
out=${OUT:-/tmp/prefill_variants}
mkdir -p "$out"
b=${BUNDLE:-bundle-prefill}
budget=${BUDGET:-280}
variants=${VARIANTS:-0 15}
rounds=${ROUNDS:-2}
fits() { ((SECONDS + $1 < budget)); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw \
    --format=csv,noheader
nvidia-smi | grep -E "Driver Version" | head -1
# attn LABEL ENV... : one `rig bench attention` process, its prefill row printed
attn() {
    local label=$1
    shift
    env "$@" timeout 40 "$b/run.sh" bin/rig bench attention --backend cuda --repeats 20 \
        --out none >"$out/attn-$label.log" 2>&1
    printf '%-22s %s\n' "$label" "$(grep -E '^  prefill' "$out/attn-$label.log" | head -1)"
}
for v in ${SMOKE_V:-0 15}; do
    echo "== smoke V=$v ($SECONDS s)"
    RIG_PREFILL_WGMMA_VARIANT=$v timeout 30 "$b/run.sh" bin/rig bench attention --backend cuda \
        --quick --repeats 5 --out none 2>&1 | grep -E "prefill|rror" | tail -2
done
# TEST_V: variants tested in turn until one passes (the later ones are fallbacks)
for v in ${TEST_V:-15}; do
    echo "== test_attention_prefill V=$v ($SECONDS s)"
    RIG_PREFILL_WGMMA_VARIANT=$v RIG_TEST_FILTER=test_attention_prefill timeout 150 \
        "$b/run.sh" tests/test_cuda_ops >"$out/test-v$v.log" 2>&1
    rc=$?
    echo "rc=$rc ($SECONDS s)"
    grep -E "^\[|FAIL|fail|rror|NaN" "$out/test-v$v.log" | tail -6
    ((rc == 0)) && break
done
# ncu_one V : the stall breakdown of the first wgmma prefill kernel (8192 chunk), variant V
ncu_one() {
    local rep=$out/ncu-v$1
    RIG_PREFILL_WGMMA_VARIANT=$1 timeout 80 ncu --clock-control none -k regex:rig__wg_kernel -c 1 \
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
        --section SourceCounters --section MemoryWorkloadAnalysis -f -o "$rep" \
        "$b/run.sh" bin/rig bench attention --backend cuda --repeats 1 --out none \
        >"$rep.run.log" 2>&1
    ncu -i "$rep.ncu-rep" --page details >"$rep.txt" 2>&1
    ncu -i "$rep.ncu-rep" --page raw --csv >"$rep.raw.csv" 2>&1
    ncu -i "$rep.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip >"$rep.sass.csv.gz"
    echo "== ncu V=$1 ($SECONDS s)"
    grep -E "Duration|Compute \(SM\) Throughput|L2 Cache Throughput|Issue Slots Busy|Eligible Warps|Active Warps Per|No Eligible" \
        "$rep.txt" | head -9
    grep -oE "smsp__average_warps?_issue_stalled_[a-z_]+_per_issue_active\.ratio\",\"[^\"]*\",\"[0-9.]+" \
        "$rep.raw.csv" | sed 's/smsp__average_warps*_issue_stalled_//;s/_per_issue_active.ratio//' |
        awk -F'","' '{print $3, $1}' | sort -g -r | head -12
}
ncu_v=(${NCU_V:-0 15})
ncu_i=0
for round in $(seq 1 "$rounds"); do
    # rotate the order each round so no variant always runs first
    set -- $variants
    n=$#
    for k in $(seq 0 $((n - 1))); do
        i=$(((k + round - 1) % n + 1))
        v=${!i}
        fits 12 || break
        attn "8192.v$v.$round" RIG_PREFILL_WGMMA_VARIANT="$v"
    done
    if ((ncu_i < ${#ncu_v[@]})) && fits 45; then
        ncu_one "${ncu_v[$ncu_i]}"
        ncu_i=$((ncu_i + 1))
    fi
done
while ((ncu_i < ${#ncu_v[@]})) && fits 45; do
    ncu_one "${ncu_v[$ncu_i]}"
    ncu_i=$((ncu_i + 1))
done
for v in ${PREFILL_V:-0 15}; do
    fits 40 || break
    RIG_PREFILL_WGMMA_VARIANT=$v RIG_BENCH_PREFILL_CHUNK=8192 timeout 60 "$b/run.sh" bin/rig \
        bench prefill --backend cuda --repeats 5 --out none >"$out/prefill-v$v.log" 2>&1
    echo "== bench prefill 8192 V=$v ($SECONDS s)"
    grep -E "^ +[0-9]+ +[0-9]+ |MFU|chunk" "$out/prefill-v$v.log" | head -6
done
for v in ${D64_V:-0 15}; do
    fits 12 || break
    RIG_PREFILL_WGMMA_VARIANT=$v timeout 40 "$b/run.sh" bin/rig bench attention --backend cuda \
        --model llama-3.2-1b --repeats 20 --out none >"$out/attn-d64-v$v.log" 2>&1
    printf '%-22s %s\n' "d64.v$v" "$(grep -E '^  prefill' "$out/attn-d64-v$v.log" | head -1)"
done
echo "== end ($SECONDS s)"
