#!/usr/bin/env bash
# serve_bench.sh — issue 16's side-by-side on the GPU machine, in one call of about 8 minutes:
# rig over HTTP (`rig serve` + `rig bench serve`) against rig in process (`rig bench offline
# online`), and optionally Hugging Face `transformers serve` through the same client.
#
#   1. in process: rig bench offline online --backend cuda --rates 4,8,16,32 (128 requests
#      per rate): the reference numbers, written to $OUT/inproc/ (bench.h5 + one file per run)
#      and $OUT/inproc.txt (the table the summary reads);
#   2. over HTTP: `rig serve --backend cuda --preset qwen3-0.6b --dummy-weights` on
#      127.0.0.1:1919 with the in-process engine settings (256 running requests, decode graphs
#      up to 256, prefill chunks of 8192, context 2048, 400,000 KV pages); once /health answers
#      200, `rig bench serve` with the trace dataset on scenario files holding exactly the
#      in-process workloads: Mini-SGLang's offline one (256 requests, lengths U[100, 1024], all
#      at t = 0) and the online ones (the same random workload, Poisson arrivals at each rate,
#      seed 0) — so the same requests arrive at the same offsets in both columns;
#   3. the peer (RIG_SERVE_BENCH_PEER=1): `transformers serve --continuous-batching` on a
#      Qwen3-0.6B-shaped model with seeded random weights and the Qwen3 tokenizer, the same
#      client with --backend openai on the first RIG_PEER_OFFLINE (32) offline requests and
#      the first RIG_PEER_ONLINE (16) arrivals of each rate, each run cut at RIG_PEER_TIMEOUT
#      s (serve_bench_peer.sh); rig serves the same requests the same way in step 2
#      (http-peerset-*, /v1/completions with text prompts), so the ratios compare like runs;
#   4. $OUT/summary.txt: one line per run (output tok/s, TTFT/TPOT p50/p99), the HTTP/in-process
#      ratio of offline output tok/s (the issue's target: >= 0.95) and rig/peer ratios (output
#      tok/s rig over peer; TTFT and TPOT p50/p99 peer over rig).
# Exit status 0 when every HTTP run completed all its requests and the ratio was computed.
#
# On the GPU machine, from a bundle made here with tools/bundle.sh /work/main/bundle-NAME:
#     bundle-NAME/serve_bench.sh            (OUT defaults to ./serve-bench-out)
# via the device tool: run(command="OUT=$OUT bundle-NAME/serve_bench.sh", carry=["bundle-NAME"]).
# The rehearsal on the simulator (ctest serve_bench_rehearsal; no GPU): RIG_SERVE_BENCH_BACKEND=sim
# RIG_BIN=build/rig tools/gpu/serve_bench.sh — the same steps with `rig serve --backend sim
# --sim-timing-only --sim-pace realtime` (the H100 profile, on the wall clock), `rig bench
# --backend sim --quick` (16 offline requests) and 16 requests at rates 16 and 32.
# Environment: RIG_SERVE_BENCH_BACKEND (cuda; sim: the rehearsal), RIG_BIN (the rig binary;
# default the bundle's, through run.sh), RIG_SERVE_TOKENIZER (the bundle's tokenizer/qwen3, else
# the repository's), RIG_SERVE_ARGS (replaces the `rig serve` flags), RIG_SERVE_PORT (1919),
# RIG_SERVE_BENCH_API (the client's API: rig = /generate with input_ids; openai =
# /v1/completions with a list prompt), RIG_SERVE_BENCH_RATES ("4 8 16 32"; sim "16 32"),
# RIG_SERVE_BENCH_REQUESTS (per online rate: 128; sim 16), RIG_SERVE_BENCH_PEER (0),
# RIG_PEER_OFFLINE / RIG_PEER_ONLINE / RIG_PEER_TIMEOUT / RIG_PEER_BUDGET (serve_bench_peer.sh),
# RIG_SERVE_BENCH_INPROC_LAST (0; 1: step 1 after step 3, so a short call loses it first),
# RIG_SERVE_BENCH_DEADLINE (0; seconds: step 1 is cut to end 16 s before it),
# RIG_SERVE_BENCH_RIG (1; 0: steps 1 and 2 left out, the peer alone),
# RIG_PEER_WHEELS (a folder of wheels for the peer's missing Python packages: fastapi,
# uvicorn, ...; installed with pip --no-index into $OUT/peer-site).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=${RIG_BUNDLE:-$here}
out=${OUT:-$PWD/serve-bench-out}
port=${RIG_SERVE_PORT:-1919}
engine=${RIG_SERVE_BENCH_BACKEND:-cuda}
api=${RIG_SERVE_BENCH_API:-rig}
peer=${RIG_SERVE_BENCH_PEER:-0}
inproc_last=${RIG_SERVE_BENCH_INPROC_LAST:-0}
rig_steps=${RIG_SERVE_BENCH_RIG:-1}
deadline=${RIG_SERVE_BENCH_DEADLINE:-0}
peer_offline=${RIG_PEER_OFFLINE:-32}
peer_online=${RIG_PEER_ONLINE:-16}
if [[ $engine == sim ]]; then
    rates=${RIG_SERVE_BENCH_RATES:-16 32}
    requests=${RIG_SERVE_BENCH_REQUESTS:-16}
    offline_count=16 # what `rig bench --quick` runs offline
    inproc_flags=(--backend sim --quick)
    engine_flags=(--backend sim --sim-timing-only --sim-pace realtime --sim-profile h100)
