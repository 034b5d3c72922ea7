/* test_scenario_workloads.c — the seeded workload generators (core/harness/scenario/workload.c).
 *
 * Checks: `random` lengths and ids stay in their ranges and the same seed gives the same
 * bytes (a different seed different ones); `minisgl_offline` has Mini-SGLang's offline
 * benchmark parameters; `shared_prefix` prompts share exactly their group's prefix (and the
 * shuffle is a permutation); Poisson arrivals are increasing with a mean gap near 1/rate;
 * `trace` replays a JSONL file: equal hash ids give equal tokens, arrivals are rebased and
 * scaled, `limit` cuts, and a bad line fails naming the trace file and line; sizes beyond the
 * scenario's host budget (counts x lengths, trace lines, written requests) are refused before
 * they are allocated, with exact messages saying what fits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/harness/scenario/scenario.h"
#include "tests/support/test_support.h"

static char error[RIG_SCENARIO_ERROR_MAX];

static struct rig_scenario load_ok(const char *text)
{
    struct rig_scenario s;
    enum rig_status status = rig_scenario_load_string(text, "w.yaml", NULL, 0, &s, error,
                                                      sizeof error);
    if (status != RIG_OK) fprintf(stderr, "unexpected error: %s\n", error);
    assert_int_equal(status, RIG_OK);
    return s;
}

#define HEAD "name: w\nmodel: {preset: tiny}\n"

static void test_random_ranges_and_determinism(void **state)
{
    (void)state;
    const char *text = HEAD "seed: 3\nworkloads:\n"
                            "  - {kind: random, count: 50, input_len: [10, 20],"
                            " output_len: [3, 4], token_range: [100, 199]}\n";
    struct rig_scenario s = load_ok(text), t = load_ok(text);
    assert_int_equal(s.request_count, 50);
    int64_t total = 0;
    for (int32_t i = 0; i < 50; i++) {
        const struct rig_scenario_request *r = &s.requests[i];
        char id[32];
        snprintf(id, sizeof id, "random-%d", i);
        assert_string_equal(r->id, id);
        assert_in_range(r->input_len, 10, 20);
        assert_in_range(r->max_tokens, 3, 4);
        assert_int_equal(r->arrival_ns, 0);
        assert_true(r->sampling.ignore_eos);
        assert_int_equal(r->workload, 0);
        for (int32_t j = 0; j < r->input_len; j++)
            assert_in_range(rig_scenario_prompt(&s, i)[j], 100, 199);
        total += r->input_len;
    }
    assert_int_equal(s.token_count, total);
    assert_int_equal(s.token_count, t.token_count);
    assert_memory_equal(s.tokens, t.tokens, (size_t)s.token_count * sizeof *s.tokens);
    assert_memory_equal(s.requests, t.requests, 50 * sizeof *s.requests);
    rig_scenario_free(&t);
    const char *other[] = {"seed=4"};
    assert_int_equal(rig_scenario_load_string(text, "w.yaml", other, 1, &t, error,
                                              sizeof error), RIG_OK);
    assert_true(t.token_count != s.token_count ||
                memcmp(t.tokens, s.tokens, (size_t)s.token_count * sizeof *s.tokens) != 0);
    rig_scenario_free(&t);
    rig_scenario_free(&s);
}

static void test_minisgl_offline_preset(void **state)
{
    (void)state;
    struct rig_scenario s = load_ok(HEAD "seed: 9\nworkloads: [{kind: minisgl_offline}]\n");
    assert_int_equal(s.request_count, 256);
    int32_t min_in = 1 << 30, max_in = 0, max_id = 0;
    for (int32_t i = 0; i < 256; i++) {
        const struct rig_scenario_request *r = &s.requests[i];
        assert_in_range(r->input_len, 100, 1024);
        assert_in_range(r->max_tokens, 100, 1024);
        assert_int_equal(r->arrival_ns, 0);
        if (r->input_len < min_in) min_in = r->input_len;
        if (r->input_len > max_in) max_in = r->input_len;
    }
    for (int64_t k = 0; k < s.token_count; k++)
        if (s.tokens[k] > max_id) max_id = s.tokens[k];
    assert_true(max_id <= 10000 && max_id > 9000); /* ids span 0..10000 */
    assert_true(min_in < 150 && max_in > 970);       /* lengths span the range */
    assert_int_equal(s.token_id_max, max_id);
    /* seed 0 is part of the preset: the scenario seed does not change it */
    struct rig_scenario t = load_ok(HEAD "seed: 1\nworkloads: [{kind: minisgl_offline}]\n");
    assert_memory_equal(s.tokens, t.tokens, (size_t)s.token_count * sizeof *s.tokens);
    rig_scenario_free(&t);
    rig_scenario_free(&s);
}

