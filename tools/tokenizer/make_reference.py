#!/usr/bin/env python3
"""make_reference.py — writes the reference data the C tokenizer tests compare against.

    pip install tokenizers==0.23.3 transformers==5.23.0 jinja2
    python3 tools/tokenizer/make_reference.py

Outputs (committed, under tests/data/tokenizer/):
  corpus.jsonl  one JSON object per line: {"text", "ids", "decoded", "decoded_skip"} — the
                Qwen3 tokenizer's ids for `text` (HF tokenizers, add_special_tokens=True) and the
                decodes of those ids with skip_special_tokens False / True.
  chat.jsonl    {"template", "messages", "add_generation_prompt", "enable_thinking"|null,
                 "tools"|null, "text", "ids" (Qwen3 only: the rendering tokenised)} — renderings by transformers' apply_chat_template (Qwen3) and by
                transformers' own Jinja renderer with the Llama-3 template (Llama-3).
  variants/     small tokenizers derived from Qwen3's (first merges only) that exercise the
                other loader paths (GPT-2 style ByteLevel regex and prefix space, normaliser
                sequences, added-token flags, TemplateProcessing, Split behaviours), each with
                its corpus of reference ids: variants/NAME/tokenizer.json + reference.jsonl.

Deterministic: same library versions, same bytes.
"""
import json
import os
import random
import sys

from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "tokenizer")
QWEN = os.path.join(DATA, "qwen3")

LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] "
    "| trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")


