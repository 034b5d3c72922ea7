/* test_swarm.c — the swarm (core/harness/swarm/) itself, and the CI share of its seeds.
 *
 * Checks: rig_swarm_draw is a pure function of (seed, faults) and stays inside its ranges
 * over 2000 seeds (TP 1/2/4, context limit a multiple of the page size and above the row
 * count, prompts inside the token array with ids in the tiny vocabulary, arrivals sorted,
 * aborts and fault plans only with faults on, some prompts beyond the context limit, some
 * shared prefixes); a run is deterministic (two runs of a seed give identical results); a
 * case written as a scenario YAML loads with rig_scenario_load and replays under `rig run`'s
 * runner with no violation, no leaked page and the same finished/rejected counts as the
 * swarm saw; then the CI swarm: RIG_SWARM_SEEDS seeds (default 300, 60 under sanitizers)
 * with faults and a third as many without, every seed in a child process, token equivalence
 * every RIG_SWARM_EQUIVALENCE_EVERY-th seed (default 25, 40 under sanitizers). A failing seed
 * prints the command that replays it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/harness/scenario/run.h"
#include "core/harness/scenario/scenario.h"
#include "core/harness/swarm/swarm.h"
#include "tests/support/test_support.h"
#include "hal/backends.h"

#if defined(__SANITIZE_ADDRESS__)
#define RIG__SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RIG__SANITIZED 1
#endif
#endif
#ifndef RIG__SANITIZED
#define RIG__SANITIZED 0
#endif

static int64_t rig__env(const char *name, int64_t fallback)
{
    const char *value = getenv(name);
    return value != NULL ? strtoll(value, NULL, 0) : fallback;
}

static void rig__check_draw(const struct rig_swarm_case *c, int32_t *beyond, int32_t *shared)
{
    assert_true(c->tp_size == 1 || c->tp_size == 2 || c->tp_size == 4);
    assert_int_equal(c->max_seq_len % c->page_size, 0);
    assert_true(c->max_seq_len > c->max_running_req + 1);
    assert_true(c->max_seq_len <= RIG_SWARM_SEQ_LEN_MAX + 16);
    assert_true(c->num_pages >= 2 && c->prefill_budget >= 1 && c->max_running_req >= 1);
    assert_true(c->request_count >= 1 && c->request_count <= RIG_SWARM_REQUESTS_MAX);
    assert_true(c->token_count <= RIG_SWARM_TOKENS_MAX);
    if (!c->faults) {
        assert_int_equal(c->fail_alloc_at, -1);
        assert_int_equal(c->stall_op_at, -1);
    }
    for (int32_t i = 0; i < c->request_count; i++) {
        const struct rig_swarm_request *q = &c->requests[i];
        assert_true(q->prompt_len >= 1 && q->prompt_len <= RIG_SWARM_PROMPT_MAX);
        assert_true(q->prompt_offset >= 0 && q->prompt_offset + q->prompt_len <= c->token_count);
        assert_true(q->max_tokens >= 0);
        if (i > 0) assert_true(c->requests[i - 1].arrival_ns <= q->arrival_ns);
        if (!c->faults) assert_int_equal(q->abort, RIG_SWARM_ABORT_NONE);
        for (int32_t t = 0; t < q->prompt_len; t++) {
            int32_t token = c->tokens[q->prompt_offset + t];
            assert_true(token >= 3 && token < c->vocab_size);
        }
        *beyond += q->prompt_len >= c->max_seq_len;
        if (i > 0 && q->prompt_len > 1 &&
            c->tokens[q->prompt_offset] == c->tokens[c->requests[0].prompt_offset] &&
            c->tokens[q->prompt_offset + 1] == c->tokens[c->requests[0].prompt_offset + 1])
            (*shared)++;
    }
}

static void test_draw_pure_and_in_range(void **state)
{
    (void)state;
    struct rig_swarm_case *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    int32_t beyond = 0, shared = 0, aborts = 0, stalls = 0, tps[5] = {0};
    for (uint64_t seed = 0; seed < 2000; seed++) {
        bool faults = seed % 2 == 0;
        rig_swarm_draw(seed, faults, a);
        rig_swarm_draw(seed, faults, b);
        assert_memory_equal(a, b, offsetof(struct rig_swarm_case, tokens) +
                                      (size_t)a->token_count * sizeof(int32_t));
        rig__check_draw(a, &beyond, &shared);
        for (int32_t i = 0; i < a->request_count; i++) aborts += a->requests[i].abort != 0;
        stalls += a->stall_op_at >= 0;
        tps[a->tp_size]++;
    }
    /* The edges are actually drawn, not just allowed. */
    assert_true(beyond > 50);
    assert_true(shared > 200);
    assert_true(aborts > 1000);
    assert_true(stalls > 300);
    assert_true(tps[1] > 0 && tps[2] > 0 && tps[4] > 0);
    rig_swarm_draw(1, true, a);
    rig_swarm_draw(2, true, b);
    assert_true(memcmp(a, b, offsetof(struct rig_swarm_case, tokens)) != 0);
    free(a);
    free(b);
}

static void test_run_deterministic(void **state)
{
    (void)state;
    struct rig_swarm_case *c = malloc(sizeof *c);
    assert_non_null(c);
    for (uint64_t seed = 1; seed <= 12; seed++) {
        rig_swarm_draw(seed, true, c);
        struct rig_swarm_result x, y;
        assert_int_equal(rig_swarm_run(c, &x), RIG_SWARM_PASS);
        assert_int_equal(rig_swarm_run(c, &y), RIG_SWARM_PASS);
        assert_memory_equal(&x, &y, sizeof x);
        assert_int_equal(x.finished + x.aborted + x.rejected, c->request_count);
        assert_int_equal(x.step_failed, -1);
    }
    free(c);
}

