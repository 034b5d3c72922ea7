#!/usr/bin/env bash
# prefill_wgmma.sh — one device call for issue 18's wgmma prefill attention: a smoke run (a
# pipeline deadlock shows in seconds), correctness of every kernel path, then the old
# (RIG_PREFILL_WGMMA=0) and new kernels and their variants timed in turn in the same call, same
# binary. On the GPU machine, from the directory holding the bundle (tools/bundle.sh):
#   BUNDLE=bundle tools/gpu/prefill_wgmma.sh [tests|bench|short|prefill|all]...  (logs under $OUT)
# Prints a short summary last.
set -uo pipefail
out=${OUT:-/tmp/prefill_wgmma}
logs=/tmp/prefill_wgmma_logs
mkdir -p "$out" "$logs"
bundle=${BUNDLE:-bundle}
rig() { timeout "$1" "$bundle/run.sh" bin/rig "${@:2}"; }
want() { [[ " $* " == *" all "* ]] || [[ " $WHAT " == *" $1 "* ]]; }
WHAT=" ${*:-all} "
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
# attn LABEL ENV... : one `rig bench attention` run, its prefill row printed
attn() {
    local label=$1
    shift
    env "$@" "$bundle/run.sh" bin/rig bench attention --backend cuda --repeats 20 --out none \
        >"$logs/attn-$label.log" 2>&1 &
    local pid=$!
    (sleep 40 && kill $pid 2>/dev/null) &
    wait $pid
    printf '%-34s %s\n' "$label" "$(grep -E '^  prefill' "$logs/attn-$label.log" | head -1)"
}
for w in 1 2; do
    echo "== smoke: RIG_PREFILL_WGMMA=$w attention --quick"
    RIG_PREFILL_WGMMA=$w rig 30 bench attention --backend cuda --quick --repeats 5 --out none \
        2>&1 | grep -E "prefill|rror" | tail -3
done
if want tests; then
    echo "== test_attention_prefill (every path)"
    RIG_TEST_FILTER=test_attention_prefill timeout 150 "$bundle/run.sh" tests/test_cuda_ops \
        >"$out/test.log" 2>&1
    echo "rc=$?"
    grep -E "^\[|FAIL|fail|error|NaN" "$out/test.log" | tail -12
fi
if want tests3; then
    echo "== test_attention_prefill, 3 stages"
    RIG_PREFILL_WGMMA_STAGES=3 RIG_TEST_FILTER=test_attention_prefill timeout 150 \
        "$bundle/run.sh" tests/test_cuda_ops >"$out/test3.log" 2>&1
    echo "rc=$?"
    grep -E "FAIL|fail|error|NaN|PASSED" "$out/test3.log" | tail -6
fi
if want bench; then
    for round in 1 2 3; do
        attn "8192.old.$round" RIG_PREFILL_WGMMA=0
        attn "8192.new.$round" RIG_PREFILL_WGMMA=1
        attn "8192.new-3stages.$round" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_STAGES=3
        attn "8192.new-nopersistent.$round" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_PERSISTENT=0
        attn "8192.new-3st-nopersistent.$round" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_STAGES=3 \
            RIG_PREFILL_WGMMA_PERSISTENT=0
    done
fi
# ncu LABEL ENV... : the first wgmma prefill kernel of a `rig bench attention` run, profiled
ncu_one() {
    local label=$1
    shift
    env "$@" timeout 90 ncu --clock-control none -k regex:rig__wg_kernel -c 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
        --section ComputeWorkloadAnalysis --section SchedulerStats --section Occupancy \
        --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio|sm__pipe_tensor.*cycles_active.avg.pct_of_peak_sustained_active" \
        "$bundle/run.sh" bin/rig bench attention --backend cuda --repeats 1 --out none \
        >"$out/ncu-$label.txt" 2>&1
    echo "== ncu $label"
    grep -E "Duration|SM\) Throughput|L2 Cache Throughput|Issue Slots|pipe_tensor" \
        "$out/ncu-$label.txt" | head -8
    grep -E "issue_stalled" "$out/ncu-$label.txt" | sort -k3 -g -r | head -8
}
if want ncu; then
    ncu_one new RIG_PREFILL_WGMMA=1
    ncu_one new-3stages RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_STAGES=3
    cuobjdump -sass "$bundle/bin/rig" 2>/dev/null | awk '/Function : .*rig__wg_kernel/{p=1} \
        /Function : / && !/rig__wg_kernel/{p=0} p' | gzip >"$out/wg.sass.gz"
fi
if want short; then
    for n in 300 512 900; do
        attn "$n.old" RIG_PREFILL_WGMMA=0 RIG_BENCH_ATTENTION_PREFILL=$n
        attn "$n.new" RIG_PREFILL_WGMMA=1 RIG_BENCH_ATTENTION_PREFILL=$n
        attn "$n.new-1consumer" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_CONSUMERS=1 \
            RIG_BENCH_ATTENTION_PREFILL=$n
        attn "$n.new-2consumers" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_CONSUMERS=2 \
            RIG_BENCH_ATTENTION_PREFILL=$n
        attn "$n.new-nopersistent" RIG_PREFILL_WGMMA=1 RIG_PREFILL_WGMMA_PERSISTENT=0 \
            RIG_BENCH_ATTENTION_PREFILL=$n
    done
fi
if want prefill; then
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