def corpus():
    """Several hundred strings over the cases the issue lists; deterministic."""
    out = []
    english = [
        "Hello, world!", "The quick brown fox jumps over the lazy dog.",
        "It's a beautiful day; isn't it?", "  leading spaces", "trailing spaces   ",
        "Mr. O'Neil's dog's bone", "e-mail: someone@example.com, url: https://example.org/a?b=c",
        "Tokenization is the first step of every language model.",
        "ALL CAPS SENTENCE WITH NUMBERS 123 AND SYMBOLS #@!",
    ]
    cjk = ["你好，世界！", "机器学习是人工智能的一个分支。", "東京は日本の首都です。",
           "カタカナとひらがな、漢字。", "안녕하세요, 세계!", "한국어 문장을 토큰화합니다.",
           "中文English混合text测试", "𠀀𠀁𪚥 rare CJK extension B", "（全角括号）「引号」"]
    arabic = ["مرحبا بالعالم", "اللغة العربية جميلة.", "العدد ١٢٣٤٥ بالأرقام العربية",
              "שלום עולם", "mixed عربي and English"]
    hindi = ["नमस्ते दुनिया", "हिन्दी भाषा में वाक्य।", "क्षत्रिय ज्ञान श्री", "தமிழ் மொழி",
             "বাংলা ভাষা"]
    emoji = ["👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "👩🏿‍💻 coding", "🇺🇸🇯🇵 flags", "❤️‍🔥",
             "emoji😀in😃text", "🧑🏻‍🤝‍🧑🏾", "1️⃣ keycap", "©️®️™️"]
    accents = ["café", "cafe\u0301", "Å", "A\u030a", "\u212b angstrom sign", "n\u0303o",
               "e\u0301\u0301 double", "\u1100\u1161\u11a8 jamo", "ﬁ ligature", "Ｆｕｌｌｗｉｄｔｈ",
               "\u0041\u0308\u0304", "ǅ titlecase", "Ω\u2126 ohm", "K\u212a kelvin"]
    numbers = ["0", "42", "3.14159", "1234567890", "12345678901234567890123456789",
               "1,000,000", "-273.15", "2024-11-21", "0x1F600", "١٢٣", "٣.١٤", "½ ¼ ¾", "Ⅻ",
               "①②③", "१२३४"]
    code = [
        "def add(a, b):\n    return a + b\n",
        "int main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}",
        "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
        "<div class=\"x\">&amp; &lt;tag&gt;</div>",
        "for (size_t i = 0; i < n; i++) x[i] += y[i] * 2;",
        "SELECT * FROM users WHERE id = 7;",
        "x = lambda y: y**2 if y else -y  # comment",
        "#include <stdio.h>\r\n#define MAX(a,b) ((a)>(b)?(a):(b))\r\n",
        "    indented\n        more\n\tand tab",
        "a=>b; c->d; e::f; g!=h; i<=j; k>=l; m&&n; o||p;",
    ]
    whitespace = ["a  b", "a   b", "a\tb", "a \t b", "a\n\nb", "a\n \nb", "\n\n\n", "   ",
                  "\t\t\t", " \n ", "a\r\nb\r\nc", "\r\n\r\n", "line\r\n", "x\u00a0y nbsp",
                  "x\u2003y em space", "x\u3000y ideographic", "x\u0085y nel", "x\u200by zwsp",
                  "x\u2028y\u2029z", "end with newline\n", " ", "\n", "\r", "\u000b\u000c"]
    contractions = []
    for c in ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"]:
        for form in dict.fromkeys([c, c.upper(), c[0] + c[1:].capitalize(), c.title()]):
            contractions.append(f"it{form} here")
            contractions.append(f"THEY{form}")
    contractions += ["I'M", "You'Re", "we'VE", "she'D", "it\u2019s curly", "'s alone",
                     "ſ 's long s", "it'ſ", "dogs'", "rock 'n' roll"]
    specials = ["<|im_start|>user\nhi<|im_end|>", "text<|endoftext|>more",
                "<think>\nreasoning\n</think>\n\nanswer", "<|im_start|><|im_end|>",
                "partial <|im_sta and <|im_end", "<tool_call>{\"a\":1}</tool_call>",
                "<|vision_start|><|image_pad|><|vision_end|>", "a<|im_end|>b<|im_end|>c",
                "<|endoftext|>", "  <|im_start|>  spaced  <|im_end|>  ", "<<|im_start|>>"]
    long_words = ["a" * 300, "supercalifragilisticexpialidocious" * 8,
                  "https://example.com/" + "path/" * 60, "x" * 1000 + " y",
                  "ab" * 400, "1" * 500, "🙂" * 100, "漢" * 300, "-" * 200, " " * 300 + "end"]
    # Added-token flags of the variant tokenizers (lstrip, rstrip, single_word, normalized).
    flags = [" <mask> x", "a<mask>b", "a \t <mask>", "[R]   after", "[R]\n\nx",
             "password word words sword", "word", "(word)", "é word_", " ﬁx fix ﬁx", "a  <both>  b",
             "<both><both>", "x\u3000<mask>\u3000y", "qzxq", "aqzxq", "qzxq_", "-qzxq-",
             "éqzxq", "qzxq\u0301", " qzxq qzxq ", "1qzxq", "qzxq٣", "ⅠqzxqⅠ", "\u200dqzxq",
             "qzxq½", "qzxq.qzxq", "ʰqzxq"]
    for group in [english, cjk, arabic, hindi, emoji, accents, numbers, code, whitespace,
                  contractions, specials, long_words, flags]:
        out.extend(group)
    # Mixed sentences: every pairing of a few groups, so boundaries between scripts show up.
    rng = random.Random(1234)
    groups = [english, cjk, arabic, hindi, emoji, accents, numbers, code, whitespace,
              contractions, specials]
    for _ in range(220):
        parts = [rng.choice(rng.choice(groups)) for _ in range(rng.randint(2, 4))]
        sep = rng.choice([" ", "", "\n", "  ", "\t", "\r\n"])
        out.append(sep.join(parts))
    out.append("")
    return out


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def reference_rows(tok, texts):
    rows = []
    for text in texts:
        ids = tok.encode(text, add_special_tokens=True).ids
        rows.append({"text": text, "ids": ids,
                     "decoded": tok.decode(ids, skip_special_tokens=False),
                     "decoded_skip": tok.decode(ids, skip_special_tokens=True)})
    return rows


