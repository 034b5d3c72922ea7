#!/usr/bin/env bash
# host-calibrate.sh — one device call: the op table swept with its calibration stage (the
# engine's host time fitted on this machine's host: docs/simulator.md, "The engine's host time,
# fitted"), the held-out runs measured on the same host, then both predicted on the simulator
# with the committed table and with the new one, and compared (`rig compare`).
#
# On the GPU machine, from the repository, with a bundle (tools/bundle.sh):
#   BUNDLE=bundle-main OUT=$OUT tools/validate/host-calibrate.sh
# env: BUNDLE (default bundle-main), OUT (default /tmp/host-calibrate), TABLE (default h200:
#      the profile predicted and the name of the new table), RIG (default "$BUNDLE/run.sh
#      bin/rig"; RIG=build/rig BACKEND=sim rehearses it without a GPU), RIG_DEADLINE (default
#      540 s; held-out runs only if 200 s are left after the sweep).
# Writes under OUT (at most 8 files, the device tool's limit):
#   $TABLE.h5            the op table: points, the host calls' medians and means, the fitted host
#                        model (least squares; least absolute deviations as ..._median_ns):
#                        commit it as sim/profiles/$TABLE.h5 once the comparison holds
#   host-calibration.h5  the calibration run's records (a `rig run` results file; its /steps
#                        host columns are what was fitted)
#   summary.txt          the device, the sweep's host calls and host model (with each term's
#                        rows and median residual), the held-out runs' timings, and each
#                        prediction's duration and host lines, committed table then new
#   heldout.tar.gz       the held-out runs as measured (tools/validate/predict.sh takes it)
#   compare.tar.gz       every `rig compare` output: committed/*.txt and new/*.txt (the held-out
#                        runs, and calibration.txt: the calibration run predicted by the
#                        simulator's own calibration stage under each table)
#   logs.tar.gz          the sweep's and the predictions' logs
set -uo pipefail
bundle=${BUNDLE:-bundle-main}
out=${OUT:-/tmp/host-calibrate}
table=${TABLE:-h200}
backend=${BACKEND:-cuda}
deadline=${RIG_DEADLINE:-540}
read -r -a rig <<<"${RIG:-$bundle/run.sh bin/rig}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/../..
work=/tmp/host-calibrate-work
rm -rf "$work"
mkdir -p "$out" "$work/logs" "$work/compare"
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
say "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1)"
say "$(lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\))' | tr -s ' ' | paste -sd ';')"
say "$("${rig[@]}" --version | head -1)"

# 1. the sweep and the calibration stage
timeout 180 "${rig[@]}" profile --backend "$backend" --profile "$table" --out "$out/$table.h5" \
    --host-out "$out/host-calibration.h5" >"$work/logs/profile.txt" 2>&1
say "== profile rc=$? ($SECONDS s)"
grep -E "^rig profile: (host|[0-9]+ points)" "$work/logs/profile.txt" | tee -a "$summary"

# 2. the held-out runs on this host (none of them is fitted: docs/simulator.md, issue 17 item 6)
if ((deadline - SECONDS > 200)); then
    RIG_ISSUE_TRACE=1 timeout $((deadline - SECONDS - 60)) "$here/heldout.sh" "$backend" \
        "$work/heldout" "${rig[*]}" 2>&1 | tee -a "$summary"
    tar -C "$work" -czf "$out/heldout.tar.gz" heldout
else
    say "heldout: skipped, $((deadline - SECONDS)) s left"
fi

# 3. predictions with the committed table and with the new one (its profile: the committed
#    one with op_table pointed at the new file), each compared with the measurements: the
#    calibration run, then the held-out runs
printf '#!/bin/sh\nexec %s "$@"\n' "${rig[*]}" >"$work/rig"
chmod +x "$work/rig"
sed "s|^op_table: .*|op_table: $out/$table.h5|" "$root/sim/profiles/$table.yaml" \
    >"$work/$table-new.yaml"
for which in committed new; do
    profile=$table
    [[ $which == new ]] && profile=$work/$table-new.yaml
    mkdir -p "$work/compare/$which"
    # the calibration run itself, predicted: the simulator's own calibration stage (the same
    # workload, timing only) under this table, paired step by step with the measured one
    if [[ -f $out/host-calibration.h5 ]] &&
        "$work/rig" profile --backend sim --profile "$profile" --out "$work/cal-$which-table.h5" \
            --host-out "$work/cal-$which.h5" >"$work/logs/calibration-$which.txt" 2>&1; then
        "$work/rig" compare "$out/host-calibration.h5" "$work/cal-$which.h5" \
            >"$work/compare/$which/calibration.txt" 2>&1
    fi
    if [[ -d $work/heldout ]]; then
        "$here/predict.sh" "$work/heldout" "$work/pred-$which" "$profile" "$work/rig" \
            >"$work/logs/predict-$which.txt" 2>&1
        cp "$work/pred-$which"/cmp/*.txt "$work/compare/$which/" 2>/dev/null
    fi
    say "== predicted with the $which table ($SECONDS s)"
    for f in "$work/compare/$which"/*.txt; do
        say "-- $(basename "$f" .txt)"
        grep -E "^(duration|host|decode |prefill )" "$f" |
            tee -a "$summary"
    done
done
tar -C "$work" -czf "$out/compare.tar.gz" compare
tar -C "$work" -czf "$out/logs.tar.gz" logs
say "done ($SECONDS s)"
