"""test_load.py — disconnects mid-stream and 1,000 concurrent streaming clients.

Disconnect: a client reads two events of a long stream and closes its socket; the server must
abort the request and free its KV pages (checked through /metrics; the engine's invariant
checker runs every step in this build and would abort the server on a leak); the same with
n = 4 (all four choices abort once); and n = 4 aborted while its held choices still wait for
the first choice's first token (a long prompt on a realtime-paced simulator).
Load: CLIENTS clients (default 1000) open connections at once on loopback and each streams a
completion of TOKENS tokens (timing-only simulator, so the math does not bound the rate);
every stream must end with `data: [DONE]` after TOKENS chunks, with 0 errors; then no request
runs, no page is held, and the server's RSS is back within 32 MiB of its idle level (measured
after a warm-up round of a quarter of the clients, which fills the allocator's arenas).
Bounded: every socket has a timeout and the whole run a deadline; it stops by itself.
Usage: python3 test_load.py [--rig PATH] [--clients N]
"""
import asyncio
import json
import socket
import sys
import time

from serve_fixture import Server

TOKENS = 16
DEADLINE_S = 120


def clients_wanted():
    for i, arg in enumerate(sys.argv):
        if arg == "--clients" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
    return 1000


def check_disconnect():
    server = Server("--timeout", "10")
    try:
        body = json.dumps({"prompt": "hello", "max_tokens": 3000, "stream": True,
                           "ignore_eos": True}).encode()
        s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                  b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        seen = b""
        while seen.count(b"data: ") < 2:
            seen += s.recv(4096)
        m = server.metrics()
        assert m["rig:num_running_reqs"] == 1, m["rig:num_running_reqs"]
        s.close()
        start = time.monotonic()
        m = server.wait_idle()
        assert m["rig:num_running_reqs"] == 0, "the request kept running after the client left"
        assert m["rig:kv_pages|state=owned"] == 0 and m["rig:kv_pages|state=locked"] == 0, m
        assert m["rig:num_requests_total|finish_reason=abort"] == 1
        assert m["rig:generation_tokens_total"] < 3000
        print("ok: a client gone mid-stream: aborted, pages freed in %.2f s (%d tokens made)"
              % (time.monotonic() - start, m["rig:generation_tokens_total"]))
        check_disconnect_n(server, m)
    finally:
        server.stop()


def check_disconnect_n(server, before):
    """n = 4: the three held choices were posted at the first one's first token; a client gone
    mid-stream aborts all four, each ends exactly once, and every page is freed."""
    # 4 x 1000 tokens fit the fixture's 8192 KV pages: all four run at once
    body = json.dumps({"prompt": "four choices of one prompt", "max_tokens": 1000, "n": 4,
                       "stream": True, "ignore_eos": True, "temperature": 1.0}).encode()
    s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
              b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    seen = b""
    while not all(b'"index":%d' % i in seen for i in range(4)):
        data = s.recv(4096)  # until every choice streamed something
        assert data, seen[-600:]
        seen += data
    running = server.metrics()["rig:num_running_reqs"]
    assert running == 4, (running, seen[-600:])
    s.close()
    made = check_all_aborted(server, before, 4)
    assert made < 4 * 1000, made
    print("ok: n=4, client gone mid-stream: 4 aborted, pages freed (%d tokens made)" % made)


def check_all_aborted(server, before, count):
    """Once idle: nothing runs or waits, no page is held, `count` more requests ended as abort
    (each exactly once); returns the tokens made since `before`."""
    m = server.wait_idle()
    assert m["rig:num_running_reqs"] == 0 and m["rig:num_queue_reqs"] == 0, m
    assert m["rig:kv_pages|state=owned"] == 0 and m["rig:kv_pages|state=locked"] == 0, m
    aborted = m["rig:num_requests_total|finish_reason=abort"] - \
        before["rig:num_requests_total|finish_reason=abort"]
    assert aborted == count, aborted
    return m["rig:generation_tokens_total"] - before["rig:generation_tokens_total"]


