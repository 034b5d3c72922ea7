#!/usr/bin/env bash
# serve_bench_peer.sh — the peer half of serve_bench.sh: Hugging Face `transformers serve` with
# continuous batching on a Qwen3-0.6B-shaped model (seeded random bf16 weights, the preset's
# config.json, the Qwen3 tokenizer carried in the bundle), measured by `rig bench serve
# --backend openai` on the same trace files as rig. HF's /v1/completions takes only a text
# prompt, so the client decodes each trace prompt with the bundle's tokenizer (--tokenizer) and
# HF re-encodes it. Each run is cut at RIG_PEER_TIMEOUT s (45; --timeout): HF serves far fewer
# tokens/s than rig, so the rows say how far it got in that time; the offline run takes the
# first RIG_PEER_OFFLINE (64) requests of the offline workload.
# usage: serve_bench_peer.sh OUT BUNDLE OFFLINE_YAML "RATES"   (called by serve_bench.sh)
# RIG_PEER_WHEELS: a folder of wheels for the packages `transformers serve` needs and the
# image lacks (transformers 5.17's "serving" extra: fastapi, starlette, uvicorn, pydantic,
# pydantic-core, annotated-types, typing-inspection, openai, jiter, distro, sniffio).
set -uo pipefail
out=$1 bundle=$2 offline=$3 rates=$4
port=${RIG_PEER_PORT:-8000}
limit=${RIG_PEER_TIMEOUT:-45}
offline_count=${RIG_PEER_OFFLINE:-64}
model=$out/work/qwen3-0.6b-dummy
site=$out/peer-site
if [[ -n ${RIG_PEER_WHEELS:-} && -d ${RIG_PEER_WHEELS} ]]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "$RIG_PEER_WHEELS"/*.whl || echo "peer: wheel install failed"
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
# /v1/models scans the hub cache and answers 500 when it does not exist (a bare GPU machine):
# give it an empty one, and wait on /health.
export HF_HUB_CACHE=$out/work/hf-hub
mkdir -p "$HF_HUB_CACHE"
# transformers 5's CLI is transformers.cli.transformers (the 4.x transformers.commands is gone);
# the model path is serve's FORCE_MODEL argument, the name the client sends.
python3 -m transformers.cli.transformers serve "$model" --continuous-batching \
    --host 127.0.0.1 --port "$port" --log-level info >"$out/peer-serve.log" 2>&1 &
peer=$!
if ! python3 - "http://127.0.0.1:$port/health" <<'PY'; then
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
    timeout $((limit + 75)) "$bundle/run.sh" bin/rig bench serve --backend openai \
        --model "$model" --tokenizer "$bundle/tokenizer/qwen3" \
        --base-url "http://127.0.0.1:$port" --dataset-name trace --dataset-path "$data" \
        --timeout "$limit" --output-file "$out/serve.jsonl" --tag "$tag" --out "$out/$tag.h5" \
        --disable-tqdm "$@" >"$out/$tag.txt" 2>&1
    echo "$tag: exit $?"
    grep -E "Successful|Failed|Output token throughput|Median TTFT|Median TPOT" "$out/$tag.txt"
}
peer_bench peer-offline "$offline" --num-prompts "$offline_count"
for rate in $rates; do peer_bench "peer-online-$rate" "$out/work/online-$rate.yaml"; done
kill $peer 2>/dev/null
wait $peer 2>/dev/null
exit 0
