/* test_bench_serve.c — the parts of `rig bench serve` that need no server (core/harness/bench/).
 *
 * Checks: the SSE reader gives the same events whether a stream arrives whole, byte by byte
 * or split at random (LF, CRLF, CR, a CRLF split between reads, comments, other fields,
 * multi-line data, a last event without its blank line) and stops cleanly on an event too
 * long for its buffer; chunks of the three APIs, [DONE], usage-only chunks, server errors
 * and malformed data; /generate's cumulative text read incrementally (serve.h), event by
 * event against the whole parse — the same text, counts and errors, compact and spaced
 * JSON, escaped and raw non-ASCII, a rewritten text, a held token, a cut event, "text" not
 * first, a full buffer — with the parsed bytes linear in the stream, not quadratic; the
 * schedule (a seed gives one schedule, another seed another, rate inf sends all at 0, gap
 * mean 1/rate and coefficient of variation 1/sqrt(burstiness));
 * --goodput parsing; the random-ids dataset (lengths in range, bench_serving's id pattern,
 * seeded); and the summary of a synthetic run against values worked out by hand (TTFT, TPOT,
 * ITL with p95, E2E, duration including a failed request, throughputs, concurrency,
 * goodput, the busiest second, failure counts).
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/bench/serve.h"
#include "tests/support/test_support.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

struct events {
    char text[4096]; /* events joined by '|' */
    size_t len;
    int count;
};

static void on_event(void *user, const char *data, size_t len)
{
    struct events *e = user;
    assert_true(e->len + len + 1 < sizeof e->text);
    memcpy(e->text + e->len, data, len);
    e->len += len;
    e->text[e->len++] = '|';
    e->text[e->len] = '\0';
    e->count++;
}

static const char stream[] = ": a comment\r\n"
                             "event: message\r\n"
                             "data: {\"a\": 1}\r\n\r\n"
                             "data:{\"b\": 2}\n\n"
                             "data: first\rdata: second\r\r"
                             "id: 7\n"
                             "data\n"
                             "data: x\n\n"
                             "data: [DONE]\n\n"
                             "data: tail";

static void feed_in_pieces(const char *text, size_t len, const size_t *cuts, size_t cut_count,
                           struct events *e)
{
    char buffer[256];
    struct rig_serve_sse sse;
    rig_serve_sse_init(&sse, buffer, sizeof buffer);
    size_t at = 0;
    for (size_t i = 0; i <= cut_count; i++) {
        size_t end = i < cut_count ? cuts[i] : len;
        assert_int_equal(rig_serve_sse_feed(&sse, text + at, end - at, on_event, e), RIG_OK);
        at = end;
    }
    rig_serve_sse_finish(&sse, on_event, e);
}

static void test_sse_split_anywhere(void **state)
{
    (void)state;
    size_t len = strlen(stream);
    struct events whole = {0};
    feed_in_pieces(stream, len, NULL, 0, &whole);
    assert_string_equal(whole.text, "{\"a\": 1}|{\"b\": 2}|first\nsecond|\nx|[DONE]|tail|");
    size_t cuts[sizeof stream];
    for (size_t i = 0; i + 1 < len; i++)
        cuts[i] = i + 1; /* byte by byte */
    struct events bytes = {0};
    feed_in_pieces(stream, len, cuts, len - 1, &bytes);
    assert_string_equal(bytes.text, whole.text);
    srand(5);
    for (int round = 0; round < 200; round++) {
        size_t count = 0, at = 0;
        while (count < 6 && at + 1 < len) {
            at += 1 + (size_t)rand() % 12;
            if (at < len) cuts[count++] = at;
        }
        struct events some = {0};
        feed_in_pieces(stream, len, cuts, count, &some);
        assert_string_equal(some.text, whole.text);
    }
}

