#!/usr/bin/env bash
# serve_bench.sh — issue 16's side-by-side on the GPU machine, in one call of under 9 minutes:
# rig over HTTP (`rig serve` + `rig bench serve`) against rig in process (`rig bench offline
# online`), and optionally Hugging Face `transformers serve` through the same client.
#
#   1. in process: rig bench offline online --backend cuda --rates 4,8,16,32 (128 requests
#      per rate): the reference numbers, written to $OUT/inproc/ (bench.h5 + one file per run);
#   2. over HTTP: `rig serve` (Qwen3-0.6B shape, dummy weights, CUDA) and `rig bench serve`
#      with the trace dataset on scenario files holding exactly the in-process workloads:
#      Mini-SGLang's offline one (256 requests, lengths U[100, 1024], all at t = 0) and the
#      online ones (the same random workload, Poisson arrivals at each rate, seed 0) — so the
#      same requests arrive at the same offsets in both columns;
#   3. the peer (RIG_SERVE_BENCH_PEER=1): `transformers serve --continuous-batching` on a
#      Qwen3-0.6B-shaped model with seeded random weights and the Qwen3 tokenizer, the same
#      client with --backend openai; each run bounded by --timeout 45 s (HF is ~30x slower);
#   4. $OUT/summary.txt: one line per run (output tok/s, TTFT/TPOT p50/p99), the HTTP/in-process
#      ratio of offline output tok/s (the issue's target: >= 0.95) and rig/peer ratios.
#
# On the GPU machine, from a bundle made here with tools/bundle.sh /work/main/bundle-NAME:
#     bundle-NAME/serve_bench.sh            (OUT defaults to ./serve-bench-out)
# via the device tool: run(command="OUT=$OUT bundle-NAME/serve_bench.sh", carry=["bundle-NAME"]).
# Environment: RIG_SERVE_ARGS (the `rig serve` flags; default below: adjust to the server's
# flags), RIG_SERVE_PORT (1919), RIG_SERVE_BENCH_BACKEND (rig: /generate with input_ids;
# openai: /v1/completions with a list prompt), RIG_SERVE_BENCH_RATES ("4 8 16 32"),
# RIG_SERVE_BENCH_PEER (0), RIG_PEER_WHEELS (a folder of wheels for the peer's missing Python
# packages: fastapi, uvicorn, ...; installed with pip --no-index into $OUT/peer-site).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=${RIG_BUNDLE:-$here}
out=${OUT:-$PWD/serve-bench-out}
port=${RIG_SERVE_PORT:-1919}
rates=${RIG_SERVE_BENCH_RATES:-4 8 16 32}
backend=${RIG_SERVE_BENCH_BACKEND:-rig}
serve_args=${RIG_SERVE_ARGS:-"--backend cuda --model-preset qwen3-0.6b --dummy-weights \
--port $port --max-running-requests 256 --cuda-graph-max-bs 256"}
rig() { "$bundle/run.sh" bin/rig "$@"; }
mkdir -p "$out/inproc" "$out/work"
exec > >(tee "$out/serve_bench.log") 2>&1

echo "== device and build"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
rig --version

echo "== 1. in process: rig bench offline online"
rates_csv=$(echo "$rates" | tr ' ' ',')
timeout 240 "$bundle/run.sh" bin/rig bench offline online --backend cuda --rates "$rates_csv" \
    --requests 128 --out "$out/inproc" || echo "in-process bench failed (exit $?)"

# The in-process workloads as scenario files (core/harness/bench: serving.c's texts).
offline=$bundle/scenarios/minisgl-offline-qwen3-0.6b.yaml
for rate in $rates; do
    cat >"$out/work/online-$rate.yaml" <<YAML
name: online-$rate
model: {preset: qwen3-0.6b}
seed: 0
workloads:
  - {kind: random, name: online, count: 128, input_len: [100, 1024], output_len: [100, 1024],
     token_range: [0, 10000], rate: $rate}
YAML
done