static void test_shared_prefix(void **state)
{
    (void)state;
    struct rig_scenario s =
        load_ok(HEAD "workloads:\n  - {kind: shared_prefix, name: sp, groups: 3, per_group: 4,"
                     " prefix_len: 32, suffix_len: 8, output_len: 5}\n");
    assert_int_equal(s.request_count, 12);
    for (int32_t i = 0; i < 12; i++) {
        assert_int_equal(s.requests[i].input_len, 40);
        assert_int_equal(s.requests[i].max_tokens, 5);
        for (int32_t j = 0; j < 12; j++) {
            const int32_t *a = rig_scenario_prompt(&s, i), *b = rig_scenario_prompt(&s, j);
            bool same_group = i / 4 == j / 4;
            assert_int_equal(memcmp(a, b, 32 * sizeof *a) == 0, same_group);
            if (i != j) assert_true(memcmp(a + 32, b + 32, 8 * sizeof *a) != 0);
        }
    }
    assert_string_equal(s.requests[5].id, "sp-5");
    struct rig_scenario t =
        load_ok(HEAD "workloads:\n  - {kind: shared_prefix, name: sp, groups: 3, per_group: 4,"
                     " prefix_len: 32, suffix_len: 8, output_len: 5, shuffle: true}\n");
    /* shuffled: the same 12 prompts, in another order */
    int32_t seen[12] = {0};
    bool moved = false;
    for (int32_t i = 0; i < 12; i++) {
        for (int32_t j = 0; j < 12; j++) {
            if (memcmp(rig_scenario_prompt(&t, i), rig_scenario_prompt(&s, j),
                       40 * sizeof(int32_t)) != 0)
                continue;
            seen[j]++;
            moved |= i != j;
        }
    }
    for (int32_t j = 0; j < 12; j++) assert_int_equal(seen[j], 1);
    assert_true(moved);
    rig_scenario_free(&t);
    rig_scenario_free(&s);
}