static void test_sse_overflow(void **state)
{
    (void)state;
    char buffer[16];
    struct rig_serve_sse sse;
    struct events e = {0};
    rig_serve_sse_init(&sse, buffer, sizeof buffer);
    assert_int_equal(rig_serve_sse_feed(&sse, "data: ok\n\n", 10, on_event, &e), RIG_OK);
    const char *long_event = "data: 0123456789abcdef\n\n";
    assert_int_equal(rig_serve_sse_feed(&sse, long_event, strlen(long_event), on_event, &e),
                     RIG_E_CAPACITY);
    assert_int_equal(rig_serve_sse_feed(&sse, "data: x\n\n", 9, on_event, &e), RIG_E_CAPACITY);
    rig_serve_sse_finish(&sse, on_event, &e);
    assert_int_equal(e.count, 1);
    assert_string_equal(e.text, "ok|");
}

static void parse(enum rig_serve_api api, const char *text, struct rig_serve_chunk *c)
{
    rig_serve_chunk_parse(api, text, strlen(text), c);
}

static void test_chunks(void **state)
{
    (void)state;
    struct rig_serve_chunk c;
    parse(RIG_SERVE_API_GENERATE,
          "{\"text\": \"ab\", \"meta_info\": {\"completion_tokens\": 2, \"prompt_tokens\": 5, "
          "\"cached_tokens\": 3, \"finish_reason\": {\"type\": \"length\"}}}",
          &c);
    assert_string_equal(c.error, "");
    assert_true(c.text_cumulative && c.text_len == 2 && memcmp(c.text, "ab", 2) == 0);
    assert_int_equal(c.completion_tokens, 2);
    assert_int_equal(c.prompt_tokens, 5);
    assert_int_equal(c.cached_tokens, 3);
    assert_int_equal(c.finish_reason, RIG_FINISH_LENGTH);
    rig_serve_chunk_release(&c);
    parse(RIG_SERVE_API_COMPLETIONS, "{\"choices\": [{\"text\": \"x\", \"finish_reason\": null}]}",
          &c);
    assert_true(!c.text_cumulative && c.text_len == 1 && c.completion_tokens == -1);
    assert_int_equal(c.finish_reason, RIG_FINISH_NONE);
    rig_serve_chunk_release(&c);
    parse(RIG_SERVE_API_CHAT,
          "{\"choices\": [{\"delta\": {\"content\": \"yz\"}, "
          "\"finish_reason\": \"stop\"}]}",
          &c);
    assert_true(c.text_len == 2 && c.finish_reason == RIG_FINISH_STOP);
    rig_serve_chunk_release(&c);
    parse(RIG_SERVE_API_CHAT,
          "{\"choices\": [{\"message\": {\"content\": \"whole\"}}], "
          "\"usage\": {\"completion_tokens\": 9, \"prompt_tokens\": 4, "
          "\"prompt_tokens_details\": {\"cached_tokens\": 2}}}",
          &c);
    assert_true(c.text_len == 5 && c.completion_tokens == 9 && c.cached_tokens == 2);
    rig_serve_chunk_release(&c);
    parse(RIG_SERVE_API_COMPLETIONS, "{\"choices\": [], \"usage\": {\"completion_tokens\": 7}}",
          &c);
    assert_true(c.text == NULL && c.completion_tokens == 7 && c.error[0] == '\0');
    rig_serve_chunk_release(&c);
    /* a NUL character is valid JSON (\u0000): a token may decode to it (rig serve, SGLang) */
    parse(RIG_SERVE_API_COMPLETIONS, "{\"choices\": [{\"text\": \"a\\u0000b\"}]}", &c);
    assert_string_equal(c.error, "");
    assert_true(c.text_len == 3 && memcmp(c.text, "a\0b", 3) == 0);
    rig_serve_chunk_release(&c);
    parse(RIG_SERVE_API_COMPLETIONS, " [DONE] ", &c);
    assert_true(c.done && c.root == NULL);
    parse(RIG_SERVE_API_COMPLETIONS, "{not json", &c);
    assert_non_null(strstr(c.error, "malformed"));
    parse(RIG_SERVE_API_GENERATE, "[1, 2]", &c);
    assert_non_null(strstr(c.error, "not a JSON object"));
    parse(RIG_SERVE_API_CHAT, "{\"error\": {\"message\": \"boom\"}}", &c);
    assert_string_equal(c.error, "server error: boom");
    rig_serve_chunk_release(&c);
}

