#!/usr/bin/env bash
# round_check.sh — the end-of-round device call: the whole tree on one GPU, the new kernels
# against the old ones (their switches) in the same binary, the numbers the issues ask for,
# then the simulator's op table swept with the kernels it describes (issue 17) and, as time
# allows, the held-out runs. Every stage is bounded and the call stays under RIG_DEADLINE
# seconds (default 540); at most 8 files come back (the device tool's limit), so logs are packed.
#   tests    bundle/run-gpu-tests.sh (test_cuda_ops, test_engine_cuda, quickstart), with
#   hf       tools/gpu/hf_check.sh (transformers at Qwen3-0.6B shape) running beside it;
#   ab       old vs new, interleaved, two rounds: rig bench $AB_BENCH (default: attention
#            decode prefill) for Qwen3-0.6B, then attention decode prefill for Llama-3.2-1B and
#            attention decode for Qwen3-8B (head groups of 4), under each of $AB_VARIANTS
#            (default "0 default"): 0 is the kernels the last rounds replaced
#            (RIG_PREFILL_WGMMA_VARIANT=0 RIG_DECODE_V2=0 RIG_DECODE_WIDE=0 RIG_DECODE_TC=0
#            RIG_GEMV_PERSISTENT=0), default the defaults, anything else a comma-separated
#            list of VAR=VALUE settings;
#   offline  rig bench offline for Qwen3-0.6B, Llama-3.2-1B and Qwen3-8B;
#   profile  rig profile --backend cuda --out $TABLE.h5 (TABLE: h100 by default, h200 on an
#            H200; the op table with its calibration stage, the host model fitted on this
#            host: tools/validate/host-calibrate.sh does that alone, with the held-out
#            runs and their predictions; committing h100.h5, give sim/profiles/h100.yaml
#            `multiprocessors: 132` too: its decode points then split into the register path's
#            and the tensor-core kernel's, docs/simulator.md);
#   decode   rig bench decode for Qwen3-0.6B, Llama-3.2-1B, Qwen3-8B and Qwen3-32B (batch 1 to
#            256 x 512 and 2048: the step times docs/performance.md keeps);
#   timeline `rig bench decode` for Qwen3-0.6B and Qwen3-8B under the kernel timeline
#            (tools/gpu/ktrace: each kernel's start and end inside the replayed graphs), taken
#            apart by ktrace_steps.py (graphs in capture order: the bench's rows in turn);
#   heldout  tools/validate/heldout.sh (packed as heldout.tar.gz), only if 200 s are left, with
#            RIG_ISSUE_TRACE=1: each run's log ends with its host time of each issue by kind
#            (hal/issue_trace.h), beside what the op table's host times predict.
# On the GPU machine, from the repository:  BUNDLE=bundle-main OUT=$OUT tools/gpu/round_check.sh
# STAGES picks stages; BACKEND=sim RIG=build/rig rehearses ab, offline, profile and heldout here.
set -uo pipefail
bundle=${BUNDLE:-bundle-main}
out=${OUT:-/tmp/round}
stages=" ${STAGES:-tests hf ab offline profile timeline heldout} "
deadline=${RIG_DEADLINE:-540}
table=${TABLE:-h100}
backend=${BACKEND:-cuda}
read -r -a rig <<<"${RIG:-$bundle/run.sh bin/rig}"
work=/tmp/round-work
rm -rf "$work"
mkdir -p "$out" "$work/logs"
summary=$out/summary.txt
say() { echo "$*" | tee -a "$summary"; }
has() { [[ $stages == *" $1 "* ]]; }
left() { echo $((deadline - SECONDS)); }
say "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1)"
say "$("${rig[@]}" --version | head -1)"
if has hf; then
    (OUT=$work/logs/hf RIG_BUNDLE=$PWD/$bundle timeout 240 tools/gpu/hf_check.sh \
        >"$work/logs/hf.txt" 2>&1; echo "rc=$?" >>"$work/logs/hf.txt") &
    hf_pid=$!
fi
if has tests; then
    RIG_LOG_DIR=$work/logs/tests timeout 330 "$bundle/run-gpu-tests.sh" >"$work/logs/tests.txt" 2>&1
    say "== tests rc=$? ($SECONDS s)"
    grep -E "PASS|FAIL|SKIP|total" "$work/logs/tests.txt" | tee -a "$summary"
fi
if has hf; then
    wait "$hf_pid"
    say "== hf_check ($SECONDS s)"
    grep -E "PASS|FAIL|rc=" "$work/logs/hf.txt" | tail -4 | tee -a "$summary"
