#!/usr/bin/env python3
"""tp_check.py — verdicts and tables of tools/gpu/tp_check.sh's runs (numpy, h5py).

Correctness, TP=N against TP=1 of the same model and prompts (docs/gpu.md, "Tensor parallelism
on 4 GPUs"):
  * logits (the step that ends each prompt's prefill): relative L2 ||tpN - tp1|| / ||tp1|| per
    prompt. Bound: sqrt(2) x the transformers check's bounds for rig against the fp32 model
    (mean 0.0419, any prompt 0.0777; docs/gpu.md), since TP=1 and TP=N each carry their own
    bf16 rounding of that size and their difference adds the two;
  * greedy tokens: equal to TP=1's, or the first difference is a near-tie — TP=1's logprob
    of TP=N's token within 4 x the RMS logit difference of that prompt of TP=1's best (the
    transformers check's allowance); the sequences part there and are not compared further;
  * the run with overlap on gives the tokens of the run with overlap off (--logits-out), or
    parts at a near-tie by its own logprobs;
  * the prompt sharing 500 tokens with the first finds them cached (cached_len 500).
Scaling: decode step medians at batch 1, 64 and 256 from /steps (device time of rank 0's
step), against TP=1 and against TP=1 / N (linear); offline output tok/s and floor fraction
from `rig bench offline`'s table. Soak: the rig fuzz processes' totals.
Exit status 1 when a correctness check fails (tables never fail the run).
"""
import argparse
import glob
import json
import math
import os
import re
import sys

import numpy as np

MEAN_BOUND = 0.0419 * math.sqrt(2.0)
WORST_BOUND = 0.0777 * math.sqrt(2.0)
TIE_RMS = 4.0


def rows_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None


def gap_at(row, step, token):
    """TP=1's best logprob minus its logprob of `token` at `step` (>= the 4th's when absent)."""
    entry = row["logprobs"][step]
    top = {t: lp for t, lp in entry["top"]}
    best = max(top.values())
    return best - top.get(token, min(top.values()))


def check_tokens(ref_rows, rows, allow, label, failures):
    """Compares each prompt's ids; returns (compared steps, near-ties)."""
    compared = ties = 0
    for p, (ref, row) in enumerate(zip(ref_rows, rows)):
        d = first_diff(ref["ids"], row["ids"])
        compared += len(ref["ids"]) if d is None else d + 1
        if d is None:
            continue
        gap = gap_at(ref, d, row["ids"][d])
        if gap <= allow[p]:
            ties += 1
        else:
            failures.append(f"{label}: prompt {p} token {d}: {row['ids'][d]} vs "
                            f"{ref['ids'][d]}, gap {gap:.4g} > {allow[p]:.4g}")
    return compared, ties


def correctness(work, degrees, failures):
    logits_dir = os.path.join(work, "logits")
    models = sorted({os.path.basename(p).rsplit("-tp", 1)[0]
                     for p in glob.glob(os.path.join(logits_dir, "*-tp1.f32"))})
    if not models:
        failures.append("correctness: no TP=1 run to compare with")
        return
    print("\n== correctness: TP=N against TP=1 (relative L2 of the prefill's last logits, tokens)")
    print(f"   bounds: mean <= {MEAN_BOUND:.4f}, any prompt <= {WORST_BOUND:.4f}; "
          f"near-tie allowance {TIE_RMS:g} x RMS")
    for model in models:
        def load(tp, kind):
            f32 = os.path.join(logits_dir, f"{model}-tp{tp}.f32")
            jl = os.path.join(logits_dir, f"{model}-tp{tp}-{kind}.jsonl")
            if not os.path.exists(jl) or (kind == "logits" and not os.path.exists(f32)):
                return None, None
            rows = rows_of(jl)
            if not rows:
                return None, None
            logits = np.fromfile(f32, dtype=np.float32).reshape(len(rows), -1) \
                if kind == "logits" else None
            return rows, logits
        ref_rows, ref_logits = load(1, "logits")
        ref_overlap, _ = load(1, "overlap")
        if ref_rows is None:
            failures.append(f"{model}: the TP=1 run did not finish")
            continue
        for tp in degrees:
            rows, logits = load(tp, "logits")
            overlap, _ = load(tp, "overlap")
            label = f"{model} TP={tp}"
            if rows is None or overlap is None:
                failures.append(f"{label}: a run did not finish")
                print(f"   {label:<22} did not finish")
                continue
            diff = logits.astype(np.float64) - ref_logits
            rel = np.linalg.norm(diff, axis=1) / np.linalg.norm(ref_logits, axis=1)
            rms = np.sqrt((diff ** 2).mean(axis=1))
            allow = TIE_RMS * np.maximum(rms, 1e-6)
            if tp != 1:
                if rel.mean() > MEAN_BOUND:
                    failures.append(f"{label}: mean rel. L2 {rel.mean():.4f} > {MEAN_BOUND:.4f}")
                if rel.max() > WORST_BOUND:
                    failures.append(f"{label}: worst rel. L2 {rel.max():.4f} > {WORST_BOUND:.4f}")
            n1, t1 = check_tokens(ref_rows, rows, allow, f"{label} overlap off", failures)
            n2, t2 = check_tokens(ref_overlap or ref_rows, overlap, allow,
                                  f"{label} overlap on", failures)
            n3, t3 = check_tokens(rows, overlap, allow, f"{label} overlap on vs off", failures)
            for run in (rows, overlap):
                if len(run) > 1 and run[1].get("cached_len") != 500:
                    failures.append(f"{label}: prompt 1 cached_len {run[1].get('cached_len')}"
                                    " (500 expected)")
            print(f"   {label:<22} rel. L2 mean {rel.mean():.4f} worst {rel.max():.4f}; "
                  f"RMS {rms.mean():.4g}; tokens vs TP=1: {n1} steps, {t1} near-tie(s) "
                  f"(overlap on: {n2} steps, {t2}); on vs off: {n3} steps, {t3}; "
                  f"cached_len {[r.get('cached_len') for r in overlap]}")


