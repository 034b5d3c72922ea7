"""test_hostile.py — malformed and hostile requests against a real `rig serve`.

A table of requests, each with the HTTP status it must get and, for 4xx answers with an OpenAI
error body, the `param` (or `code`) that must be named: malformed JSON, wrong types, values out
of range, unknown model (404), prompt + max_tokens over the context (400
context_length_exceeded), a body over --max-request-bytes (413), unknown routes (404), wrong
methods (405), bad API keys (401, on a second server with --api-key); then raw-socket abuse:
garbage HTTP, a header of 100 KB, a client that sends half a request and stalls (slowloris:
closed after --timeout). Afterwards /health is 200 and /metrics shows no running request and
no KV page held. Usage: python3 test_hostile.py [--rig PATH]
"""
import http.client
import json
import socket
import time

from serve_fixture import Server

CHAT = "/v1/chat/completions"
COMP = "/v1/completions"
GEN = "/generate"
MSG = [{"role": "user", "content": "hi"}]


def chat(**fields):
    return dict({"messages": MSG, "max_tokens": 2}, **fields)


def comp(**fields):
    return dict({"prompt": "hi", "max_tokens": 2}, **fields)


# (method, path, body: dict | bytes | None, status, param or code expected in the error)
CASES = [
    ("POST", CHAT, b"not json", 400, "invalid_json"),
    ("POST", CHAT, b"[]", 400, "invalid_json"),
    ("POST", CHAT, b"", 400, "invalid_json"),
    ("POST", CHAT, {}, 400, "messages"),
    ("POST", CHAT, {"messages": "hi"}, 400, "messages"),
    ("POST", CHAT, {"messages": []}, 400, "messages"),
    ("POST", CHAT, {"messages": [{"role": "wizard", "content": "x"}]}, 400, "messages[0]"),
    ("POST", CHAT, {"messages": [MSG[0], {"role": "user"}]}, 400, "messages[1]"),
    ("POST", CHAT, {"messages": [{"role": "user", "content": 5}]}, 400, "messages[0]"),
    ("POST", CHAT, {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400,
     "messages[0]"),
    ("POST", CHAT, chat(temperature="hot"), 400, "temperature"),
    ("POST", CHAT, chat(temperature=-1), 400, "temperature"),
    ("POST", CHAT, chat(temperature=3), 400, "temperature"),
    ("POST", CHAT, chat(top_p=0), 400, "top_p"),
    ("POST", CHAT, chat(top_p=1.5), 400, "top_p"),
    ("POST", CHAT, chat(top_k=-5), 400, "top_k"),
    ("POST", CHAT, chat(top_k=1.5), 400, "top_k"),
    ("POST", CHAT, chat(min_p=2), 400, "min_p"),
    ("POST", CHAT, chat(max_tokens=-1), 400, "max_tokens"),
    ("POST", CHAT, chat(max_tokens=0), 400, "max_tokens"),
    ("POST", CHAT, chat(max_tokens="10"), 400, "max_tokens"),
    ("POST", CHAT, chat(max_completion_tokens=[1]), 400, "max_completion_tokens"),
    ("POST", CHAT, chat(max_tokens=10**9), 400, "context_length_exceeded"),
    ("POST", CHAT, chat(n=0), 400, "n"),
    ("POST", CHAT, chat(n=1000), 400, "n"),
    ("POST", CHAT, chat(stop=5), 400, "stop"),
    ("POST", CHAT, chat(stop=["a", "b", "c", "d", "e"]), 400, "stop"),
    ("POST", CHAT, chat(stop=[""]), 400, "stop"),
    ("POST", CHAT, chat(stop=["x" * 300]), 400, "stop"),
    ("POST", CHAT, chat(stop_token_ids=[-1]), 400, "stop_token_ids"),
    ("POST", CHAT, chat(stop_token_ids=[999999999]), 400, "stop_token_ids"),
    ("POST", CHAT, chat(seed="x"), 400, "seed"),
    ("POST", CHAT, chat(seed=1.5), 400, "seed"),
    ("POST", CHAT, chat(logprobs="yes"), 400, "logprobs"),
    ("POST", CHAT, chat(logprobs=True, top_logprobs=50), 400, "top_logprobs"),
    ("POST", CHAT, chat(top_logprobs=2), 400, "top_logprobs"),
    ("POST", CHAT, chat(presence_penalty=5), 400, "presence_penalty"),
    ("POST", CHAT, chat(frequency_penalty=-3), 400, "frequency_penalty"),
    ("POST", CHAT, chat(repetition_penalty=0), 400, "repetition_penalty"),
    ("POST", CHAT, chat(stream="yes"), 400, "stream"),
    ("POST", CHAT, chat(stream_options={"include_usage": True}), 400, "stream_options"),
    ("POST", CHAT, chat(ignore_eos="no"), 400, "ignore_eos"),
    ("POST", CHAT, chat(model="gpt-4"), 404, "model_not_found"),
    ("POST", CHAT, chat(chat_template_kwargs=5), 400, "chat_template_kwargs"),
    ("POST", CHAT, chat(chat_template_kwargs={"enable_thinking": "no"}), 400,
     "chat_template_kwargs.enable_thinking"),
    ("POST", CHAT, chat(response_format={"type": "json_schema"}), 400, "response_format"),
    ("POST", CHAT, chat(tools="x"), 400, "tools"),
    ("POST", CHAT, b'{"messages": [], "messages": []}', 400, "invalid_json"),
    ("POST", CHAT, b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}', 400,
     "invalid_json"),
    ("POST", CHAT, b'{"messages": [{"role": "user", "content": "a\\u0000b"}]}', 400,
     "invalid_json"),
    ("POST", CHAT, b'{"temperature": 1e400}', 400, "invalid_json"),
    ("POST", CHAT, b"[" * 30000 + b"]" * 30000, 400, "invalid_json"),
    ("POST", COMP, comp(echo=True), 400, "echo"),
    ("POST", COMP, comp(best_of=3), 400, "best_of"),
    ("POST", COMP, comp(suffix="x"), 400, "suffix"),
    ("POST", COMP, {"max_tokens": 2}, 400, "prompt"),
    ("POST", COMP, comp(prompt=[]), 400, "prompt"),
    ("POST", COMP, comp(prompt=[[]]), 400, "prompt"),
    ("POST", COMP, comp(prompt=[1, -5]), 400, "prompt"),
    ("POST", COMP, comp(prompt=[1, 10**7]), 400, "prompt"),
    ("POST", COMP, comp(prompt=123), 400, "prompt"),
    ("POST", COMP, comp(prompt=["ok", 5]), 400, "prompt"),
    ("POST", COMP, comp(prompt=["x"] * 65), 400, "prompt"),
    ("POST", COMP, comp(prompt="word " * 5000), 400, "context_length_exceeded"),
    ("POST", COMP, comp(logprobs=9), 400, "logprobs"),
    ("POST", GEN, {"text": "a", "input_ids": [1]}, 400, "text"),
    ("POST", GEN, {}, 400, "text"),
    ("POST", GEN, {"text": "a", "sampling_params": 5}, 400, "sampling_params"),
    ("POST", GEN, {"text": "a", "sampling_params": {"max_new_tokens": "x"}}, 400,
     "sampling_params.max_new_tokens"),
    ("POST", GEN, {"text": "a", "sampling_params": {"temperature": -2}}, 400,
     "sampling_params.temperature"),
    ("POST", GEN, {"input_ids": [[1], [-1]]}, 400, "input_ids"),
    ("POST", CHAT, b"{" + b'"a": "' + b"x" * 70000 + b'"}', 413, "request_too_large"),
    ("GET", CHAT, None, 405, "method_not_allowed"),
    ("POST", "/v1/models", b"{}", 405, "method_not_allowed"),
    ("DELETE", "/health", None, 405, "method_not_allowed"),
    ("GET", "/nope", None, 404, "not_found"),
    ("POST", "/v1/chat/completions/extra", b"{}", 404, "not_found"),
    ("POST", "/abort_request", b"{}", 400, None),
    ("POST", "/abort_request", b"nonsense", 400, None),
]


