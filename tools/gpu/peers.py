#!/usr/bin/env python3
"""peers.py — the peers `rig bench` is compared with, on the GPU machine (docs/performance.md).

1. Hugging Face transformers continuous batching on Mini-SGLang's offline workload — the same
   256 requests `rig bench offline` runs (input/output lengths uniform in [100, 1024], ids
   uniform in [0, 10000], seed 0, ignore_eos), regenerated here bit for bit with rig's
   Philox-4x32-10 generator (core/harness/scenario/workload.c, `minisgl_offline`) — on a
   Qwen3-0.6B-shaped model (core/model/presets/qwen3-0.6b.json) with seeded random bf16
   weights. Prints output tok/s and total tok/s, and the workload's token totals so they can
   be checked against rig's "Total input tokens" line.
   Per-request output lengths go through ContinuousBatchingManager.add_request(max_new_tokens);
   if this transformers lacks that, `model.generate_batch` runs every request at the
   workload's mean output length (same total output tokens), and the mode is printed.
   The weights are seeded (torch.manual_seed) but are not rig's own dummy weights: values do
   not change the work, only which tokens come out (ignore_eos makes the lengths fixed).

2. FlashInfer's paged attention kernels (when `import flashinfer` works; skipped cleanly
   otherwise) on the shapes `rig bench attention` times: decode batch 256 x context 1024 and
   64 x 8192, and one causal 8192-token prefill chunk, with a preset's heads (--model, default
   Qwen3-0.6B: 16 query, 8 KV, dim 128), page size 1, bf16. Prints microseconds and, given
   rig's --bench-h5 (out/bench/bench.h5 of `rig bench attention --model` the same), the ratio.

usage: python3 tools/gpu/peers.py [--requests 256] [--skip-hf] [--skip-flashinfer]
                                  [--bench-h5 out/bench/bench.h5] [--model qwen3-0.6b]
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRESET = os.path.join(ROOT, "core", "model", "presets", "qwen3-0.6b.json")

M32 = 0xFFFFFFFF
STREAM_TOKENS = 0x544F4B4E   # "TOKN"
STREAM_LENGTHS = 0x4C454E53  # "LENS"


def philox4x32(key, c0, c1, c2, c3):
    """hal/philox.h rig_philox4x32: Philox-4x32-10."""
    k0, k1 = key & M32, (key >> 32) & M32
    x0, x1, x2, x3 = c0, c1, c2, c3
    for _ in range(10):
        p0 = 0xD2511F53 * x0
        p1 = 0xCD9E8D57 * x2
        hi0, lo0 = p0 >> 32, p0 & M32
        hi1, lo1 = p1 >> 32, p1 & M32
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return x0, x1, x2, x3


def uniform(key, c0, c1, c2, stream, lo, hi):
    """core/harness/scenario/scenario.c rig_scenario_uniform."""
    v = philox4x32(key, c0, c1, c2, stream)
    return lo + ((v[0] << 32) | v[1]) % (hi - lo + 1)


def minisgl_offline(count=256, seed=0, workload=0):
    """The `minisgl_offline` workload of a scenario whose only workload it is."""
    prompts, outputs = [], []
    for i in range(count):
        n_in = uniform(seed, workload, i, 0, STREAM_LENGTHS, 100, 1024)
        n_out = uniform(seed, workload, i, 1, STREAM_LENGTHS, 100, 1024)
        prompts.append([uniform(seed, workload, i, j, STREAM_TOKENS, 0, 10000)
                        for j in range(n_in)])
        outputs.append(n_out)
    return prompts, outputs


def load_model(torch, seed):
    from transformers import AutoModelForCausalLM, Qwen3Config
    with open(PRESET) as f:
        cfg = json.load(f)
    cfg.pop("architectures", None)
    cfg.pop("model_type", None)
    cfg.pop("torch_dtype", None)
    config = Qwen3Config(**cfg)
    config.eos_token_id = None  # ignore_eos: every request makes its full length
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model = model.to("cuda").eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def run_manager(model, prompts, outputs, GenerationConfig):
    """Per-request max_new_tokens through ContinuousBatchingManager."""
    gen = GenerationConfig(max_new_tokens=max(outputs), do_sample=False, eos_token_id=None,
                           pad_token_id=0)
    manager = model.init_continuous_batching(generation_config=gen)
    manager.start()
    t0 = time.perf_counter()
    for i, (p, n) in enumerate(zip(prompts, outputs)):
        manager.add_request(input_ids=p, request_id=f"r{i}", max_new_tokens=n)
    produced, done = 0, 0
    while done < len(prompts):
        result = manager.get_result(timeout=600)
        if result is None:
            raise RuntimeError("no result within 600 s")
        if getattr(result, "is_finished", lambda: True)():
            done += 1
            produced += len(result.generated_tokens)
    elapsed = time.perf_counter() - t0
    manager.stop(block=True)
    return elapsed, produced, "ContinuousBatchingManager, per-request max_new_tokens"


def run_generate_batch(model, prompts, outputs, GenerationConfig):
    """model.generate_batch: one max_new_tokens for all, the workload's mean."""
    mean = round(sum(outputs) / len(outputs))
    gen = GenerationConfig(max_new_tokens=mean, do_sample=False, eos_token_id=None,
                           pad_token_id=0)
    t0 = time.perf_counter()
    results = model.generate_batch(inputs=prompts, generation_config=gen)
    elapsed = time.perf_counter() - t0
    produced = sum(len(r.generated_tokens) for r in results.values())
    return elapsed, produced, f"generate_batch, max_new_tokens={mean} for every request"


