#!/bin/sh
# scenario_hashes.sh — every simulator scenario's HDF5 results, byte for byte.
#
# Runs each scenario named in tests/scenario_hashes.txt with `rig run --quiet`, from the source
# directory (the file names the scenario by name and content hash, whatever the path) and with
# RIG_RESULTS_GIT_COMMIT=pinned (so the git_commit attribute does not change with every
# commit), and compares the sha256 of each results file with the list. A difference means a
# change of behaviour: a refactor must leave every hash as it is; a change meant to alter
# outputs regenerates the list and says why in its commit:
#     tests/scenario_hashes.sh build/rig --update
# Usage: scenario_hashes.sh RIG [--update]; exits 0 when every hash matches.
set -eu
rig=$(realpath "$1")
update=${2:-}
cd "$(dirname "$0")/.."
list=tests/scenario_hashes.txt
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export RIG_RESULTS_GIT_COMMIT=pinned
failed=0
new="$out/list"
: > "$new"
while read -r expected scenario; do
    name=$(echo "$scenario" | tr / _)
    if ! "$rig" run --quiet --out "$out/$name.h5" "$scenario" > "$out/$name.log" 2>&1; then
        echo "FAIL $scenario: rig run failed:"
        cat "$out/$name.log"
        failed=1
        continue
    fi
    actual=$(sha256sum "$out/$name.h5" | cut -d' ' -f1)
    echo "$actual  $scenario" >> "$new"
    if [ "$actual" != "$expected" ]; then
        echo "DIFF $scenario: $actual, expected $expected"
        failed=1
    else
        echo "same $scenario"
    fi
done < "$list"
if [ "$update" = "--update" ]; then
    cp "$new" "$list"
    echo "wrote $list"
    exit 0
fi
exit $failed