else
    rates=${RIG_SERVE_BENCH_RATES:-4 8 16 32}
    requests=${RIG_SERVE_BENCH_REQUESTS:-128}
    offline_count=256
    inproc_flags=(--backend cuda)
    engine_flags=(--backend cuda --dummy-weights)
fi
if [[ -n ${RIG_BIN:-} ]]; then rig_cmd=("$RIG_BIN"); else rig_cmd=("$bundle/run.sh" bin/rig); fi
tokenizer=${RIG_SERVE_TOKENIZER:-$bundle/tokenizer/qwen3}
[[ -d $tokenizer ]] || tokenizer=$here/../../tests/data/tokenizer/qwen3
# The in-process engine settings (core/harness/bench/serving.c), as `rig serve` flags.
serve_args=(--preset qwen3-0.6b --tokenizer-path "$tokenizer" "${engine_flags[@]}"
    --host 127.0.0.1 --port "$port" --max-running-requests 256 --cuda-graph-max-bs 256
    --chunked-prefill-size 8192 --context-length 2048 --num-pages 400000)
# shellcheck disable=SC2206 # RIG_SERVE_ARGS is a word list on purpose
if [[ -n ${RIG_SERVE_ARGS:-} ]]; then serve_args=($RIG_SERVE_ARGS); fi
rig() { "${rig_cmd[@]}" "$@"; }
mkdir -p "$out/inproc" "$out/work"
rm -f "$out/serve.jsonl"
exec > >(tee "$out/serve_bench.log") 2>&1

echo "== device and build"
if [[ $engine == cuda ]]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
rig --version

inproc() { # step 1, cut at 240 s or where the deadline leaves less (16 s kept for the summary)
    local limit=240
    if ((deadline > 0 && deadline - SECONDS - 16 < limit)); then
        limit=$((deadline - SECONDS - 16))
    fi
    echo "== 1. in process: rig bench offline online ${inproc_flags[*]} (at ${SECONDS} s," \
        "cut at $limit s)"
    if ((limit < 30)); then
        echo "in-process bench skipped: the deadline is too near"
        return
    fi
    timeout "$limit" "${rig_cmd[@]}" bench offline online "${inproc_flags[@]}" \
        --rates "$rates_csv" --requests "$requests" --out "$out/inproc" >"$out/inproc.txt" 2>&1 ||
        echo "in-process bench failed (exit $?)"
    grep -E "^  (run|offline|online)" "$out/inproc.txt"
}
rates_csv=$(echo "$rates" | tr ' ' ',')
if [[ $inproc_last != 1 && $rig_steps == 1 ]]; then inproc; fi

