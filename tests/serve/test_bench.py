#!/usr/bin/env python3
"""test_bench.py — `rig bench serve` against a real `rig serve --backend sim` (ctest serve_bench).

One server (serve_fixture: Qwen3-0.6B's shapes with --sim-timing-only, the Qwen3 tokenizer,
127.0.0.1, a free port). For every client backend (rig -> /generate, openai -> /v1/completions, openai-chat ->
/v1/chat/completions), streamed and --disable-stream, and every dataset:

  random-ids   token ids (no file), Poisson arrivals at a rate
  random       bench_serving's random over the committed ShareGPT sample
  sharegpt     tests/data/serve/sharegpt-sample.json (ShareGPT JSON: first turn, second turn)
  scenario     a rig scenario written here (a random workload with a rate)
  mooncake     a Mooncake JSONL trace written here (milliseconds, 512-token hash blocks)
  bailian      a Qwen-Bailian JSONL trace written here (seconds, chat_id/turn, 16-token blocks)

Checked for each run, against the dry run of the same options and the server's own counters:
- exit 0; every request succeeded (JSONL `completed` = the dataset, `failed` = 0);
- each request's output tokens = its requested length (ignore_eos) and the totals = the growth
  of the server's rig:generation_tokens_total; the finish reason is `length` on both sides
  (rig:num_requests_total{finish_reason=length}); prompt tokens and the prefix-cache hits equal
  the server's (rig:prompt_tokens_total + rig:cached_tokens_total) where the client's count is
  the server's (ids sent, or ShareGPT text, not chat-templated);
- the HDF5 file opens with h5py: one row per request, input/output lengths as the dry run,
  one token time per output token, non-decreasing, TTFT <= E2E (= when not streamed); arrivals
  follow the dry run's schedule; tools/report/report.py plots it (where matplotlib is present);
- the JSONL line parses and its totals equal the HDF5 file's.
Then /generate's long streams (check_long_stream): the client parses each event's new text
only (client_parsed_bytes linear in the output while the events grow with its square), with
every count as above.
Text prompts (a tokenizer given) and token-id prompts (--tokenize-prompt, or no tokenizer) are
both sent. Everything is bounded in time; skipped (77) without h5py or prometheus_client.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_fixture  # noqa: E402

try:
    import h5py  # noqa: F401
    import prometheus_client  # noqa: F401
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

SHAREGPT = os.path.join(serve_fixture.ROOT, "tests/data/serve/sharegpt-sample.json")
REPORT = os.path.join(serve_fixture.ROOT, "tools/report/report.py")
BACKENDS = ["rig", "openai", "openai-chat"]


def write_datasets(work):
    """The scenario and the two JSONL traces; returns {name: client flags}."""
    scenario = os.path.join(work, "online.yaml")
    with open(scenario, "w") as f:
        f.write("name: online\nmodel: {preset: tiny}\nseed: 3\nworkloads:\n"
                "  - {kind: random, name: online, count: 10, input_len: [20, 120],\n"
                "     output_len: [4, 24], token_range: [0, 150000], rate: 40}\n")
    mooncake = os.path.join(work, "mooncake.jsonl")
    with open(mooncake, "w") as f:  # milliseconds; blocks of 512: shared first block
        for i in range(6):
            f.write(json.dumps({"timestamp": 20 * i, "input_length": 530 + 40 * i,
                                "output_length": 5 + 3 * i, "hash_ids": [7, 100 + i]}) + "\n")
    bailian = os.path.join(work, "bailian.jsonl")
    with open(bailian, "w") as f:  # seconds; blocks of 16
        for i in range(8):
            f.write(json.dumps({"chat_id": i // 2, "parent_chat_id": -1, "timestamp": 0.02 * i,
                                "input_length": 40 + 9 * i, "output_length": 3 + 2 * i,
                                "type": "text", "turn": 1 + i % 2,
                                "hash_ids": [1, 2, 30 + i // 2, 50 + i]}) + "\n")
    return {
        "random-ids": ["--dataset-name", "random-ids", "--num-prompts", "10",
                       "--random-input-len", "96", "--random-output-len", "20",
                       "--random-range-ratio", "0.25", "--request-rate", "40"],
        "random": ["--dataset-name", "random", "--dataset-path", SHAREGPT, "--num-prompts", "6",
                   "--random-input-len", "64", "--random-output-len", "12",
                   "--random-range-ratio", "0.5"],
        "sharegpt": ["--dataset-name", "sharegpt", "--dataset-path", SHAREGPT],
        "scenario": ["--dataset-name", "trace", "--dataset-path", scenario],
        "mooncake": ["--dataset-name", "trace", "--dataset-path", mooncake],
        "bailian": ["--dataset-name", "trace", "--dataset-path", bailian],
    }


def client_flags(backend, stream, dataset):
    """Prompts as text or as ids: chat needs text; otherwise streamed runs send text and
    non-streamed ones ids (random-ids without a tokenizer sends ids anyway)."""
    text = backend == "openai-chat" or (stream and dataset != "random-ids")
    flags = [] if stream else ["--disable-stream"]
    if dataset in ("random", "sharegpt") or text:
        flags += ["--tokenizer", serve_fixture.TOKENIZER]
        if not text:
            flags.append("--tokenize-prompt")
    # the client's prompt count is the server's: ids sent, or ShareGPT text, not templated
    exact_prompt = backend != "openai-chat" and (not text or dataset == "sharegpt")
    return flags, exact_prompt


def rig(*args, timeout=120):
    done = subprocess.run([serve_fixture.rig_binary(), "bench", "serve", *args],
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def dry_run(dataset_flags, flags):
    rc, out, err = rig("--dry-run", "--seed", "5", *dataset_flags, *flags)
    assert rc == 0, err
    rows = [line.split() for line in out.splitlines() if line and not line.startswith("#")]
    return {r[0]: (float(r[1]), int(r[2]), int(r[3])) for r in rows if len(r) == 4}


def counters(server):
    m = server.wait_idle()
    return {k: m.get(k, 0.0) for k in (
        "rig:generation_tokens_total", "rig:prompt_tokens_total", "rig:cached_tokens_total",
        "rig:num_requests_total|finish_reason=length", "rig:num_requests_total|finish_reason=stop",
        "rig:num_requests_total|finish_reason=abort", "rig:http_errors_total")}


def check_h5(path, expected, stream, timed):
    import h5py
    with h5py.File(path, "r") as f:
        assert f.attrs["format"] == "rig-results" and f.attrs["backend"] == "http"
        req = f["requests"][:]
        enum = h5py.check_enum_dtype(f["requests"].dtype["finish_reason"])
        names = {v: k for k, v in enum.items()}
        times = f["tokens/time"][:]
        total_output = int(f["summary/total_output"][()])
    assert len(req) == len(expected), (len(req), len(expected))
    first = min(r["arrival"] for r in req)
    for r in req:
        rid = r["id"].decode()
        offset, input_len, output_len = expected[rid]
        assert names[int(r["finish_reason"])] == "length", (rid, names[int(r["finish_reason"])])
        assert (r["input_len"], r["output_len"]) == (input_len, output_len), (rid, r, expected[rid])
        t = times[r["token_offset"]:r["token_offset"] + r["output_len"]]
        assert len(t) == output_len and (t[1:] >= t[:-1]).all(), (rid, t)
        assert 0 < r["ttft"] <= r["e2e"], r
        if not stream:
            assert r["ttft"] == r["e2e"], r
        if timed:  # sent on the dry run's schedule (a loose bound: a shared CI machine)
            assert abs(r["arrival"] - first - offset) < 0.25, (rid, r["arrival"] - first, offset)
    return req, total_output


def check_run(server, work, backend, stream, dataset, dataset_flags):
    flags, exact_prompt = client_flags(backend, stream, dataset)
    tag = "%s-%s-%s" % (backend, "stream" if stream else "whole", dataset)
    expected = dry_run(dataset_flags, flags)
    assert expected, "the dry run listed no prompt"
    h5, jsonl = os.path.join(work, tag + ".h5"), os.path.join(work, "runs.jsonl")
    before = counters(server)
    rc, out, err = rig("--base-url", server.url, "--backend", backend, "--seed", "5",
                       "--warmup-requests", "0", "--request-timeout", "30", "--timeout", "60",
                       "--disable-tqdm", "--quiet", "--out", h5, "--output-file", jsonl,
                       "--tag", tag, *dataset_flags, *flags)
    assert rc == 0, "%s: exit %d\n%s\n%s" % (tag, rc, out, err)
    after = counters(server)
    grown = {k: after[k] - before[k] for k in after}
    with open(jsonl) as f:
        line = json.loads(f.readlines()[-1])
    n = len(expected)
    want_out = sum(e[2] for e in expected.values())
    want_in = sum(e[1] for e in expected.values())
    assert line["tag"] == tag and line["completed"] == n and line["failed"] == 0, (tag, line)
    assert line["total_output_tokens"] == want_out, (tag, line["total_output_tokens"], want_out)
    assert line["total_input_tokens"] == want_in, (tag, line["total_input_tokens"], want_in)
    req, h5_output = check_h5(h5, expected, stream, "--request-rate" in dataset_flags or
                              dataset in ("scenario", "mooncake", "bailian"))
    assert h5_output == want_out
    # the server's side of the same run
    assert grown["rig:generation_tokens_total"] == want_out, (tag, grown)
    assert grown["rig:num_requests_total|finish_reason=length"] == n, (tag, grown)
    assert grown["rig:num_requests_total|finish_reason=stop"] == 0, (tag, grown)
    assert grown["rig:num_requests_total|finish_reason=abort"] == 0, (tag, grown)
    assert grown["rig:http_errors_total"] == 0, (tag, grown)
    cached = int(sum(r["cached_len"] for r in req))
    assert grown["rig:cached_tokens_total"] == cached, (tag, grown, cached)
    if exact_prompt:
        served = grown["rig:prompt_tokens_total"] + grown["rig:cached_tokens_total"]
        assert served == want_in, (tag, served, want_in)
    print("%-28s %3d requests, %4d output tokens, %4d cached: ok" % (tag, n, want_out, cached))
    return h5


def check_report(h5, work):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib missing: tools/report/report.py is not run")
        return
    png = h5[:-3] + ".png"
    subprocess.run([sys.executable, REPORT, h5, "-o", png], check=True, capture_output=True,
                   timeout=120)
    assert os.path.getsize(png) > 0, png


def check_warmup_and_model(server, work):
    """The defaults: one warm-up request, the model asked from /v1/models (openai)."""
    before = counters(server)
    rc, out, err = rig("--base-url", server.url, "--backend", "openai", "--dataset-name",
                       "random-ids", "--num-prompts", "4", "--random-input-len", "40",
                       "--random-output-len", "6", "--random-range-ratio", "1",
                       "--disable-tqdm", "--request-timeout", "30")
    assert rc == 0, err
    after = counters(server)
    assert after["rig:generation_tokens_total"] - before["rig:generation_tokens_total"] == 30, (
        before, after)  # 4 x 6 + the warm-up's 6
    assert "Successful requests:                     4" in out, out


def check_long_stream(work):
    """/generate sends all the text so far in every event, so the bytes of a stream grow with
    the square of its length; the client must parse only what is new. Two runs of 4 requests,
    256 and 1,024 output tokens: the client's parsed bytes (client_parsed_bytes) grow ~4x,
    linearly, and at 1,024 tokens are a small part of the bytes received — and the counts are
    what they must be (every token, the server's totals, one ITL per token after the first, a
    text per request). Its own server paces the simulator on the wall clock (H100 timing), so
    the server sends about an event per step, as a GPU server does, however busy the machine."""
    jsonl = os.path.join(work, "long.jsonl")
    server = serve_fixture.Server("--preset", "qwen3-0.6b", "--sim-timing-only", "--sim-pace",
                                  "realtime", "--sim-profile", "h100")
    try:
        lines = long_stream_runs(server, jsonl)
    finally:
        server.stop()
    short, long_ = lines[256], lines[1024]
    events = long_["client_event_bytes"] / short["client_event_bytes"]
    parsed = long_["client_parsed_bytes"] / short["client_parsed_bytes"]
    per_token = long_["client_parsed_bytes"] / long_["total_output_tokens"]
    unread = long_["client_event_bytes"] / long_["client_parsed_bytes"]
    print("long stream: 4x the tokens, event bytes x%.1f, parsed bytes x%.2f (%.0f per token); "
          "1,024 tokens: %.1fx more bytes received than parsed" % (events, parsed, per_token,
                                                                   unread))
    assert events > 10 and unread > 5, (short, long_)  # the server's events are cumulative ...
    assert parsed < 5 and per_token < 400, (short, long_)  # ... the client's parsing is not


def long_stream_runs(server, jsonl):
    """check_long_stream's two runs: their JSONL lines without the lists, by output length."""
    lines = {}
    for out_len in (256, 1024):
        before = counters(server)
        rc, out, err = rig("--base-url", server.url, "--backend", "rig", "--dataset-name",
                           "random-ids", "--num-prompts", "4", "--random-input-len", "32",
                           "--random-output-len", str(out_len), "--random-range-ratio", "1",
                           "--warmup-requests", "0", "--request-timeout", "60", "--timeout",
                           "120", "--disable-tqdm", "--quiet", "--output-file", jsonl,
                           "--output-details", "--tag", "long-%d" % out_len)
        assert rc == 0, "long stream: exit %d\n%s\n%s" % (rc, out, err)
        grown = counters(server)["rig:generation_tokens_total"] - \
            before["rig:generation_tokens_total"]
        with open(jsonl) as f:
            line = json.loads(f.readlines()[-1])
        brief = {k: v for k, v in line.items() if not isinstance(v, list)}
        assert line["completed"] == 4 and line["failed"] == 0, (brief, line["errors"])
        assert line["total_output_tokens"] == 4 * out_len == grown, (brief, grown)
        assert line["output_lens"] == [out_len] * 4, line["output_lens"]
        assert [len(i) for i in line["itls"]] == [out_len - 1] * 4, [len(i) for i in line["itls"]]
        assert all(len(t) >= out_len for t in line["generated_texts"]), \
            [len(t) for t in line["generated_texts"]]
        lines[out_len] = brief
    return lines


def main():
    work = os.path.join(os.getcwd(), "serve_bench_work")
    os.makedirs(work, exist_ok=True)
    for name in os.listdir(work):
        os.remove(os.path.join(work, name))
    datasets = write_datasets(work)
    started = time.monotonic()
    # Qwen3-0.6B's shapes without the math (tokens from a seeded generator, the Qwen3
    # vocabulary): the protocol and the counts are what is tested, not the model's arithmetic.
    server = serve_fixture.Server("--preset", "qwen3-0.6b", "--sim-timing-only")
    try:
        check_warmup_and_model(server, work)
        for backend in BACKENDS:
            for stream in (True, False):
                for dataset, flags in datasets.items():
                    h5 = check_run(server, work, backend, stream, dataset, flags)
                    if stream and dataset in ("sharegpt", "mooncake"):
                        check_report(h5, work)
    finally:
        err = server.stop()
    check_long_stream(work)
    print("serve_bench: all checks passed in %.1f s" % (time.monotonic() - started))
    del err


if __name__ == "__main__":
    main()