def check_abort_held():
    """n = 4 aborted before the first choice's first token (a long prompt on a realtime-paced
    simulator of a larger model): the held choices are never posted and end as aborted."""
    server = Server("--preset", "qwen3-0.6b", "--sim-timing-only", "--sim-pace", "realtime",
                    "--sim-profile", "h100", "--chunked-prefill-size", "256")
    try:
        prompt = list(range(1000, 1000 + 3000))  # token ids: about 12 chunks of prefill
        body = json.dumps({"prompt": prompt, "max_tokens": 64, "n": 4, "ignore_eos": True})
        before = server.wait_idle()
        s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(body), body.encode()))
        s.settimeout(0.01)
        answer = b""
        for _ in range(3000):  # abort everything every 10 ms until the answer comes
            post_abort(server.port)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            answer += chunk
        s.close()
        choices = json.loads(answer.partition(b"\r\n\r\n")[2])["choices"]
        assert sorted(c["finish_reason"] for c in choices) == ["abort"] * 4, choices
        made = check_all_aborted(server, before, 4)
        print("ok: n=4 aborted during the first choice's prefill: 4 aborted, pages freed, "
              "%d tokens made" % made)
    finally:
        server.stop()


def post_abort(port):
    body = b'{"abort_all": true}'
    with socket.create_connection(("127.0.0.1", port), timeout=10) as a:
        a.sendall(b"POST /abort_request HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        while a.recv(4096):
            pass


async def one_stream(port, index, results):
    body = json.dumps({"prompt": "client %d says" % index, "max_tokens": TOKENS,
                       "ignore_eos": True, "stream": True}).encode()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 60)
        writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: "
                     b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), DEADLINE_S)  # until the server closes
        writer.close()
    except (OSError, asyncio.TimeoutError) as e:
        results.append("client %d: %r" % (index, e))
        return
    head, _, _ = data.partition(b"\r\n\r\n")
    chunks = data.count(b'"text_completion"')
    if not head.startswith(b"HTTP/1.1 200") or not data.rstrip().endswith(b"0") or \
            b"data: [DONE]" not in data or chunks < 1:
        results.append("client %d: %r" % (index, data[:200]))
        return
    results.append(None)


async def many(port, count):
    results = []
    await asyncio.wait_for(asyncio.gather(*(one_stream(port, i, results) for i in range(count))),
                           DEADLINE_S + 30)
    return results


def check_load(clients):
    server = Server("--sim-timing-only", "--max-running-requests", "256",
                    "--max-queued-requests", "2048", "--timeout", "60", "--num-pages", "65536")
    try:
        start_rss = server.rss_kb()
        warm = asyncio.run(many(server.port, clients // 4))  # warm-up: allocator arenas, caches
        warm_errors = [r for r in warm if r is not None]
        server.wait_idle()
        idle_rss = server.rss_kb()
        start = time.monotonic()
        results = asyncio.run(many(server.port, clients))
        elapsed = time.monotonic() - start
        errors = [r for r in results if r is not None]
        assert len(results) == clients, len(results)
        assert not errors, "%d errors, first: %s" % (len(errors), errors[:3])
        m = server.wait_idle()
        assert m["rig:num_running_reqs"] == 0 and m["rig:kv_pages|state=owned"] == 0, m
        assert m["rig:kv_pages|state=locked"] == 0
        assert m["rig:generation_tokens_total"] == (clients + clients // 4) * TOKENS, \
            "%s output tokens counted, %d expected; %d of the %d warm-up streams failed, first: %s" \
            % (m["rig:generation_tokens_total"], (clients + clients // 4) * TOKENS,
               len(warm_errors), clients // 4, warm_errors[:2])
        peak = server.rss_kb()
        time.sleep(0.5)
        after = server.rss_kb()
        assert after - idle_rss < 32 * 1024, "RSS %d kB idle, %d kB after" % (idle_rss, after)
        print("ok: %d concurrent streams x %d tokens in %.1f s, 0 errors; RSS at start %d kB, "
              "idle %d kB, after %d kB" % (clients, TOKENS, elapsed, start_rss, idle_rss, after))
    finally:
        server.stop()


def main():
    check_disconnect()
    check_abort_held()
    check_load(clients_wanted())
    print("test_load: all passed")


if __name__ == "__main__":
    main()