def request(port, method, path, body, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    connection.request(method, path, body=data, headers=headers or {})
    response = connection.getresponse()
    payload = response.read()
    connection.close()
    return response.status, payload, response


def check_table(server):
    assert len(CASES) >= 40
    for method, path, body, status, named in CASES:
        got, payload, response = request(server.port, method, path, body)
        where = "%s %s %r" % (method, path, body if not isinstance(body, bytes) else body[:60])
        assert got == status, "%s: status %d, expected %d: %s" % (where, got, status, payload)
        error = json.loads(payload)["error"]
        assert error["message"], where
        if named is not None:
            assert named in (error["param"], error["code"]), "%s: %s" % (where, error)
        if status == 405:
            assert response.getheader("Allow") is not None
    print("ok: %d hostile requests answered as expected" % len(CASES))


def check_raw(server):
    # garbage instead of HTTP: an error status, the server keeps serving
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GARBAGE / NOT-HTTP\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 4")
    # a 100 KB header line
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
        reply = b""
        try:
            reply = s.recv(4096)
        except ConnectionResetError:
            pass
        assert reply == b"" or reply.startswith(b"HTTP/1.1 4"), reply[:80]
    # slowloris: half a request, then silence; the server closes it after --timeout (2 s)
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=15) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        try:
            while s.recv(4096):
                pass
        except ConnectionResetError:
            pass
    waited = time.monotonic() - start
    assert 1.0 <= waited < 10.0, "a stalled client was held %.1f s" % waited
    print("ok: garbage, a huge header and a stalled client (closed after %.1f s)" % waited)


def check_api_key():
    server = Server("--api-key", "sekret-key", "--timeout", "5")
    try:
        body = comp()
        assert request(server.port, "POST", COMP, body)[0] == 401
        assert request(server.port, "POST", COMP, body, {"Authorization": "Bearer wrong"})[0] \
            == 401
        assert request(server.port, "POST", COMP, body,
                       {"Authorization": "Bearer sekret-key-longer"})[0] == 401
        assert request(server.port, "GET", "/v1/models", None)[0] == 401
        assert request(server.port, "POST", COMP, body,
                       {"Authorization": "Bearer sekret-key"})[0] == 200
        assert request(server.port, "GET", "/health", None)[0] == 200  # health is open
    finally:
        server.stop()
    print("ok: API key (401 without or with a wrong key, 200 with it)")


def main():
    server = Server("--max-request-bytes", "65536", "--timeout", "2")
    try:
        check_table(server)
        check_raw(server)
        assert request(server.port, "POST", COMP, comp())[0] == 200
        assert server.get("/health")[0] == 200
        m = server.wait_idle()
        assert m["rig:num_running_reqs"] == 0 and m["rig:num_queue_reqs"] == 0
        assert m["rig:kv_pages|state=owned"] == 0 and m["rig:kv_pages|state=locked"] == 0
        assert m["rig:http_errors_total"] >= len(CASES)
    finally:
        server.stop()
    check_api_key()
    print("test_hostile: all passed")


if __name__ == "__main__":
    main()