/* ---- /generate read incrementally: the reader against the whole parse, event by event ---- */

struct generate_client {
    char text[16384]; /* what the client holds: chunks appended, or replaced when cumulative */
    size_t len;
    int64_t parsed, parsed_whole; /* bytes to the JSON parser: the reader's, the whole parse's */
    int cumulative;               /* chunks the reader read whole */
};

/* An event as a server writes it: "text" first (PRESERVE_ORDER), compact or with spaces,
 * non-ASCII escaped (Python's json.dumps) or raw (orjson, jansson). */
static char *generate_event(const char *text, int64_t tokens, bool last, size_t flags)
{
    json_t *finish = last ? json_pack("{s:s}", "type", "length") : json_null();
    json_t *event =
        json_pack("{s:s, s:[I], s:{s:I, s:i, s:o}, s:i}", "text", text, "output_ids",
                  (json_int_t)tokens, "meta_info", "completion_tokens", (json_int_t)tokens,
                  "prompt_tokens", 5, "finish_reason", finish, "index", 0);
    assert_non_null(event);
    char *dumped = json_dumps(event, JSON_PRESERVE_ORDER | flags);
    json_decref(event);
    assert_non_null(dumped);
    return dumped;
}

/* Reads `event` both ways; the client's text must equal the whole parse's cumulative text. */
static void generate_read(struct rig_serve_generate_reader *reader, const char *event,
                          struct generate_client *client)
{
    struct rig_serve_chunk a, b;
    rig_serve_generate_parse(reader, event, strlen(event), &a);
    rig_serve_chunk_parse(RIG_SERVE_API_GENERATE, event, strlen(event), &b);
    assert_string_equal(a.error, b.error);
    assert_int_equal(a.completion_tokens, b.completion_tokens);
    assert_int_equal(a.prompt_tokens, b.prompt_tokens);
    assert_int_equal(a.finish_reason, b.finish_reason);
    assert_true(a.done == b.done && (a.text == NULL) == (b.text == NULL));
    if (a.text != NULL) {
        if (a.text_cumulative) client->len = 0;
        client->cumulative += a.text_cumulative;
        assert_true(client->len + a.text_len <= sizeof client->text);
        memcpy(client->text + client->len, a.text, a.text_len);
        client->len += a.text_len;
        assert_int_equal(client->len, b.text_len);
        assert_memory_equal(client->text, b.text, b.text_len);
    }
    client->parsed += (int64_t)a.parsed_bytes;
    client->parsed_whole += (int64_t)b.parsed_bytes;
    rig_serve_chunk_release(&a);
    rig_serve_chunk_release(&b);
}

static const char *const pieces[] = {"tok", " \"q\"", " a\\b",     " \xc3\xa9", " \xf0\x9f\x98\x80",
                                     "\n",  "\t/",    " \xc3\xbc", ""};

/* `events` events of growing text through a fresh reader with `capacity` bytes. */
static void generate_stream(size_t flags, int events, size_t capacity,
                            struct generate_client *client)
{
    char seen[16384], text[8192] = "";
    size_t len = 0;
    assert_true(capacity <= sizeof seen);
    struct rig_serve_generate_reader reader;
    rig_serve_generate_reader_init(&reader, seen, capacity);
    memset(client, 0, sizeof *client);
    for (int i = 0; i < events; i++) {
        const char *piece = pieces[i % (int)(sizeof pieces / sizeof pieces[0])];
        assert_true(len + strlen(piece) < sizeof text);
        memcpy(text + len, piece, strlen(piece) + 1);
        len += strlen(piece);
        char *event = generate_event(text, i + 1, i + 1 == events, flags);
        generate_read(&reader, event, client);
        free(event);
    }
    assert_int_equal(client->len, len);
    assert_memory_equal(client->text, text, len);
}

