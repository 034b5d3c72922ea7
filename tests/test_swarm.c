/* test_swarm.c — the swarm (core/harness/swarm/) itself, and the CI share of its seeds.
 *
 * Checks: rig_swarm_draw is a pure function of (seed, faults) and stays inside its ranges
 * over 2000 seeds (TP 1/2/4, context limit a multiple of the page size and above the row
 * count, prompts inside the token array with ids in the tiny vocabulary, arrivals sorted,
 * aborts and fault plans only with faults on, some prompts beyond the context limit, some
 * shared prefixes); a run is deterministic (two runs of a seed give identical results); a
 * case written as a scenario YAML loads with rig_scenario_load and replays under `rig run`'s
 * runner with no violation, no leaked page and the same finished/rejected counts as the
 * swarm saw; with faults (stall, start-up allocation failure, back-pressure, aborts) an
 * exported case replays alike (as many aborts, rejections and output tokens), and planted
 * failures exported as scenarios reproduce under the runner; then the CI swarm:
 * RIG_SWARM_SEEDS seeds (default 300, 60 under sanitizers)
 * with faults and a third as many without, every seed in a child process, token equivalence
 * every RIG_SWARM_EQUIVALENCE_EVERY-th seed (default 25, 40 under sanitizers), and 150 seeds
 * (30 under sanitizers; RIG_SWARM_COMMIT_SEEDS) from a first seed derived from the commit,
 * so each commit's CI explores new seeds. A failing seed prints the command that replays it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/harness/scenario/run.h"
#include "core/harness/scenario/scenario.h"
#include "core/harness/swarm/plant.h"
#include "core/harness/swarm/swarm.h"
#include "core/version.h"
#include "hal/philox.h"
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

/* Writes `c` as a scenario to a fresh temporary file named in path (at least 22 bytes). */
static void rig__export(const struct rig_swarm_case *c, char *path)
{
    strcpy(path, "/tmp/rig-swarm-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(rig_swarm_write_scenario(c, path), RIG_OK);
}

/* Removes an exported scenario and the model config written beside it when the vocabulary
 * is not the preset's. */
static void rig__unlink_export(const char *path)
{
    unlink(path);
    char model[64];
    snprintf(model, sizeof model, "%s.model.json", path);
    unlink(model);
}

/* Exports `c`, loads the scenario and runs it under `rig run`'s runner (checker after every
 * step) into *results (freed by the caller); asserts both succeed. */
static void rig__export_and_run(const struct rig_swarm_case *c, struct rig_scenario *s,
                                struct rig_results *results)
{
    char path[32], error[RIG_SCENARIO_ERROR_MAX];
    rig__export(c, path);
    if (rig_scenario_load(path, NULL, 0, s, error, sizeof error) != RIG_OK)
        fail_msg("%s", error);
    struct rig_run_options options = {.check = RIG_RUN_CHECK_STEP};
    if (rig_scenario_run(s, &options, results, error, sizeof error) != RIG_OK)
        fail_msg("seed %llu: %s", (unsigned long long)c->seed, error);
    rig__unlink_export(path);
}

/* Finds a fault-free seed whose trace has a rejection and a finish: a meaningful replay. */
static void rig__scenario_roundtrip(uint64_t seed, struct rig_swarm_case *c)
{
    rig_swarm_draw(seed, false, c);
    struct rig_swarm_result swarm;
    assert_int_equal(rig_swarm_run(c, &swarm), RIG_SWARM_PASS);
    struct rig_scenario s;
    struct rig_results results;
    rig__export_and_run(c, &s, &results);
    assert_int_equal(s.request_count, c->request_count);
    assert_int_equal(s.engine.num_pages, c->num_pages);
    assert_int_equal(s.engine.page_size, c->page_size);
    assert_true(s.sim.timing_only);
    for (int32_t i = 0; i < c->request_count; i++) {
        assert_int_equal(s.requests[i].input_len, c->requests[i].prompt_len);
        assert_memory_equal(rig_scenario_prompt(&s, i), c->tokens + c->requests[i].prompt_offset,
                            (size_t)c->requests[i].prompt_len * sizeof(int32_t));
    }
    assert_int_equal(results.invariant_violations, 0);
    assert_int_equal(results.pages_leaked, 0);
    int32_t rejected = 0;
    for (int64_t i = 0; i < results.request_count; i++)
        rejected += results.requests[i].finish_reason == RIG_FINISH_REJECTED;
    assert_int_equal(rejected, swarm.rejected);
    rig_results_free(&results);
    rig_scenario_free(&s);
}

static void test_scenario_export_replays(void **state)
{
    (void)state;
    struct rig_swarm_case *c = malloc(sizeof *c);
    assert_non_null(c);
    for (uint64_t seed = 1; seed <= 6; seed++) rig__scenario_roundtrip(seed, c);
    free(c);
}

static void rig__exit_on_violation(void *user, const char *message)
{
    (void)user;
    (void)message;
    _exit(0);
}

/* Writes `c` as a scenario and runs it under `rig run`'s runner in a child process (the
 * checker after every step; a planted bug may crash the engine after its first violation);
 * true when the checker found a violation. */
static bool rig__replay_violates(const struct rig_swarm_case *c)
{
    char path[32];
    rig__export(c, path);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct rig_scenario s;
        char error[RIG_SCENARIO_ERROR_MAX];
        if (rig_scenario_load(path, NULL, 0, &s, error, sizeof error) != RIG_OK) _exit(2);
        struct rig_run_options options = {.check = RIG_RUN_CHECK_STEP,
                                          .violation = rig__exit_on_violation,
                                          .debug_plant = rig_debug_plant};
        struct rig_results results;
        rig_scenario_run(&s, &options, &results, error, sizeof error);
        _exit(1);
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    rig__unlink_export(path);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* A scenario written from a passing case with faults replays what the swarm ran: as many
 * requests are aborted and rejected, with as many output tokens in all (issue 15). Without
 * the fault plan, back-pressure and times from the engine's start in the scenario, 2 of
 * seeds 1-40 differed (seeds 28 and 32: an abort no longer landed). */
static void test_scenario_export_faithful(void **state)
{
    (void)state;
    struct rig_swarm_case *c = malloc(sizeof *c);
    assert_non_null(c);
    int32_t same = 0, cases = 0;
    for (uint64_t seed = 1; seed <= 80; seed++) {
        rig_swarm_draw(seed, true, c);
        struct rig_swarm_result swarm;
        assert_int_equal(rig_swarm_run(c, &swarm), RIG_SWARM_PASS);
        struct rig_scenario s;
        struct rig_results results;
        rig__export_and_run(c, &s, &results);
        int32_t count[RIG_FINISH_COUNT] = {0};
        int64_t tokens = 0;
        for (int64_t i = 0; i < results.request_count; i++) {
            count[results.requests[i].finish_reason]++;
            tokens += results.requests[i].output_len;
        }
        bool match = count[RIG_FINISH_ABORT] == swarm.aborted &&
                     count[RIG_FINISH_REJECTED] == swarm.rejected && tokens == swarm.tokens;
        if (!match)
            print_message("seed %llu: swarm %d aborted %d rejected %lld tokens, replay %d %d "
                          "%lld\n", (unsigned long long)seed, swarm.aborted, swarm.rejected,
                          (long long)swarm.tokens, count[RIG_FINISH_ABORT],
                          count[RIG_FINISH_REJECTED], (long long)tokens);
        same += match;
        cases++;
        rig_results_free(&results);
        rig_scenario_free(&s);
    }
    print_message("exported cases replayed alike: %d of %d\n", same, cases);
    assert_int_equal(same, cases);
    free(c);
}

/* Every swarm failure is a replayable scenario (issue 15): with a planted bug (a tree page
 * freed while in use), each seed of 1..80 whose run the checker fails is written out and
 * replayed by `rig run`'s runner, fault plan (stall, start-up allocation failure,
 * back-pressure) and aborts included, and the replay finds a violation too. Before the
 * fault plan had a scenario form, and while times were not taken from the engine's start,
 * none of 27 such seeds reproduced. */
static void test_scenario_export_reproduces_failures(void **state)
{
    (void)state;
    struct rig_swarm_case *c = malloc(sizeof *c);
    assert_non_null(c);
    int32_t failing = 0, reproduced = 0;
    for (uint64_t seed = 1; seed <= 80; seed++) {
        rig_swarm_draw(seed, true, c);
        struct rig_swarm_result r;
        rig_debug_plant = RIG_PLANT_FREE_SHARED_PAGE;
        if (rig_swarm_check(c, false, true, &r) == RIG_SWARM_INVARIANT) {
            failing++;
            bool violates = rig__replay_violates(c);
            reproduced += violates;
            if (!violates) print_message("seed %llu: no violation in the replay\n",
                                         (unsigned long long)seed);
        }
        rig_debug_plant = 0;
    }
    print_message("exported failures: %d of %d reproduced\n", reproduced, failing);
    assert_true(failing >= 10);
    assert_int_equal(reproduced, failing);
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

/* A seed range of its own for each commit (issue 15: the KV-reservation bug hid outside the
 * fixed range CI ran): the first seed is a hash of the commit the tests were built from, so
 * each CI run explores new seeds and a failure replays from its printed seed. A tree with
 * no commit (or RIG_SWARM_COMMIT_SEEDS=0) skips it. */
static void test_swarm_commit_seeds(void **state)
{
    (void)state;
    int64_t seeds = rig__env("RIG_SWARM_COMMIT_SEEDS", RIG__SANITIZED ? 30 : 150);
    if (seeds <= 0 || strcmp(rig_git_commit, "unknown") == 0) skip();
    uint64_t hash = 0;
    for (const char *c = rig_git_commit; *c != '\0'; c++) hash = rig_mix64(hash, (uint8_t)*c);
    uint64_t first = hash >> 2; /* room above it: first + seeds never wraps */
    int64_t every = rig__env("RIG_SWARM_EQUIVALENCE_EVERY", RIG__SANITIZED ? 40 : 25);
    int64_t failed = rig__ci_seeds(true, seeds, first, every);
    print_message("swarm: %lld seeds from %llu (commit %s; the range again: rig fuzz --first "
                  "%llu --seeds %lld --equivalence-every %lld), %lld failed\n", (long long)seeds,
                  (unsigned long long)first, rig_git_commit, (unsigned long long)first,
                  (long long)seeds, (long long)every, (long long)failed);
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
        cmocka_unit_test(test_scenario_export_faithful),
        cmocka_unit_test(test_scenario_export_reproduces_failures),
        cmocka_unit_test(test_swarm_ci_seeds),
        cmocka_unit_test(test_swarm_commit_seeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
