#!/usr/bin/env python3
"""serve_mpi.py — `rig serve --ranks mpi` under `mpirun -n N` answers exactly as `rig serve`
with its N TP ranks as threads (docs/engine.md, "Ranks across processes").

Both servers run the tiny Qwen3-shaped model of the server tests on the simulator at TP N. The
same requests go to each — /generate (greedy, two prompts sharing a prefix, so the second hits
the radix cache), /v1/chat/completions (sampled, seeded) and a streamed /v1/completions — and
the bodies must match field by field (ids, text, usage, cached tokens). The MPI server runs with
a 3 s collective timeout (1 s failed once on a 2-core machine under a full build's load) and
idles 3.5 s between requests: its followers wait for process 0's
next job without bound, so the idle server stays up. SIGTERM to process 0 (the server) ends
the job: its shutdown sends the followers their exit, and mpirun exits 0 within the bound.
(SIGINT to mpirun itself makes OpenMPI kill every process after a few seconds and exit 1.) Standard library only; exit 77 (ctest SKIP) without mpirun or
without OpenMPI in the build.

usage: serve_mpi.py --rig build/rig [--ranks 2]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "serve"))
import serve_fixture  # noqa: E402

PROMPT = "The quick brown fox jumps over the lazy dog. " * 6



def stable(obj):
    """The parts of a response that must not depend on where the ranks run."""
    if isinstance(obj, dict):
        return {k: stable(v) for k, v in sorted(obj.items())
                if k not in ("id", "created", "e2e_latency", "system_fingerprint")}
    if isinstance(obj, list):
        return [stable(v) for v in obj]
    return obj


def exchange(server, idle_s):
    out = []
    for text in (PROMPT + "First question?", PROMPT + "Second question?"):
        status, body = server.post("/generate", {
            "text": text, "sampling_params": {"temperature": 0, "max_new_tokens": 24}})
        assert status == 200, body
        out.append(stable(json.loads(body)))
        time.sleep(idle_s)
    status, body = server.post("/v1/chat/completions", {
        "model": "tiny-qwen3", "messages": [{"role": "user", "content": "Hello there"}],
        "max_tokens": 20, "temperature": 0.8, "seed": 5})
    assert status == 200, body
    out.append(stable(json.loads(body)))
    status, body = server.post("/v1/completions", {
        "model": "tiny-qwen3", "prompt": PROMPT, "max_tokens": 16, "temperature": 0,
        "stream": True})
    assert status == 200, body
    chunks = [json.loads(line[len("data: "):]) for line in body.splitlines()
              if line.startswith("data: {")]
    out.append("".join(c["choices"][0]["text"] for c in chunks if c.get("choices")))
    return out


def leader_pid(mpirun_pid):
    """The pid of MPI process 0 among mpirun's children (OMPI_COMM_WORLD_RANK=0)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != mpirun_pid:
                continue
            with open("/proc/%s/environ" % entry, "rb") as f:
                if b"OMPI_COMM_WORLD_RANK=0\0" in f.read():
                    return int(entry)
        except (OSError, ValueError, IndexError):
            continue
    return None


def stop_job(server, timeout_s=30):
    """SIGTERM to process 0; mpirun's exit status and stderr."""
    pid = leader_pid(server.proc.pid)
    assert pid is not None, "no MPI process 0 under mpirun %d" % server.proc.pid
    os.kill(pid, signal.SIGTERM)
    try:
        rc = server.proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        raise AssertionError("the job did not end within %d s of SIGTERM" % timeout_s)
    return rc, server.proc.stderr.read()


def main():
    ranks = 2
    if "--ranks" in sys.argv:
        ranks = int(sys.argv[sys.argv.index("--ranks") + 1])
    if shutil.which("mpirun") is None:
        print("serve_mpi.py: SKIP: no mpirun")
        return 77
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    common = ("--tp-size", str(ranks))

    threads = serve_fixture.Server(*common)
    try:
        expected = exchange(threads, 0.0)
    finally:
        threads.stop()

    try:
        mpi = serve_fixture.Server(*common, "--ranks", "mpi", "--collective-timeout", "3000",
                                   launcher=("mpirun", "--oversubscribe", "-n", str(ranks)))
    except RuntimeError as e:
        if "this build has no OpenMPI" in str(e):
            print("serve_mpi.py: SKIP: no OpenMPI in this build")
            return 77
        raise
    try:
        status, _ = mpi.get("/health")
        assert status == 200
        time.sleep(3.5)  # idle for longer than the collective timeout: the followers wait on
        got = exchange(mpi, 3.5)
    except Exception:
        mpi.proc.kill()
        raise
    t0 = time.monotonic()
    rc, err = stop_job(mpi)
    stopped = time.monotonic() - t0
    if rc != 0 or "assertion failed" in err:
        print("mpirun exited %d after SIGTERM to process 0:\n%s" % (rc, err[-3000:]))
        return 1
    if got != expected:
        for i, (a, b) in enumerate(zip(expected, got)):
            if a != b:
                print("request %d differs:\n threads: %s\n mpi:     %s" % (i, a, b))
        print(err[-3000:])
        return 1
    cached = [r.get("meta_info", {}).get("cached_tokens") for r in got[:2]]
    print("serve_mpi.py: %d processes answer as %d threads (%d requests; cached tokens %s); "
          "idle 2.5 s past a 1 s collective timeout; SIGTERM to process 0: exit 0 in %.1f s"
          % (ranks, ranks, len(got), cached, stopped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
