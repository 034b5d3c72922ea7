#!/usr/bin/env bash
# prefill_final.sh — one device call to confirm a wgmma prefill default against the old kernel
# (RIG_PREFILL_WGMMA_VARIANT=0): test_attention_prefill on each candidate configuration in
# parallel (the test's simulator is one CPU thread; the machine has 16), then the candidates
# timed interleaved (order rotated each round) in the same call and binary, the prefill step,
# head dim 64, and ncu's stall breakdown of the old and the default kernel. At most 8 files
# come back from $OUT: summary.txt, logs.tgz (every log), and the two ncu reports. From the
# directory holding the bundle:
#   BUNDLE=bundle-prefill bundle-prefill/prefill_final.sh | tee $OUT/summary.txt
# Configurations are "label:ENV=VALUE,ENV=VALUE" words (label alone: the build's default);
# TESTS, TIMED and PREFILLS override the lists below.
set -uo pipefail
out=${OUT:-/tmp/prefill_final}
logs=/tmp/prefill_final_logs
mkdir -p "$out" "$logs"
b=${BUNDLE:-bundle-prefill}
budget=${BUDGET:-280}
rounds=${ROUNDS:-6}
v=RIG_PREFILL_WGMMA_VARIANT
st=RIG_PREFILL_WGMMA_STAGES
tests=${TESTS:-new stages3:$st=3 v5:$v=5 v47:$v=47 v47s3:$v=47,$st=3}
timed=${TIMED:-old:$v=0 new stages3:$st=3 v5:$v=5 v47:$v=47 v47s3:$v=47,$st=3}
prefills=${PREFILLS:-old:$v=0 new stages3:$st=3 v47:$v=47}
fits() { ((SECONDS + $1 < budget)); }
label() { echo "${1%%:*}"; }
envs() { [[ $1 == *:* ]] && echo "${1#*:}" | tr ',' ' '; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw \
    --format=csv,noheader
nvidia-smi | grep -E "Driver Version" | head -1
for c in "old:RIG_PREFILL_WGMMA_VARIANT=0" new; do
    echo "== smoke $(label $c) ($SECONDS s)"
    env $(envs $c) timeout 30 "$b/run.sh" bin/rig bench attention --backend cuda --quick \
        --repeats 5 --out none 2>&1 | grep -E "prefill|rror" | head -2
done
echo "== test_attention_prefill, in parallel: $tests ($SECONDS s)"
pids=()
for c in $tests; do
    env $(envs $c) RIG_TEST_FILTER=test_attention_prefill timeout 200 "$b/run.sh" \
        tests/test_cuda_ops >"$logs/test-$(label $c).log" 2>&1 &
    pids+=($!)
done
i=0
for c in $tests; do
    wait "${pids[$i]}"
    rc=$?
    log=$logs/test-$(label $c).log
    echo "$(label $c): rc=$rc $(grep -cE '^\[  PASSED  \]' "$log") passed," \
        "$(grep -cE 'FAIL|mismatch' "$log") fail lines ($SECONDS s)"
    grep -E "FAIL|nmse" "$log" | head -3
    i=$((i + 1))
done
# attn LABEL MODEL ENV... : one `rig bench attention` process, its prefill row printed
attn() {
    local name=$1 model=$2
    shift 2
    env "$@" timeout 40 "$b/run.sh" bin/rig bench attention --backend cuda --model "$model" \
        --repeats 20 --out none >"$logs/attn-$name.log" 2>&1
    printf '%-22s %s\n' "$name" "$(grep -E '^  prefill' "$logs/attn-$name.log" | head -1)"
}
echo "== 8192 causal chunk, Qwen3-0.6B heads (16/8, D 128): rounds of $timed"
set -- $timed
n=$#
for round in $(seq 1 "$rounds"); do
    for k in $(seq 0 $((n - 1))); do
        fits 20 || break 2
        i=$(((k + round - 1) % n + 1))
        c=${!i}
        attn "$(label $c).$round" qwen3-0.6b $(envs $c)
    done
done
echo "== prefill step ($SECONDS s)"
for c in $prefills; do
    fits 20 || break
    env $(envs $c) RIG_BENCH_PREFILL_CHUNK=8192 timeout 60 "$b/run.sh" bin/rig bench prefill \
        --backend cuda --repeats 5 --out none >"$logs/prefill-$(label $c).log" 2>&1
    echo "-- $(label $c)"
    grep -E "^ +[0-9]+ +[0-9]+ |chunk  prefix" "$logs/prefill-$(label $c).log" | head -3
done
echo "== 8192 causal chunk, Llama-3.2-1B heads (32/8, D 64) ($SECONDS s)"
for round in 1 2; do
    for c in "old:RIG_PREFILL_WGMMA_VARIANT=0" new; do
        fits 15 || break 2
        attn "d64.$(label $c).$round" llama-3.2-1b $(envs $c)
    done
done
# ncu_one LABEL ENV... : stall breakdown of the first wgmma prefill kernel (the 8192 chunk)
ncu_one() {
    local name=$1
    shift
    env "$@" timeout 60 ncu --clock-control none -k regex:rig__wg_kernel -c 1 \
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
        --section SourceCounters --section MemoryWorkloadAnalysis --section Occupancy \
        --section LaunchStats -f -o "$out/ncu-$name" \
        "$b/run.sh" bin/rig bench attention --backend cuda --repeats 1 --out none \
        >"$logs/ncu-$name.run.log" 2>&1
    ncu -i "$out/ncu-$name.ncu-rep" --page details >"$logs/ncu-$name.txt" 2>&1
    ncu -i "$out/ncu-$name.ncu-rep" --page raw --csv >"$logs/ncu-$name.raw.csv" 2>&1
    ncu -i "$out/ncu-$name.ncu-rep" --page source --csv --print-source sass \
        >"$logs/ncu-$name.sass.csv" 2>&1
    echo "== ncu $name ($SECONDS s)"
    grep -E "Duration|Compute \(SM\) Throughput|L2 Cache Throughput|Issue Slots Busy" \
        "$logs/ncu-$name.txt" | head -4
    grep -E "Eligible Warps|No Eligible|Registers Per" "$logs/ncu-$name.txt" | head -4
    python3 - "$logs/ncu-$name.raw.csv" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next((r for r in rows if any("stalled" in x for x in r)), None)
if head is None:
    print("no stall metrics"); sys.exit(0)
values = rows[-1]
pairs = []
for name, value in zip(head, values):
    if "issue_stalled" in name and name.endswith("per_warp_active.pct"):
        try: pairs.append((float(value.replace(",", "")), name))
        except ValueError: pass
if not pairs:
    for name, value in zip(head, values):
        if "issue_stalled" in name and "ratio" in name:
            try: pairs.append((float(value.replace(",", "")), name))
            except ValueError: pass
for v, name in sorted(pairs, reverse=True)[:12]:
    print("%10.2f  %s" % (v, name))
EOF
}
fits 25 && ncu_one old RIG_PREFILL_WGMMA_VARIANT=0
fits 25 && ncu_one new
tar -C "$logs" -czf "$out/logs.tgz" .
echo "== end ($SECONDS s)"
