#!/usr/bin/env python3
"""make_variants.py — small tokenizers derived from Qwen3's vocabulary (its first 2000 merges)
that exercise the loader paths Qwen3 itself does not: GPT-2's ByteLevel regex with a prefix
space, Llama-3's split regex with a TemplateProcessing BOS and its chat template, Split
behaviours (Removed, MergedWithPrevious/Next, Contiguous, invert, String patterns), normaliser
sequences, and added tokens with lstrip / rstrip / single_word / normalized.

Run through make_reference.py (it passes the Qwen3 tokenizer and the corpus). Each variant is
written as tests/data/tokenizer/variants/NAME/tokenizer.json (as HF tokenizers serialises it,
except "legacy", whose merges are "a b" strings) plus reference.jsonl with HF's ids and decodes.
"""
import json
import os

from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "tokenizer", "variants")
MERGES = 2000

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def small_model(qwen):
    full = json.loads(qwen.to_str())
    vocab_full = full["model"]["vocab"]
    by_id = sorted(vocab_full.items(), key=lambda kv: kv[1])
    vocab = {tok: i for i, (tok, _) in enumerate(by_id[:256])}
    merges = []
    for left, right in full["model"]["merges"]:
        if len(merges) == MERGES:
            break
        joined = left + right
        if left in vocab and right in vocab and joined not in vocab:
            vocab[joined] = len(vocab)
            merges.append([left, right])
    model = dict(full["model"])
    model["vocab"] = vocab
    model["merges"] = merges
    return model, len(vocab)


def added(content, id_, special=True, lstrip=False, rstrip=False, single_word=False,
          normalized=False):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": normalized, "special": special}


def byte_level(prefix, regex):
    return {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True,
            "use_regex": regex}


def split(pattern, behavior, invert=False, literal=False):
    return {"type": "Split", "pattern": {"String" if literal else "Regex": pattern},
            "behavior": behavior, "invert": invert}


def variants(model, n):
    base = {"version": "1.0", "truncation": None, "padding": None, "model": model,
            "decoder": byte_level(True, True), "post_processor": None, "normalizer": None}
    gpt2 = dict(base, pre_tokenizer=byte_level(True, True), added_tokens=[
        added("<|endoftext|>", n), added("<mask>", n + 1, special=True, lstrip=True),
        added("[R]", n + 2, special=False, rstrip=True),
        added("qzxq", n + 3, special=False, single_word=True),
        added("ﬁx", n + 4, special=False, normalized=True),
        added("<both>", n + 5, special=False, lstrip=True, rstrip=True)],
        post_processor=byte_level(True, False), normalizer={"type": "NFKC"})
    llama_specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                      "<|end_header_id|>", "<|eot_id|>"]
    template = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>",
                                                         "ids": [n], "tokens":
                                                         ["<|begin_of_text|>"]}}}
    # Llama-3's own file sets ignore_merges: a piece that is a token is taken whole.
    llama3 = dict(base, model=dict(model, ignore_merges=True), pre_tokenizer={"type": "Sequence", "pretokenizers": [
        split(LLAMA3_REGEX, "Isolated"), byte_level(False, False)]},
        added_tokens=[added(t, n + i) for i, t in enumerate(llama_specials)],
        post_processor={"type": "Sequence", "processors": [byte_level(True, False), template]},
        decoder=byte_level(True, True))
    splits = dict(base, normalizer={"type": "Sequence", "normalizers": [{"type": "NFKD"},
                                                                        {"type": "NFC"}]},
                  pre_tokenizer={"type": "Sequence", "pretokenizers": [
                      split(" ", "MergedWithNext", literal=True),
                      split(r"\p{N}", "Contiguous"),
                      split(r"[,.;:!?]", "MergedWithPrevious"),
                      split(r"[xyz]", "Removed"),
                      byte_level(False, False)]}, added_tokens=[added("<s>", n)])
    inverted = dict(base, normalizer={"type": "NFD"}, pre_tokenizer={
        "type": "Sequence", "pretokenizers": [split(r"\p{L}+", "Isolated", invert=True),
                                              split("\n", "Removed", invert=True, literal=True),
                                              byte_level(True, False)]}, added_tokens=[])
    legacy = dict(base, pre_tokenizer=byte_level(False, True), added_tokens=[
        added("<|endoftext|>", n)], normalizer={"type": "NFKC"})
    return {"gpt2": gpt2, "llama3": llama3, "splits": splits, "inverted": inverted,
            "legacy": legacy}


def main(qwen, texts):
    from make_reference import LLAMA3_TEMPLATE, reference_rows, write_jsonl
    model, n = small_model(qwen)
    for name, spec in variants(model, n).items():
        tok = Tokenizer.from_str(json.dumps(spec))
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        text = tok.to_str()
        if name == "legacy":
            data = json.loads(text)
            data["model"]["merges"] = [" ".join(pair) for pair in data["model"]["merges"]]
            text = json.dumps(data, ensure_ascii=False)
            tok = Tokenizer.from_str(text)
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            f.write(text)
        rows = reference_rows(tok, [t for t in texts if len(t) <= 160])
        write_jsonl(os.path.join(folder, "reference.jsonl"), rows)
        if name == "llama3":
            config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
                      "chat_template": LLAMA3_TEMPLATE}
            with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
                json.dump(config, f, indent=2)
        print(f"variants/{name}: {len(rows)} strings")
