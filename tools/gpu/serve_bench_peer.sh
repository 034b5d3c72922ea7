#!/usr/bin/env bash
# serve_bench_peer.sh — the peer half of serve_bench.sh: Hugging Face `transformers serve` with
# continuous batching on a Qwen3-0.6B-shaped model (seeded random bf16 weights, the preset's
# config.json, the Qwen3 tokenizer carried in the bundle), measured by `rig bench serve
# --backend openai` on the same trace files as rig.
#
# What HF's server needs, as read from transformers 5.17 (transformers/cli/serving/):
# - the CLI is `python3 -m transformers.cli.transformers serve MODEL` (5.x; the model path is
#   serve's FORCE_MODEL argument, preloaded before uvicorn starts, and the name the client
#   sends); readiness is GET /health (GET /v1/models scans the hub cache and answers 500 where
#   there is none: HF_HUB_CACHE points at an empty folder anyway);
# - /v1/completions takes only a text prompt: the client decodes each trace prompt with the
#   bundle's tokenizer (--tokenizer) and HF re-encodes it (so HF's prompt lengths may differ
#   by a few tokens from rig's);
# - it answers 422 to a field it does not know, `ignore_eos` included: the client runs with
#   --disable-ignore-eos (then sends no such field) and the model's generation config has no
#   EOS (eos_token_id -1, which continuous batching reads as "none"), so every request runs
#   to max_tokens as rig's do; its streams end without [DONE], the last chunk carrying usage.
# Bounds (HF serves far fewer tokens/s than rig): the offline run takes the first
# RIG_PEER_OFFLINE (32) requests of the offline workload, each online rate the first
# RIG_PEER_ONLINE (16) of its arrivals; each run is cut (--timeout, after the warm-up) at
# RIG_PEER_OFFLINE_TIMEOUT s (35) offline and RIG_PEER_TIMEOUT s (22) online, requests not
# done by then counted as failed (timeout); a run that could end after RIG_PEER_BUDGET s
# (185) of this script is skipped and says so. Only the first run warms up (its one short
# request starts continuous batching: about a minute on the H100). The table's "Streamed"
# lines count what the cut requests received too: a saturated server's progress.
# serve_bench.sh runs rig over HTTP on the same first requests (http-peerset-*), so each
# rig / peer ratio compares the same requests.
# usage: serve_bench_peer.sh OUT BUNDLE OFFLINE_YAML "RATES"   (called by serve_bench.sh)
# RIG_PEER_WHEELS: a folder of wheels for the packages `transformers serve` needs and the
# image lacks (transformers 5.17's "serving" extra: fastapi, starlette, uvicorn, pydantic,
# pydantic-core, annotated-types, typing-inspection, openai, jiter, distro, sniffio).
# RIG_PEER_PYTHON: the Python that runs HF (python3). RIG_BIN, RIG_SERVE_TOKENIZER: as in
# serve_bench.sh. The rehearsal without a GPU, torch or transformers (ctest serve_bench_peer):
# tests/serve/fake_transformers on PYTHONPATH stands in for HF's server.
set -uo pipefail
out=$1 bundle=$2 offline=$3 rates=$4
port=${RIG_PEER_PORT:-8000}
limit=${RIG_PEER_TIMEOUT:-22}
offline_limit=${RIG_PEER_OFFLINE_TIMEOUT:-35}
offline_count=${RIG_PEER_OFFLINE:-32}
online_count=${RIG_PEER_ONLINE:-16}
budget=${RIG_PEER_BUDGET:-185}
python=${RIG_PEER_PYTHON:-python3}
if [[ -n ${RIG_BIN:-} ]]; then rig_cmd=("$RIG_BIN"); else rig_cmd=("$bundle/run.sh" bin/rig); fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tokenizer=${RIG_SERVE_TOKENIZER:-$bundle/tokenizer/qwen3} # a bundle, else the repository
[[ -d $tokenizer ]] || tokenizer=$here/../../tests/data/tokenizer/qwen3
presets=$bundle/presets
[[ -d $presets ]] || presets=$here/../../core/model/presets
model=$out/work/qwen3-0.6b-dummy
site=$out/peer-site
if [[ -n ${RIG_PEER_WHEELS:-} && -d ${RIG_PEER_WHEELS} ]]; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "$RIG_PEER_WHEELS"/*.whl || echo "peer: wheel install failed"
    export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
fi
if ! "$python" -c 'import transformers, torch, fastapi, uvicorn, openai' 2>"$out/peer-import.txt"
then
    echo "peer skipped: $(tail -n 1 "$out/peer-import.txt") (carry wheels in RIG_PEER_WHEELS)"
    exit 0
fi
"$python" -c 'import transformers, torch, fastapi, uvicorn
print("peer: transformers", transformers.__version__, "torch", torch.__version__,
      "fastapi", fastapi.__version__, "uvicorn", uvicorn.__version__)'
"$python" - "$presets/qwen3-0.6b.json" "$tokenizer" "$model" <<'PY' || exit 1
import json, shutil, sys, torch
from transformers import AutoModelForCausalLM, Qwen3Config
preset, tokenizer, model_dir = sys.argv[1:4]
cfg = {k: v for k, v in json.load(open(preset)).items() if k not in ("architectures", "model_type")}
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(Qwen3Config(**cfg), dtype=torch.bfloat16)
model.generation_config.eos_token_id = -1  # no EOS: every request runs to max_tokens
model.save_pretrained(model_dir)
for name in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(f"{tokenizer}/{name}", model_dir)
print("peer: model written to", model_dir)
PY
export HF_HUB_CACHE=$out/work/hf-hub
mkdir -p "$HF_HUB_CACHE"
"$python" -m transformers.cli.transformers serve "$model" --continuous-batching \
    --host 127.0.0.1 --port "$port" --log-level info >"$out/peer-serve.log" 2>&1 &
peer=$!
started=$SECONDS
ready=0
while ((SECONDS - started < 180)); do # the model loads before uvicorn listens
    kill -0 "$peer" 2>/dev/null || break
    if "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
        "http://127.0.0.1:$port/health" 2>/dev/null; then
        ready=1
        break
    fi
    sleep 1
done
if ((ready == 0)); then
    echo "peer did not answer /health with 200 in $((SECONDS - started)) s; its log:"
    tail -n 30 "$out/peer-serve.log"
    kill "$peer" 2>/dev/null
    exit 1
fi
echo "peer: /health 200 after $((SECONDS - started)) s"
peer_bench() { # $1 tag $2 dataset $3 prompts $4 seconds
    local tag=$1 data=$2 count=$3 limit=$4
    if ((SECONDS + limit > budget)); then
        echo "$tag: skipped (the peer's budget of $budget s would be exceeded)"
        return
    fi
    timeout $((limit + 90)) "${rig_cmd[@]}" bench serve --backend openai --model "$model" \
        --tokenizer "$tokenizer" --disable-ignore-eos \
        --base-url "http://127.0.0.1:$port" --dataset-name trace --dataset-path "$data" \
        --num-prompts "$count" --timeout "$limit" --request-timeout $((limit + 60)) \
        --warmup-requests "$warmup" \
        --output-file "$out/serve.jsonl" --tag "$tag" --out "$out/$tag.h5" --disable-tqdm \
        >"$out/$tag.txt" 2>&1
    echo "$tag: exit $? (at $SECONDS s)"
    warmup=0 # the first run's warm-up started continuous batching; the server stays warm
    grep -E "Successful|Failed|Output token throughput|Streamed|Median TTFT|Median TPOT" \
        "$out/$tag.txt"
}
warmup=1
peer_bench peer-offline "$offline" "$offline_count" "$offline_limit"
for rate in $rates; do
    peer_bench "peer-online-$rate" "$out/work/online-$rate.yaml" "$online_count" "$limit"
done
kill "$peer" 2>/dev/null
wait "$peer" 2>/dev/null
exit 0