static void test_generate_reader(void **state)
{
    (void)state;
    enum { EVENTS = 1200 };
    size_t forms[] = {JSON_COMPACT, JSON_COMPACT | JSON_ENSURE_ASCII, 0, JSON_ENSURE_ASCII};
    struct generate_client client;
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        generate_stream(forms[f], EVENTS, 16384, &client);
        /* only the new text and the members after it are parsed: linear, not quadratic */
        assert_int_equal(client.cumulative, 0);
        assert_true(client.parsed < EVENTS * 160);
        assert_true(client.parsed_whole > 10 * client.parsed);
    }
    /* `seen` too small: read whole from then on, still the same text */
    generate_stream(JSON_COMPACT, 60, 32, &client);
    assert_true(client.cumulative >= 45 && client.cumulative < 60);

    /* A stream's turns: each event, and how many chunks the reader has read whole after it. */
    static const struct {
        const char *event;
        int cumulative;
    } turns[] = {
        {"{\"text\":\"ab\\u00e9\",\"meta_info\":{\"completion_tokens\":2}}", 0},
        {"{\"text\":\"ab\\u00e9cd\",\"meta_info\":{\"completion_tokens\":3}}", 0},
        /* the server rewrote its text (a character it had sent half of, say): read whole */
        {"{\"text\":\"ab\\u00eacd!\",\"meta_info\":{\"completion_tokens\":4}}", 1},
        {"{\"text\":\"ab\\u00eacd!?\",\"meta_info\":{\"completion_tokens\":5}}", 1},
        /* the same text again (a token held back): an empty new part, not read whole */
        {"{\"text\":\"ab\\u00eacd!?\",\"meta_info\":{\"completion_tokens\":6}}", 1},
        /* cut or broken after the held text, a server error, [DONE]: as the whole parse */
        {"{\"text\":\"ab\\u00eacd!?x", 1},
        {"{\"text\":\"ab\\u00eacd!?xy\",\"meta_info\":", 1},
        {"{\"text\":\"ab\\u00eacd!?xy\",\"error\":\"boom\"}", 1},
        {"[DONE]", 1},
    };
    char seen[256];
    struct rig_serve_generate_reader reader;
    rig_serve_generate_reader_init(&reader, seen, sizeof seen);
    memset(&client, 0, sizeof client);
    for (size_t t = 0; t < sizeof turns / sizeof turns[0]; t++) {
        generate_read(&reader, turns[t].event, &client);
        assert_int_equal(client.cumulative, turns[t].cumulative);
    }
    /* "text" not the first member: every event read whole */
    rig_serve_generate_reader_init(&reader, seen, sizeof seen);
    memset(&client, 0, sizeof client);
    generate_read(&reader, "{\"index\":0,\"text\":\"a\"}", &client);
    generate_read(&reader, "{\"text\":\"ab\"}", &client);
    assert_int_equal(client.cumulative, 2);
}

static void test_schedule(void **state)
{
    (void)state;
    enum { N = 20000 };
    static int64_t a[N], b[N], c[N];
    rig_serve_schedule(N, 8.0, 1.0, 42, a);
    rig_serve_schedule(N, 8.0, 1.0, 42, b);
    rig_serve_schedule(N, 8.0, 1.0, 43, c);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    assert_int_equal(a[0], 0);
    rig_serve_schedule(100, INFINITY, 1.0, 42, b);
    for (int i = 0; i < 100; i++)
        assert_int_equal(b[i], 0);
    const double shapes[] = {0.5, 1.0, 2.0, 4.0};
    for (size_t k = 0; k < RIG_ARRAY_LEN(shapes); k++) {
        double sum = 0.0, squares = 0.0;
        for (uint32_t i = 0; i < N; i++) {
            double gap = rig_serve_gap_s(8.0, shapes[k], 9, i);
            assert_true(gap >= 0.0);
            sum += gap;
            squares += gap * gap;
        }
        double mean = sum / N, cv = sqrt(squares / N - mean * mean) / mean;
        assert_true(fabs(mean * 8.0 - 1.0) < 0.03);
        assert_true(fabs(cv * sqrt(shapes[k]) - 1.0) < 0.05);
    }
}

