#!/usr/bin/env bash
# round_check.sh — the end-of-round device call: the whole tree on one GPU, then the numbers
# the issues ask for, then the simulator's op table and held-out runs measured on the same
# machine, so that the table is swept with the kernels it describes (issue 17). Every stage is
# bounded; at most 8 files come back (the device tool's limit), so logs are packed.
#   1. bundle/run-gpu-tests.sh (test_cuda_ops, test_engine_cuda, quickstart on cuda);
#   2. tools/gpu/hf_check.sh (transformers at Qwen3-0.6B shape);
#   3. rig bench floors prefill attention decode offline, Qwen3-0.6B; prefill offline for
#      Llama-3.2-1B and offline for Qwen3-8B (tables in bench-*.txt);
#   4. rig profile --backend cuda --out h100.h5 (the op table);
#   5. tools/validate/heldout.sh cuda (the measured runs, packed as heldout.tar.gz).
# On the GPU machine, from the repository:  BUNDLE=bundle-main OUT=$OUT tools/gpu/round_check.sh
# STAGES (default "tests hf bench profile heldout") picks stages; BACKEND=sim RIG=build/rig
# rehearses the bench, profile and heldout stages here (timing-only predictions).
set -uo pipefail
bundle=${BUNDLE:-bundle-main}
out=${OUT:-/tmp/round}
stages=" ${STAGES:-tests hf bench profile heldout} "
work=/tmp/round-work
mkdir -p "$out" "$work/logs"
backend=${BACKEND:-cuda}
read -r -a rig <<<"${RIG:-$bundle/run.sh bin/rig}"
summary=$out/summary.txt
say() { echo "$*" | tee -a "$summary"; }
has() { [[ $stages == *" $1 "* ]]; }
say "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1)"
say "$("${rig[@]}" --version | head -1)"
if has tests; then
    RIG_LOG_DIR=$work/logs/tests timeout 300 "$bundle/run-gpu-tests.sh" >"$work/logs/tests.txt" 2>&1
    say "== tests rc=$?"
    grep -E "PASS|FAIL|SKIP|total" "$work/logs/tests.txt" | tee -a "$summary"
fi
if has hf; then
    OUT=$work/logs/hf RIG_BUNDLE=$PWD/$bundle timeout 240 tools/gpu/hf_check.sh \
        >"$work/logs/hf.txt" 2>&1
    say "== hf_check rc=$?"
    tail -6 "$work/logs/hf.txt" | tee -a "$summary"
fi
if has bench; then
    bench() { # NAME ARGS...
        local name=$1
        shift
        timeout 200 "${rig[@]}" bench "$@" --backend "$backend" --out none >"$out/bench-$name.txt" 2>&1
        say "== bench $name rc=$?"
    }
    bench qwen06 floors prefill attention decode offline --repeats 10
    bench llama prefill offline --model llama-3.2-1b --repeats 5
    bench qwen8b offline --model qwen3-8b --overlap on
    grep -hE "^  (prefill|decode) .*(of_floor|TFLOP)|^ +8192 +0 |output tok/s|of floor" \
        "$out"/bench-*.txt | head -30 | tee -a "$summary"
fi
if has profile; then
    timeout 120 "${rig[@]}" profile --backend "$backend" --out "$out/h100.h5" >"$work/logs/profile.txt" 2>&1
    say "== profile rc=$?"
    tail -3 "$work/logs/profile.txt" | tee -a "$summary"
fi
if has heldout; then
    timeout 330 tools/validate/heldout.sh "$backend" "$work/heldout" "${rig[*]}" 2>&1 | tee -a "$summary"
    tar -C "$work" -czf "$out/heldout.tar.gz" heldout
    say "heldout.tar.gz $(du -h "$out/heldout.tar.gz" | cut -f1)"
fi
tar -C "$work" -czf "$out/logs.tar.gz" logs