def bench_hf(args):
    import torch
    from transformers.generation import GenerationConfig
    prompts, outputs = minisgl_offline(args.requests)
    total_in = sum(len(p) for p in prompts)
    print(f"workload: {len(prompts)} requests, {total_in} input tokens, {sum(outputs)} "
          f"output tokens (compare rig's 'Total input tokens')", flush=True)
    model = load_model(torch, args.seed)
    runners = [run_manager, run_generate_batch] if not args.generate_batch \
        else [run_generate_batch]
    for runner in runners:
        try:
            # warm-up (CUDA graphs, compile) on a few requests, then the timed run
            runner(model, prompts[:8], [16] * 8, GenerationConfig)
            elapsed, produced, mode = runner(model, prompts, outputs, GenerationConfig)
        except (TypeError, AttributeError) as error:
            print(f"HF {runner.__name__} unavailable here ({error}); trying the next mode")
            continue
        print(f"HF transformers ({mode}): {elapsed:.2f} s, {produced} output tokens, "
              f"{produced / elapsed:.0f} output tok/s, {(produced + total_in) / elapsed:.0f} "
              f"total tok/s", flush=True)
        return
    print("HF transformers: no continuous-batching entry point worked")


def cuda_time_us(torch, fn, repeats=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    times.sort()
    return times[len(times) // 2]


def rig_attention(path):
    """rig's /attention rows of a bench.h5: {(op, batch, context): microseconds}."""
    if not path:
        return {}
    try:
        import h5py
        with h5py.File(path, "r") as f:
            rows = f["attention"][:]
        return {(r["op"].decode().rstrip("\0"), int(r["batch"]), int(r["context"])): r["ns"] / 1e3
                for r in rows}
    except (ImportError, OSError, KeyError) as error:
        print(f"cannot read rig's attention rows from {path}: {error}")
        return {}


def model_heads(model):
    """(query heads, KV heads, head dim) of a preset (core/model/presets/MODEL.json)."""
    with open(os.path.join(ROOT, "core", "model", "presets", f"{model}.json")) as f:
        config = json.load(f)
    dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return config["num_attention_heads"], config["num_key_value_heads"], dim


def bench_flashinfer(args):
    try:
        import flashinfer
        import torch
    except ImportError as error:
        print(f"FlashInfer: not importable here ({error}); skipped")
        return
    hq, hk, d = model_heads(args.model)
    dev = "cuda"
    rig = rig_attention(args.bench_h5)
    print(f"FlashInfer {flashinfer.__version__}, {args.model} heads: {hq} query, {hk} KV, "
          f"dim {d}", flush=True)
    workspace = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    # decode: rig bench attention's shapes, page size 1 (rig's token-granular page table)
    for batch, ctx in ((256, 1024), (64, 8192)):
        slots = batch * ctx
        k = torch.randn(slots, 1, hk, d, dtype=torch.bfloat16, device=dev)
        v = torch.randn(slots, 1, hk, d, dtype=torch.bfloat16, device=dev)
        q = torch.randn(batch, hq, d, dtype=torch.bfloat16, device=dev)
        indptr = torch.arange(0, slots + 1, ctx, dtype=torch.int32, device=dev)
        indices = torch.arange(slots, dtype=torch.int32, device=dev)
        last = torch.ones(batch, dtype=torch.int32, device=dev)
        # its CUDA-core decode, and for groups of 4 and more also its tensor-core path (the
        # prefill kernel on one query row, what FlashInfer advises for such groups)
        for tensor_cores in (False, True) if hq // hk >= 4 else (False,):
            wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
                workspace, "NHD", use_tensor_cores=tensor_cores)
            wrapper.plan(indptr, indices, last, hq, hk, d, 1, q_data_type=torch.bfloat16,
                         kv_data_type=torch.bfloat16)
            us = cuda_time_us(torch, lambda: wrapper.run(q, (k, v)))
            gbs = slots * hk * d * 2 * 2 / (us * 1e-6) / 1e9
            path = " (tensor cores)" if tensor_cores else ""
            line = f"FlashInfer decode{path} {batch} x {ctx}: {us:.1f} us ({gbs:.0f} GB/s of KV)"
            mine = rig.get(("decode", batch, ctx))
            if mine:
                line += f"; rig {mine:.1f} us, rig / FlashInfer = {mine / us:.2f}"
            print(line, flush=True)
            del wrapper
        del k, v, q
    # prefill: one causal chunk of 8192 tokens, no prefix
    n = 8192
    qp = torch.randn(n, hq, d, dtype=torch.bfloat16, device=dev)
    kp = torch.randn(n, hk, d, dtype=torch.bfloat16, device=dev)
    vp = torch.randn(n, hk, d, dtype=torch.bfloat16, device=dev)
    us = cuda_time_us(torch, lambda: flashinfer.single_prefill_with_kv_cache(
        qp, kp, vp, causal=True))
    tflops = 4 * hq * d * n * (n + 1) / 2 / (us * 1e-6) / 1e12
    line = f"FlashInfer prefill {n} causal: {us:.1f} us ({tflops:.0f} TFLOP/s)"
    mine = rig.get(("prefill", 1, n))
    if mine:
        line += f"; rig {mine:.1f} us, rig / FlashInfer = {mine / us:.2f}"
    print(line, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-hf", action="store_true")
    parser.add_argument("--skip-flashinfer", action="store_true")
    parser.add_argument("--generate-batch", action="store_true",
                        help="only model.generate_batch (equal output lengths)")
    parser.add_argument("--bench-h5", default="", help="rig's bench.h5 for ratios")
    parser.add_argument("--model", default="qwen3-0.6b",
                        help="FlashInfer: the preset whose attention heads are timed")
    parser.add_argument("--print-workload", action="store_true",
                        help="print the workload's first lengths and ids and exit")
    args = parser.parse_args()
    if args.print_workload:
        prompts, outputs = minisgl_offline(args.requests)
        for p, n in list(zip(prompts, outputs))[:4]:
            print(len(p), n, p[:8])
        print("total input", sum(len(p) for p in prompts), "total output", sum(outputs))
        return 0
    if not args.skip_hf:
        bench_hf(args)
    if not args.skip_flashinfer:
        bench_flashinfer(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
