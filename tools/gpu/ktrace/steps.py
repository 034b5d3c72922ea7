#!/usr/bin/env python3
"""steps.py — takes a ktrace CSV (tools/gpu/ktrace/ktrace.c) apart by replayed graph.

Each graph (CUPTI's graph id: one per captured graph exec, e.g. one per `rig bench decode`
point) was replayed some number of times; a replay is the run of its nodes between two
appearances of its first node. For each graph this prints the replays' median span (first
kernel's start to last kernel's end: what CUDA events around the replay measure, less the
launch), and per node, in launch order, the median over replays of its duration as it ran
inside the step and of its gap to the node before it (negative: the two overlapped, as
programmatic dependent launch allows), and what it adds to the step: its duration less its
overlap with the node before (a positive gap is idle time, counted apart), so that a graph's
adds plus its idle time is its span. What a node adds is what the simulator's graph node
predicts (docs/simulator.md, "Decode steps in a graph"); --kinds prints them per kernel
name (count and mean), the form a per-kind comparison with `rig bench ops` takes.

usage: steps.py TRACE.csv [--graph ID] [--nodes] [--kinds] [--json]
Standard library only (the GPU machine's python3 has it all).
"""
import argparse
import csv
import json
import re
import statistics
import sys


def short_name(mangled):
    """The function's identifier from an Itanium-mangled name outside any namespace
    (templates dropped), else the name as given: `_Z18rig__decode_kernelILi128E...` ->
    `rig__decode_kernel`."""
    m = re.match(r"_Z(\d+)(.*)", mangled)
    if not m:
        return mangled
    n = int(m.group(1))
    return m.group(2)[:n] or mangled


def read_trace(lines):
    """Rows of a ktrace CSV as dicts with ints for the numeric columns."""
    rows = []
    for r in csv.DictReader(lines):
        rows.append({
            "start": int(r["start_ns"]), "end": int(r["end_ns"]), "stream": int(r["stream"]),
            "graph": int(r["graph"]), "node": int(r["node"]), "name": r["name"],
        })
    return rows


def replays(rows, graph):
    """The graph's kernels in start order, cut into replays at each return of its first
    node. Returns a list of replays, each a list of rows."""
    kernels = sorted((r for r in rows if r["graph"] == graph), key=lambda r: r["start"])
    out = []
    for r in kernels:
        if not out or r["node"] == out[-1][0]["node"]:
            out.append([r])
        else:
            out[-1].append(r)
    return out


def summarise(rows, graph):
    """Span and per-node medians of one graph's replays (only replays with the full node
    list, the most common length, count)."""
    runs = replays(rows, graph)
    if not runs:
        return None
    length = statistics.mode(len(r) for r in runs)
    runs = [r for r in runs if len(r) == length]
    spans = [r[-1]["end"] - r[0]["start"] for r in runs]
    nodes = []
    for i in range(length):
        durations = [r[i]["end"] - r[i]["start"] for r in runs]
        gaps = [r[i]["start"] - r[i - 1]["end"] for r in runs] if i > 0 else [0] * len(runs)
        duration, gap = statistics.median(durations), statistics.median(gaps)
        nodes.append({
            "index": i, "name": short_name(runs[0][i]["name"]),
            "duration_ns": duration, "gap_ns": gap, "adds_ns": duration + min(gap, 0),
        })
    return {
        "graph": graph, "replays": len(runs), "nodes": length,
        "span_ns": statistics.median(spans),
        "sum_duration_ns": sum(n["duration_ns"] for n in nodes),
        "overlap_ns": -sum(n["gap_ns"] for n in nodes if n["gap_ns"] < 0),
        "idle_ns": sum(n["gap_ns"] for n in nodes if n["gap_ns"] > 0),
        "node_list": nodes,
    }


def kinds(summary):
    """Per kernel name of one graph's summary, in order of first appearance: its node count and
    the mean of their durations, gaps and adds."""
    out = {}
    for n in summary["node_list"]:
        k = out.setdefault(n["name"], {"count": 0, "duration_ns": 0.0, "gap_ns": 0.0,
                                       "adds_ns": 0.0})
        k["count"] += 1
        for key in ("duration_ns", "gap_ns", "adds_ns"):
            k[key] += n[key]
    for k in out.values():
        for key in ("duration_ns", "gap_ns", "adds_ns"):
            k[key] /= k["count"]
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--graph", type=int, help="only this graph id")
    p.add_argument("--nodes", action="store_true", help="print every node of each graph")
    p.add_argument("--kinds", action="store_true", help="per kernel name: count and mean adds")
    p.add_argument("--json", action="store_true", help="the summaries as JSON")
    a = p.parse_args(argv)
    with open(a.trace, newline="") as f:
        rows = read_trace(f)
    graphs = sorted({r["graph"] for r in rows if r["graph"] != 0})
    if a.graph is not None:
        graphs = [g for g in graphs if g == a.graph]
    summaries = [s for s in (summarise(rows, g) for g in graphs) if s is not None]
    if a.json:
        json.dump(summaries, sys.stdout, indent=1)
        print()
        return 0
    print(f"{len(rows)} kernels, {sum(1 for r in rows if r['graph'] == 0)} outside graphs")
    print("  graph  replays  nodes   span_us  sum_us  overlap_us  idle_us")
    for s in summaries:
        print(f"{s['graph']:7d} {s['replays']:8d} {s['nodes']:6d} {s['span_ns'] / 1e3:9.1f}"
              f" {s['sum_duration_ns'] / 1e3:7.1f} {s['overlap_ns'] / 1e3:11.1f}"
              f" {s['idle_ns'] / 1e3:8.1f}")
        if a.nodes:
            for n in s["node_list"]:
                print(f"      {n['index']:4d} {n['duration_ns'] / 1e3:9.2f} us"
                      f"  gap {n['gap_ns'] / 1e3:+7.2f} us  adds {n['adds_ns'] / 1e3:8.2f} us"
                      f"  {n['name']}")
        if a.kinds:
            for name, k in kinds(s).items():
                print(f"      {k['count']:4d} x  adds {k['adds_ns'] / 1e3:9.2f} us"
                      f"  duration {k['duration_ns'] / 1e3:9.2f} us"
                      f"  gap {k['gap_ns'] / 1e3:+7.2f} us  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
