#!/bin/sh
# run_kill.sh RIG N RANK SCENARIO [rig run options] — kill -9 the process of TP rank RANK in
# the middle of `mpirun -n N rig run --ranks mpi`: every process must be gone, and mpirun must
# have exited with an error naming the killed process, within 30 s (nothing hangs). Exit 77
# (ctest SKIP) without mpirun.
set -u
rig=$1 n=$2 victim=$3 scenario=$4
shift 4
command -v mpirun >/dev/null 2>&1 || { echo "run_kill.sh: SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mpirun --oversubscribe -n "$n" "$rig" run --quiet --progress --out none "$@" --ranks mpi \
    "$scenario" >"$dir/log" 2>&1 &
job=$!
fail() {
    cat "$dir/log"
    kill -9 "$job" 2>/dev/null
    if grep -q "this build has no OpenMPI" "$dir/log"; then echo "run_kill.sh: SKIP"; exit 77; fi
    echo "run_kill.sh: $*"
    exit 1
}
# Mid-run: process 0 has printed its first progress line (step 0), and 1 s more has passed
# (the caller gives a run of thousands of steps: ten seconds or more).
for _ in $(seq 600); do grep -q "requests done" "$dir/log" && break; sleep 0.1; done
grep -q "requests done" "$dir/log" || fail "no progress within 60 s"
sleep 1
kill -0 "$job" 2>/dev/null || fail "the run ended before the kill"
pid=""
for p in $(pgrep -P "$job"); do
    rank=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [ "$rank" = "$victim" ] && pid=$p
done
[ -n "$pid" ] || fail "no process of rank $victim"
ranks=$(pgrep -P "$job" | tr '\n' ' ')
kill -9 "$pid"
killed=$(date +%s)
for _ in $(seq 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
kill -0 "$job" 2>/dev/null && fail "mpirun still runs 30 s after rank $victim was killed"
wait "$job"
rc=$?
# The others are being ended by mpirun: give them 10 s to be gone (zombies count as gone).
alive() { [ -d "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
for p in $ranks; do
    for _ in $(seq 100); do alive "$p" || break; sleep 0.1; done
    alive "$p" && fail "process $p ($(tr '\0' ' ' <"/proc/$p/cmdline")) outlived the job"
done
cat "$dir/log"
[ "$rc" -ne 0 ] || fail "mpirun exited 0"
# OpenMPI 4 (Debian) writes it on one line; OpenMPI 5 (prterun) may break it across two.
tr -s '\n ' '  ' <"$dir/log" | grep -q "exited on signal 9" ||
    fail "mpirun did not name the killed process"
echo "run_kill.sh: rank $victim of $n killed: every process ended in $(( $(date +%s) - killed )) s"
