/* test_scenario_run.c — replaying scenarios on the engine (core/harness/scenario/run.c), end to end
 * on the simulator's tiny model.
 *
 * Checks: the seed's first request gives the exact records (31 computed positions in 16
 * steps, step 0 a 16-token prefill of [a], 15 decodes) and consistent times; two runs give
 * identical records and byte-identical HDF5 files; an abort before arrival ends a request
 * unsubmitted, an abort mid-decode ends it early, and both are counted; a chunked prompt is
 * listed in every chunk's step; a prompt token outside the vocabulary and an unknown model
 * preset fail with a clear message; the engine rejection of a too-long prompt is recorded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/harness/results/h5.h"
#include "core/harness/scenario/expect.h"
#include "core/harness/scenario/run.h"
#include "tests/support/test_support.h"
#include "hal/backends.h"

static char error[512];

static void run_text(const char *text, struct rig_scenario *s, struct rig_results *r,
                     enum rig_status expected)
{
    assert_int_equal(rig_scenario_load_string(text, "r.yaml", NULL, 0, s, error, sizeof error),
                     RIG_OK);
    struct rig_run_options options = {.check = RIG_RUN_CHECK_STEP};
    enum rig_status status = rig_scenario_run(s, &options, r, error, sizeof error);
    if (status != expected) fprintf(stderr, "status %d: %s\n", status, error);
    assert_int_equal(status, expected);
}

#define HEAD "name: r\nmodel: {preset: tiny}\nengine: {num_pages: 512, max_running_req: 4}\n"
#define PROMPT "[11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26]"

static void test_first_request_records(void **state)
{
    (void)state;
    struct rig_scenario s;
    struct rig_results r;
    run_text(HEAD "requests: [{id: a, tokens: " PROMPT ", max_tokens: 16, ignore_eos: true}]\n",
             &s, &r, RIG_OK);
    assert_int_equal(r.step_count, 16);
    assert_int_equal(rig_expect_total(&r, RIG_FIELD_COMPUTED_TOKENS), 31);
    assert_int_equal(r.steps[0].phase, RIG_STEP_PREFILL);
    assert_int_equal(r.steps[0].tokens, 16);
    assert_int_equal(r.steps[0].request_count, 1);
    assert_int_equal(r.step_uids[r.steps[0].request_offset], 0);
    for (int64_t k = 1; k < 16; k++) {
        assert_int_equal(r.steps[k].phase, RIG_STEP_DECODE);
        assert_int_equal(r.steps[k].request_count, 1);
        assert_true(r.steps[k].start_ns >= r.steps[k - 1].end_ns ||
                    r.steps[k].start_ns >= r.steps[k - 1].start_ns);
    }
    const struct rig_results_request *a = &r.requests[0];
    assert_int_equal(a->output_len, 16);
    assert_int_equal(a->finish_reason, RIG_FINISH_LENGTH);
    assert_int_equal(a->first_step, 0);
    assert_int_equal(a->finish_step, 15);
    assert_true(a->arrival_ns == 0 && a->first_token_ns > 0 && a->finish_ns > a->first_token_ns);
    assert_int_equal(r.token_time_ns[a->token_offset], a->first_token_ns);
    assert_int_equal(r.token_time_ns[a->token_offset + 15], a->finish_ns);
    assert_int_equal(r.pages_leaked, 0);
    assert_int_equal(r.invariant_violations, 0);
    assert_int_equal(rig_results_check(&r, NULL, 0), 0);
    assert_string_equal(r.meta.model, "tiny");
    rig_results_free(&r);
    rig_scenario_free(&s);
}

static unsigned char *slurp(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)*size);
    assert_int_equal(fread(data, 1, (size_t)*size, f), (size_t)*size);
    fclose(f);
    return data;
}

static const char *const mixed =
    HEAD "seed: 4\ndefaults: {max_tokens: 12, ignore_eos: true, temperature: 0.7}\n"
    "requests:\n"
    "  - {id: a, at: 0ms, tokens: " PROMPT "}\n"
    "  - {id: b, at: 1ms, prefix_from: a, prefix_len: 10, random: 20}\n"
    "  - {id: gone, at: 50ms, random: 8, abort_at: 10ms}\n"
    "  - {id: cut, at: 2ms, random: 8, max_tokens: 400, abort_at: 5ms}\n"
    "  - {id: c, at: 30ms, same_prompt_as: a}\n";

static void test_deterministic_and_aborts(void **state)
{
    (void)state;
    struct rig_scenario s;
    struct rig_results r1, r2;
    run_text(mixed, &s, &r1, RIG_OK);
    struct rig_run_options options = {.check = RIG_RUN_CHECK_END};
    assert_int_equal(rig_scenario_run(&s, &options, &r2, error, sizeof error), RIG_OK);
    assert_int_equal(r1.step_count, r2.step_count);
    assert_memory_equal(r1.requests, r2.requests, (size_t)r1.request_count * sizeof *r1.requests);
    assert_memory_equal(r1.steps, r2.steps, (size_t)r1.step_count * sizeof *r1.steps);
    assert_memory_equal(r1.token_ids, r2.token_ids, (size_t)r1.token_count * sizeof(int32_t));
    char p1[64], p2[64];
    snprintf(p1, sizeof p1, "/tmp/rig_test_run_%d_1.h5", (int)getpid());
    snprintf(p2, sizeof p2, "/tmp/rig_test_run_%d_2.h5", (int)getpid());
    struct rig_metrics m1, m2;
    assert_int_equal(rig_metrics_compute(&r1, &m1), RIG_OK);
    assert_int_equal(rig_metrics_compute(&r2, &m2), RIG_OK);
    assert_int_equal(rig_results_write_h5(&r1, &m1, p1, error, sizeof error), RIG_OK);
    assert_int_equal(rig_results_write_h5(&r2, &m2, p2, error, sizeof error), RIG_OK);
    long n1, n2;
    unsigned char *d1 = slurp(p1, &n1), *d2 = slurp(p2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(d1, d2, (size_t)n1);
    free(d1);
    free(d2);
    unlink(p1);
    unlink(p2);
    int32_t gone = rig_scenario_find(&s, "gone"), cut = rig_scenario_find(&s, "cut");
    int32_t c = rig_scenario_find(&s, "c");
    assert_int_equal(r1.requests[gone].finish_reason, RIG_FINISH_ABORT);
    assert_int_equal(r1.requests[gone].output_len, 0);
    assert_int_equal(r1.requests[gone].first_step, -1);
    assert_int_equal(r1.requests[gone].finish_ns, 10000000);
    assert_int_equal(r1.requests[cut].finish_reason, RIG_FINISH_ABORT);
    assert_in_range(r1.requests[cut].output_len, 1, 399);
    assert_int_equal(r1.requests[c].cached_len, 15);
    assert_int_equal(rig_expect_total(&r1, RIG_FIELD_REQUESTS_ABORTED), 2);
    assert_int_equal(rig_expect_total(&r1, RIG_FIELD_REQUESTS_FINISHED), 3);
    assert_int_equal(r1.pages_leaked, 0);
    assert_int_equal(r1.invariant_violations, 0);
    rig_results_free(&r1);
    rig_results_free(&r2);
    rig_scenario_free(&s);
}

static void test_chunks_listed_in_their_steps(void **state)
{
    (void)state;
    struct rig_scenario s;
    struct rig_results r;
    run_text("name: r\nmodel: {preset: tiny}\n"
             "engine: {num_pages: 512, max_running_req: 4, prefill_budget: 64}\n"
             "requests: [{id: a, random: 150, max_tokens: 3}, {id: b, at: 0, random: 10,"
             " max_tokens: 3}]\n",
             &s, &r, RIG_OK);
    /* a: chunks of 64, 64, 22 (+ b's 10 in the last prefill batch: 64, 64, 32) */
    assert_int_equal(r.steps[0].tokens, 64);
    assert_int_equal(r.steps[1].tokens, 64);
    assert_int_equal(r.steps[2].tokens, 32);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(r.steps[k].request_count, 1);
        assert_int_equal(r.step_uids[r.steps[k].request_offset], 0);
    }
    assert_int_equal(r.steps[2].request_count, 2);
    assert_int_equal(r.requests[0].first_step, 0);
    assert_int_equal(r.requests[1].first_step, 2);
    rig_results_free(&r);
    rig_scenario_free(&s);
}

