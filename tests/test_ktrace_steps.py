#!/usr/bin/env python3
"""test_ktrace_steps.py — tools/gpu/ktrace/steps.py on a hand-made trace
(tests/data/ktrace/sample.csv): one kernel outside graphs, graph 5 replayed twice in full
(rms_norm, gemv, sample) and cut short once; every number below follows from the CSV,
including what each node adds to the step and the per-kind means (--kinds)."""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "gpu", "ktrace"))
import steps  # noqa: E402

SAMPLE = os.path.join(HERE, "data", "ktrace", "sample.csv")


class Steps(unittest.TestCase):
    def setUp(self):
        with open(SAMPLE, newline="") as f:
            self.rows = steps.read_trace(f)

    def test_short_names(self):
        self.assertEqual(steps.short_name("_Z8rms_normILi1EEvPKfS1_"), "rms_norm")
        self.assertEqual(steps.short_name("_Z18rig__decode_kernelILi128ELi4ELb1EEv23rig"),
                         "rig__decode_kernel")
        self.assertEqual(steps.short_name("void cutlass::Kernel<x>"), "void cutlass::Kernel<x>")

    def test_replays_cut_at_the_first_node(self):
        runs = steps.replays(self.rows, 5)
        self.assertEqual([len(r) for r in runs], [3, 3, 1])

    def test_summary(self):
        s = steps.summarise(self.rows, 5)
        self.assertEqual(s["replays"], 2)  # the cut-short replay does not count
        self.assertEqual(s["nodes"], 3)
        self.assertEqual(s["span_ns"], 1600)  # median of 1500 and 1700
        self.assertEqual([n["name"] for n in s["node_list"]], ["rms_norm", "gemv", "sample"])
        self.assertEqual([n["duration_ns"] for n in s["node_list"]], [500, 900, 200])
        self.assertEqual([n["gap_ns"] for n in s["node_list"]], [0, -100, 100])
        self.assertEqual(s["sum_duration_ns"], 1600)
        self.assertEqual(s["overlap_ns"], 100)
        self.assertEqual(s["idle_ns"], 100)
        # what each node adds: its duration less its overlap with the one before
        self.assertEqual([n["adds_ns"] for n in s["node_list"]], [500, 800, 200])
        self.assertEqual(sum(n["adds_ns"] for n in s["node_list"]) + s["idle_ns"], s["span_ns"])

    def test_kinds(self):
        k = steps.kinds(steps.summarise(self.rows, 5))
        self.assertEqual(list(k), ["rms_norm", "gemv", "sample"])
        self.assertEqual(k["gemv"], {"count": 1, "duration_ns": 900, "gap_ns": -100,
                                     "adds_ns": 800})

    def test_cli_json(self):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu", "ktrace",
                                                           "steps.py"), SAMPLE, "--json"],
                             check=True, capture_output=True, text=True).stdout
        summaries = json.loads(out)
        self.assertEqual([s["graph"] for s in summaries], [5])
        self.assertEqual(summaries[0]["span_ns"], 1600)


if __name__ == "__main__":
    unittest.main()