static void test_poisson_arrivals(void **state)
{
    (void)state;
    struct rig_scenario s = load_ok(HEAD "workloads:\n  - {kind: random, count: 4000, rate: 50,"
                                         " input_len: 4, output_len: 2, start: 1s}\n");
    assert_int_equal(s.requests[0].arrival_ns, 1000000000);
    for (int32_t i = 1; i < s.request_count; i++) {
        assert_true(s.requests[i].arrival_ns >= s.requests[i - 1].arrival_ns);
        char id[32];
        snprintf(id, sizeof id, "random-%d", i);
        assert_string_equal(s.requests[i].id, id); /* arrival order = generation order */
    }
    double mean_gap = (double)(s.requests[3999].arrival_ns - s.requests[0].arrival_ns) /
                      3999.0 * 1e-9;
    assert_true(fabs(mean_gap - 0.02) < 0.02 * 0.05);
    rig_scenario_free(&s);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_trace_replay(void **state)
{
    (void)state;
    char dir[64], path[96], yaml[512];
    snprintf(dir, sizeof dir, "/tmp/rig_test_trace_%d", (int)getpid());
    snprintf(path, sizeof path, "%s.jsonl", dir);
    write_file(path,
               "{\"timestamp\": 10.5, \"input_length\": 40, \"output_length\": 7,"
               " \"hash_ids\": [1, 2, 3], \"chat_id\": 1}\n"
               "\n"
               "{\"timestamp\": 10.0, \"input_length\": 20, \"output_length\": 3,"
               " \"hash_ids\": [1, 9]}\n"
               "{\"timestamp\": 12.0, \"input_length\": 36, \"output_length\": 1,"
               " \"hash_ids\": [1, 2]}\n");
    snprintf(yaml, sizeof yaml, HEAD "workloads:\n  - {kind: trace, path: %s, time_scale: 0.5,"
                                     " start: 1s}\n", path);
    struct rig_scenario s = load_ok(yaml);
    assert_int_equal(s.request_count, 3);
    /* sorted by arrival: trace-1 (10.0 s), trace-0 (10.5), trace-2 (12.0); rebased, halved */
    assert_string_equal(s.requests[0].id, "trace-1");
    assert_int_equal(s.requests[0].arrival_ns, 1000000000);
    assert_int_equal(s.requests[1].arrival_ns, 1250000000);
    assert_int_equal(s.requests[2].arrival_ns, 2000000000);
    assert_int_equal(s.requests[1].input_len, 40);
    assert_int_equal(s.requests[1].max_tokens, 7);
    const int32_t *t1 = rig_scenario_prompt(&s, 0), *t0 = rig_scenario_prompt(&s, 1);
    const int32_t *t2 = rig_scenario_prompt(&s, 2);
    assert_memory_equal(t0, t1, 16 * sizeof *t0);          /* block 1 shared */
    assert_true(memcmp(t0 + 16, t1 + 16, 4 * sizeof *t0) != 0); /* block 2 vs 9 */
    assert_memory_equal(t0, t2, 32 * sizeof *t0);          /* blocks 1, 2 shared */
    assert_true(memcmp(t0 + 32, t2 + 32, 4 * sizeof *t0) != 0); /* 3 vs own tokens */
    rig_scenario_free(&s);

    snprintf(yaml, sizeof yaml, HEAD "workloads: [{kind: trace, path: %s, limit: 1}]\n", path);
    s = load_ok(yaml);
    assert_int_equal(s.request_count, 1);
    assert_int_equal(s.requests[0].arrival_ns, 0);
    rig_scenario_free(&s);

    write_file(path, "{\"timestamp\": 1, \"input_length\": 4, \"output_length\": 1}\n"
                     "{\"timestamp\": 2, \"input_length\": 0, \"output_length\": 1}\n");
    snprintf(yaml, sizeof yaml, HEAD "workloads: [{kind: trace, path: %s}]\n", path);
    assert_int_equal(rig_scenario_load_string(yaml, "w.yaml", NULL, 0, &s, error, sizeof error),
                     RIG_E_PARSE);
    assert_non_null(strstr(error, ".jsonl:2: 'input_length' must be an integer"));
    /* Timestamps have the bounds of `at:` (issue 15: ±1e18 overflowed to t = 0). */
    static const char *const stamps[] = {"1e18", "-1e18", "-1", "1.5e9"};
    for (size_t i = 0; i < sizeof stamps / sizeof stamps[0]; i++) {
        char line[160];
        snprintf(line, sizeof line, "{\"timestamp\": 1, \"input_length\": 4, "
                 "\"output_length\": 1}\n{\"timestamp\": %s, \"input_length\": 4, "
                 "\"output_length\": 1}\n", stamps[i]);
        write_file(path, line);
        assert_int_equal(rig_scenario_load_string(yaml, "w.yaml", NULL, 0, &s, error,
                                                  sizeof error), RIG_E_PARSE);
        assert_non_null(strstr(error, ".jsonl:2: 'timestamp' = "));
        assert_non_null(strstr(error, " is outside [0, 1e9 s]"));
    }
    write_file(path, "{\"timestamp\": 1, \"input_length\": 4,\n");
    assert_int_equal(rig_scenario_load_string(yaml, "w.yaml", NULL, 0, &s, error, sizeof error),
                     RIG_E_PARSE);
    assert_non_null(strstr(error, ".jsonl:1:"));
    /* A file with no newline is read up to the line limit, not without bound (issue 15). */
    const char *zero = HEAD "workloads: [{kind: trace, path: /dev/zero}]\n";
    assert_int_equal(rig_scenario_load_string(zero, "w.yaml", NULL, 0, &s, error, sizeof error),
                     RIG_E_CAPACITY);
    assert_non_null(strstr(error, "trace '/dev/zero': line 1 is longer than 16777216 bytes "
                                  "(the line limit)"));
    unlink(path);
    assert_int_equal(rig_scenario_load_string(yaml, "w.yaml", NULL, 0, &s, error, sizeof error),
                     RIG_E_IO);
    assert_non_null(strstr(error, "cannot open trace"));
}

static void test_set_reaches_list_items_and_new_sections(void **state)
{
    (void)state;
    const char *text = HEAD "workloads:\n  - {kind: random, count: 50}\n"
                            "  - {kind: shared_prefix, groups: 2, per_group: 2}\n";
    const char *sets[] = {"workloads.0.count=5", "workloads.1.per_group=3",
                          "sim.timing_only=true", "workloads.0.input_len=[7, 7]"};
    struct rig_scenario s;
    assert_int_equal(rig_scenario_load_string(text, "w.yaml", sets, 4, &s, error, sizeof error),
                     RIG_OK);
    assert_int_equal(s.request_count, 5 + 6);
    assert_true(s.sim.timing_only);
    assert_int_equal(s.requests[0].input_len, 7);
    rig_scenario_free(&s);
    const char *out_of_range[] = {"workloads.2.count=5"};
    assert_int_equal(rig_scenario_load_string(text, "w.yaml", out_of_range, 1, &s, error,
                                              sizeof error),
                     RIG_E_INVALID);
    assert_non_null(strstr(error, "does not lead to a mapping"));
}

static void test_workload_errors(void **state)
{
    (void)state;
    struct rig_scenario s;
    const char *cases[][2] = {
        {HEAD "workloads: [{count: 3}]\n", "a workload needs a 'kind'"},
        {HEAD "workloads: [{kind: randomm}]\n", "'kind' must be one of random, shared_prefix"},
        {HEAD "workloads: [{kind: random, input_len: [9, 3]}]\n", "low 9 is above high 3"},
        {HEAD "workloads: [{kind: random, input_len: [1, 2, 3]}]\n", "a number or [low, high]"},
        {HEAD "workloads: [{kind: random, groups: 3}]\n", "unknown key 'groups' in random"},
        {HEAD "workloads: [{kind: random, rate: 0}]\n", "'rate' = 0 is outside"},
        {HEAD "workloads: [{kind: trace}]\n", "a trace workload needs a 'path'"},
        {HEAD "workloads: [{kind: random, max_tokens: 3}]\n", "unknown key 'max_tokens'"},
        {HEAD "workloads: [{kind: random, count: 2}, {kind: random, count: 2}]\n",
         "request id 'random-0' is used twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum rig_status status = rig_scenario_load_string(cases[i][0], "w.yaml", NULL, 0, &s,
                                                          error, sizeof error);
        if (status == RIG_OK || strstr(error, cases[i][1]) == NULL)
            fprintf(stderr, "case %zu: status %d '%s'\n", i, status, error);
        assert_true(status < 0);
        assert_non_null(strstr(error, cases[i][1]));
    }
}

/* Sizes are checked as products against the scenario's host budget before anything is
 * allocated (issue 15 item 7: count x input_len at their caps took 4 GB and 24 s before "out of
 * memory"); each error says how many requests of those lengths would fit. */
static void test_host_budget(void **state)
{
    (void)state;
    struct rig_scenario s;
    char path[96], yaml[512], trace[1024] = "";
    snprintf(path, sizeof path, "/tmp/rig_test_budget_%d.jsonl", (int)getpid());
    for (int32_t i = 0; i < 10; i++)
        strcat(trace, "{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 16777216}\n");
    write_file(path, trace);
    snprintf(yaml, sizeof yaml, HEAD "workloads: [{kind: trace, path: %s}]\n", path);
    char requests[2048] = HEAD "requests:\n";
    for (int32_t i = 0; i < 10; i++)
        snprintf(requests + strlen(requests), sizeof requests - strlen(requests),
                 "  - {id: r%d, random: 1000, max_tokens: 16777216}\n", i);
    char trace_error[512];
    snprintf(trace_error, sizeof trace_error,
             "w.yaml:3:33: trace '%s': the requests up to line 8 need 18.00 GiB of host memory, "
             "above the scenario budget of 16 GiB: one request of 1 prompt and 16777216 output "
             "tokens takes 2304.00 MiB, so at most 0 such requests fit beside the 7 before them",
             path);
    const char *cases[][2] = {
        {HEAD "workloads: [{kind: random, count: 4194304, input_len: 4194304,"
              " output_len: 16777216}]\n",
         "w.yaml:3:14: workload 'random': 4194304 requests need 9502721.22 GiB of host memory, "
         "above the scenario budget of 16 GiB: one request of 4194304 prompt and 16777216 "
         "output tokens takes 2320.00 MiB, so at most 7 such requests fit beside the 0 before "
         "them"},
        {HEAD "workloads: [{kind: shared_prefix, groups: 2048, per_group: 2048,"
              " prefix_len: 2097152, suffix_len: 2097152, output_len: 1}]\n",
         "w.yaml:3:14: workload 'shared_prefix': 4194304 requests need 65537.78 GiB of host "
         "memory, above the scenario budget of 16 GiB: one request of 4194304 prompt and 1 "
         "output tokens takes 16.00 MiB, so at most 1023 such requests fit beside the 0 before "
         "them"},
        /* the worst case of a range counts: the longest output drawn for every request */
        {HEAD "workloads: [{kind: random, count: 100, output_len: [1, 16777216]}]\n",
         "w.yaml:3:14: workload 'random': 100 requests need 225.00 GiB of host memory, above "
         "the scenario budget of 16 GiB: one request of 128 prompt and 16777216 output tokens "
         "takes 2304.00 MiB, so at most 7 such requests fit beside the 0 before them"},
        {yaml, trace_error},
        {requests,
         "w.yaml:11:6: the requests up to this one need 18.00 GiB of host memory, above the "
         "scenario budget of 16 GiB: one request of 1000 prompt and 16777216 output tokens "
         "takes 2304.00 MiB, so at most 0 such requests fit beside the 7 before them"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum rig_status status = rig_scenario_load_string(cases[i][0], "w.yaml", NULL, 0, &s,
                                                          error, sizeof error);
        assert_int_equal(status, RIG_E_CAPACITY);
        assert_string_equal(error, cases[i][1]);
    }
    /* What the messages say fits loads: 7 requests of those lengths (in a blink: no
     * output rows are allocated before a run). */
    *strstr(requests, "  - {id: r7,") = 0;
    s = load_ok(requests);
    assert_int_equal(s.request_count, 7);
    rig_scenario_free(&s);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_ranges_and_determinism),
        cmocka_unit_test(test_minisgl_offline_preset),
        cmocka_unit_test(test_shared_prefix),
        cmocka_unit_test(test_poisson_arrivals),
        cmocka_unit_test(test_trace_replay),
        cmocka_unit_test(test_set_reaches_list_items_and_new_sections),
        cmocka_unit_test(test_workload_errors),
        cmocka_unit_test(test_host_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