/* Finds a fault-free seed whose trace has a rejection and a finish: a meaningful replay. */
static void rig__scenario_roundtrip(uint64_t seed, struct rig_swarm_case *c)
{
    rig_swarm_draw(seed, false, c);
    struct rig_swarm_result swarm;
    assert_int_equal(rig_swarm_run(c, &swarm), RIG_SWARM_PASS);
    char path[] = "/tmp/rig-swarm-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(rig_swarm_write_scenario(c, path), RIG_OK);
    struct rig_scenario s;
    char error[RIG_SCENARIO_ERROR_MAX];
    enum rig_status status = rig_scenario_load(path, NULL, 0, &s, error, sizeof error);
    if (status != RIG_OK) fail_msg("%s", error);
    assert_int_equal(s.request_count, c->request_count);
    assert_int_equal(s.engine.num_pages, c->num_pages);
    assert_int_equal(s.engine.page_size, c->page_size);
    assert_true(s.sim.timing_only);
    for (int32_t i = 0; i < c->request_count; i++) {
        assert_int_equal(s.requests[i].input_len, c->requests[i].prompt_len);
        assert_memory_equal(rig_scenario_prompt(&s, i), c->tokens + c->requests[i].prompt_offset,
                            (size_t)c->requests[i].prompt_len * sizeof(int32_t));
    }
    struct rig_run_options options = {.check = RIG_RUN_CHECK_STEP};
    struct rig_results results;
    status = rig_scenario_run(&s, &options, &results, error, sizeof error);
    if (status != RIG_OK) fail_msg("%s", error);
    assert_int_equal(results.invariant_violations, 0);
    assert_int_equal(results.pages_leaked, 0);
    int32_t rejected = 0;
    for (int64_t i = 0; i < results.request_count; i++)
        rejected += results.requests[i].finish_reason == RIG_FINISH_REJECTED;
    assert_int_equal(rejected, swarm.rejected);
    rig_results_free(&results);
    rig_scenario_free(&s);
    unlink(path);
    char model[sizeof path + 16];
    snprintf(model, sizeof model, "%s.model.json", path);
    unlink(model); /* written beside it when the vocabulary is not the preset's */
}

static void test_scenario_export_replays(void **state)
{
    (void)state;
    struct rig_swarm_case *c = malloc(sizeof *c);
    assert_non_null(c);
    for (uint64_t seed = 1; seed <= 6; seed++) rig__scenario_roundtrip(seed, c);
    free(c);
}

static int64_t rig__ci_seeds(bool faults, int64_t count, uint64_t first, int64_t every)
{
    struct rig_swarm_case *c = malloc(sizeof *c);
    assert_non_null(c);
    int64_t failed = 0;
    for (int64_t k = 0; k < count; k++) {
        rig_swarm_draw(first + (uint64_t)k, faults, c);
        struct rig_swarm_result r;
        bool equivalence = every > 0 && k % every == 0;
        if (rig_swarm_check(c, equivalence, true, &r) == RIG_SWARM_PASS) continue;
        failed++;
        print_message("seed %llu: %s at step %lld: %s\n  replay: rig fuzz --seed %llu "
                      "--faults %s\n", (unsigned long long)c->seed,
                      rig_swarm_verdict_name(r.verdict), (long long)r.step_failed, r.message,
                      (unsigned long long)c->seed, faults ? "on" : "off");
    }
    free(c);
    return failed;
}

static void test_swarm_ci_seeds(void **state)
{
    (void)state;
    /* Under sanitizers the real-model equivalence runs dominate (the reference kernels at -O0
     * with ASan): fewer of everything. */
    int64_t seeds = rig__env("RIG_SWARM_SEEDS", RIG__SANITIZED ? 60 : 300);
    int64_t every = rig__env("RIG_SWARM_EQUIVALENCE_EVERY", RIG__SANITIZED ? 40 : 25);
    uint64_t first = (uint64_t)rig__env("RIG_SWARM_FIRST", 1);
    int64_t failed = rig__ci_seeds(true, seeds, first, every);
    failed += rig__ci_seeds(false, seeds / 3, first + 1000000, every);
    print_message("swarm: %lld + %lld seeds from %llu, %lld failed\n", (long long)seeds,
                  (long long)(seeds / 3), (unsigned long long)first, (long long)failed);
    assert_int_equal(failed, 0);
}

static void test_verdict_names(void **state)
{
    (void)state;
    assert_string_equal(rig_swarm_verdict_name(RIG_SWARM_PASS), "pass");
    assert_string_equal(rig_swarm_verdict_name(RIG_SWARM_LIVENESS), "liveness");
    assert_string_equal(rig_swarm_verdict_name(RIG_SWARM_CRASH), "crash");
    assert_string_equal(rig_swarm_verdict_name(RIG_SWARM_VERDICT_COUNT), "?");
    struct rig_swarm_case *c = malloc(sizeof *c);
    assert_non_null(c);
    rig_swarm_draw(7, true, c);
    char line[256];
    rig_swarm_describe(c, line, sizeof line);
    assert_non_null(strstr(line, rig_policy_name(c->policy)));
    assert_non_null(strstr(line, rig_cache_type_name(c->cache)));
    free(c);
}

int main(void)
{
    rig_backends_register();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_names),
        cmocka_unit_test(test_draw_pure_and_in_range),
        cmocka_unit_test(test_run_deterministic),
        cmocka_unit_test(test_scenario_export_replays),
        cmocka_unit_test(test_swarm_ci_seeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
