"""test_openai.py — the official `openai` Python client against a real `rig serve`.

Chat and text completions, streamed and not; n (sharing the prompt's prefix cache: usage,
per-choice cached_tokens, /metrics); stop strings (matched across tokens, never
emitted); max_tokens; the same seed gives the same text twice; logprobs; usage equal to
`rig tokenize` of the same text (--chat for the Qwen3 template, --no-thinking for
chat_template_kwargs.enable_thinking=false); /generate, /health, /metrics, /abort_request,
/flush_cache with plain HTTP; the Prometheus text parsed by prometheus_client. Exits non-zero
on the first failure. Usage: python3 test_openai.py [--rig PATH]
"""
import json

import openai

from serve_fixture import Server, tokenize



def check_chat(client):
    messages = [{"role": "user", "content": "Hello there, how are you?"}]
    r = client.chat.completions.create(model="tiny-qwen3", messages=messages, max_tokens=7,
                                       temperature=0)
    assert r.object == "chat.completion" and len(r.choices) == 1
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].finish_reason == "length", r.choices[0].finish_reason
    assert r.usage.completion_tokens == 7
    assert r.usage.prompt_tokens == len(tokenize("Hello there, how are you?", chat=True))
    again = client.chat.completions.create(model="tiny-qwen3", messages=messages, max_tokens=7,
                                           temperature=0)
    assert again.choices[0].message.content == r.choices[0].message.content
    assert again.usage.prompt_tokens_details.cached_tokens > 0  # the radix cache hit
    thinking_off = client.chat.completions.create(
        model="tiny-qwen3", messages=messages, max_tokens=1,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    expected = len(tokenize("Hello there, how are you?", chat=True, no_thinking=True))
    assert thinking_off.usage.prompt_tokens == expected, (thinking_off.usage, expected)
    # streamed: the same text as the non-streamed greedy answer, usage last, role first
    chunks = list(client.chat.completions.create(
        model="tiny-qwen3", messages=messages, max_tokens=7, temperature=0, stream=True,
        stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == r.choices[0].message.content, (text, r.choices[0].message.content)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 7


def check_completions(client):
    prompt = "The quick brown fox"
    r = client.completions.create(model="tiny-qwen3", prompt=prompt, max_tokens=5,
                                  temperature=0)
    assert r.usage.prompt_tokens == len(tokenize(prompt)) and r.usage.completion_tokens == 5
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model="tiny-qwen3", prompt=prompt, max_tokens=5, temperature=0, stream=True))
    assert streamed == r.choices[0].text
    # n and a list of prompts: prompts x n choices, indices in order
    many = client.completions.create(model="tiny-qwen3", prompt=[prompt, "Once upon"],
                                     max_tokens=3, n=2, temperature=0.9, seed=11)
    assert sorted(c.index for c in many.choices) == [0, 1, 2, 3]
    # a seed gives the same text twice; sampling with another seed differs (almost surely)
    def sample(seed):
        return client.completions.create(model="tiny-qwen3", prompt=prompt, max_tokens=12,
                                         temperature=1.0, seed=seed).choices[0].text
    assert sample(7) == sample(7)
    assert sample(7) != sample(8)
    # token ids as the prompt: the same answer as the text
    ids = tokenize(prompt)
    by_ids = client.completions.create(model="tiny-qwen3", prompt=ids, max_tokens=5,
                                       temperature=0)
    assert by_ids.choices[0].text == r.choices[0].text


def check_n_shares_prefix(server, client):
    """n > 1 shares the prompt's prefix cache: the first choice of a prompt prefills it, the
    others wait for its first token and find the prompt in the radix cache (P - 1 tokens each:
    the last prompt token is always computed). Seeded choices differ and repeat exactly."""
    prompt = "Every choice of this prompt shares one prefill of its thirty or so tokens: " \
             "n equals four, so three of them hit the radix cache"
    P = len(tokenize(prompt))
    before = server.wait_idle()
    r = client.completions.create(model="tiny-qwen3", prompt=prompt, max_tokens=6, n=4,
                                  temperature=1.0, seed=21)
    after = server.wait_idle()
    assert r.usage.prompt_tokens == P, (r.usage, P)  # once per prompt
    assert r.usage.prompt_tokens_details.cached_tokens == P - 1, (r.usage, P)  # per prompt
    computed = after["rig:prompt_tokens_total"] - before["rig:prompt_tokens_total"]
    cached = after["rig:cached_tokens_total"] - before["rig:cached_tokens_total"]
    assert computed + cached == 4 * P and cached >= 3 * (P - 1), (computed, cached, P)
    assert computed <= P + 3, (computed, P)  # one prompt, and one token per other choice
    texts = [c.text for c in sorted(r.choices, key=lambda c: c.index)]
    assert len(set(texts)) == 4, texts  # seed + i per choice
    again = client.completions.create(model="tiny-qwen3", prompt=prompt, max_tokens=6, n=4,
                                      temperature=1.0, seed=21)
    assert [c.text for c in sorted(again.choices, key=lambda c: c.index)] == texts
    streamed = ["", "", "", ""]
    for chunk in client.completions.create(model="tiny-qwen3", prompt=prompt, max_tokens=6,
                                           n=4, temperature=1.0, seed=21, stream=True):
        for c in chunk.choices:
            streamed[c.index] += c.text
    assert streamed == texts, (streamed, texts)
    # per choice (/generate's meta_info): the three held choices each hit P' - 1 tokens
    fresh = prompt + " once more, with feeling"
    Pf = len(tokenize(fresh))
    status, body = server.post("/generate", {"text": fresh, "sampling_params": {
        "max_new_tokens": 3, "n": 4, "temperature": 1.0, "seed": 5}})
    metas = [o["meta_info"] for o in json.loads(body)]
    assert len(metas) == 4 and all(m["prompt_tokens"] == Pf for m in metas), metas
    assert all(m["cached_tokens"] == Pf - 1 for m in metas[1:]), (metas, Pf)
    assert sum(m["cached_tokens"] for m in metas) >= 3 * (Pf - 1)


def check_stop(client):
    prompt = "The quick brown fox"
    full = client.completions.create(model="tiny-qwen3", prompt=prompt, max_tokens=12,
                                     temperature=0).choices[0].text
    # a stop string made of the middle of the answer, spanning a token boundary
    middle = len(full) // 2
    stop = full[middle - 2:middle + 2]
    assert len(stop.encode()) >= 2, full
    for stream in (False, True):
        if stream:
            chunks = list(client.completions.create(model="tiny-qwen3", prompt=prompt,
                                                    max_tokens=12, temperature=0, stop=[stop],
                                                    stream=True))
            text = "".join(c.choices[0].text for c in chunks)
            finish = chunks[-1].choices[0].finish_reason
        else:
            r = client.completions.create(model="tiny-qwen3", prompt=prompt, max_tokens=12,
                                          temperature=0, stop=stop)
            text, finish = r.choices[0].text, r.choices[0].finish_reason
        assert text == full[:full.index(stop)], (text, full, stop)
        assert finish == "stop", finish


def check_chat_entries(content, top, greedy):
    """Chat logprob entries: values <= 0, the top list sorted, bytes the token's UTF-8."""
    for entry in content:
        assert entry.logprob <= 0.0 and len(entry.top_logprobs) == top, entry
        assert entry.bytes == list(entry.token.encode()), entry
        values = [t.logprob for t in entry.top_logprobs]
        assert all(v <= 0.0 for v in values) and values == sorted(values, reverse=True), values
        assert entry.logprob <= values[0] + 1e-6, entry  # nothing beats the most likely
        if greedy:  # temperature 0 takes the most likely token: top-1 is the token itself
            assert entry.token == entry.top_logprobs[0].token, entry
            assert abs(entry.logprob - values[0]) < 1e-6, entry


def check_logprobs(client):
    messages = [{"role": "user", "content": "Hi"}]
    for temperature in (0, 1):
        r = client.chat.completions.create(model="tiny-qwen3", max_tokens=6, logprobs=True,
                                           top_logprobs=3, temperature=temperature,
                                           messages=messages, seed=5)
        content = r.choices[0].logprobs.content
        assert len(content) == r.usage.completion_tokens == 6, (r.choices[0], r.usage)
        check_chat_entries(content, 3, greedy=temperature == 0)
        chunks = list(client.chat.completions.create(
            model="tiny-qwen3", max_tokens=6, logprobs=True, top_logprobs=3, stream=True,
            temperature=temperature, messages=messages, seed=5))
        streamed = [e for c in chunks if c.choices and c.choices[0].logprobs
                    for e in c.choices[0].logprobs.content]
        assert [(e.token, e.logprob) for e in streamed] == \
            [(e.token, e.logprob) for e in content], (streamed, content)
    assert client.chat.completions.create(model="tiny-qwen3", max_tokens=2, messages=messages
                                          ).choices[0].logprobs is None
    # completions: tokens, token_logprobs, top_logprobs (a dict) and text_offset
    r = client.completions.create(model="tiny-qwen3", prompt="The quick brown fox",
                                  max_tokens=6, temperature=0, logprobs=2)
    lp = r.choices[0].logprobs
    assert "".join(lp.tokens) == r.choices[0].text, (lp.tokens, r.choices[0].text)
    assert len(lp.token_logprobs) == len(lp.top_logprobs) == 6
    offsets = [sum(len(t) for t in lp.tokens[:i]) for i in range(6)]
    assert lp.text_offset == offsets, (lp.text_offset, offsets)
    for token, value, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert value <= 0.0 and len(top) <= 2 and max(top.values()) == value, (token, top)
    chunks = list(client.completions.create(model="tiny-qwen3", prompt="The quick brown fox",
                                            max_tokens=6, temperature=0, logprobs=2,
                                            stream=True))
    parts = [c.choices[0].logprobs for c in chunks if c.choices[0].logprobs is not None]
    assert sum((p.tokens for p in parts), []) == lp.tokens
    assert sum((p.token_logprobs for p in parts), []) == lp.token_logprobs
    assert sum((p.text_offset for p in parts), []) == lp.text_offset


def check_native_logprobs(server):
    status, body = server.post("/generate", {"text": "Hello", "return_logprob": True,
                                              "top_logprobs_num": 2, "sampling_params":
                                              {"max_new_tokens": 16, "temperature": 0}})
    out = json.loads(body)
    meta = out["meta_info"]
    values, tops = meta["output_token_logprobs"], meta["output_top_logprobs"]
    assert [v[1] for v in values] == out["output_ids"], (values, out["output_ids"])
    for (value, token, _), top in zip(values, tops):
        assert value <= 0.0 and len(top) == 2 and top[0][0] >= top[1][0], top
        assert top[0][1] == token and abs(top[0][0] - value) < 1e-6, (value, token, top)
    status, body = server.post("/generate", {"text": "Hello", "return_logprob": True,
                                              "stream": True, "sampling_params":
                                              {"max_new_tokens": 16, "temperature": 0}})
    items = [json.loads(line[6:]) for line in body.split("\n")
             if line.startswith("data: ") and line != "data: [DONE]"]
    ids = sum((item["output_ids"] for item in items), [])
    values = sum((item["meta_info"]["output_token_logprobs"] for item in items), [])
    assert ids == out["output_ids"] and [v[1] for v in values] == ids, (ids, values)
    texts = [item["text"] for item in items]  # cumulative: each a prefix of the next
    assert texts[-1] == out["text"] and all(b.startswith(a) for a, b in zip(texts, texts[1:]))


def check_native(server):
    status, body = server.post("/generate", {"text": "Hello", "sampling_params":
                                              {"max_new_tokens": 4, "temperature": 0}})
    out = json.loads(body)
    assert status == 200 and len(out["output_ids"]) == 4
    meta = out["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": 4}, meta
    assert meta["prompt_tokens"] == len(tokenize("Hello")) and meta["completion_tokens"] == 4
    status, body = server.post("/generate", {"input_ids": [9707, 1052], "stream": True,
                                              "sampling_params": {"max_new_tokens": 3}})
    events = [line[6:] for line in body.split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]", events
    items = [json.loads(e) for e in events[:-1]]
    # each event: the text so far, only the new output ids (SGLang's streaming)
    assert len(sum((item["output_ids"] for item in items), [])) == 3, items
    assert items[-1]["meta_info"]["completion_tokens"] == 3, items
    assert server.post("/abort_request", {"rid": "nothing-by-that-name"})[0] == 200
    assert server.post("/flush_cache", {})[0] == 200
    status, text = server.get("/health")
    assert status == 200
    m = server.wait_idle()
    assert m["rig:num_running_reqs"] == 0
    assert m["rig:generation_tokens_total"] > 0
    assert m["rig:time_to_first_token_seconds_count"] > 0
    assert m["rig:num_requests_total|finish_reason=stop"] >= 2  # the stop-string requests


def main():
    server = Server()
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0,
                               timeout=60)
        for check in (check_chat, check_completions, check_stop, check_logprobs):
            check(client)
            print("ok:", check.__name__, flush=True)
        check_n_shares_prefix(server, client)
        print("ok: check_n_shares_prefix")
        check_native(server)
        print("ok: check_native")
        check_native_logprobs(server)
        print("ok: check_native_logprobs")
    finally:
        err = server.stop()
    print("test_openai: all passed")


if __name__ == "__main__":
    main()