fi
bench() { # NAME VARIANT ARGS...: one rig bench run into OUT/bench-NAME.txt; VARIANT 0 runs
    # the kernels this round replaced (their switches), default the defaults, anything else
    # is a comma-separated list of VAR=VALUE settings
    local name=$1 old=()
    case $2 in
    0) old=(RIG_PREFILL_WGMMA_VARIANT=0 RIG_DECODE_V2=0 RIG_DECODE_WIDE=0 RIG_DECODE_TC=0
        RIG_GEMV_PERSISTENT=0) ;;
    default) ;;
    *) IFS=, read -r -a old <<<"$2" ;;
    esac
    shift 2
    env "${old[@]}" timeout 150 "${rig[@]}" bench "$@" --backend "$backend" --out none \
        >"$out/bench-$name.txt" 2>&1
    say "== bench $name rc=$? ($SECONDS s)"
}
read -r -a ab_variants <<<"${AB_VARIANTS:-0 default}"
read -r -a ab_bench <<<"${AB_BENCH:-attention decode prefill}"
if has ab; then
    for round in 1 2; do
        for v in "${ab_variants[@]}"; do
            say "-- variant $v"
            bench "qwen06-$v-$round" "$v" "${ab_bench[@]}" --repeats 10
            grep -hE "^  (prefill|decode) |^ +(1|8|64|256) +(512|2048) |^ +8192 +0 " \
                "$out/bench-qwen06-$v-$round.txt" | tee -a "$summary"
        done
    done
    for v in "${ab_variants[@]}"; do
        say "-- variant $v (Llama-3.2-1B)"
        bench "llama-$v" "$v" attention prefill decode --model llama-3.2-1b --repeats 5
        grep -hE "^  decode |^ +(1|64|256) +512 |^ +8192 +0 " "$out/bench-llama-$v.txt" |
            tee -a "$summary"
        say "-- variant $v (Qwen3-8B)"
        bench "qwen8b-$v" "$v" attention decode --model qwen3-8b --repeats 5
        grep -hE "^  decode |^ +(1|64|256) +(512|2048) " "$out/bench-qwen8b-$v.txt" |
            tee -a "$summary"
    done
fi
if has offline; then
    # SM clock and power once a second beside the runs (docs/simulator.md: prefill steps slow
    # down over back-to-back steps; is it the clock?), summarised per model below.
    for model in qwen3-0.6b llama-3.2-1b qwen3-8b; do
        dmon=
        if command -v nvidia-smi >/dev/null; then
            nvidia-smi dmon -i 0 -s pc -d 1 >"$work/logs/dmon-offline-$model.txt" 2>&1 &
            dmon=$!
        fi
        bench "offline-$model" default offline --model "$model" --overlap on
        [[ -n $dmon ]] && kill "$dmon" 2>/dev/null
        grep -hE "output tok/s|of its floor" "$out/bench-offline-$model.txt" | tee -a "$summary"
        [[ -n $dmon ]] && awk '/^# *gpu/ { for (i = 2; i <= NF; i++) col[$i] = i - 1 }
            $1 ~ /^[0-9]+$/ && ("pclk" in col) { n++; p += $col["pwr"]; c = $col["pclk"];
                s += c; if (m == "" || c < m) m = c }
            END { if (n) printf "   dmon: %d s, power %.0f W, SM clock %.0f MHz (min %d)\n",
                  n, p / n, s / n, m }' "$work/logs/dmon-offline-$model.txt" |
            tee -a "$summary"
    done
fi
if has profile; then
    timeout 120 "${rig[@]}" profile --backend "$backend" --out "$out/$table.h5" \
        >"$work/logs/profile.txt" 2>&1
    say "== profile rc=$? ($SECONDS s)"
    grep -E "^rig profile: (host|[0-9]+ points)" "$work/logs/profile.txt" | tee -a "$summary"
fi
if has decode; then
    for model in qwen3-0.6b llama-3.2-1b qwen3-8b qwen3-32b; do
        bench "decode-$model" default decode --model "$model" --repeats 5
        grep -hE "^ +(1|8|64|256) +(512|2048) " "$out/bench-decode-$model.txt" | tee -a "$summary"
    done
fi
if has timeline && [[ $backend == cuda && -f $bundle/lib/libktrace.so ]]; then
    for model in qwen3-0.6b qwen3-8b; do
        CUDA_INJECTION64_PATH=$PWD/$bundle/lib/libktrace.so \
            KTRACE_OUT=$work/logs/ktrace-$model.csv timeout 120 "${rig[@]}" bench decode \
            --model "$model" --backend cuda --repeats 5 --out none \
            >"$work/logs/ktrace-$model.txt" 2>&1
        say "== timeline $model rc=$? ($SECONDS s)"
        grep -E "^ +(1|8|64|256) +(512|2048) |ktrace:" "$work/logs/ktrace-$model.txt" |
            tee -a "$summary"
        python3 "$bundle/ktrace_steps.py" "$work/logs/ktrace-$model.csv" 2>&1 | tee -a "$summary"
    done
elif has timeline; then
    say "timeline: skipped (backend $backend or no libktrace.so in the bundle)"
fi
if has heldout && (($(left) > 200)); then
    RIG_ISSUE_TRACE=1 timeout $(($(left) - 20)) tools/validate/heldout.sh "$backend" \
        "$work/heldout" "${rig[*]}" \
        2>&1 | tee -a "$summary"
    tar -C "$work" -czf "$out/heldout.tar.gz" heldout
    say "heldout.tar.gz $(du -h "$out/heldout.tar.gz" | cut -f1) ($SECONDS s)"
elif has heldout; then
    say "heldout: skipped, $(left) s left"
fi
tar -C "$work" -czf "$out/logs.tar.gz" logs
benches=$(cd "$out" && ls bench-*.txt 2>/dev/null)
if [[ -n $benches ]]; then # none when no stage ran rig bench
    tar -C "$out" -czf "$work/bench.tar.gz" $benches && rm -f "$out"/bench-*.txt &&
        mv "$work/bench.tar.gz" "$out/bench.tar.gz"
fi
say "done ($SECONDS s)"