wait_health() { # $1 url, $2 seconds
    python3 - "$1" "$2" <<'PY'
import sys, time, urllib.request
url, deadline = sys.argv[1], time.time() + float(sys.argv[2])
while time.time() < deadline:
    try:
        urllib.request.urlopen(url, timeout=2)
        sys.exit(0)
    except Exception:
        time.sleep(1)
sys.exit(1)
PY
}

bench() { # $1 tag, $2 dataset file, then extra client flags
    local tag=$1 data=$2
    shift 2
    timeout 200 "$bundle/run.sh" bin/rig bench serve --dataset-name trace --dataset-path "$data" \
        --output-file "$out/serve.jsonl" --tag "$tag" --out "$out/$tag.h5" --disable-tqdm "$@" \
        >"$out/$tag.txt" 2>&1
    echo "$tag: exit $?"
    grep -E "Successful|Failed|duration|Output token throughput|(Median|P99) (TTFT|TPOT)" \
        "$out/$tag.txt"
}

echo "== 2. over HTTP: rig serve $serve_args"
# shellcheck disable=SC2086 # serve_args is a word list on purpose
"$bundle/run.sh" bin/rig serve $serve_args >"$out/rig-serve.log" 2>&1 &
server=$!
if wait_health "http://127.0.0.1:$port/health" 180; then
    bench http-offline "$offline" --backend "$backend" --base-url "http://127.0.0.1:$port"
    for rate in $rates; do
        bench "http-online-$rate" "$out/work/online-$rate.yaml" --backend "$backend" \
            --base-url "http://127.0.0.1:$port"
    done
else
    echo "rig serve did not answer /health in 180 s; its log:"
    tail -n 40 "$out/rig-serve.log"
fi
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null

if [[ ${RIG_SERVE_BENCH_PEER:-0} == 1 ]]; then
    echo "== 3. peer: transformers serve"
    "$here/serve_bench_peer.sh" "$out" "$bundle" "$offline" "$rates" || echo "peer: exit $?"
fi

echo "== 4. summary"
python3 - "$out/serve.jsonl" "$out/inproc" <<'PY' | tee "$out/summary.txt"
import glob, json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])] if os.path.exists(sys.argv[1]) else []
best = {r["tag"]: r for r in rows}
print(f"{'run':<22} {'done':>5} {'out tok/s':>10} {'ttft p50':>9} {'ttft p99':>9} "
      f"{'tpot p50':>9} {'tpot p99':>9}   (ms)")
for tag, r in best.items():
    print(f"{tag:<22} {r['completed']:>5} {r['output_throughput']:>10.1f} "
          f"{r['median_ttft_ms']:>9.2f} {r['p99_ttft_ms']:>9.2f} {r['median_tpot_ms']:>9.2f} "
          f"{r['p99_tpot_ms']:>9.2f}")
try:
    import h5py
    for path in sorted(glob.glob(os.path.join(sys.argv[2], "*.h5"))):
        if path.endswith("bench.h5"):
            continue
        with h5py.File(path, "r") as f:
            s = {k: float(f["summary"][k][()]) for k in f["summary"]}
        name = "inproc-" + os.path.basename(path)[:-3]
        best[name] = {"output_throughput": s["output_throughput"]}
        print(f"{name:<22} {s['completed']:>5.0f} {s['output_throughput']:>10.1f} "
              f"{s['ttft_median']*1e3:>9.2f} {s['ttft_p99']*1e3:>9.2f} "
              f"{s['tpot_median']*1e3:>9.2f} {s['tpot_p99']*1e3:>9.2f}")
except ImportError:
    print("(no h5py here: the in-process numbers are in serve_bench.log)")
http, inproc = best.get("http-offline"), best.get("inproc-offline")
if http and inproc:
    ratio = http["output_throughput"] / inproc["output_throughput"]
    print(f"offline over HTTP / in process: {ratio:.3f} (target >= 0.95)")
for tag, r in best.items():
    if tag.startswith("peer-") and ("http-" + tag[5:]) in best:
        rig_r = best["http-" + tag[5:]]
        ratio = rig_r["output_throughput"] / max(r["output_throughput"], 1e-9)
        print(f"rig / peer {tag[5:]}: output tok/s x{ratio:.2f}")
PY
