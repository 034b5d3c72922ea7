#!/bin/sh
# ranks_mpi.sh BINARY N MODE — runs tests/mpi/ranks_mpi.c under mpirun with N processes and
# checks the outcome of MODE (see there) and that the job ended within 60 s (nothing hangs).
set -u
bin=$1 n=$2 mode=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp)
start=$(date +%s)
timeout 60 mpirun --oversubscribe -n "$n" "$bin" "$mode" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
fail() { echo "ranks_mpi.sh: $mode with $n processes: $*"; rm -f "$out"; exit 1; }
[ "$rc" -ne 124 ] || fail "hung (killed after 60 s)"
case $mode in
ok)    [ "$rc" -eq 0 ] && grep -q "^PASS ok" "$out" || fail "exit $rc" ;;
stall) grep -q "^PASS stall" "$out" || fail "no timeout reported (exit $rc)"
       [ "$rc" -ne 0 ] || fail "the job should end with an error"
       [ "$elapsed" -lt 30 ] || fail "took $elapsed s: the stalled rank was waited for" ;;
kill)  [ "$rc" -ne 0 ] || fail "a killed process went unnoticed"
       grep -q "exited on signal 9" "$out" || fail "mpirun did not name the killed process" ;;
late)  [ "$rc" -ne 0 ] || fail "a process that never joined went unnoticed"
       grep -q "not every process of 2 joined within 1000 ms" "$out" || fail "no message"
       [ "$elapsed" -lt 15 ] || fail "took $elapsed s: the late process was waited for" ;;
esac
rm -f "$out"
echo "ranks_mpi.sh: $mode with $n processes: ok (${elapsed} s)"
