#!/usr/bin/env python3
"""bench_serve_fake.py — `rig bench serve` against a scripted fake server (ctest).

The fake server (standard library only, 127.0.0.1 on a free port) answers SGLang /generate and
OpenAI /v1/completions and /v1/chat/completions with chunked SSE streams whose timing and
content are scripted by the prompt's first token id:

  1 normal     4 tokens, one per chunk: the first after 100 ms, then every 50 ms
  2 multi      1 token after 100 ms, then one chunk of 3 tokens 120 ms later
  3 malformed  1 token, then a line that is not JSON          -> failure "malformed"
  4 reset      1 token, then the connection is reset (RST)    -> failure "reset"
  5 503        HTTP 503 with an OpenAI error body             -> failure "http"
  6 stall      nothing for 3 s (the client's timeout is 1 s)  -> failure "timeout"

The client reads a trace dataset (a rig scenario with these prompts, all sent at t = 0) and
writes its JSONL line with per-request details and its HDF5 results file. Checked:
- the failures are counted per reason with their messages; the successes are not affected;
- the measured TTFT and ITLs are the scripted delays (within a loose bound: a shared CI
  machine), and a 3-token chunk gives three equal ITLs (bench_serving's adjusted ITL);
- every summary number equals the hand computation from the per-request values the client
  recorded (exactly, in floating point): counts, totals, throughputs over the duration,
  concurrency, mean/median/p90/p99 of TTFT, TPOT, ITL, E2E (numpy's percentile rule);
- not streamed, TTFT equals E2E; every request failing exits 1; the same seed gives the same
  schedule (--dry-run) and another seed another one, with the Poisson mean gap near 1/rate;
- the HDF5 file opens with h5py and tools/report/report.py plots it (skipped without h5py).
"""
import argparse
import http.server
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

SCRIPTS = {
    1: [(0.10, 1), (0.05, 1), (0.05, 1), (0.05, 1)],
    2: [(0.10, 1), (0.12, 3)],
    3: [(0.05, 1), (0.05, "malformed")],
    4: [(0.05, 1), (0.05, "reset")],
    5: "503",
    6: [(3.0, 1)],
}
FAILURES = {"malformed": 3, "reset": 4, "http": 5, "timeout": 6}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def setup(self):
        super().setup()  # small events go out at once, as serving front ends send them
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "fake-model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, payload):
        self.chunk(b"data: " + payload + b"\n\n")

    def payload(self, api, count, total, last):
        """One chunk's JSON for `count` new tokens, `total` so far."""
        text = "tok " * total if api == "generate" else "tok " * count
        if api == "generate":
            finish = {"type": "length"} if last else None
            return {"text": text, "meta_info": {"completion_tokens": total, "prompt_tokens": 2,
                                                 "cached_tokens": 0, "finish_reason": finish}}
        choice = {"index": 0, "finish_reason": "length" if last else None}
        if api == "chat":
            choice["delta"] = {"content": text}
        else:
            choice["text"] = text
        # OpenAI servers give no per-chunk count unless asked; vLLM's continuous usage does:
        # send it for multi-token chunks so the client can spread them.
        out = {"choices": [choice]}
        if count > 1:
            out["usage"] = {"completion_tokens": total, "prompt_tokens": 2}
        return out

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length))
        api = {"/generate": "generate", "/v1/completions": "completions",
               "/v1/chat/completions": "chat"}[self.path]
        prompt = request.get("input_ids") or request.get("prompt") or [1]
        if api == "chat":  # text made from ids: byte-level id k < 94 is chr(33 + k)
            prompt = [ord(request["messages"][0]["content"][0]) - 33]
        script = SCRIPTS.get(prompt[0] if isinstance(prompt, list) else 1, SCRIPTS[1])
        if script == "503":
            body = json.dumps({"error": {"message": "overloaded", "code": 503}}).encode()
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        stream = request.get("stream", False)
        if not stream:
            return self.whole(api, script)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        total = 0
        steps = [s for s in script if isinstance(s[1], int)]
        for delay, what in script:
            time.sleep(delay)
            if what == "malformed":
                self.event(b"{not json")
            elif what == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True
                return
            else:
                total += what
                last = total == sum(s[1] for s in steps)
                self.event(json.dumps(self.payload(api, what, total, last)).encode())
        if api != "generate":
            usage = {"choices": [], "usage": {"completion_tokens": total, "prompt_tokens": 2}}
            self.event(json.dumps(usage).encode())
        self.event(b"[DONE]")
        self.chunk(b"")

    def whole(self, api, script):
        total = sum(s[1] for s in script if isinstance(s[1], int))
        time.sleep(sum(s[0] for s in script))
        if api == "generate":
            out = self.payload(api, total, total, True)
        else:
            message = {"content": "tok " * total} if api == "chat" else None
            choice = {"index": 0, "text": "tok " * total, "finish_reason": "length"}
            if message:
                choice = {"index": 0, "message": message, "finish_reason": "length"}
            out = {"choices": [choice], "usage": {"completion_tokens": total, "prompt_tokens": 2}}
        body = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # the reset script breaks its socket
        pass


