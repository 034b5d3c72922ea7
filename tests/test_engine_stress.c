/* test_engine_stress.c — randomized scheduling (a small swarm test): for many seeds, a
 * random engine config (policy, overlap, cache type, page size, budget, rows, a KV pool small
 * enough to force eviction), a random workload (families of shared prefixes, prompts of 1 to
 * 150 tokens, 1 to 30 output tokens, arrivals spread over the run) and random aborts at
 * random steps. The invariant checker runs after every step. Each run must drain; every
 * request must end exactly once; every request that was not aborted must produce exactly the
 * tokens of a reference run (one generous config, no aborts) — tokens depend only on the
 * request's seed and position. Most seeds use timing-only simulation (fast; tokens from the
 * RNG, so they check the bookkeeping); a few run the real tiny model, where a page-table or
 * KV mistake would change the tokens. */
#include "tests/support/engine_harness.h"

#define N_REQ 18

struct spec {
    int32_t prompt[160];
    int32_t len;
    int32_t max_tokens;
    int32_t submit_step; /* submitted before this step */
    int32_t abort_step;  /* aborted before this step; -1 never */
};

static struct spec specs[N_REQ];
static int32_t n_req = N_REQ;   /* requests in this run (fewer with the real model) */
static int32_t len_max = 150;  /* longest prompt */
static struct harness ref, run;

static void make_workload(struct rig_test_rng *rng)
{
    int32_t families[3][160];
    for (int32_t f = 0; f < 3; f++)
        for (int32_t i = 0; i < 160; i++) families[f][i] = (int32_t)rig_test_rng_int(rng, 3, 1000);
    for (int32_t r = 0; r < n_req; r++) {
        struct spec *s = &specs[r];
        int32_t f = (int32_t)rig_test_rng_int(rng, 0, 2);
        int32_t shared = (int32_t)rig_test_rng_int(rng, 0, 150);
        s->len = (int32_t)rig_test_rng_int(rng, 1, len_max);
        for (int32_t i = 0; i < s->len; i++)
            s->prompt[i] = i < shared ? families[f][i] : (int32_t)rig_test_rng_int(rng, 3, 1000);
        s->max_tokens = (int32_t)rig_test_rng_int(rng, 1, 30);
        s->submit_step = (int32_t)rig_test_rng_int(rng, 0, 40);
        s->abort_step = rig_test_rng_int(rng, 0, 5) == 0 ? (int32_t)rig_test_rng_int(rng, 0, 60)
                                                        : -1;
    }
}

static void submit(struct harness *h, int32_t r)
{
    harness_submit(h, 1000 + (uint64_t)r, specs[r].prompt, specs[r].len, specs[r].max_tokens,
                   1.0f, RIG_OK);
}

static void random_config(struct rig_test_rng *rng, struct rig_engine_config *c, bool real)
{
    harness_config(c, "tiny", !real);
    c->policy = (enum rig_policy)rig_test_rng_int(rng, 0, 2);
    c->overlap = rig_test_rng_int(rng, 0, 1) == 1;
    c->cache_type = rig_test_rng_int(rng, 0, 3) == 0 ? RIG_CACHE_NAIVE : RIG_CACHE_RADIX;
    c->page_size = rig_test_rng_int(rng, 0, 2) == 0 ? 4 : 1;
    c->prefill_budget = (int32_t)rig_test_rng_int(rng, 8, 300);
    c->max_running_req = (int32_t)rig_test_rng_int(rng, 1, 8);
    c->cuda_graph_max_bs = (int32_t)rig_test_rng_int(rng, 0, 8);
    c->cuda_graphs = c->cuda_graph_max_bs > 0;
    /* Room for the largest request (180 slots + a page) and little more: eviction. */
    c->num_pages = (int32_t)rig_test_rng_int(rng, 200, 600) / c->page_size;
    c->max_seq_len = 256;
}

static void run_random(struct rig_engine_config *c)
{
    harness_open(&run, c);
    int32_t submitted = 0;
    for (int32_t step = 0; step < 100000; step++) {
        for (int32_t r = 0; r < n_req; r++) {
            if (specs[r].submit_step == step) submit(&run, r), submitted++;
            if (specs[r].abort_step == step && specs[r].submit_step < step)
                (void)rig_engine_abort(run.engine, 1000 + (uint64_t)r);
        }
        if (submitted == n_req && rig_engine_idle(run.engine)) break;
        bool progress = false;
        assert_int_equal(rig_engine_step(run.engine, &progress), RIG_OK);
    }
    assert_true(rig_engine_idle(run.engine));
}

static void compare(void)
{
    for (int32_t r = 0; r < n_req; r++) {
        struct harness_request *got = harness_get(&run, 1000 + (uint64_t)r);
        struct harness_request *want = harness_get(&ref, 1000 + (uint64_t)r);
        assert_int_equal(got->finish_calls, 1);
        if (got->reason == RIG_END_ABORT) {
            assert_true(got->output_len <= want->output_len);
            assert_memory_equal(got->tokens, want->tokens,
                                (size_t)got->output_len * sizeof(int32_t));
            continue;
        }
        assert_int_equal(got->reason, RIG_END_LENGTH);
        assert_int_equal(got->output_len, specs[r].max_tokens);
        assert_memory_equal(got->tokens, want->tokens, (size_t)got->output_len * sizeof(int32_t));
    }
}

static void random_runs(uint64_t first, uint64_t last, bool real)
{
    for (uint64_t seed = first; seed <= last; seed++) {
        struct rig_test_rng rng;
        rig_test_rng_seed(&rng, seed);
        make_workload(&rng);
        struct rig_engine_config c;
        harness_config(&c, "tiny", !real);
        c.max_seq_len = 256;
        c.num_pages = 4096;
        c.max_requests = N_REQ;
        harness_open(&ref, &c);
        for (int32_t r = 0; r < n_req; r++) submit(&ref, r);
        harness_run(&ref);
        random_config(&rng, &c, real);
        run_random(&c);
        compare();
        harness_close(&run);
        harness_close(&ref);
    }
}

static void test_random_schedules_timing_only(void **state)
{
    (void)state;
    random_runs(1, 200, false);
}

static void test_random_schedules_real_model(void **state)
{
    (void)state;
    n_req = 6;
    len_max = 48;
    random_runs(1001, 1003, true);
    n_req = N_REQ;
    len_max = 150;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_schedules_timing_only),
        cmocka_unit_test(test_random_schedules_real_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
