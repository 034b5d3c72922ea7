#!/bin/sh
# generate_mpi.sh RIG N [rig generate options] — `rig generate --ranks mpi` under `mpirun -n N`
# prints the same output and writes the same --logits-out bytes as the same command with the
# ranks as threads. Exit 77 (ctest SKIP) without mpirun or a build without OpenMPI.
set -u
rig=$1 n=$2
shift 2
command -v mpirun >/dev/null 2>&1 || { echo "generate_mpi.sh: SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$rig" generate "$@" --logits-out "$dir/threads.f32" >"$dir/threads.txt" || exit 1
timeout 120 mpirun --oversubscribe -n "$n" "$rig" generate "$@" --logits-out "$dir/mpi.f32" \
    --ranks mpi >"$dir/mpi.txt" 2>"$dir/log"
rc=$?
cat "$dir/mpi.txt" "$dir/log"
if grep -q "this build has no OpenMPI" "$dir/log"; then echo "generate_mpi.sh: SKIP"; exit 77; fi
[ "$rc" -eq 0 ] || { echo "generate_mpi.sh: mpirun -n $n exited $rc"; exit 1; }
cmp "$dir/threads.txt" "$dir/mpi.txt" && cmp "$dir/threads.f32" "$dir/mpi.f32" || exit 1
echo "generate_mpi.sh: $n processes: the same tokens and logits"
