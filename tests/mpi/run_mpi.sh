#!/bin/sh
# run_mpi.sh RIG N SCENARIO [rig run options] — `rig run --ranks mpi` under `mpirun -n N` (one
# TP rank per process) writes byte for byte the HDF5 results of the same run with the ranks
# as threads of one process. Exit 77 (ctest SKIP) without mpirun or a build without OpenMPI.
set -u
rig=$1 n=$2 scenario=$3
shift 3
command -v mpirun >/dev/null 2>&1 || { echo "run_mpi.sh: SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$rig" run --quiet --out "$dir/threads.h5" "$@" "$scenario" || { echo "threads run failed"; exit 1; }
start=$(date +%s)
timeout 300 mpirun --oversubscribe -n "$n" "$rig" run --quiet --out "$dir/mpi.h5" "$@" \
    --ranks mpi "$scenario" >"$dir/log" 2>&1
rc=$?
cat "$dir/log"
if grep -q "this build has no OpenMPI" "$dir/log"; then echo "run_mpi.sh: SKIP"; exit 77; fi
[ "$rc" -eq 0 ] || { echo "run_mpi.sh: mpirun -n $n exited $rc"; exit 1; }
cmp "$dir/threads.h5" "$dir/mpi.h5" || { echo "run_mpi.sh: the results differ"; exit 1; }
echo "run_mpi.sh: $n processes: the same $(wc -c <"$dir/mpi.h5") bytes ($(( $(date +%s) - start )) s)"
