/* test_scenario_expect.c — evaluating a scenario's expectations (core/harness/scenario/expect.c)
 * against synthetic run records.
 *
 * Checks: every kind of check passes on records that meet it and fails, with a message that
 * names file:line:column, the subject, the actual and the expected value, on records that do
 * not — request fields, same_output_as (length and first differing token), starts_after, step
 * fields and request lists, a step past the end, totals, metric bounds.
 */
#include <string.h>

#include "core/harness/scenario/expect.h"
#include "tests/support/test_support.h"

static char messages[16][512];
static int message_count;

static void collect(void *user, const char *message)
{
    (void)user;
    if (message_count < 16) snprintf(messages[message_count++], 512, "%s", message);
}

static const char *const text =
    "name: e\nmodel: {preset: tiny}\n"
    "requests: [{id: a, tokens: [1, 2, 3]}, {id: b, at: 1s, same_prompt_as: a}]\n"
    "expect:\n"
    "  - {request: b, cached_len: 2, output_len: 2, finish_reason: length}\n"
    "  - {request: b, same_output_as: a, starts_after: a, ttft: {max: 100ms}}\n"
    "  - {step: 0, phase: prefill, requests: [a], tokens: 3}\n"
    "  - {step: 1, phase: decode, batch_size: 1}\n"
    "  - {pages_leaked: 0, invariant_violations: 0, cache_hit_tokens: 2, steps: 3,\n"
    "     requests_finished: 2, computed_tokens: 5, output_tokens: 4, max_batch_size: 1}\n"
    "  - {metric: ttft_max, max: 50ms}\n"
    "  - {metric: completed, min: 2}\n";

/* a: prefill step 0 (3 tokens), decode step 1; b: prefill step 2 (1 token, 2 cached). */
static void build(const struct rig_scenario *s, struct rig_results *r)
{
    assert_int_equal(rig_results_init(r, s->request_count, 4, 3, 3), RIG_OK);
    for (int32_t i = 0; i < 2; i++) {
        struct rig_results_request *q = &r->requests[i];
        snprintf(q->id, sizeof q->id, "%s", s->requests[i].id);
        q->arrival_ns = s->requests[i].arrival_ns;
        q->first_scheduled_ns = q->arrival_ns;
        q->first_token_ns = q->arrival_ns + 40000000;
        q->finish_ns = q->arrival_ns + 80000000;
        q->input_len = 3;
        q->output_len = 2;
        q->finish_reason = RIG_FINISH_LENGTH;
        q->token_offset = rig_results_reserve_tokens(r, 2);
        r->token_ids[q->token_offset] = 5;
        r->token_ids[q->token_offset + 1] = 6;
        r->token_time_ns[q->token_offset] = q->first_token_ns;
        r->token_time_ns[q->token_offset + 1] = q->finish_ns;
    }
    r->requests[0].first_step = 0;
    r->requests[0].finish_step = 1;
    r->requests[1].first_step = 2;
    r->requests[1].finish_step = 2;
    r->requests[1].cached_len = 2;
    r->cache_hit_tokens = 2;
    const int32_t a = 0, b = 1;
    struct rig_results_step step = {.phase = RIG_STEP_PREFILL, .batch_size = 1, .tokens = 3};
    assert_int_equal(rig_results_add_step(r, &step, &a, 1), RIG_OK);
    step = (struct rig_results_step){.phase = RIG_STEP_DECODE, .batch_size = 1, .tokens = 1};
    assert_int_equal(rig_results_add_step(r, &step, &a, 1), RIG_OK);
    step = (struct rig_results_step){.phase = RIG_STEP_PREFILL, .batch_size = 1, .tokens = 1};
    assert_int_equal(rig_results_add_step(r, &step, &b, 1), RIG_OK);
}

static int32_t check(const struct rig_scenario *s, const struct rig_results *r)
{
    struct rig_metrics m;
    assert_int_equal(rig_metrics_compute(r, &m), RIG_OK);
    message_count = 0;
    return rig_expect_check(s, r, &m, collect, NULL);
}

