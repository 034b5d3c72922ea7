#!/usr/bin/env python3
"""report.py — plots from rig results files (HDF5, docs/results.md) to PNG.

    python3 tools/report/report.py out/quickstart.h5                 # -> out/quickstart.png
    python3 tools/report/report.py a.h5 b.h5 -o compare.png          # overlay runs
    python3 tools/report/report.py --compare measured.h5 predicted.h5   # rig compare, plotted

One figure, four panels, per run:
  batch size per step and tokens per step, against the step's start on the device timeline;
  KV pages in use (locked by running requests, owned outside the cache, cached and evictable)
  against time; and the latency CDFs of TTFT, TPOT, ITL and E2E (sglang.bench_serving
  definitions, completed requests only). With several files the panels overlay the runs, which
  is how one compares policies or cache types on the same scenario.

A fleet run (a scenario with `cluster:`; the file has /fleet) gets the fleet's figure instead:
per replica, its load (live requests) each time the router sent it a request, against the
arrival time; its cumulative prefix-cache hit rate (cached / prompt tokens of the requests
routed there) against time, with the final rate per replica; and the fleet's latency CDFs.

With --compare and two files (a measured run, then its prediction) the figure is rig compare's
instead: every step paired with the predicted step that ran the same requests (phase, tokens,
uids), predicted against measured duration; the distribution of step errors per phase; both
runs' step durations over time; and the TTFT / TPOT / E2E CDFs of the two runs overlaid.

Needs h5py and matplotlib (Debian: python3-h5py, python3-matplotlib). Prints the summary of
each run too. Exit status 2 on a file that is not a rig results file.
"""
import argparse
import os
import sys

import h5py
import numpy as np

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

COMPLETED = ("length", "stop")


