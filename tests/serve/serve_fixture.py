"""serve_fixture.py — starts a real `rig serve` on 127.0.0.1 for the server tests.

The server runs the tiny Qwen3-shaped model of tests/data/serve/tiny-qwen3 (dummy weights, the
Qwen3 vocabulary) with the Qwen3 tokenizer of tests/data/tokenizer/qwen3, on the simulator, on a
free port (--port 0; the port is read from the "ready" line). `stop()` sends SIGINT and checks
that the server exits 0 within a bound. Everything here is bounded in time.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "tests/data/serve/tiny-qwen3")
TOKENIZER = os.path.join(ROOT, "tests/data/tokenizer/qwen3")


def rig_binary():
    for i, arg in enumerate(sys.argv):
        if arg == "--rig" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
    return os.path.join(ROOT, "build/rig")


class Server:
    def __init__(self, *extra, timeout_s=60, launcher=()):
        """`launcher`: words before the rig binary, e.g. ("mpirun", "-n", "2")."""
        model = [] if "--preset" in extra else ["--model-path", MODEL, "--dummy-weights"]
        self.args = [*launcher, rig_binary(), "serve", *model, "--tokenizer-path", TOKENIZER, "--port",
                     "0", "--num-pages", "8192", "--max-running-requests", "32",
                     "--max-queued-requests", "256", "--served-model-name", "tiny-qwen3",
                     *extra]
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        deadline = time.monotonic() + timeout_s
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if "ready" in line or line == "":
                break
        match = re.search(r"http://([0-9.]+):([0-9]+)", line)
        if match is None:
            self.proc.kill()
            raise RuntimeError("rig serve did not start: %r %s" % (line, self.proc.stderr.read()))
        self.url = "http://%s:%s" % (match.group(1), match.group(2))
        self.port = int(match.group(2))

    def post(self, path, body, timeout=30):
        """POSTs `body` as JSON; (status, text)."""
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, r.read().decode()

    def get(self, path, timeout=10):
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return r.status, r.read().decode()

    def metrics(self):
        """The /metrics samples as {name{labels}: value}, parsed by prometheus_client."""
        from prometheus_client.parser import text_string_to_metric_families
        _, text = self.get("/metrics")
        out = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                key = s.name + "".join("|%s=%s" % kv for kv in sorted(s.labels.items())
                                       if kv[0] != "model_name")
                out[key] = s.value
        return out

    def wait_idle(self, timeout_s=20):
        """Waits until no request runs or waits and no KV page is held; returns the metrics."""
        deadline = time.monotonic() + timeout_s
        while True:
            m = self.metrics()
            idle = (m["rig:num_running_reqs"] == 0 and m["rig:num_queue_reqs"] == 0 and
                    m["rig:kv_pages|state=owned"] == 0 and m["rig:kv_pages|state=locked"] == 0)
            if idle or time.monotonic() > deadline:
                return m
            time.sleep(0.05)

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self, timeout_s=30):
        self.proc.send_signal(signal.SIGINT)
        try:
            rc = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("rig serve did not stop within %d s of SIGINT" % timeout_s)
        err = self.proc.stderr.read()
        assert rc == 0, "rig serve exited %d: %s" % (rc, err[-2000:])
        assert "assertion failed" not in err and "invariant" not in err, err[-2000:]
        return err


def tokenize(text, chat=False, no_thinking=False):
    args = [rig_binary(), "tokenize", "--tokenizer", TOKENIZER]
    if chat:
        args.append("--chat")
    if no_thinking:
        args.append("--no-thinking")
    out = subprocess.run(args + [text], check=True, capture_output=True, text=True, timeout=60)
    return [int(x) for x in out.stdout.split()]