static void test_all_pass(void **state)
{
    (void)state;
    struct rig_scenario s;
    char error[256];
    assert_int_equal(rig_scenario_load_string(text, "e.yaml", NULL, 0, &s, error, sizeof error),
                     RIG_OK);
    struct rig_results r;
    build(&s, &r);
    assert_int_equal(check(&s, &r), 0);
    assert_int_equal(rig_expect_total(&r, RIG_FIELD_DECODE_STEPS), 1);
    assert_int_equal(rig_expect_total(&r, RIG_FIELD_PREFILL_STEPS), 2);
    rig_results_free(&r);
    rig_scenario_free(&s);
}

static bool has(const char *needle)
{
    for (int i = 0; i < message_count; i++)
        if (strstr(messages[i], needle) != NULL) return true;
    fprintf(stderr, "no message contains '%s'; got:\n", needle);
    for (int i = 0; i < message_count; i++) fprintf(stderr, "  %s\n", messages[i]);
    return false;
}

static void test_failures_say_what_and_where(void **state)
{
    (void)state;
    struct rig_scenario s;
    char error[256];
    assert_int_equal(rig_scenario_load_string(text, "e.yaml", NULL, 0, &s, error, sizeof error),
                     RIG_OK);
    struct rig_results r;
    build(&s, &r);
    r.requests[1].cached_len = 0;
    r.cache_hit_tokens = 0;
    r.token_ids[r.requests[1].token_offset + 1] = 99;
    r.requests[1].first_step = 1; /* while a was still running */
    r.steps[0].tokens = 4;
    r.requests[0].finish_reason = RIG_FINISH_ABORT;
    r.pages_leaked = 3;
    r.step_uids[0] = 1;
    assert_int_equal(check(&s, &r), 10);
    assert_true(has("e.yaml:5:30: request b: cached_len is 0, expected 2"));
    assert_true(has("request b: output token 1 is 99, in a it is 6"));
    assert_true(has("request b first ran in step 1, a finished in step 1"));
    assert_true(has("step 0 ran requests [b], expected the listed ones"));
    assert_true(has("step 0: tokens is 4, expected 3"));
    assert_true(has("pages_leaked is 3, expected 0"));
    assert_true(has("cache_hit_tokens is 0, expected 2"));
    assert_true(has("requests_finished is 1, expected 2"));
    assert_true(has("computed_tokens is 6, expected 5"));
    assert_true(has("completed is 1, expected >= 2"));
    rig_results_free(&r);
    rig_scenario_free(&s);
}

static void test_missing_step_and_metric_bound(void **state)
{
    (void)state;
    struct rig_scenario s;
    char error[256];
    const char *t = "name: e\nmodel: {preset: tiny}\nrequests: [{id: a, tokens: [1]}]\n"
                    "expect: [{step: 7, phase: decode}, {metric: ttft_max, max: 10ms},"
                    " {request: a, output_len: 3}, {request: a, finish_reason: stop}]\n";
    assert_int_equal(rig_scenario_load_string(t, "m.yaml", NULL, 0, &s, error, sizeof error),
                     RIG_OK);
    struct rig_results r;
    assert_int_equal(rig_results_init(&r, 1, 4, 1, 1), RIG_OK);
    snprintf(r.requests[0].id, sizeof r.requests[0].id, "a");
    r.requests[0].arrival_ns = 0;
    r.requests[0].first_scheduled_ns = 0;
    r.requests[0].first_token_ns = r.requests[0].finish_ns = 20000000;
    r.requests[0].output_len = 1;
    r.requests[0].finish_reason = RIG_FINISH_LENGTH;
    r.requests[0].token_offset = rig_results_reserve_tokens(&r, 1);
    assert_int_equal(check(&s, &r), 4);
    assert_true(has("m.yaml:4:27: step 7 does not exist (the run had 0 steps)"));
    assert_true(has("ttft_max is 0.02 s, expected <= 0.01 s"));
    assert_true(has("request a: output_len is 1, expected 3"));
    assert_true(has("request a: finish_reason is length, expected stop"));
    rig_results_free(&r);
    rig_scenario_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_pass),
        cmocka_unit_test(test_failures_say_what_and_where),
        cmocka_unit_test(test_missing_step_and_metric_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
