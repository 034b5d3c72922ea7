#!/usr/bin/env bash
# serve_bench_peer.sh — the peer half of serve_bench.sh: Hugging Face `transformers serve` with
# continuous batching on a Qwen3-0.6B-shaped model (seeded random bf16 weights, the preset's
# config.json, the Qwen3 tokenizer carried in the bundle), measured by `rig bench serve
# --backend openai` on the same trace files as rig. Each run is cut at 45 s (--timeout): HF
# serves ~30x fewer tokens/s than rig, so the rows say how far it got in that time.
# usage: serve_bench_peer.sh OUT BUNDLE OFFLINE_YAML "RATES"   (called by serve_bench.sh)
set -uo pipefail
out=$1 bundle=$2 offline=$3 rates=$4
port=${RIG_PEER_PORT:-8000}
model=$out/work/qwen3-0.6b-dummy
site=$out/peer-site
if [[ -n ${RIG_PEER_WHEELS:-} && -d ${RIG_PEER_WHEELS} ]]; then
    python3 -m pip install -q --no-index --find-links "$RIG_PEER_WHEELS" --target "$site" \
        "$RIG_PEER_WHEELS"/*.whl || echo "peer: wheel install failed"
    export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
fi
if ! python3 -c 'import transformers, torch, fastapi, uvicorn' 2>"$out/peer-import.txt"; then
    echo "peer skipped: $(tail -n 1 "$out/peer-import.txt") (carry wheels in RIG_PEER_WHEELS)"
    exit 0
fi
python3 - "$bundle/presets/qwen3-0.6b.json" "$bundle/tokenizer/qwen3" "$model" <<'PY'
import json, shutil, sys, torch
from transformers import AutoModelForCausalLM, Qwen3Config
preset, tokenizer, model_dir = sys.argv[1:4]
cfg = {k: v for k, v in json.load(open(preset)).items() if k not in ("architectures", "model_type")}
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(Qwen3Config(**cfg), dtype=torch.bfloat16)
model.save_pretrained(model_dir)
for name in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(f"{tokenizer}/{name}", model_dir)
print("peer model written to", model_dir)
PY
python3 -m transformers.commands.transformers_cli serve --port "$port" --continuous-batching \
    >"$out/peer-serve.log" 2>&1 &
peer=$!
if ! python3 - "http://127.0.0.1:$port/v1/models" <<'PY'; then
import sys, time, urllib.request
for _ in range(120):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=2); sys.exit(0)
    except Exception:
        time.sleep(1)
sys.exit(1)
PY
    echo "peer did not start; its log:"
    tail -n 30 "$out/peer-serve.log"
    kill $peer
    exit 1
fi
peer_bench() { # $1 tag $2 dataset, rest: client flags
    local tag=$1 data=$2
    shift 2
    timeout 120 "$bundle/run.sh" bin/rig bench serve --backend openai --model "$model" \
        --base-url "http://127.0.0.1:$port" --dataset-name trace --dataset-path "$data" \
        --timeout 45 --output-file "$out/serve.jsonl" --tag "$tag" --out "$out/$tag.h5" \
        --disable-tqdm "$@" >"$out/$tag.txt" 2>&1
    echo "$tag: exit $?"
    grep -E "Successful|Failed|Output token throughput|Median TTFT|Median TPOT" "$out/$tag.txt"
}
peer_bench peer-offline "$offline" --num-prompts 64
for rate in $rates; do peer_bench "peer-online-$rate" "$out/work/online-$rate.yaml"; done
kill $peer 2>/dev/null
wait $peer 2>/dev/null
exit 0