# The in-process workloads as scenario files (core/harness/bench/serving.c's texts).
offline=$out/work/offline.yaml
printf 'name: offline\nmodel: {preset: qwen3-0.6b}\nseed: 0\nworkloads:\n%s\n' \
    "  - {kind: minisgl_offline, count: $offline_count}" >"$offline"
for rate in $rates; do
    cat >"$out/work/online-$rate.yaml" <<YAML
name: online-$rate
model: {preset: qwen3-0.6b}
seed: 0
workloads:
  - {kind: random, name: online, count: $requests, input_len: [100, 1024],
     output_len: [100, 1024], token_range: [0, 10000], rate: $rate}
YAML
done

wait_health() { # $1 url, $2 seconds, $3 the server's pid: until /health answers 200
    local deadline=$((SECONDS + $2))
    while ((SECONDS < deadline)); do
        kill -0 "$3" 2>/dev/null || return 1
        python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
            "$1" 2>/dev/null && return 0
        sleep 1
    done
    return 1
}

bench() { # $1 tag, $2 dataset file, then extra client flags
    local tag=$1 data=$2
    shift 2
    timeout 200 "${rig_cmd[@]}" bench serve --dataset-name trace --dataset-path "$data" \
        --output-file "$out/serve.jsonl" --tag "$tag" --out "$out/$tag.h5" --disable-tqdm \
        --timeout 180 "$@" >"$out/$tag.txt" 2>&1
    echo "$tag: exit $?"
    grep -E "Successful|Failed|duration|Output token throughput|(Median|P99) (TTFT|TPOT)" \
        "$out/$tag.txt"
}

http_step() { # step 2: rig serve, then the client on each workload
    echo "== 2. over HTTP (at ${SECONDS} s): rig serve ${serve_args[*]}"
    "${rig_cmd[@]}" serve "${serve_args[@]}" >"$out/rig-serve.log" 2>&1 &
    server=$!
    url=http://127.0.0.1:$port
    if [[ $port == 0 ]]; then # any free port (the rehearsal): the "ready" line names it
        for _ in $(seq 180); do
            url=$(grep -o 'http://127.0.0.1:[0-9]*' "$out/rig-serve.log") && break
            sleep 1
        done
    fi
    if wait_health "$url/health" 180 "$server"; then
        echo "rig serve: /health 200 after ${SECONDS} s of the script"
        bench http-offline "$offline" --backend "$api" --base-url "$url"
        for rate in $rates; do
            bench "http-online-$rate" "$out/work/online-$rate.yaml" --backend "$api" \
                --base-url "$url"
        done
        if [[ $peer == 1 ]]; then # the peer's requests, sent as to the peer
            local flags=(--backend openai --tokenizer "$tokenizer" --base-url "$url")
            bench http-peerset-offline "$offline" "${flags[@]}" --num-prompts "$peer_offline"
            for rate in $rates; do
                bench "http-peerset-online-$rate" "$out/work/online-$rate.yaml" "${flags[@]}" \
                    --num-prompts "$peer_online"
            done
        fi
    else
        echo "rig serve did not answer /health with 200 in 180 s; its log:"
        tail -n 40 "$out/rig-serve.log"
    fi
    kill -INT "$server" 2>/dev/null
    wait "$server"
    echo "rig serve: exit $?"
}
if [[ $rig_steps == 1 ]]; then http_step; fi

if [[ $peer == 1 ]]; then
    echo "== 3. peer (at ${SECONDS} s): transformers serve"
    RIG_PEER_OFFLINE=$peer_offline RIG_PEER_ONLINE=$peer_online \
        "$here/serve_bench_peer.sh" "$out" "$bundle" "$offline" "$rates" || echo "peer: exit $?"