def step_medians(path):
    import h5py
    with h5py.File(path, "r") as f:
        steps = f["steps"][()]
    decode = steps[steps["phase"] == 1]
    out = {}
    for b in (1, 64, 256):
        d = decode["duration"][decode["batch_size"] == b]
        if len(d):
            out[b] = (float(np.median(d)) * 1e3, len(d))
    return out


def decode_table(work, degrees):
    files = sorted(glob.glob(os.path.join(work, "h5", "decode-*.h5")))
    if not files:
        return
    print("\n== decode step (device time of a step, ms, median over the steps at that batch; "
          "contexts 256..384)")
    print(f"   {'model':<16} {'TP':>2} {'b1':>9} {'b64':>9} {'b256':>9}   "
          "vs TP=1 (b1 / b64 / b256)   vs linear TP=1/N")
    table = {}
    for path in files:
        m = re.match(r"decode-(.+)-tp(\d+)\.h5", os.path.basename(path))
        try:
            table[(m.group(1), int(m.group(2)))] = step_medians(path)
        except Exception as e:  # a run cut mid-write leaves no readable file
            print(f"   {os.path.basename(path)}: unreadable ({e})")
    for (model, tp), med in sorted(table.items()):
        base = table.get((model, 1), {})
        cells = [f"{med[b][0]:9.3f}" if b in med else f"{'-':>9}" for b in (1, 64, 256)]
        ratio = [f"{med[b][0] / base[b][0]:.3f}" if b in med and b in base else "-"
                 for b in (1, 64, 256)]
        linear = [f"{med[b][0] / (base[b][0] / tp):.2f}x" if b in med and b in base else "-"
                  for b in (1, 64, 256)]
        print(f"   {model:<16} {tp:>2} {' '.join(cells)}   {' / '.join(ratio):<26} "
              f"{' / '.join(linear)}")


def offline_table(work):
    logs = sorted(glob.glob(os.path.join(work, "logs", "offline-*.log")))
    if not logs:
        return
    print("\n== offline workload (256 requests, U[100, 1024] in and out; overlap on)")
    print(f"   {'run':<22} {'dur_s':>8} {'out_tok/s':>10} {'of floor':>9} {'ttft_p50':>9} "
          f"{'tpot_p50':>9}")
    for path in logs:
        name = os.path.basename(path)[len("offline-"):-len(".log")]
        row = None
        with open(path) as f:
            for line in f:
                cols = line.split()
                if len(cols) >= 17 and cols[0] == "offline" and cols[1] == "inf":
                    row = cols
        if row is None:
            print(f"   {name:<22} no result (log: logs/{os.path.basename(path)})")
            continue
        print(f"   {name:<22} {row[3]:>8} {row[4]:>10} {float(row[13]) * 100:8.1f}% "
              f"{row[6]:>9} {row[8]:>9}")


