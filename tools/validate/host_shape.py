#!/usr/bin/env python3
"""host_shape.py — is the engine's measured host time affine in the host model's counts?

A check of the model's shape (hal/host_model.h) on measured runs, never a fit for the
simulator: the held-out runs must not calibrate it (docs/simulator.md, "The engine's host time,
fitted"). For each run and each term (schedule, prepare, process, loop) it rebuilds from
/steps and /requests the counts the engine charges the term for, fits them by least squares
(the run's own coefficients, printed but used for nothing) and prints the residuals, beside
the residuals of the model before this one (schedule a constant, prepare and process per
request, no loop term), so the gain of each added count shows.

Counts rebuilt from a results file (the engine reports them exactly only in memory):
  requests, tokens  the step's batch_size and tokens;
  new               requests whose first_step is the step;
  finished          requests whose finish_step is the step (process);
  loop              the batch processed last before the launch: step k-1 without overlap,
                    k-2 with it; released: that step's finished requests (the runs stop at a
                    fixed length, known at launch, so a request leaves the decode set when its
                    last step launches and is released when that step is processed);
                    submitted: the step's new requests that arrived after t = 0 (with
                    prefill_first an arrival is scheduled in the next launch).
Loop windows with a wait for an arrival are left out: those of a step whose requests are all
new with none running before it, and with overlap the next step's too (its window spans that
launch: the engine's host_loop_idle, which the results file does not hold).

usage: host_shape.py MEASURED_DIR_OR_FILES...   (.h5 results files, or folders holding them)
Prints one table a run.
"""
import os
import sys

import h5py
import numpy as np

TERMS = ["schedule", "prepare", "process", "loop"]
FACTORS = ["base", "requests", "tokens", "new", "finished"]
COLUMN = {"schedule": "host_schedule", "prepare": "host_prepare", "process": "host_process",
          "loop": "host_loop"}


def counts(path):
    """The run's steps, per term the counts (n, 5) and the measured ns (n), and a mask of the
    rows that measure the term."""
    f = h5py.File(path, "r")
    s = f["steps"][:]
    q = f["requests"][:]
    overlap = int(f.attrs.get("overlap", 1))
    n = len(s)
    pos = {int(k): i for i, k in enumerate(s["index"])}
    new = np.zeros(n)
    late = np.zeros(n)
    fin = np.zeros(n)
    for r in q:
        i = pos.get(int(r["first_step"]))
        if i is not None:
            new[i] += 1
            late[i] += r["arrival"] > 0
        i = pos.get(int(r["finish_step"]))
        if i is not None:
            fin[i] += 1
    R = s["batch_size"].astype(float)
    T = s["tokens"].astype(float)
    one = np.ones(n)
    x = {t: np.c_[one, R, T, new, 0 * one] for t in ("schedule", "prepare")}
    x["process"] = np.c_[one, R, T, new, fin]
    lag = 2 if overlap else 1
    shift = lambda v: np.r_[np.zeros(lag), v[:-lag]]
    x["loop"] = np.c_[shift(one), shift(R), shift(T), late, shift(fin)]
    # a wait for an arrival: the step's requests all new, and none running before it
    first = q["first_step"]
    last = q["finish_step"]
    running = np.array([np.sum((first < k) & (last >= k)) for k in s["index"]])
    waited = (running == 0) & (new == R)
    if overlap:  # the next launch's window spans this one (no processing between them)
        waited = waited | np.r_[False, waited[:-1]]
    y = {t: s[COLUMN[t]] * 1e9 for t in TERMS}
    use = {t: np.ones(n, bool) for t in TERMS}
    use["loop"] = (np.arange(n) >= lag) & ~waited
    return s, x, y, use, overlap


def fit(x, y):
    c, *_ = np.linalg.lstsq(x, y, rcond=None)
    return c, y - x @ c


def before(term, x):
    """The counts of the model before this one: schedule a constant, prepare and process per
    request, loop nothing."""
    keep = {"schedule": [0], "prepare": [1], "process": [1], "loop": []}[term]
    return x[:, keep]


def report(path):
    s, x, y, use, overlap = counts(path)
    print(f"== {path}: {len(s)} steps, overlap {overlap}")
    print(f"   {'term':9s} {'rows':>5s} {'mean us':>8s} | {'med |r| us':>10s} {'rel':>5s}"
          f" {'mean |r|':>8s} | before: {'med |r|':>7s} {'rel':>5s} | coefficients ns "
          + " ".join(FACTORS))
    for t in TERMS:
        m = use[t]
        xm, ym = x[t][m], y[t][m]
        live = [j for j in range(5) if np.any(xm[:, j] != 0)]
        c = np.zeros(5)
        cl, r = fit(xm[:, live], ym)
        c[live] = cl
        xb = before(t, xm)
        rb = ym - (xb @ fit(xb, ym)[0] if xb.shape[1] else 0)
        scale = np.maximum(np.abs(ym), 1.0)
        print(f"   {t:9s} {m.sum():5d} {ym.mean() / 1e3:8.2f} | {np.median(np.abs(r)) / 1e3:10.2f}"
              f" {np.median(np.abs(r) / scale):5.2f} {np.mean(np.abs(r)) / 1e3:8.2f} |"
              f" {np.median(np.abs(rb)) / 1e3:15.2f} {np.median(np.abs(rb) / scale):5.2f} | "
              + " ".join(f"{v:.4g}" for v in c))


def binned(path, term, by, edges):
    """The measured term's mean and median in bins of a count, with the affine fit's mean."""
    s, x, y, use, _ = counts(path)
    m = use[term]
    j = FACTORS.index(by)
    xm, ym = x[term][m], y[term][m]
    live = [i for i in range(5) if np.any(xm[:, i] != 0)]
    c, r = fit(xm[:, live], ym)
    pred = xm[:, live] @ c
    print(f"   {term} by {by}: bin, rows, measured mean / median us, fitted mean us")
    for lo, hi in zip(edges[:-1], edges[1:]):
        b = (xm[:, j] >= lo) & (xm[:, j] < hi)
        if b.sum() == 0:
            continue
        print(f"     [{lo:5g}, {hi:5g}) {b.sum():5d}  {ym[b].mean() / 1e3:7.2f} /"
              f" {np.median(ym[b]) / 1e3:7.2f}   {pred[b].mean() / 1e3:7.2f}")


def main(argv):
    paths = []
    for a in argv:
        if os.path.isdir(a):
            for root, _, files in sorted(os.walk(a)):
                paths += [os.path.join(root, n) for n in sorted(files)
                          if n.endswith(".h5") and n != "bench.h5"]
        else:
            paths.append(a)
    if not paths:
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    for p in paths:
        report(p)
        binned(p, "prepare", "requests", [1, 2, 8, 32, 64, 128, 192, 257])
        binned(p, "loop", "requests", [1, 2, 8, 32, 64, 128, 192, 257])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