def scenario(path, ids):
    lines = ["name: fake", "model: {preset: tiny}", "requests:"]
    for i, first in enumerate(ids):
        lines.append(f"  - {{id: r{i}-{first}, at: 0ms, tokens: [{first}, 100], max_tokens: 4}}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run(rig, url, *args, expect=0):
    cmd = [rig, "bench", "serve", "--base-url", url, "--warmup-requests", "0",
           "--request-timeout", "1", "--disable-tqdm", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != expect:
        sys.stdout.write(done.stdout + done.stderr)
        raise AssertionError(f"{' '.join(cmd)}: exit {done.returncode}, expected {expect}")
    return done.stdout


def last_line(path):
    with open(path) as f:
        return json.loads(f.readlines()[-1])


def close(a, b, what, rel=1e-9):
    assert abs(a - b) <= rel * max(1.0, abs(a), abs(b)), f"{what}: {a} != {b}"


def percentile(values, p):
    """numpy.percentile's default (linear) rule, without numpy."""
    v = sorted(values)
    if not v:
        return 0.0
    rank = p / 100 * (len(v) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (rank - lo)


def check_stats(r, name, values):
    """r's mean/median/p90/p99 of `name` (ms) against the values (s)."""
    mean = sum(values) / len(values) if values else 0.0
    close(r[f"mean_{name}_ms"], mean * 1e3, f"mean {name}")
    for key, p in (("median", 50), ("p90", 90), ("p99", 99)):
        close(r[f"{key}_{name}_ms"], percentile(values, p) * 1e3, f"{key} {name}")


def check_mixed(rig, url, work, backend, extra):
    """Six scripted requests at once: two succeed, four fail for four reasons."""
    trace = os.path.join(work, "mixed.yaml")
    scenario(trace, [1, 2, 3, 4, 5, 6])
    jsonl = os.path.join(work, f"mixed-{backend}.jsonl")
    h5 = os.path.join(work, f"mixed-{backend}.h5")
    out = run(rig, url, "--backend", backend, "--dataset-name", "trace", "--dataset-path", trace,
              "--output-file", jsonl, "--output-details", "--out", h5, *extra)
    r = last_line(jsonl)
    assert r["completed"] == 2 and r["failed"] == 4, (r["completed"], r["failed"])
    for reason in FAILURES:
        assert f"  {reason}:" in out, f"no '{reason}' line in the table:\n{out}"
    errors = r["errors"]
    assert errors[0] == "" and errors[1] == "", errors
    assert "malformed" in errors[2] and "HTTP 503 overloaded" in errors[4], errors
    assert errors[3] != "" and "imeout" in errors[5], errors
    ok = [i for i in range(6) if errors[i] == ""]
    ttfts = [r["ttfts"][i] for i in ok]
    e2es = [r["e2e_latencies"][i] for i in ok]
    outs = [r["output_lens"][i] for i in ok]
    itls = [g for i in ok for g in r["itls"][i]]
    assert outs == [4, 4], outs
    assert all(0.09 <= t <= 0.6 for t in ttfts), ttfts
    assert all(0.02 <= g <= 0.5 for g in r["itls"][0]), r["itls"][0]
    multi = r["itls"][1]
    assert len(multi) == 3 and max(multi) - min(multi) < 1e-6 and 0.02 <= multi[0] <= 0.4, multi
    # the summary is the hand computation from what the client recorded
    duration = r["duration"]
    assert r["total_input_tokens"] == 4 and r["total_output_tokens"] == 8
    close(r["request_throughput"], 2 / duration, "request throughput")
    close(r["input_throughput"], 4 / duration, "input throughput")
    close(r["output_throughput"], 8 / duration, "output throughput")
    close(r["total_throughput"], 12 / duration, "total throughput")
    close(r["concurrency"], sum(e2es) / duration, "concurrency")
    # rig's own: the tokens every request received, the failed ones too (malformed and reset
    # after one token each; the 503 and the stall none)
    assert r["streamed_output_tokens"] == 10, r["streamed_output_tokens"]
    close(r["streamed_output_throughput"], 10 / duration, "streamed output throughput")
    assert duration >= max(e2es) - 1e-9
    check_stats(r, "ttft", ttfts)
    check_stats(r, "e2e_latency", e2es)
    check_stats(r, "tpot", [(e - t) / (n - 1) for e, t, n in zip(e2es, ttfts, outs)])
    check_stats(r, "itl", itls)
    close(r["p95_itl_ms"], percentile(itls, 95) * 1e3, "p95 itl")
    close(r["max_itl_ms"], max(itls) * 1e3, "max itl")
    return r, h5


def check_not_streamed(rig, url, work):
    trace = os.path.join(work, "one.yaml")
    scenario(trace, [1])
    jsonl = os.path.join(work, "whole.jsonl")
    run(rig, url, "--backend", "openai", "--model", "fake-model", "--dataset-name", "trace",
        "--dataset-path", trace, "--disable-stream", "--output-file", jsonl, "--output-details")
    r = last_line(jsonl)
    assert r["completed"] == 1 and r["output_lens"] == [4], r
    close(r["ttfts"][0], r["e2e_latencies"][0], "TTFT = E2E without streaming")
    assert r["ttfts"][0] >= 0.25, r["ttfts"]


def check_all_failed(rig, url, work):
    trace = os.path.join(work, "all503.yaml")
    scenario(trace, [5, 5, 5])
    out = run(rig, url, "--dataset-name", "trace", "--dataset-path", trace, expect=1)
    assert "Successful requests:                     0" in out, out


def schedule(rig, seed, burstiness="1"):
    out = run(rig, "http://127.0.0.1:9", "--dry-run", "--quiet", "--num-prompts", "200",
              "--request-rate", "20", "--burstiness", burstiness, "--seed", str(seed),
              "--random-input-len", "64", "--random-output-len", "8")
    return [line.split() for line in out.splitlines()]


def check_schedule(rig):
    a, b, c = schedule(rig, 7), schedule(rig, 7), schedule(rig, 8)
    assert a == b, "the same seed gave two schedules"
    assert a != c, "two seeds gave the same schedule"
    assert len(a) == 200 and float(a[0][1]) == 0.0
    mean_gap = float(a[-1][1]) / 199
    assert 0.8 / 20 < mean_gap < 1.2 / 20, mean_gap
    assert schedule(rig, 7, "0.5") == schedule(rig, 7, "0.5")
    assert all(1 <= int(x[3]) <= 8 and 1 <= int(x[2]) <= 64 for x in a)


def check_h5(rig, url, work, h5, jsonl_result):
    try:
        import h5py  # noqa: F401
    except ImportError:
        print("h5py missing: the HDF5 checks are skipped")
        return
    import h5py
    with h5py.File(h5, "r") as f:
        assert f.attrs["format"] == "rig-results" and f.attrs["backend"] == "http"
        req = f["requests"][:]
        enum = h5py.check_enum_dtype(f["requests"].dtype["finish_reason"])
        names = {v: k for k, v in enum.items()}
        reasons = [names[int(v)] for v in req["finish_reason"]]
        assert reasons == ["length", "length", "abort", "abort", "rejected", "abort"], reasons
        close(f["summary/ttft_mean"][()] * 1e3, jsonl_result["mean_ttft_ms"], "h5 ttft")
        times = f["tokens/time"][:]
        for row in req[:2]:
            t = times[row["token_offset"]:row["token_offset"] + row["output_len"]]
            assert len(t) == 4 and (t[1:] >= t[:-1]).all()
    try:
        import matplotlib  # noqa: F401
        png = os.path.join(work, "mixed.png")
        report = os.path.join(os.path.dirname(__file__), "..", "tools", "report", "report.py")
        subprocess.run([sys.executable, report, h5, "-o", png], check=True, capture_output=True)
        assert os.path.getsize(png) > 0
    except ImportError:
        print("matplotlib missing: tools/report/report.py is not run")
    # sent on the schedule: arrivals follow the dry run's, at most one in flight
    trace = os.path.join(work, "three.yaml")
    scenario(trace, [1, 1, 1])
    h5c = os.path.join(work, "serial.h5")
    run(rig, url, "--dataset-name", "trace", "--dataset-path", trace, "--request-rate", "50",
        "--max-concurrency", "1", "--out", h5c)
    with h5py.File(h5c, "r") as f:
        req = f["requests"][:]
        for a, b in zip(req[:-1], req[1:]):
            assert b["arrival"] >= a["finish"] - 1e-3, (a, b)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rig", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--tokenizer", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    r, h5 = check_mixed(args.rig, url, args.work, "rig", [])
    check_mixed(args.rig, url, args.work, "openai", [])  # model from GET /v1/models
    check_mixed(args.rig, url, args.work, "openai-chat", ["--tokenizer", args.tokenizer])
    check_not_streamed(args.rig, url, args.work)
    check_all_failed(args.rig, url, args.work)
    check_schedule(args.rig)
    check_h5(args.rig, url, args.work, h5, r)
    server.shutdown()
    print("bench_serve_fake: all checks passed")


if __name__ == "__main__":
    main()