fi

if [[ $inproc_last == 1 && $rig_steps == 1 ]]; then inproc; fi

echo "== 4. summary (at ${SECONDS} s)"
python3 - "$out/serve.jsonl" "$out/inproc.txt" "$offline_count" "$requests" "$rates" <<'PY' |
import json, os, sys
jsonl, table, offline_count, requests, rates = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5].split()
runs = {}  # name -> (completed, out tok/s, ttft p50, ttft p99, tpot p50, tpot p99), ms
if os.path.exists(jsonl):
    for line in open(jsonl):
        r = json.loads(line)
        runs[r["tag"]] = (r["completed"], r["output_throughput"], r["median_ttft_ms"],
                          r["p99_ttft_ms"], r["median_tpot_ms"], r["p99_tpot_ms"])
if os.path.exists(table):  # rig bench's serving table, read by its header's column names
    cols = None
    for line in open(table):
        words = line.split()
        if words[:2] == ["run", "rate"]:
            cols = words
        elif cols and len(words) == len(cols) and words[0].startswith(("offline", "online-")):
            v = dict(zip(cols, words))
            runs["inproc-" + words[0]] = (int(v["reqs"]), *(float(v[k]) for k in (
                "out_tok/s", "ttft_p50", "ttft_p99", "tpot_50", "tpot_99")))
print(f"{'run':<26} {'done':>5} {'out tok/s':>10} {'ttft p50':>9} {'ttft p99':>9} "
      f"{'tpot p50':>9} {'tpot p99':>9}   (ms)")
for tag, r in runs.items():
    print(f"{tag:<26} {r[0]:>5} {r[1]:>10.1f} {r[2]:>9.2f} {r[3]:>9.2f} {r[4]:>9.2f} "
          f"{r[5]:>9.2f}")
ok = True
want = {"offline": offline_count, **{"online-" + r: requests for r in rates}}
for name, count in want.items():
    http, inproc = runs.get("http-" + name), runs.get("inproc-" + name)
    if http is None or inproc is None or http[0] != count or inproc[0] != count:
        print(f"{name}: incomplete (want {count} requests both ways)")
        ok = False
    elif name != "offline":
        print(f"{name:<12} HTTP / in process: TTFT p50 x{http[2] / inproc[2]:.2f} "
              f"p99 x{http[3] / inproc[3]:.2f}, TPOT p50 x{http[4] / inproc[4]:.2f} "
              f"p99 x{http[5] / inproc[5]:.2f}")
http, inproc = runs.get("http-offline"), runs.get("inproc-offline")
if http and inproc and inproc[1] > 0:
    print(f"offline over HTTP / in process: {http[1] / inproc[1]:.3f} "
          f"(output tok/s; target >= 0.95)")
else:
    ok = False
for tag, p in runs.items():  # the peer against rig on the same requests where rig ran them
    name = tag[5:]
    rig = runs.get("http-peerset-" + name) or runs.get("http-" + name)
    if not tag.startswith("peer-") or rig is None:
        continue
    if p[0] == 0:
        print(f"rig / peer {name}: the peer completed no request")
        continue
    lat = " ".join(f"{k} x{p[i] / max(rig[i], 1e-9):.1f}" for i, k in (
        (2, "ttft50"), (3, "ttft99"), (4, "tpot50"), (5, "tpot99")))
    print(f"rig / peer {name:<10} ({p[0]} / {rig[0]} done): output tok/s "
          f"x{rig[1] / max(p[1], 1e-9):.1f}; peer / rig latency {lat}")
sys.exit(0 if ok else 1)
PY
    tee "$out/summary.txt"
status=${PIPESTATUS[0]}
echo "serve_bench: $((SECONDS)) s, exit $status"
exit "$status"
