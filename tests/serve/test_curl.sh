#!/bin/sh
# test_curl.sh — `rig serve` driven by the curl command line, as a user would (docs/server.md):
# /health, /generate (plain and streamed), /abort_request of a running request, /metrics.
#
# Starts the server on the simulator (tiny Qwen3-shaped model, Qwen3 tokenizer) on a free port
# read from its "ready" line, runs every request with a time limit, stops the server with SIGINT
# and requires exit 0. Bounded: each curl call has --max-time, the whole test a ctest TIMEOUT.
# Usage: test_curl.sh RIG SOURCE_DIR; exits 0 when every check holds, 77 without curl.
set -eu
rig=$1
src=$2
command -v curl >/dev/null 2>&1 || exit 77
work=$(mktemp -d)
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "test_curl: $*" >&2
    exit 1
}

"$rig" serve --model-path "$src/tests/data/serve/tiny-qwen3" --dummy-weights \
    --tokenizer-path "$src/tests/data/tokenizer/qwen3" --port 0 --num-pages 8192 \
    --served-model-name tiny-qwen3 >"$work/out" 2>"$work/err" &
server=$!
port=""
for _ in $(seq 1 300); do
    port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\).*ready.*/\1/p' "$work/out")
    [ -n "$port" ] && break
    kill -0 "$server" 2>/dev/null || fail "rig serve exited: $(cat "$work/err")"
    sleep 0.1
done
[ -n "$port" ] || fail "rig serve was not ready within 30 s"
url=http://127.0.0.1:$port
c() { curl --silent --show-error --max-time 20 "$@"; }

# /health: 200 once ready.
[ "$(c -o /dev/null -w '%{http_code}' "$url/health")" = 200 ] || fail "/health is not 200"

# /generate, whole: 8 tokens, finish reason length, meta_info with the counts.
c -H 'Content-Type: application/json' -d '{"text": "The capital of France is",
    "sampling_params": {"max_new_tokens": 8, "temperature": 0, "ignore_eos": true}}' \
    "$url/generate" >"$work/generate.json"
grep -q '"completion_tokens": *8' "$work/generate.json" || fail "generate: $(cat "$work/generate.json")"
grep -q '"prompt_tokens": *5' "$work/generate.json" || fail "generate prompt: $(cat "$work/generate.json")"
grep -q '"type": *"length"' "$work/generate.json" || fail "generate finish: $(cat "$work/generate.json")"

# /generate, streamed: SSE events, the last data line [DONE].
c -N -H 'Content-Type: application/json' -d '{"input_ids": [785, 6722, 315, 9625, 374],
    "sampling_params": {"max_new_tokens": 4, "temperature": 0, "ignore_eos": true},
    "stream": true}' "$url/generate" >"$work/stream.txt"
[ "$(grep -c '^data: {' "$work/stream.txt")" -ge 1 ] || fail "stream: no events"
[ "$(grep '^data: ' "$work/stream.txt" | tail -n 1)" = "data: [DONE]" ] || fail "stream: no [DONE]"

# /abort_request: a long request streamed in the background is aborted by the id its events
# carry (meta_info.id) and ends with finish reason abort.
c -N -H 'Content-Type: application/json' -d '{"text": "Count to a thousand", "stream": true,
    "sampling_params": {"max_new_tokens": 4000, "ignore_eos": true}}' \
    "$url/generate" >"$work/long.txt" &
long=$!
rid=""
for _ in $(seq 1 100); do
    rid=$(sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$work/long.txt" | head -n 1)
    [ -n "$rid" ] && break
    sleep 0.05
done
[ -n "$rid" ] || fail "the long stream carries no id: $(head -c 400 "$work/long.txt")"
[ "$(c -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    -d "{\"rid\": \"$rid\"}" "$url/abort_request")" = 200 ] || fail "/abort_request not 200"
wait "$long" || fail "the aborted stream did not end cleanly"
grep -q '"type": *"abort"' "$work/long.txt" || fail "aborted stream: $(tail -c 400 "$work/long.txt")"

# /metrics: Prometheus text with rig: names, nothing running, every page back.
c "$url/metrics" >"$work/metrics.txt"
grep -Eq '^rig:num_running_reqs(\{[^}]*\})? 0(\.0)?$' "$work/metrics.txt" || fail "metrics: requests still running"
grep -q '^rig:generation_tokens_total' "$work/metrics.txt" || fail "metrics: no token counter"

kill -INT "$server"
status=0
wait "$server" || status=$?
server=""
[ "$status" = 0 ] || fail "rig serve exited $status after SIGINT"
echo "test_curl: ok (port $port)"
