#!/usr/bin/env python3
"""prefill_steps.py — the prefill steps of `rig bench online` results files, taken apart.

For each results file (DIR/online-*.h5, docs/results.md), in the order given (the order the
runs were made in one process matters: a token count is "new" the first time any run of the
list meets it):
  - prefill steps (phase prefill): device duration (start to end event) and host launch time
    (schedule + prepare + issue), p50 / p90 / p99 / max in ms, split by whether the step's
    token count was new to the process or seen before;
  - TTFT p50 / p99 of the run's requests (ms).
Usage: tools/gpu/prefill_steps.py A.h5 [B.h5 ...]
"""
import sys

import h5py
import numpy as np


def pct(values):
    if len(values) == 0:
        return "n=0"
    p = np.percentile(values, [50, 90, 99, 100])
    return "n=%3d p50 %6.2f p90 %6.2f p99 %6.2f max %6.2f" % (len(values), *p)


def main(paths):
    seen = set()
    for path in paths:
        with h5py.File(path, "r") as f:
            steps = f["steps"][:]
            requests = f["requests"][:]
            commit = f.attrs.get("git_commit", b"?")
        prefill = steps[steps["phase"] == 0]
        new = np.zeros(len(prefill), dtype=bool)
        for i, tokens in enumerate(prefill["tokens"]):
            new[i] = int(tokens) not in seen
            seen.add(int(tokens))
        ttft = requests["ttft"] * 1e3
        print("%s (commit %s): TTFT p50 %.2f p99 %.2f max %.2f ms" %
              (path, commit if isinstance(commit, str) else commit.decode(),
               *np.percentile(ttft, [50, 99, 100])))
        for label, mask in (("all ", np.ones(len(prefill), bool)), ("new ", new), ("seen", ~new)):
            rows = prefill[mask]
            print("  prefill %s duration  %s" % (label, pct(rows["duration"] * 1e3)))
            print("  prefill %s host issue %s" % (label, pct(rows["host_launch"] * 1e3)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