static void test_goodput_parse(void **state)
{
    (void)state;
    struct rig_serve_options o;
    char error[256];
    rig_serve_options_default(&o);
    assert_true(o.goodput_ttft_ms < 0 && o.goodput_tpot_ms < 0 && o.goodput_e2e_ms < 0);
    assert_int_equal(rig_serve_goodput_parse(&o, "ttft:200", error, sizeof error), RIG_OK);
    assert_int_equal(rig_serve_goodput_parse(&o, "tpot:12.5", error, sizeof error), RIG_OK);
    assert_int_equal(rig_serve_goodput_parse(&o, "e2el:1000", error, sizeof error), RIG_OK);
    NEAR(o.goodput_ttft_ms, 200);
    NEAR(o.goodput_tpot_ms, 12.5);
    NEAR(o.goodput_e2e_ms, 1000);
    const char *bad[] = {"ttft", "ttft:", "ttft:-1", "itl:5", "ttft:5ms", ":5", "ttft:inf"};
    for (size_t i = 0; i < RIG_ARRAY_LEN(bad); i++)
        assert_int_equal(rig_serve_goodput_parse(&o, bad[i], error, sizeof error), RIG_E_INVALID);
}

static void test_random_ids(void **state)
{
    (void)state;
    struct rig_serve_options o;
    rig_serve_options_default(&o);
    o.num_prompts = 50;
    o.random_input_len = 40;
    o.random_output_len = 10;
    o.random_range_ratio = 0.5;
    o.random_vocab_size = 1000;
    o.request_rate = 4.0;
    struct rig_serve_dataset a, b;
    char error[256];
    assert_int_equal(rig_serve_dataset_load(&o, NULL, &a, error, sizeof error), RIG_OK);
    assert_int_equal(rig_serve_dataset_load(&o, NULL, &b, error, sizeof error), RIG_OK);
    assert_int_equal(a.count, 50);
    assert_memory_equal(a.tokens, b.tokens, (size_t)a.token_count * sizeof *a.tokens);
    for (int32_t i = 0; i < a.count; i++) {
        const struct rig_serve_prompt *p = &a.prompts[i];
        assert_true(p->input_len >= 20 && p->input_len <= 40 && p->token_count == p->input_len);
        assert_true(p->output_len >= 5 && p->output_len <= 10 && p->text_offset == -1);
        assert_int_equal(p->arrival_ns, b.prompts[i].arrival_ns);
        assert_true(i == 0 ? p->arrival_ns == 0 : p->arrival_ns > a.prompts[i - 1].arrival_ns);
        const int32_t *ids = a.tokens + p->token_offset;
        for (int32_t j = 1; j < p->token_count; j++)
            assert_int_equal(ids[j], (ids[j - 1] + 1) % 1000);
    }
    rig_serve_dataset_free(&a);
    rig_serve_dataset_free(&b);
    o.dataset_name = "sharegpt";
    assert_int_equal(rig_serve_dataset_load(&o, NULL, &a, error, sizeof error), RIG_E_INVALID);
    assert_non_null(strstr(error, "--dataset-path"));
}

