#!/usr/bin/env python3
"""make_golden.py - reference outputs of small seeded models from Hugging Face transformers.

rig's forward must reproduce transformers (issue 4). This script builds small Qwen3, Llama
(llama3 RoPE scaling, untied LM head, vocabulary not divisible by 2 or 4, sharded
safetensors) and Qwen2 (qkv bias, one KV head) models from a seeded random init in bf16,
saves them with save_pretrained (config.json + safetensors), runs prompts of mixed lengths
through transformers and saves, per model directory:

  reference.json  prompts, the 32 greedy tokens of each prompt, versions, layout notes,
                  and HF's bf16 run measured against the reference (hf_bf16_rel_l2 per
                  prompt and step, hf_bf16_greedy: its own greedy tokens);
  logits.f32      float32 little-endian [prompts, steps, vocab]: step 0 holds the logits of
                  the last prompt position, step s >= 1 the logits after feeding greedy
                  token s-1 (greedy[s] is the argmax of step s).

The reference is transformers computing in fp32 over the saved bf16 weights: the exact
result a bf16 engine approximates. HF's own bf16 inference differs from it by 0.4-0.9 %
(relative L2 of the logits) on these models; a bf16 engine, rig included, is held to 1 %.

Norm weights and biases are randomised too (HF initialises them to 1 and 0, which would
hide a missing norm weight or bias), and q/k are scaled up so that attention is sharp and
position-dependent (RoPE errors show). Attention runs through SDPA ("eager" in bf16 rounds
the scores to bf16 before the softmax). The LM head is applied in fp32 to the final hidden
state, as rig does. The greedy loop is written out (no generate()) so EOS never stops it.

Usage (on a machine with torch + transformers, e.g. the GPU machine):
  python3 tools/golden/make_golden.py --out tests/data/golden [--device cuda|cpu]
"""
import argparse
import copy
import json
import os

import torch
import transformers
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config, Qwen3Config

STEPS = 32
ATTENTION_GAIN = 6.0  # q/k projections: attention scores of std ~1-2 instead of ~0.05
QK_NORM_GAIN = 1.5    # Qwen3 normalises q/k per head, so its gain goes on the norm weights
PROMPT_LENGTHS = [1, 6, 17, 45, 111]

MODELS = {
    "qwen3": (Qwen3Config, dict(
        vocab_size=1024, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, rms_norm_eps=1e-6,
        rope_theta=1000000.0, max_position_embeddings=2048, tie_word_embeddings=True,
        bos_token_id=1, eos_token_id=2), None),
    "llama": (LlamaConfig, dict(
        vocab_size=1001, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, rms_norm_eps=1e-5,
        rope_theta=500000.0, max_position_embeddings=2048, tie_word_embeddings=False,
        rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
        bos_token_id=1, eos_token_id=[2, 3]), "600KB"),
    "qwen2": (Qwen2Config, dict(
        vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, head_dim=16, rms_norm_eps=1e-6,
        rope_theta=10000.0, max_position_embeddings=2048, tie_word_embeddings=False,
        bos_token_id=1, eos_token_id=2), None),
}


def build(name, seed, attn):
    config_class, kwargs, _ = MODELS[name]
    return build_from_config(config_class(**kwargs), seed, attn)


def build_from_config(config, seed, attn):
    """The seeded bf16 model of `config` (also used by tools/gpu/hf_check.py)."""
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation=attn)
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for pname, param in sorted(model.named_parameters()):
            if pname.endswith("norm.weight"):
                noise = torch.randn(param.shape, generator=generator) * 0.2
                param.copy_(1.0 + noise)
            elif pname.endswith(".bias"):
                param.copy_(torch.randn(param.shape, generator=generator) * 0.1)
            # Sharper attention: with the default init every score is ~0, attention is a
            # plain average and a wrong RoPE would barely show in the logits.
            if pname.endswith(("q_proj.weight", "k_proj.weight")):
                param.mul_(ATTENTION_GAIN)
            elif pname.endswith(("q_norm.weight", "k_norm.weight")):
                param.mul_(QK_NORM_GAIN)
    rotary = {n: b.detach().clone() for n, b in model.named_buffers() if n.endswith("inv_freq")}
    model = model.to(torch.bfloat16).eval()
    # .to() would leave the RoPE inverse frequencies rounded to bf16; from_pretrained(dtype=
    # bf16), vLLM and SGLang keep them in fp32 (a bf16 frequency shifts each angle by about
    # position x frequency x 2^-9, an error that grows along the sequence).
    for name, buffer in rotary.items():
        owner, _, attr = name.rpartition(".")
        model.get_submodule(owner)._buffers[attr] = buffer
    return model