static void test_errors(void **state)
{
    (void)state;
    struct rig_scenario s;
    struct rig_results r;
    run_text(HEAD "requests: [{id: a, tokens: [1, 5000]}]\n", &s, &r, RIG_E_RANGE);
    assert_non_null(strstr(error, "token id 5000 is outside the vocabulary of tiny (1024)"));
    rig_results_free(&r);
    rig_scenario_free(&s);
    run_text("name: r\nmodel: {preset: huge}\nrequests: [{id: a, tokens: [1]}]\n", &s, &r,
             RIG_E_NOT_FOUND);
    assert_non_null(strstr(error, "unknown model preset 'huge'"));
    rig_results_free(&r);
    rig_scenario_free(&s);
    /* longer than the context (tiny: 4096): rejected by the engine, recorded, not fatal */
    run_text(HEAD "requests: [{id: big, random: 5000}, {id: ok, random: 5, max_tokens: 2}]\n",
             &s, &r, RIG_OK);
    assert_int_equal(r.requests[0].finish_reason, RIG_FINISH_REJECTED);
    assert_int_equal(r.requests[1].finish_reason, RIG_FINISH_LENGTH);
    rig_results_free(&r);
    rig_scenario_free(&s);
}

int main(void)
{
    rig_backends_register();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_request_records),
        cmocka_unit_test(test_deterministic_and_aborts),
        cmocka_unit_test(test_chunks_listed_in_their_steps),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
