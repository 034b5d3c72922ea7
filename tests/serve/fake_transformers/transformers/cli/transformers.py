"""Fake `transformers serve` (README.md): python3 -m transformers.cli.transformers serve MODEL
--continuous-batching --host H --port P --log-level L."""
import argparse
import http.server
import json
import os
import sys
import time

# OpenAI's completion parameters (openai's CompletionCreateParamsBase) and HF's additions
ALLOWED = {"model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs",
           "max_tokens", "n", "presence_penalty", "seed", "stop", "stream_options", "suffix",
           "temperature", "top_p", "user", "generation_config", "stream"}
EOS_AFTER = 5  # tokens before the fake model's "EOS", when EOS is on
TOKEN_S = 0.002  # per token
TOKENS_PER_CHUNK = 3


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model = None
    eos = None

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self.reply(200, {"status": "ok"})
        elif self.path == "/v1/models":
            self.reply(500, {"detail": "CacheNotFound: Cache directory not found"})
        else:
            self.reply(404, {"detail": "Not Found"})

    def chunk(self, body):
        data = ("data: %s\n\n" % json.dumps(body)).encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/completions":
            return self.reply(404, {"detail": "Not Found"})
        unexpected = set(body) - ALLOWED
        if unexpected:
            return self.reply(422, {"detail": "Unexpected fields in the request: %s" % unexpected})
        if not isinstance(body.get("prompt", ""), str):
            return self.reply(400, {"detail": "prompt must be a string."})
        if body.get("model") not in (None, self.model):
            return self.reply(400, {"detail": "Server is pinned to '%s'" % self.model})
        want = int(body.get("max_tokens") or 1024)
        count = want if self.eos == -1 else min(want, EOS_AFTER)
        prompt_tokens = len(body["prompt"].split())
        base = {"id": "x", "object": "text_completion", "created": 0, "model": self.model}
        if not body.get("stream"):
            time.sleep(TOKEN_S * count)
            return self.reply(200, dict(base, choices=[{"text": "tok " * count, "index": 0,
                                                         "finish_reason": "length"}]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        while sent < count:
            n = min(TOKENS_PER_CHUNK, count - sent)
            time.sleep(TOKEN_S * n)
            self.chunk(dict(base, choices=[{"text": "tok " * n, "index": 0}]))
            sent += n
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": count,
                 "total_tokens": prompt_tokens + count}
        finish = "length" if count >= want else "stop"
        self.chunk(dict(base, choices=[{"text": "", "index": 0, "finish_reason": finish}],
                        usage=usage))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("model")
    parser.add_argument("--continuous-batching", action="store_true")
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    with open(os.path.join(args.model, "generation_config.json")) as f:
        Handler.eos = json.load(f).get("eos_token_id")
    Handler.model = args.model
    server = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    print("fake transformers serve: %s on %s:%d, eos %s" % (args.model, args.host, args.port,
                                                            Handler.eos), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