static void add_request(struct rig_serve_run *run, int32_t i, double arrival, const double *tokens,
                        int32_t count, double finish, int32_t input, int32_t reason)
{
    struct rig_results_request *q = &run->results.requests[i];
    q->arrival_ns = (int64_t)llround(arrival * 1e9);
    q->finish_ns = (int64_t)llround(finish * 1e9);
    q->input_len = input;
    q->output_len = count;
    q->finish_reason = reason;
    q->token_offset = rig_results_reserve_tokens(&run->results, count);
    for (int32_t k = 0; k < count; k++)
        run->results.token_time_ns[q->token_offset + k] = (int64_t)llround(tokens[k] * 1e9);
    if (count > 0) q->first_token_ns = run->results.token_time_ns[q->token_offset];
}

/* A: sent at 0, tokens at 0.10 0.15 0.20 0.30, done 0.30; B: sent at 0.05, tokens at 0.25
 * 0.45, done 0.50; C: sent at 0.10, HTTP 503 at 0.60. */
static void test_summary_by_hand(void **state)
{
    (void)state;
    struct rig_serve_run run;
    memset(&run, 0, sizeof run);
    assert_int_equal(rig_results_init(&run.results, 3, 6, 0, 0), RIG_OK);
    run.outcomes = calloc(3, sizeof *run.outcomes);
    const double a[] = {0.10, 0.15, 0.20, 0.30}, b[] = {0.25, 0.45};
    add_request(&run, 0, 0.00, a, 4, 0.30, 10, RIG_FINISH_LENGTH);
    add_request(&run, 1, 0.05, b, 2, 0.50, 20, RIG_FINISH_STOP);
    add_request(&run, 2, 0.10, NULL, 0, 0.60, 30, RIG_FINISH_REJECTED);
    for (int i = 0; i < 3; i++)
        run.outcomes[i].retokenized = -1;
    run.outcomes[2].failure = RIG_SERVE_FAIL_HTTP;
    struct rig_serve_options o;
    rig_serve_options_default(&o);
    char error[64];
    assert_int_equal(rig_serve_goodput_parse(&o, "ttft:150", error, sizeof error), RIG_OK);
    assert_int_equal(rig_serve_goodput_parse(&o, "tpot:100", error, sizeof error), RIG_OK);
    struct rig_serve_summary s;
    assert_int_equal(rig_serve_summarize(&o, &run, &s), RIG_OK);
    const struct rig_metrics *m = &s.metrics;
    NEAR(m->completed, 2);
    NEAR(s.failed, 1);
    NEAR(s.failures[RIG_SERVE_FAIL_HTTP], 1);
    NEAR(m->duration_s, 0.6);
    NEAR(m->total_input, 30);
    NEAR(m->total_output, 6);
    NEAR(m->request_throughput, 2 / 0.6);
    NEAR(m->input_throughput, 50);
    NEAR(m->output_throughput, 10);
    NEAR(m->total_throughput, 60);
    NEAR(m->concurrency, 1.25);
    NEAR(m->ttft.mean, 0.15);
    NEAR(m->ttft.p90, 0.19);
    NEAR(m->ttft.p99, 0.199);
    NEAR(m->e2e.mean, 0.375);
    NEAR(m->e2e.p99, 0.4485);
    NEAR(m->tpot.mean, (0.2 / 3 + 0.25) / 2);
    NEAR(m->itl.mean, 0.1);
    NEAR(m->itl.median, 0.075);
    NEAR(s.itl_p95, 0.185);
    NEAR(m->itl.max, 0.2);
    NEAR(s.good_completed, 1);
    NEAR(s.request_goodput, 1 / 0.6);
    NEAR(s.max_output_tokens_per_s, 6);
    NEAR(s.max_concurrent_requests, 2);
    NEAR(s.total_output_retokenized, -1);
    rig_serve_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sse_split_anywhere),
        cmocka_unit_test(test_sse_overflow),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_generate_reader),
        cmocka_unit_test(test_schedule),
        cmocka_unit_test(test_goodput_parse),
        cmocka_unit_test(test_random_ids),
        cmocka_unit_test(test_summary_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
