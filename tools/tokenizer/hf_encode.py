#!/usr/bin/env python3
"""hf_encode.py — the Hugging Face side of the differential tests and the benchmark.

    python3 hf_encode.py TOKENIZER_JSON IN.jsonl OUT.jsonl
        encodes each {"text": ...} line of IN with HF tokenizers (add_special_tokens=True) and
        writes {"ids": [...], "unicode_skew": bool} lines to OUT (tests/test_tokenizer_fuzz.c).
        unicode_skew marks text on which HF's own Unicode tables disagree with Python's
        unicodedata (Unicode 14, as PCRE2 10.42 and utf8proc here): a character unassigned in
        Unicode 14 (HF's Oniguruma knows newer letters), or an HF normaliser output that is not
        unicodedata's (HF's normalisation tables are older).
    python3 hf_encode.py --check
        exits 0 when `tokenizers` is importable, 77 otherwise (the tests' skip code).

Needs `pip install tokenizers` (PyPI); nothing else.
"""
import json
import sys


def main():
    if sys.argv[1:] == ["--check"]:
        try:
            import tokenizers  # noqa: F401
        except ImportError:
            sys.exit(77)
        sys.exit(0)
    import unicodedata
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(sys.argv[1])
    forms = [step["type"] for step in normalizer_steps(json.loads(tok.to_str())["normalizer"])]
    with open(sys.argv[2], encoding="utf-8") as src, open(sys.argv[3], "w") as dst:
        for line in src:
            text = json.loads(line)["text"]
            expected = text
            for form in forms:
                expected = unicodedata.normalize(form, expected)
            skew = any(unicodedata.category(c) == "Cn" for c in text) or (
                tok.normalizer is not None and tok.normalizer.normalize_str(text) != expected)
            ids = tok.encode(text, add_special_tokens=True).ids
            dst.write(json.dumps({"ids": ids, "unicode_skew": skew}) + "\n")


def normalizer_steps(normalizer):
    if normalizer is None:
        return []
    if normalizer["type"] == "Sequence":
        return [s for n in normalizer["normalizers"] for s in normalizer_steps(n)]
    return [normalizer]


if __name__ == "__main__":
    main()