def chat_cases():
    """(messages, add_generation_prompt, enable_thinking or None) for both templates."""
    sys_msg = {"role": "system", "content": "You are a helpful assistant."}
    u1 = {"role": "user", "content": "What is 2+2?"}
    a1 = {"role": "assistant", "content": "4"}
    a1_think = {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"}
    a1_think2 = {"role": "assistant", "content": "\n<think>\n\nfirst\n<think>second\n\n</think>"
                 "\n\n\nThe answer </think> is 4\n"}
    a1_reason = {"role": "assistant", "content": "4", "reasoning_content": "\n2 plus 2\n"}
    u2 = {"role": "user", "content": "  And 3+3?  \n"}
    a2 = {"role": "assistant", "content": "6"}
    tool_call_reply = {"role": "user", "content": "<tool_response>\n{\"x\": 1}\n</tool_response>"}
    tool1 = {"role": "tool", "content": "{\"temperature\": 21}"}
    tool2 = {"role": "tool", "content": "sunny"}
    uni = {"role": "user", "content": "\u3000 你好 👋🏽 \u00a0\n"}
    convs = [
        [u1], [sys_msg, u1], [sys_msg, u1, a1], [sys_msg, u1, a1, u2], [u1, a1_think],
        [u1, a1_think, u2, a2], [u1, a1_think2], [u1, a1_reason], [u1, a1_reason, u2],
        [sys_msg, u1, a1_think, u2, a1_think], [u1, a1, tool1], [u1, a1, tool1, tool2, a2],
        [u1, a1, tool_call_reply, a1_think], [u1, {"role": "system", "content": "late system"}],
        [uni], [sys_msg, uni, a1], [{"role": "assistant", "content": "only assistant"}],
        [u1, a1_think, tool1, a1_think],
    ]
    for conv in convs:
        for gen in (False, True):
            for thinking in (None, True, False):
                yield conv, gen, thinking, None


def tool_cases():
    """Qwen3 conversations with tool definitions and assistant tool calls."""
    weather = {"type": "function", "function": {
        "name": "get_weather",
        "description": "Weather for a city, in °C — «quoted» \"x\" \\ /\n",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "threshold": {"type": "number", "default": 0.1}, "big": {"default": 1e20},
            "small": {"default": 1.5e-07}, "fixed": {"default": 1e15}, "neg0": {"default": -0.0},
            "third": {"default": 1 / 3}, "ctrl": {"description": "\u001b\u000b tab\t\u007f\u2028"},
            "flags": [True, False, None], "empty": {}, "list": []}, "required": ["city"]}}}
    search = {"name": "search", "description": "Search the web 🔎",
              "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
    call_weather = {"type": "function", "function": {
        "name": "get_weather", "arguments": {"city": "Paris", "days": 3, "threshold": 2.5}}}
    call_search = {"function": {"name": "search", "arguments": "{\"q\": \"rig\"}"}}
    call_direct = {"name": "get_weather", "arguments": {"city": "東京", "days": 100000000000}}
    sys_msg = {"role": "system", "content": "You are a helpful assistant."}
    u1 = {"role": "user", "content": "Weather in Paris?"}
    a_call = {"role": "assistant", "content": "", "tool_calls": [call_weather]}
    a_call2 = {"role": "assistant", "content": "Let me check.",
               "tool_calls": [call_search, call_direct]}
    a_think_call = {"role": "assistant", "content": "<think>\nplan\n</think>\n\n",
                    "tool_calls": [call_weather]}
    tool1 = {"role": "tool", "content": "{\"temperature\": 21}"}
    tool2 = {"role": "tool", "content": "sunny"}
    a2 = {"role": "assistant", "content": "It is 21 °C."}
    tools = [weather, search]
    convs = [([sys_msg, u1], tools), ([u1], tools), ([sys_msg, u1, a_call, tool1, a2], tools),
             ([u1, a_call2, tool1, tool2, a_think_call], tools), ([u1, a_call], None),
             ([sys_msg, u1], []), ([u1, a_think_call, tool1], [search])]
    for conv, tool_list in convs:
        for gen in (False, True):
            yield conv, gen, None, tool_list


def make_chat():
    from transformers import AutoTokenizer
    from transformers.utils.chat_template_utils import render_jinja_template
    qwen = AutoTokenizer.from_pretrained(QWEN)
    rows = []
    import itertools
    for messages, gen, thinking, tools in itertools.chain(chat_cases(), tool_cases()):
        kwargs = {} if thinking is None else {"enable_thinking": thinking}
        text = qwen.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen,
                                        tools=tools, **kwargs)
        ids = qwen.backend_tokenizer.encode(text, add_special_tokens=False).ids
        rows.append({"template": "qwen3", "messages": messages, "add_generation_prompt": gen,
                     "enable_thinking": thinking, "tools": tools, "text": text, "ids": ids})
        if thinking is not None or tools is not None or any("tool_calls" in m for m in messages):
            continue
        llama_messages = [{k: v for k, v in m.items() if k != "reasoning_content"}
                          for m in messages]
        rendered, _ = render_jinja_template(conversations=[llama_messages],
                                            chat_template=LLAMA3_TEMPLATE,
                                            add_generation_prompt=gen,
                                            bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
        rows.append({"template": "llama3", "messages": llama_messages,
                     "add_generation_prompt": gen, "enable_thinking": None,
                     "text": rendered[0]})
    write_jsonl(os.path.join(DATA, "chat.jsonl"), rows)
    return len(rows)


def main():
    tok = Tokenizer.from_file(os.path.join(QWEN, "tokenizer.json"))
    rows = reference_rows(tok, corpus())
    write_jsonl(os.path.join(DATA, "corpus.jsonl"), rows)
    print(f"corpus.jsonl: {len(rows)} strings")
    print(f"chat.jsonl: {make_chat()} renderings")
    if "--no-variants" not in sys.argv:
        import make_variants
        make_variants.main(tok, corpus())


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
