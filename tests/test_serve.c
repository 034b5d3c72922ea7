/* test_serve.c — the server's pure parts, without HTTP: the stop-string matcher (stop strings
 * split over any number of pieces, held-back prefixes, the earliest of several, long text that
 * crosses the window, UTF-8 never cut), request parsing (defaults per API, every field's error
 * naming the field, ownership: nothing leaks under ASan), and the Prometheus text (histogram
 * buckets cumulative, count = sum, labels). The HTTP server itself is tested end to end by
 * the scripts of tests/serve/.
 */
#include <stdio.h>
#include <string.h>

#include "core/serve/metrics.h"
#include "core/serve/request.h"
#include "core/serve/stop.h"
#include "tests/support/test_support.h"

struct sink {
    char text[4096];
    size_t len;
};

static void sink_emit(void *ctx, const char *text, size_t len)
{
    struct sink *s = ctx;
    assert_true(s->len + len < sizeof s->text);
    memcpy(s->text + s->len, text, len);
    s->len += len;
    s->text[s->len] = '\0';
}

/* Feeds `pieces` (NULL-terminated) and returns whether a stop matched. */
static bool feed_all(struct rig_serve_stop *m, const char *const *pieces, struct sink *out)
{
    bool matched = false;
    for (size_t i = 0; pieces[i] != NULL; i++)
        matched = rig_serve_stop_feed(m, pieces[i], strlen(pieces[i]), sink_emit, out);
    if (!matched) rig_serve_stop_flush(m, sink_emit, out);
    return matched;
}

static void test_stop_across_pieces(void **state)
{
    (void)state;
    const char *stops[] = {"END", "\n\n"};
    const size_t lens[] = {3, 2};
    struct rig_serve_stop m;
    struct sink out = {0};
    rig_serve_stop_init(&m, stops, lens, 2);
    const char *pieces[] = {"Hello E", "N", "D world", NULL};
    assert_true(feed_all(&m, pieces, &out));
    assert_string_equal(out.text, "Hello ");
    assert_int_equal(m.matched_index, 0);
    /* a held prefix that turns out not to be a stop is emitted, in order */
    struct sink out2 = {0};
    rig_serve_stop_init(&m, stops, lens, 2);
    const char *near[] = {"a E", "N", "x\n", "y", NULL};
    assert_false(feed_all(&m, near, &out2));
    assert_string_equal(out2.text, "a ENx\ny");
    /* the earliest of two stops wins */
    struct sink out3 = {0};
    rig_serve_stop_init(&m, stops, lens, 2);
    const char *both[] = {"ab\n\ncdEND", NULL};
    assert_true(feed_all(&m, both, &out3));
    assert_string_equal(out3.text, "ab");
    assert_int_equal(m.matched_index, 1);
}

static void test_stop_emits_early(void **state)
{
    (void)state;
    const char *stops[] = {"STOP"};
    const size_t lens[] = {4};
    struct rig_serve_stop m;
    struct sink out = {0};
    rig_serve_stop_init(&m, stops, lens, 1);
    /* text with no prefix of the stop string is emitted at once, a partial prefix held */
    assert_false(rig_serve_stop_feed(&m, "abc", 3, sink_emit, &out));
    assert_string_equal(out.text, "abc");
    assert_false(rig_serve_stop_feed(&m, "dST", 3, sink_emit, &out));
    assert_string_equal(out.text, "abcd");
    assert_true(rig_serve_stop_feed(&m, "OP!", 3, sink_emit, &out));
    assert_string_equal(out.text, "abcd");
    assert_true(rig_serve_stop_feed(&m, "more", 4, sink_emit, &out)); /* over: nothing more */
    assert_string_equal(out.text, "abcd");
}

static void test_stop_long_text_and_utf8(void **state)
{
    (void)state;
    const char *stops[] = {"\xc3\xa9z"}; /* "éz" */
    const size_t lens[] = {3};
    struct rig_serve_stop m;
    struct sink out = {0};
    rig_serve_stop_init(&m, stops, lens, 1);
    char text[1500];
    size_t n = 0;
    while (n + 2 < 1400) { /* "é" repeated: longer than the window */
        text[n++] = '\xc3';
        text[n++] = '\xa9';
    }
    memcpy(text + n, "\xc3\xa9z tail", 8);
    n += 8;
    assert_true(rig_serve_stop_feed(&m, text, n, sink_emit, &out));
    assert_int_equal(out.len, 1398);
    for (size_t i = 0; i < out.len; i += 2) assert_int_equal((unsigned char)out.text[i], 0xc3);
    /* no stops: everything passes through */
    struct sink out2 = {0};
    rig_serve_stop_init(&m, NULL, NULL, 0);
    assert_false(rig_serve_stop_feed(&m, "abc", 3, sink_emit, &out2));
    assert_string_equal(out2.text, "abc");
}

static const struct rig_serve_parse_limits limits = {"tiny", 1000, 8};

static enum rig_status parse(enum rig_serve_api api, const char *body,
                             struct rig_serve_params *p, struct rig_serve_error *e)
{
    return rig_serve_params_parse(api, body, strlen(body), &limits, p, e);
}

