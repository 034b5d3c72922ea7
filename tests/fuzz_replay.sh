#!/bin/sh
# fuzz_replay.sh RIG FIRST SEEDS — every replay line `rig fuzz` prints reproduces its seed.
#
# Runs seeds FIRST .. FIRST+SEEDS-1 with a planted bug (RIG_PLANT=2: a tree page freed, so
# many seeds fail), then runs each printed "replay:" command and checks that it reports the
# same seed with the same verdict line. FIRST above 2^53 catches seeds that lose digits on
# their way through a double. Exit 0 when every replay matches and at least one seed failed.
set -eu
rig=$1
first=$2
seeds=$3
export RIG_PLANT=2
out=$("$rig" fuzz --first "$first" --seeds "$seeds" --equivalence-every 0 --quiet 2>/dev/null ||
    true)
replays=$(printf '%s\n' "$out" | sed -n 's/^  replay: rig fuzz \(.*\) (with RIG_PLANT set)$/\1/p')
[ -n "$replays" ] || { echo "no seed failed: nothing to replay"; exit 1; }
printf '%s\n' "$replays" | while read -r args; do
    seed=$(printf '%s\n' "$args" | sed -n 's/^--seed \([0-9]*\) .*/\1/p')
    want=$(printf '%s\n' "$out" | grep "^seed $seed: FAIL")
    # shellcheck disable=SC2086 # the replay's words, as printed
    got=$("$rig" fuzz $args 2>/dev/null | grep "^seed " | head -n 1 || true)
    if [ "$got" != "$want" ]; then
        echo "replay of seed $seed: got '$got', expected '$want'"
        exit 1
    fi
    echo "seed $seed replayed: $got"
done
