#!/usr/bin/env python3
"""bench.py — single-threaded encode throughput of rig's tokenizer beside HF `tokenizers` (Rust,
through its Python binding) in the same run, on the same mixed corpus, same tokenizer.

    pip install tokenizers
    python3 tools/tokenizer/bench.py [--rig build/rig] [--tokenizer tests/data/tokenizer/qwen3]
                                     [--seconds 5] [--markdown]

The corpus (deterministic, ~2 MB, written to a temporary JSON-lines file) mixes English prose
(the licence texts of /usr/share/common-licenses, or generated sentences), Chinese, source code
(Python's standard library), numbers and emoji sequences, cut into documents of 1-8 KB. Both
sides encode every document once per round (add_special_tokens=True), for at least --seconds,
after one warm-up round; the ids are checked identical. HF runs with TOKENIZERS_PARALLELISM and
RAYON_NUM_THREADS pinned to one thread (Tokenizer.encode is single-threaded anyway).
"""
import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHINESE = [
    "机器学习是人工智能的一个重要分支，它使计算机能够从数据中学习规律。",
    "大型语言模型通过预测下一个词来生成文本，推理服务需要高效地管理显存。",
    "今天天气很好，我们去公园散步，顺便买了一些新鲜的水果和蔬菜。",
    "分页注意力把键值缓存切成固定大小的块，从而减少内存碎片。",
    "前缀缓存可以让多个请求共享相同的提示词，节省大量的计算。",
    "这座城市有着悠久的历史，每年都吸引成千上万的游客前来参观。",
    "请在下面的输入框中填写您的姓名、电话号码和电子邮件地址。",
    "研究人员发现，适当的休息和规律的运动有助于提高工作效率。",
    "调度器在每一步决定哪些请求进行预填充，哪些请求进行解码。",
    "中文分词与英文不同，因为汉字之间没有空格作为天然的分隔符。",
]


def english_texts():
    texts = []
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(path) and os.path.getsize(path) < 200_000:
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append(f.read())
    if not texts:
        words = ("the model serves requests with a paged cache and a radix tree of prefixes so "
                 "that shared prompts are computed once while the scheduler batches decode "
                 "steps").split()
        rng = random.Random(3)
        texts = [" ".join(rng.choice(words) for _ in range(20000))]
    return "\n\n".join(texts)


def code_text():
    import json as json_module
    base = os.path.dirname(json_module.__file__)
    parts = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(base), "*.py")))[:60]:
        with open(path, encoding="utf-8", errors="replace") as f:
            parts.append(f.read())
    return "\n".join(parts)


def numbers_text(rng):
    items = []
    for _ in range(30000):
        kind = rng.randrange(4)
        if kind == 0:
            items.append(str(rng.randrange(10 ** rng.randrange(1, 15))))
        elif kind == 1:
            items.append(f"{rng.uniform(-1e4, 1e4):.{rng.randrange(1, 6)}f}")
        elif kind == 2:
            items.append(f"{rng.randrange(1990, 2030)}-{rng.randrange(1, 13):02d}-"
                         f"{rng.randrange(1, 29):02d}")
        else:
            items.append(f"{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}.1")
    return " ".join(items)


def emoji_text(rng):
    base = ["😀", "👍", "🎉", "❤️", "🔥", "🙂", "🚀", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵"]
    tones = ["", "🏻", "🏼", "🏽", "🏾", "🏿"]
    words = ["great", "ok", "launch", "party", "love", "ship it", "好的", "谢谢"]
    out = []
    for _ in range(12000):
        out.append(rng.choice(base) + (rng.choice(tones) if rng.random() < 0.3 else ""))
        if rng.random() < 0.4:
            out.append(" " + rng.choice(words) + " ")
    return "".join(out)


def chinese_text(rng):
    return "".join(rng.choice(CHINESE) + ("\n" if rng.random() < 0.1 else "")
                   for _ in range(12000))


def documents():
    rng = random.Random(2026)
    sources = {"english": english_texts(), "chinese": chinese_text(rng), "code": code_text(),
               "numbers": numbers_text(rng), "emoji": emoji_text(rng)}
    docs = []
    budget = 420_000  # bytes per source: ~2 MB in all
    for name, text in sources.items():
        data = text.encode("utf-8")[:budget].decode("utf-8", errors="ignore")
        at = 0
        while at < len(data):
            size = rng.randrange(1000, 8000)
            docs.append(data[at:at + size])
            at += size
    rng.shuffle(docs)
    return docs, {k: min(len(v.encode()), budget) for k, v in sources.items()}


def bench_hf(tokenizer_dir, docs, seconds):
    from tokenizers import Tokenizer
    start = time.perf_counter()
    tok = Tokenizer.from_file(os.path.join(tokenizer_dir, "tokenizer.json"))
    load_ms = (time.perf_counter() - start) * 1e3
    ids = [tok.encode(d, add_special_tokens=True).ids for d in docs]  # warm-up
    rounds, start = 0, time.perf_counter()
    while True:
        for d in docs:
            tok.encode(d, add_special_tokens=True)
        rounds += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    total = sum(len(d.encode()) for d in docs)
    return {"mb_per_s": total * rounds / elapsed / 1e6, "load_ms": load_ms, "rounds": rounds,
            "tokens": sum(len(i) for i in ids)}, ids


def bench_rig(rig, tokenizer_dir, path, seconds):
    out = subprocess.run([rig, "tokenize", "--tokenizer", tokenizer_dir, "--bench", path,
                          "--seconds", str(seconds)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rig", default=os.path.join(ROOT, "build", "rig"))
    parser.add_argument("--tokenizer", default=os.path.join(ROOT, "tests", "data", "tokenizer",
                                                            "qwen3"))
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    docs, sizes = documents()
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for d in docs:
            f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
        path = f.name
    try:
        rig_result = bench_rig(args.rig, args.tokenizer, path, args.seconds)
        hf_result, hf_ids = bench_hf(args.tokenizer, docs, args.seconds)
    finally:
        os.remove(path)
    hf_tokens = sum(len(i) for i in hf_ids)
    if rig_result["tokens"] != hf_tokens:
        sys.exit(f"token counts differ: rig {rig_result['tokens']} vs HF {hf_tokens}")
    import tokenizers
    total = sum(len(d.encode()) for d in docs)
    print(f"corpus: {len(docs)} documents, {total / 1e6:.2f} MB "
          f"({', '.join(f'{k} {v / 1e3:.0f} KB' for k, v in sizes.items())}), "
          f"{hf_tokens} tokens")
    ratio = rig_result["mb_per_s"] / hf_result["mb_per_s"]
    rows = [("rig (C, PCRE2 JIT)", rig_result), (f"HF tokenizers {tokenizers.__version__} (Rust)",
                                                 hf_result)]
    if args.markdown:
        print("| tokenizer | encode MB/s (1 thread) | load ms |")
        print("|---|---:|---:|")
        for name, r in rows:
            print(f"| {name} | {r['mb_per_s']:.1f} | {r['load_ms']:.0f} |")
    else:
        for name, r in rows:
            print(f"{name:40s} {r['mb_per_s']:8.1f} MB/s   load {r['load_ms']:6.0f} ms")
    print(f"rig / HF: {ratio:.2f}x")


if __name__ == "__main__":
    main()