static void test_request_defaults(void **state)
{
    (void)state;
    struct rig_serve_params p;
    struct rig_serve_error e;
    assert_int_equal(parse(RIG_SERVE_API_CHAT, "{\"messages\": [{\"role\": \"developer\", "
                           "\"content\": \"x\"}], \"model\": \"tiny\"}", &p, &e), RIG_OK);
    assert_int_equal(p.sampling.max_tokens, -1); /* chat: what the context leaves */
    assert_true(p.sampling.temperature == 1.0f && p.sampling.top_k == -1);
    assert_string_equal(p.messages[0].role, "system");
    assert_true(p.chat.enable_thinking && p.chat.add_generation_prompt);
    rig_serve_params_free(&p);
    assert_int_equal(parse(RIG_SERVE_API_COMPLETION, "{\"prompt\": [[1, 2], \"ab\"], \"n\": 2, "
                           "\"top_k\": 0, \"stop\": \"x\"}", &p, &e), RIG_OK);
    assert_int_equal(p.sampling.max_tokens, 16);
    assert_int_equal(p.prompt_count, 2);
    assert_int_equal(rig_serve_params_choices(&p), 4);
    assert_int_equal(p.sampling.top_k, -1);
    assert_int_equal(p.sampling.stop_count, 1);
    rig_serve_params_free(&p);
    assert_int_equal(parse(RIG_SERVE_API_GENERATE, "{\"input_ids\": [5], \"sampling_params\": "
                           "{\"max_new_tokens\": 3}}", &p, &e), RIG_OK);
    assert_int_equal(p.sampling.max_tokens, 3);
    rig_serve_params_free(&p);
}

static void test_request_errors(void **state)
{
    (void)state;
    static const struct {
        enum rig_serve_api api;
        const char *body;
        int32_t status;
        const char *param;
    } cases[] = {
        {RIG_SERVE_API_CHAT, "{", 400, ""},
        {RIG_SERVE_API_CHAT, "{\"messages\": 1}", 400, "messages"},
        {RIG_SERVE_API_CHAT, "{\"messages\": [{\"role\": \"user\"}]}", 400, "messages[0]"},
        {RIG_SERVE_API_CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                             "\"model\": \"other\"}", 404, "model"},
        {RIG_SERVE_API_COMPLETION, "{\"prompt\": [1, 1000]}", 400, "prompt"},
        {RIG_SERVE_API_COMPLETION, "{\"prompt\": \"x\", \"n\": 9}", 400, "n"},
        {RIG_SERVE_API_COMPLETION, "{\"prompt\": [\"a\", \"b\", \"c\"], \"n\": 3}", 400, "n"},
        {RIG_SERVE_API_COMPLETION, "{\"prompt\": \"x\", \"top_p\": 0}", 400, "top_p"},
        {RIG_SERVE_API_GENERATE, "{\"text\": \"x\", \"sampling_params\": {\"top_k\": -3}}", 400,
         "sampling_params.top_k"},
    };
    for (size_t i = 0; i < RIG_ARRAY_LEN(cases); i++) {
        struct rig_serve_params p;
        struct rig_serve_error e;
        assert_int_equal(parse(cases[i].api, cases[i].body, &p, &e), RIG_E_INVALID);
        assert_int_equal(e.http_status, cases[i].status);
        assert_string_equal(e.param, cases[i].param);
        assert_true(e.message[0] != '\0');
        assert_null(p.root);
    }
}

static void test_metrics_text(void **state)
{
    (void)state;
    static struct rig_serve_metrics m;
    rig_serve_metrics_init(&m);
    rig_serve_histogram_observe(&m.ttft, 3000000);    /* 3 ms */
    rig_serve_histogram_observe(&m.ttft, 2000000000); /* 2 s */
    atomic_store(&m.requests[RIG_SERVE_FINISH_STOP], 5);
    struct rig_serve_buffer out = {0};
    assert_int_equal(rig_serve_metrics_render(&m, "tiny", &out), RIG_OK);
    assert_non_null(strstr(out.data, "rig:time_to_first_token_seconds_bucket{model_name=\"tiny\","
                                     "le=\"0.001\"} 0\n"));
    assert_non_null(strstr(out.data, "rig:time_to_first_token_seconds_bucket{model_name=\"tiny\","
                                     "le=\"0.005\"} 1\n"));
    assert_non_null(strstr(out.data, "rig:time_to_first_token_seconds_bucket{model_name=\"tiny\","
                                     "le=\"+Inf\"} 2\n"));
    assert_non_null(strstr(out.data, "rig:time_to_first_token_seconds_count{model_name=\"tiny\"}"
                                     " 2\n"));
    assert_non_null(strstr(out.data, "rig:time_to_first_token_seconds_sum{model_name=\"tiny\"} "
                                     "2.003000000\n"));
    assert_non_null(strstr(out.data, "finish_reason=\"stop\"} 5\n"));
    assert_non_null(strstr(out.data, "# TYPE rig:num_running_reqs gauge\n"));
    rig_serve_buffer_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_across_pieces),
        cmocka_unit_test(test_stop_emits_early),
        cmocka_unit_test(test_stop_long_text_and_utf8),
        cmocka_unit_test(test_request_defaults),
        cmocka_unit_test(test_request_errors),
        cmocka_unit_test(test_metrics_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