def prompts_for(vocab_size, seed):
    generator = torch.Generator().manual_seed(seed + 2)
    return [torch.randint(0, vocab_size, (n,), generator=generator).tolist()
            for n in PROMPT_LENGTHS]


@torch.no_grad()
def greedy(model, prompt, device, forced=None):
    """Returns (tokens [STEPS], logits [STEPS, V] float32): the model's own greedy tokens,
    or when `forced` is given, the logits along those tokens (teacher forcing)."""
    head = model.get_output_embeddings().weight.float()
    ids = torch.tensor([prompt], device=device)
    out = model.model(input_ids=ids, use_cache=True)
    tokens, logits = [], []
    for step in range(STEPS):
        # The LM head in fp32 over the final hidden state, as rig's (bf16 logits would
        # round near-ties into exact ties).
        row = out.last_hidden_state[0, -1].float() @ head.t()
        logits.append(row.cpu())
        token = int(torch.argmax(row)) if forced is None else forced[step]
        tokens.append(token)
        ids = torch.tensor([[token]], device=device)
        out = model.model(input_ids=ids, past_key_values=out.past_key_values, use_cache=True)
    return tokens, torch.stack(logits)


def rel_l2(a, b):
    return ((a - b).norm(dim=-1) / b.norm(dim=-1)).tolist()


def make(name, out_dir, device, seed, attn):
    model = build(name, seed, attn)
    shard = MODELS[name][2]
    path = os.path.join(out_dir, name)
    os.makedirs(path, exist_ok=True)
    if shard:
        model.save_pretrained(path, max_shard_size=shard)
    else:
        model.save_pretrained(path)
    # The reference is the exact math of the saved bf16 weights (fp32 compute); HF's own
    # bf16 run along the same tokens is measured against it, as the noise floor a bf16
    # engine is held to.
    exact = copy.deepcopy(model).float().to(device)
    model = model.to(device)
    vocab = model.config.vocab_size
    prompts = prompts_for(vocab, seed)
    all_tokens, all_logits, bf16_tokens, bf16_err = [], [], [], []
    for prompt in prompts:
        tokens, logits = greedy(exact, prompt, device)
        _, bf16_logits = greedy(model, prompt, device, forced=tokens)
        bf16_tokens.append(greedy(model, prompt, device)[0])
        all_tokens.append(tokens)
        all_logits.append(logits)
        bf16_err.append([round(e, 6) for e in rel_l2(bf16_logits, logits)])
    logits = torch.stack(all_logits).contiguous()
    assert logits.shape == (len(prompts), STEPS, vocab)
    logits.numpy().astype("<f4").tofile(os.path.join(path, "logits.f32"))
    reference = {
        "model": name,
        "seed": seed,
        "vocab_size": vocab,
        "steps": STEPS,
        "prompts": prompts,
        "greedy": all_tokens,
        "logits_file": "logits.f32",
        "logits_layout": "float32 little-endian [prompts, steps, vocab]; step 0: last prompt "
                         "position; step s: after feeding greedy[s-1]",
        "reference_precision": "fp32 compute over the saved bf16 weights",
        "hf_bf16_rel_l2": bf16_err,
        "hf_bf16_greedy": bf16_tokens,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "device": str(device),
        "attn_implementation": attn,
    }
    with open(os.path.join(path, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")
    print(f"{name}: {len(prompts)} prompts, vocab {vocab}, written to {path}; HF bf16 vs "
          f"exact: worst relative L2 {max(max(e) for e in bf16_err):.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/data/golden")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name in args.models.split(","):
        make(name, args.out, torch.device(args.device), args.seed, args.attn)


if __name__ == "__main__":
    main()
