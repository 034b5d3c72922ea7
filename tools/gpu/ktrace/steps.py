#!/usr/bin/env python3
"""steps.py — takes a ktrace CSV (tools/gpu/ktrace/ktrace.c) apart by replayed graph.

Each graph (CUPTI's graph id: one per captured graph exec, e.g. one per `rig bench decode`
point) was replayed some number of times; a replay is the run of its nodes between two
appearances of its first node. For each graph this prints the replays' median span (first
kernel's start to last kernel's end: what CUDA events around the replay measure, less the
launch), and per node, in launch order, the median over replays of its duration as it ran
inside the step and of its gap to the node before it (negative: the two overlapped, as
programmatic dependent launch allows). Those in-step durations are what the simulator's
graph nodes predict (docs/simulator.md, "Decode steps in a graph").

usage: steps.py TRACE.csv [--graph ID] [--nodes] [--json]
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
        nodes.append({
            "index": i, "name": short_name(runs[0][i]["name"]),
            "duration_ns": statistics.median(durations), "gap_ns": statistics.median(gaps),
        })
    return {
        "graph": graph, "replays": len(runs), "nodes": length,
        "span_ns": statistics.median(spans),
        "sum_duration_ns": sum(n["duration_ns"] for n in nodes),
        "overlap_ns": -sum(n["gap_ns"] for n in nodes if n["gap_ns"] < 0),
        "idle_ns": sum(n["gap_ns"] for n in nodes if n["gap_ns"] > 0),
        "node_list": nodes,
    }


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--graph", type=int, help="only this graph id")
    p.add_argument("--nodes", action="store_true", help="print every node of each graph")
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
                      f"  gap {n['gap_ns'] / 1e3:+7.2f} us  {n['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