def processes(work, failures):
    """Ranks across processes: `mpirun -n N rig generate --ranks mpi` against the same command
    with the N ranks as threads (stage 1's --logits-out run): the same tokens, and logits
    equal bit for bit or, where NCCL reduced in another order, as close to TP=1 as the
    threads' (the correctness bounds). Then the killed rank: every process gone in time."""
    logits_dir = os.path.join(work, "logits")
    runs = sorted(glob.glob(os.path.join(logits_dir, "*-mpi.jsonl")))
    kill_text, kill_rc, kill_ms = log_of(work, "mpi-kill")
    if not runs and kill_text is None:
        return
    print("\n== ranks across processes (mpirun, one rank per process) against the same run "
          "with threads")
    for jl in runs:
        stem = os.path.basename(jl)[:-len("-mpi.jsonl")]  # MODEL-tpN
        model, tp = stem.rsplit("-tp", 1)
        label = f"{model} TP={tp} mpi"
        rows = rows_of(jl)
        threads_jl = os.path.join(logits_dir, f"{stem}-logits.jsonl")
        threads_f32 = os.path.join(logits_dir, f"{stem}.f32")
        mpi_f32 = os.path.join(logits_dir, f"{stem}-mpi.f32")
        if not rows or not os.path.exists(mpi_f32):
            failures.append(f"{label}: did not finish")
            print(f"   {label:<22} did not finish")
            continue
        if not os.path.exists(threads_jl) or not os.path.exists(threads_f32):
            failures.append(f"{label}: no threads' run to compare with")
            print(f"   {label:<22} no threads' run to compare with")
            continue
        ref_rows = rows_of(threads_jl)
        ref = np.fromfile(threads_f32, dtype=np.float32).reshape(len(ref_rows), -1)
        got = np.fromfile(mpi_f32, dtype=np.float32).reshape(len(rows), -1)
        same_bits = ref.shape == got.shape and np.array_equal(ref.view(np.uint32),
                                                               got.view(np.uint32))
        diff = got.astype(np.float64) - ref
        rel = np.linalg.norm(diff, axis=1) / np.linalg.norm(ref, axis=1)
        same_ids = [r["ids"] for r in rows] == [r["ids"] for r in ref_rows]
        if not same_bits and (rel.mean() > MEAN_BOUND or rel.max() > WORST_BOUND):
            failures.append(f"{label}: logits rel. L2 {rel.mean():.4f} / {rel.max():.4f} "
                            "against the threads' run")
        if same_bits and not same_ids:
            failures.append(f"{label}: the same logits but other tokens")
        print(f"   {label:<22} logits {'bit-identical' if same_bits else 'differ'} "
              f"(rel. L2 mean {rel.mean():.2e}, worst {rel.max():.2e}); tokens "
              f"{'identical' if same_ids else 'differ'} ({sum(len(r['ids']) for r in rows)} "
              f"tokens); cached_len {[r.get('cached_len') for r in rows]}")
    if kill_text is not None:
        ok = kill_rc == 0 and "every process ended" in kill_text
        line = [l for l in kill_text.splitlines() if l.startswith("run_kill.sh")]
        print(f"   rank 1 of 2 killed mid-run: {'ok' if ok else 'FAIL'} after "
              f"{(kill_ms or 0) / 1000:.1f} s: {line[-1] if line else kill_text.strip()[-300:]}")
        if not ok:
            failures.append(f"mpi-kill: exit {kill_rc}")


def log_of(work, name):
    path = os.path.join(work, "logs", name + ".log")
    if not os.path.exists(path):
        return None, None, None
    with open(path) as f:
        text = f.read()
    m = re.search(r"tp_check: exit (\d+) after (\d+) ms", text)
    return text, (int(m.group(1)) if m else None), (int(m.group(2)) if m else None)