def text(value):
    """An HDF5 string attribute as str (h5py gives str or bytes depending on the type)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def load(path):
    """The parts of a results file the plots need, as numpy arrays."""
    with h5py.File(path, "r") as f:
        if text(f.attrs.get("format", "")) != "rig-results":
            raise ValueError(f"{path}: not a rig results file (no format=rig-results)")
        reasons = h5py.check_enum_dtype(f["requests"].dtype["finish_reason"])
        names = {v: k for k, v in reasons.items()} if reasons else {}
        run = {
            "path": path,
            "label": f"{text(f.attrs['scenario'])} ({os.path.basename(path)})",
            "attrs": {k: f.attrs[k] for k in f.attrs},
            "requests": f["requests"][:],
            "steps": f["steps"][:],
            "token_time": f["tokens/time"][:],
            "summary": {k: float(f["summary"][k][()]) for k in f["summary"]},
        }
        run["step_requests"] = f["step_requests"][:]
        if "fleet" in f:
            run["routes"] = f["fleet/routes"][:]
            run["replicas"] = f["fleet/replicas"][:]
            run["router"] = text(f["fleet"].attrs["router"])
        run["reason"] = np.array([names.get(int(v), "?") for v in run["requests"]["finish_reason"]])
    return run


def latencies(run):
    """TTFT, TPOT, ITL and E2E samples in ms over completed requests."""
    req = run["requests"]
    done = np.isin(run["reason"], COMPLETED)
    ttft = req["ttft"][done] * 1e3
    e2e = req["e2e"][done] * 1e3
    out = req["output_len"][done]
    many = out > 1
    tpot = (e2e[many] - ttft[many]) / (out[many] - 1)
    itl = []
    for offset, n in zip(req["token_offset"][done], out):
        if n > 1:
            itl.append(np.diff(run["token_time"][offset:offset + n]) * 1e3)
    itl = np.concatenate(itl) if itl else np.array([])
    return {"TTFT": ttft, "TPOT": tpot, "ITL": itl, "E2E": e2e}


def plot_cdf(ax, samples, label, style):
    if len(samples) == 0:
        return
    x = np.sort(samples)
    y = np.arange(1, len(x) + 1) / len(x)
    ax.step(x, y, where="post", label=label, linestyle=style)


def figure(runs, out_path):
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    (ax_batch, ax_pages), (ax_lat, ax_e2e) = axes
    styles = ["-", "--", ":", "-."]
    ax_tokens = ax_batch.twinx()
    for i, run in enumerate(runs):
        steps, style = run["steps"], styles[i % len(styles)]
        start = steps["start"]
        phases = h5py.check_enum_dtype(steps.dtype["phase"]) or {}
        decode = steps["phase"] != phases.get("prefill", 0)
        ax_batch.plot(start[decode], steps["batch_size"][decode], style, drawstyle="steps-post",
                      label=f"decode batch size — {run['label']}")
        ax_tokens.plot(start, steps["tokens"], ".", markersize=2, alpha=0.5, color="tab:gray",
                       label=f"tokens per step — {run['label']}")
        total = int(run["attrs"].get("pages_total", 0))
        in_use = total - steps["pages_free"] if total else steps["pages_used"]
        ax_pages.plot(start, in_use, style, drawstyle="steps-post",
                      label=f"in use (incl. cached) — {run['label']}")
        ax_pages.plot(start, steps["pages_locked"] + steps["pages_used"], style,
                      drawstyle="steps-post", label=f"held by requests — {run['label']}")
        lat = latencies(run)
        for name in ("TTFT", "TPOT", "ITL"):
            plot_cdf(ax_lat, lat[name], f"{name} — {run['label']}", style)
        plot_cdf(ax_e2e, lat["E2E"], f"E2E — {run['label']}", style)
    ax_batch.set(title="Batch size (decode steps) and tokens per step (dots)",
                 xlabel="device time (s)", ylabel="requests in the batch")
    ax_tokens.set_ylabel("tokens computed")
    ax_pages.set(title="KV pages", xlabel="device time (s)", ylabel="pages")
    ax_lat.set(title="Latency CDF", xlabel="ms", ylabel="fraction of samples", xscale="log")
    ax_e2e.set(title="End-to-end latency CDF", xlabel="ms", ylabel="fraction of requests")
    for ax in (ax_pages, ax_lat, ax_e2e):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    ax_batch.grid(True, alpha=0.3)
    ax_batch.legend(fontsize=7, loc="upper left")
    ax_tokens.legend(fontsize=7, loc="upper right")
    fig.suptitle(", ".join(text(r["attrs"].get("device", "")) for r in runs[:1]) +
                 f" — {len(runs)} run(s)")
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)


def fleet_figure(runs, out_path):
    """Load and cache hit rate per replica (docs/results.md, /fleet), and the latency CDFs."""
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    (ax_load, ax_hit), (ax_bar, ax_lat) = axes
    styles = ["-", "--", ":", "-."]
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        req, routes, style = run["requests"], run["routes"], styles[i % len(styles)]
        label = f"{run['router']} — {run['label']}"
        for r in run["replicas"]["index"]:
            mine = routes["replica"] == r
            arrival = req["arrival"][mine]
            ax_load.plot(arrival, routes["load"][mine] + 1, style, drawstyle="steps-post",
                         label=f"replica {r} — {label}")
            hit = np.cumsum(req["cached_len"][mine]) / np.maximum(np.cumsum(req["input_len"][mine]), 1)
            ax_hit.plot(arrival, hit * 100, style, label=f"replica {r} — {label}")
        index = run["replicas"]["index"]
        ax_bar.bar(index + i * width, run["replicas"]["cache_hit_rate"] * 100, width,
                   label=label)
        lat = latencies(run)
        for name in ("TTFT", "TPOT", "E2E"):
            plot_cdf(ax_lat, lat[name], f"{name} — {label}", style)
    ax_load.set(title="Load per replica when the router sent it a request",
                xlabel="arrival (s)", ylabel="live requests (incl. the new one)")
    ax_hit.set(title="Prefix-cache hit rate per replica (cumulative)", xlabel="arrival (s)",
               ylabel="cached / prompt tokens (%)")
    ax_bar.set(title="Cache hit rate per replica (whole run)", xlabel="replica", ylabel="%")
    ticks = runs[0]["replicas"]["index"]
    ax_bar.set_xticks(ticks + width * (len(runs) - 1) / 2, [str(r) for r in ticks])
    ax_lat.set(title="Latency CDFs (fleet)", xlabel="ms", ylabel="fraction", xscale="log")
    save(fig, axes, f"{text(runs[0]['attrs'].get('device', ''))} — fleet of "
                    f"{len(runs[0]['replicas'])}, {len(runs)} run(s)", out_path, 6)


def save(fig, axes, title, out_path, legend_size=7):
    """Grid and legend on every panel, the title, then the PNG."""
    for ax in axes.flat:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=legend_size, loc="best")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)


def step_keys(run):
    """Per step: (phase, tokens, uids) — what `rig compare` pairs steps by."""
    steps, uids = run["steps"], run["step_requests"]
    return [(int(s["phase"]), int(s["tokens"]),
             tuple(uids[s["request_offset"]:s["request_offset"] + s["request_count"]]))
            for s in steps]


def pair_steps(measured, predicted):
    """Index pairs (measured, predicted): the first unpaired predicted step of the same key."""
    free = {}
    for j, key in enumerate(step_keys(predicted)):
        free.setdefault(key, []).append(j)
    pairs = []
    for i, key in enumerate(step_keys(measured)):
        if free.get(key):
            pairs.append((i, free[key].pop(0)))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def compare_figure(measured, predicted, out_path):
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    (ax_scatter, ax_hist), (ax_time, ax_lat) = axes
    pairs = pair_steps(measured, predicted)
    ms, ps = measured["steps"], predicted["steps"]
    phases = h5py.check_enum_dtype(ms.dtype["phase"]) or {"prefill": 0, "decode": 1, "mixed": 2}
    for name, value in phases.items():
        sel = pairs[ms["phase"][pairs[:, 0]] == value] if len(pairs) else pairs
        if len(sel) == 0:
            continue
        m = ms["duration"][sel[:, 0]] * 1e3
        p = ps["duration"][sel[:, 1]] * 1e3
        error = (p - m) / m * 100
        ax_scatter.loglog(m, p, ".", markersize=3, label=f"{name} ({len(sel)} steps)")
        ax_hist.hist(np.clip(error, -50, 50), bins=100, histtype="step",
                     label=f"{name}: median |err| {np.median(np.abs(error)):.1f} %, "
                           f"p90 {np.percentile(np.abs(error), 90):.1f} %")
    lo = max(1e-3, min(ms["duration"].min(), ps["duration"].min()) * 1e3)
    hi = max(ms["duration"].max(), ps["duration"].max()) * 1e3
    ax_scatter.plot([lo, hi], [lo, hi], "k:", linewidth=1)
    ax_scatter.set(title="Paired steps: predicted against measured", xlabel="measured (ms)",
                   ylabel="predicted (ms)")
    ax_hist.set(title="Step error (predicted − measured) / measured, clipped to ±50 %",
                xlabel="%", ylabel="steps")
    for run, style in ((measured, "."), (predicted, "x")):
        ax_time.plot(run["steps"]["start"], run["steps"]["duration"] * 1e3, style,
                     markersize=2, label=run["label"])
    ax_time.set(title="Step durations over time", xlabel="device time (s)", ylabel="ms",
                yscale="log")
    for run, style in ((measured, "-"), (predicted, "--")):
        lat = latencies(run)
        for name in ("TTFT", "TPOT", "E2E"):
            plot_cdf(ax_lat, lat[name], f"{name} — {run['label']}", style)
    ax_lat.set(title="Latency CDFs", xlabel="ms", ylabel="fraction", xscale="log")
    save(fig, axes, f"measured: {text(measured['attrs'].get('device', ''))} — predicted: "
                    f"{text(predicted['attrs'].get('device', ''))}", out_path)


def print_summary(run):
    s = run["summary"]
    print(f"{run['label']}: {s['completed']:.0f} completed in {s['duration']:.3f} s, "
          f"{s['output_throughput']:.1f} output tok/s; TTFT p99 {s['ttft_p99'] * 1e3:.3f} ms, "
          f"TPOT p99 {s['tpot_p99'] * 1e3:.3f} ms, ITL p99 {s['itl_p99'] * 1e3:.3f} ms, "
          f"E2E p99 {s['e2e_p99'] * 1e3:.3f} ms")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", help="rig results files (.h5)")
    parser.add_argument("-o", "--out", help="PNG to write (default: the first file's .png)")
    parser.add_argument("--compare", action="store_true",
                        help="two files, measured then predicted: plot rig compare's pairing")
    args = parser.parse_args(argv)
    if args.compare and len(args.results) != 2:
        parser.error("--compare takes two files: measured, predicted")
    try:
        runs = [load(p) for p in args.results]
    except (OSError, KeyError, ValueError) as error:
        print(f"report.py: {error}", file=sys.stderr)
        return 2
    out = args.out or os.path.splitext(args.results[0])[0] + ".png"
    for run in runs:
        print_summary(run)
    if args.compare:
        compare_figure(runs[0], runs[1], out)
    elif all("routes" in run for run in runs):
        fleet_figure(runs, out)
    else:
        figure(runs, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
