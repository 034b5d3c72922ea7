"""test_load.py — disconnects mid-stream and 1,000 concurrent streaming clients.

Disconnect: a client reads two events of a long stream and closes its socket; the server must
abort the request and free its KV pages (checked through /metrics; the engine's invariant
checker runs every step in this build and would abort the server on a leak).
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
    finally:
        server.stop()


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
        asyncio.run(many(server.port, clients // 4))  # warm-up: allocator arenas, caches
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
        assert m["rig:generation_tokens_total"] == (clients + clients // 4) * TOKENS
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
    check_load(clients_wanted())
    print("test_load: all passed")


if __name__ == "__main__":
    main()