def watchdog(work, failures):
    """A stalled or failing rank must end the run with exit 1 and a message naming rank 1 and
    its collective, well inside the job's bound (the collective timeout is 5 s)."""
    rows = []
    for kind in ("stall", "fail"):
        text, rc, ms = log_of(work, f"watchdog-{kind}")
        if text is None:
            continue
        lines = [l for l in text.splitlines() if "rank 1" in l and "collective" in l]
        ok = rc == 1 and bool(lines) and ms is not None and ms < 60000
        rows.append((kind, rc, ms, lines[-1].strip() if lines else text.strip()[-300:], ok))
        if not ok:
            failures.append(f"watchdog {kind}: exit {rc} after {ms} ms without the rank's error")
    if rows:
        print("\n== watchdog: rank 1 of TP 2, its 300th collective, collective timeout 5 s")
        for kind, rc, ms, line, ok in rows:
            print(f"   {kind:<6} exit {rc} after {ms / 1000 if ms else 0:.1f} s "
                  f"{'ok' if ok else 'FAIL'}: {line}")


def collectives(work):
    """rig's all-reduce bus bandwidth beside the reference's (same sizes, same GPUs)."""
    def table(name):
        text, rc, _ = log_of(work, name)
        out = {}
        for line in (text or "").splitlines():
            cols = line.split()
            # rig: bytes ranks us issue-us graph-us algbw busbw (6 columns before graph-us);
            # the reference: bytes ranks us algbw busbw
            if len(cols) in (5, 6, 7) and cols[0].isdigit() and cols[1].isdigit():
                issue = float(cols[3]) if len(cols) >= 6 else float("nan")
                graph = float(cols[4]) if len(cols) == 7 else float("nan")
                out[int(cols[0])] = (float(cols[2]), float(cols[-1]), issue, graph)
        return out
    nan = (float("nan"),) * 4
    for tp in (2, 4, 8):
        rig, ref = table(f"collectives-tp{tp}"), table(f"allreduce-ref-tp{tp}")
        other = table(f"collectives-tp{tp}-nonblocking")
        if not rig:
            continue
        print(f"\n== all-reduce, TP {tp}: rig (rig bench collectives; issue: host us per call; "
              "graph: one of 20 in a replayed graph; nb: non-blocking comms, "
              "RIG_CUDA_NCCL_BLOCKING=0) beside the reference (torch.distributed + NCCL); bf16 "
              "in place, median of the slowest rank")
        print(f"   {'bytes':>10} {'rig us':>9} {'issue':>7} {'graph':>7} {'nb us':>9} {'issue':>7} "
              f"{'ref us':>9} {'rig busbw':>10} {'ref busbw':>10} {'rig/ref':>8}")
        for size in sorted(rig):
            r_us, r_bw, r_issue, r_graph = rig[size]
            b_us, _, b_issue, _ = other.get(size, nan)
            f_us, f_bw, _, _ = ref.get(size, nan)
            print(f"   {size:>10} {r_us:>9.2f} {r_issue:>7.1f} {r_graph:>7.2f} {b_us:>9.2f} "
                  f"{b_issue:>7.1f} "
                  f"{f_us:>9.2f} {r_bw:>10.2f} {f_bw:>10.2f} "
                  f"{r_bw / f_bw if f_bw == f_bw and f_bw > 0 else float('nan'):>8.3f}")


def soak(work):
    logs = glob.glob(os.path.join(work, "logs", "soak-*.log"))
    if not logs:
        return
    seeds = failed = done = 0
    for path in logs:
        with open(path) as f:
            text = f.read()
        m = re.findall(r"rig fuzz: (\d+) seeds from \d+ .*?, (\d+) failed", text)
        if m:
            done += 1
            seeds += int(m[-1][0])
            failed += int(m[-1][1])
        else:  # cut before its summary: the last progress line
            p = re.findall(r"rig fuzz: (\d+) seeds, (\d+) failed", text)
            if p:
                seeds += int(p[-1][0])
                failed += int(p[-1][1])
    print(f"\n== soak: {seeds} swarm seeds, {failed} failed ({done} of {len(logs)} processes "
          "ended by themselves)")
    for path in logs:
        with open(path) as f:
            for line in f:
                if "FAIL" in line or "replay" in line:
                    print("   " + line.rstrip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--degrees", default="1 2 4")
    a = ap.parse_args()
    degrees = [int(x) for x in a.degrees.split()]
    failures = []
    if os.path.isdir(os.path.join(a.work, "logits")) and os.listdir(os.path.join(a.work, "logits")):
        correctness(a.work, degrees, failures)
    watchdog(a.work, failures)
    processes(a.work, failures)
    collectives(a.work)
    decode_table(a.work, degrees)
    offline_table(a.work)
    soak(a.work)
    print()
    for f in failures:
        print("FAIL " + f)
    print("tp_check: " + ("PASS" if not failures else f"{len(failures)} failure(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
