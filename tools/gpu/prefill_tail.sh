#!/usr/bin/env bash
# prefill_tail.sh — issue 18's lone-request prefill tail on the GPU machine, in one call of
# about 4 minutes (3.5-3.7 on the H100), with one binary: GEMM plans on (the default) against
# cublasGemmEx's own per-shape choice (RIG_CUDA_GEMM_PLANS=0, the behaviour before), each in a
# fresh process so every first use is seen again.
#
#   1. test_cuda_ops' host-issue timing of prefill GEMMs at token counts new to the process
#      and then seen, plans off and on ($OUT/first-use-{off,on}.log);
#   2. the GPU tests: test_cuda_ops and test_engine_cuda (the latter when the bundle has it:
#      cp build-bundle/tests/test_engine_cuda into the bundle's tests/);
#   3. `rig bench online --rates 4 --online-overlap both` (128 requests, overlap on first, then
#      off, as the issue measured it), plans off then on: per-step host and device times in
#      $OUT/online-{off,on}/online-4*.h5 (/steps: host_launch, duration);
#   4. `rig bench decode` plans off then on (decode steps use the plans too: no regression),
#      and the wall time of `rig generate` (one 8-token prompt, one token) plans off and on;
#   5. everything but the logs' tails packed into $OUT/prefill-tail.tgz; a summary printed last.
#
# On the GPU machine, from a bundle made here (tools/bundle.sh /work/main/bundle-NAME):
#     run(command="OUT=$OUT bundle-NAME/prefill_tail.sh", carry=["bundle-NAME"])
# Environment: RIG_TAIL_RATES (4), RIG_TAIL_REQUESTS (128), RIG_TAIL_DECODE (1: step 4 on).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$PWD/prefill-tail-out}
work=$out/work
mkdir -p "$work"
rates=${RIG_TAIL_RATES:-4}
requests=${RIG_TAIL_REQUESTS:-128}
run() { "$here/run.sh" "$@"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
    --format=csv >"$work/smi.csv" 2>&1
run bin/rig --version >>"$work/smi.csv" 2>&1

for plans in 0 1; do
    name=off
    if [[ $plans == 1 ]]; then name=on; fi
    RIG_CUDA_GEMM_PLANS=$plans RIG_TEST_FILTER=test_gemm_first_use_timing \
        run tests/test_cuda_ops >"$work/first-use-$name.log" 2>&1
done

# Cold start to first token (the issue's `time rig generate`), plans off and on: the plans'
# start-up cost (heuristic queries and warm runs) shows here.
for plans in 0 1; do
    start=$(date +%s%N)
    RIG_CUDA_GEMM_PLANS=$plans run bin/rig generate --backend cuda --preset qwen3-0.6b \
        --prompt-ids 1,2,3,4,5,6,7,8 --max-tokens 1 >/dev/null 2>&1
    echo "cold start plans=$plans: $((($(date +%s%N) - start) / 1000000)) ms" >>"$work/cold.txt"
done

status=0
run tests/test_cuda_ops >"$work/test_cuda_ops.log" 2>&1 || status=1
if [[ -x $here/tests/test_engine_cuda ]]; then
    run tests/test_engine_cuda >"$work/test_engine_cuda.log" 2>&1 || status=1
fi

for plans in 0 1; do
    name=off
    if [[ $plans == 1 ]]; then name=on; fi
    RIG_CUDA_GEMM_PLANS=$plans run bin/rig bench online --backend cuda --rates "$rates" \
        --requests "$requests" --online-overlap both --out "$work/online-$name" \
        >"$work/online-$name.txt" 2>&1 || status=1
    if [[ ${RIG_TAIL_DECODE:-1} == 1 ]]; then
        RIG_CUDA_GEMM_PLANS=$plans run bin/rig bench decode --backend cuda --repeats 10 \
            --out none >"$work/decode-$name.txt" 2>&1 || status=1
    fi
done

tar czf "$out/prefill-tail.tgz" -C "$work" .
echo "== device"
cat "$work/smi.csv"
for f in "$work"/first-use-*.log; do
    echo "== $(basename "$f")"
    grep -E "GEMM plans|round" "$f"
done
cat "$work/cold.txt"
echo "== tests"
grep -E "PASSED|FAILED|ERROR" "$work/test_cuda_ops.log" | tail -3
if [[ -f $work/test_engine_cuda.log ]]; then
    grep -E "PASSED|FAILED|greedy" "$work/test_engine_cuda.log" | tail -4
fi
for name in off on; do
    echo "== online, plans $name"
    sed -n '/^serving/,/^  floor/p' "$work/online-$name.txt" | grep -E "run|online"
    if [[ -f $work/decode-$name.txt ]]; then
        echo "== decode, plans $name"
        sed -n '/^decode step/,/^  floor/p' "$work/decode-$name.txt" | grep -vE "floor"
    fi
done
exit $status
