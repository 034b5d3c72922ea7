"""bench_stream.py — the front end's cost: streamed tokens per second to many clients.

Starts `rig serve --preset qwen3-0.6b --sim-timing-only` (pace fast: the simulated GPU is never
the bottleneck), opens CLIENTS streaming completions at once (ignore_eos, TOKENS tokens each),
and reports streamed tokens/s (wall clock, first request to last [DONE]) and the server's CPU
time per streamed token (utime + stime of the server process over the run, /proc). The client
is Python asyncio on the same machine, so the numbers are a lower bound of what the server does.
Not a test: docs/performance.md records its output. Usage:
  python3 tests/serve/bench_stream.py [--rig PATH] [--clients 256] [--tokens 256]
"""
import asyncio
import os
import sys
import time

from serve_fixture import Server
import test_load


def arg(name, default):
    for i, a in enumerate(sys.argv):
        if a == name and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
    return default


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    clients, tokens = arg("--clients", 256), arg("--tokens", 256)
    test_load.TOKENS = tokens
    server = Server("--preset", "qwen3-0.6b", "--sim-timing-only", "--num-pages", "262144",
                    "--max-running-requests", str(max(clients, 2)), "--max-queued-requests",
                    "1024", "--cuda-graph-max-bs", "256", "--log-level", "error")
    try:
        asyncio.run(test_load.many(server.port, 16))  # warm-up
        server.wait_idle()
        cpu0, t0 = cpu_s(server.proc.pid), time.monotonic()
        results = asyncio.run(test_load.many(server.port, clients))
        wall, cpu = time.monotonic() - t0, cpu_s(server.proc.pid) - cpu0
        errors = [r for r in results if r is not None]
        total = clients * tokens
        print("clients %d x %d tokens: %d errors, %.2f s, %.0f streamed tokens/s, "
              "server CPU %.2f s = %.2f us per token"
              % (clients, tokens, len(errors), wall, total / wall, cpu, cpu / total * 1e6))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
