/* test_engine_cuda.c — the engine on a real GPU (skips itself, exit 77, without one).
 *
 * The tiny model with seeded dummy weights serves a workload with shared prefixes, chunked
 * prompts and queueing on the CUDA backend, with the invariant checker after every step,
 * under the base schedule (prefill_first, overlap, radix cache, decode CUDA graphs) and with
 * overlap off, graphs off and the naive cache. Checks: every request ends once with its
 * length; graphs were replayed; the prefix cache hit; per-step device times are ordered.
 * Tokens: the simulator is exact, a GPU is not bit-identical across batch shapes (cuBLAS
 * picks kernels by shape), so GPU runs are compared with the simulator's tokens greedy
 * request by greedy request and the agreement is printed; the first token of every greedy
 * request (computed from the same prompt) must agree. With two or more GPUs the base schedule
 * also runs under TP 2 (NCCL), same checks.
 *
 * Sampling extensions: the same workload with penalties, min_p and logprobs (graphs on, so
 * decode batches replay the extended graphs; and graphs off): every request ends with its
 * length, greedy first tokens agree with the simulator's, every logprobs report is sorted,
 * a greedy token's logprob is its top alternative's, and the first tokens' logprobs are
 * within 1e-2 of the simulator's. */
#include <math.h>

#include "tests/support/engine_harness.h"

#define N_REQ 8

static struct harness gpu, sim;

static void submit_all(struct harness *h)
{
    static int32_t prompts[N_REQ][120];
    for (int32_t i = 0; i < N_REQ; i++) {
        harness_prompt(prompts[i], 120, i % 2, 1024);
        for (int32_t j = 24 + 8 * i; j < 120; j++) prompts[i][j] = 3 + (j * 31 + i * 17) % 1000;
    }
    for (int32_t i = 0; i < N_REQ; i++) {
        struct rig_submit s;
        memset(&s, 0, sizeof s);
        s.uid = 100 + (uint64_t)i;
        s.prompt = prompts[i];
        s.prompt_len = 30 + 10 * i;
        s.sampling = rig_sampling_default();
        s.sampling.max_tokens = 6 + 2 * i;
        s.sampling.ignore_eos = true;
        s.sampling.temperature = i % 2 == 0 ? 0.0f : 0.9f;
        s.arrival_ns = -1;
        assert_int_equal(rig_engine_submit(h->engine, &s, NULL, 0), RIG_OK);
    }
}

static void config(struct rig_engine_config *c, const char *backend)
{
    harness_config(c, "tiny", false);
    c->backend = backend;
    c->prefill_budget = 64;
    c->max_running_req = 4;
    c->num_pages = 1024;
}

static void run(struct harness *h, const struct rig_engine_config *c)
{
    harness_open(h, c);
    submit_all(h);
    harness_run(h);
    assert_int_equal(h->request_count, N_REQ);
    for (int32_t i = 0; i < N_REQ; i++) {
        assert_int_equal(h->requests[i].finish_calls, 1);
        assert_int_equal(h->requests[i].reason, RIG_END_LENGTH);
    }
    for (int32_t i = 0; i < h->step_count; i++)
        assert_true(h->steps[i].device_end_ns >= h->steps[i].device_start_ns);
    for (int32_t i = 1; i < h->step_count; i++)
        assert_true(h->steps[i].device_start_ns >= h->steps[i - 1].device_end_ns);
}

/* Prints how many greedy tokens agree with the simulator; asserts first tokens agree. */
static void compare_greedy(const char *what)
{
    int32_t same = 0, total = 0;
    for (int32_t i = 0; i < N_REQ; i += 2) {
        const struct harness_request *g = harness_get(&gpu, 100 + (uint64_t)i);
        const struct harness_request *s = harness_get(&sim, 100 + (uint64_t)i);
        assert_int_equal(g->output_len, s->output_len);
        assert_int_equal(g->tokens[0], s->tokens[0]);
        for (int32_t k = 0; k < g->output_len; k++) same += g->tokens[k] == s->tokens[k];
        total += g->output_len;
    }
    printf("engine on cuda, %s: %d of %d greedy tokens equal to the simulator's\n", what, same,
           total);
}

static void test_engine_on_gpu(void **state)
{
    (void)state;
    struct rig_engine_config c;
    config(&c, "sim");
    run(&sim, &c);
    config(&c, "cuda");
    run(&gpu, &c);
    struct rig_engine_stats st;
    rig_engine_stats(gpu.engine, &st);
    assert_true(st.graph_replays > 0);
    assert_true(st.cached_tokens > 0);
    /* Overlap on the GPU: with the token download asynchronous (pinned memory), some launches
     * are issued while the previous batch still runs. A synchronous download (a wait before
     * it) makes this 0: the regression of dd78af1. */
    printf("engine on cuda: %lld of %lld launches ahead of the device\n",
           (long long)st.launches_ahead, (long long)st.launches_behind_inflight);
    assert_true(st.launches_ahead > 0);
    printf("engine on cuda: %lld steps, %lld graph replays, %lld cached tokens, last step "
           "ends at %lld ns\n", (long long)st.steps, (long long)st.graph_replays,
           (long long)st.cached_tokens, (long long)gpu.steps[gpu.step_count - 1].device_end_ns);
    compare_greedy("base");
    harness_close(&gpu);
    const char *names[3] = {"overlap off", "graphs off", "naive cache"};
    for (int v = 0; v < 3; v++) {
        config(&c, "cuda");
        if (v == 0) c.overlap = false;
        if (v == 1) c.cuda_graphs = false;
        if (v == 2) c.cache_type = RIG_CACHE_NAIVE;
        run(&gpu, &c);
        compare_greedy(names[v]);
        harness_close(&gpu);
    }
    struct rig_device *two[2] = {NULL, NULL};
    struct rig_device_config dc;
    memset(&dc, 0, sizeof dc);
    if (rig_hal_open("cuda", &dc, 2, two) == RIG_OK) {
        rig_hal_close(two[0]);
        rig_hal_close(two[1]);
        config(&c, "cuda");
        c.tp_size = 2;
        run(&gpu, &c);
        compare_greedy("tp 2");
        harness_close(&gpu);
    } else {
        printf("engine on cuda: one GPU, TP 2 not run\n");
    }
    harness_close(&sim);
}

/* The first token's logprob of each request (by uid - 100), and checks of every report. */
static float first_logprob[2][N_REQ];
static int32_t reports;

static void on_logprobs(void *ctx, uint64_t uid, int32_t index, int32_t token, float logprob,
                        int32_t top_count, const int32_t *top_ids, const float *top_logprobs)
{
    int which = ctx == (void *)&gpu;
    int64_t i = (int64_t)uid - 100;
    assert_true(i >= 0 && i < N_REQ && top_count == 3);
    for (int32_t k = 1; k < top_count; k++) assert_true(top_logprobs[k] <= top_logprobs[k - 1]);
    if (i % 2 == 0) { /* greedy */
        assert_int_equal(top_ids[0], token);
        assert_true(logprob == top_logprobs[0]);
    }
    if (index == 0) first_logprob[which][i] = logprob;
    reports++;
}

static void submit_extended(struct harness *h)
{
    static int32_t prompts[N_REQ][120];
    for (int32_t i = 0; i < N_REQ; i++) harness_prompt(prompts[i], 120, i % 3, 1024);
    for (int32_t i = 0; i < N_REQ; i++) {
        struct rig_submit s = harness_request_of(100 + (uint64_t)i, prompts[i], 30 + 10 * i);
        s.sampling.max_tokens = 6 + 2 * i;
        s.sampling.temperature = i % 2 == 0 ? 0.0f : 0.9f;
        s.sampling.repetition_penalty = i % 4 == 0 ? 1.3f : 1.0f;
        s.sampling.frequency_penalty = i % 3 == 0 ? 0.5f : 0.0f;
        s.sampling.presence_penalty = i % 4 == 2 ? 0.7f : 0.0f;
        s.sampling.min_p = i % 4 == 1 ? 0.05f : 0.0f;
        s.sampling.logprobs = i < 6 ? 3 : -1;
        assert_int_equal(rig_engine_submit(h->engine, &s, NULL, 0), RIG_OK);
    }
}

static void run_extended(struct harness *h, const struct rig_engine_config *c)
{
    harness_open_observing(h, c, harness_on_finish, on_logprobs);
    submit_extended(h);
    harness_run(h);
    for (int32_t i = 0; i < N_REQ; i++) {
        assert_int_equal(h->requests[i].finish_calls, 1);
        assert_int_equal(h->requests[i].reason, RIG_END_LENGTH);
    }
}

static void test_sampling_extensions_on_gpu(void **state)
{
    (void)state;
    struct rig_engine_config c;
    config(&c, "sim");
    run_extended(&sim, &c);
    for (int v = 0; v < 2; v++) {
        config(&c, "cuda");
        c.cuda_graphs = v == 0;
        reports = 0;
        run_extended(&gpu, &c);
        struct rig_engine_stats st;
        rig_engine_stats(gpu.engine, &st);
        assert_true(v == 1 || st.graph_replays > 0);
        assert_int_equal(reports, 6 + 8 + 10 + 12 + 14 + 16);
        compare_greedy(v == 0 ? "extensions, extended graphs" : "extensions, graphs off");
        float worst = 0.0f;
        for (int32_t i = 0; i < 6; i++)
            worst = fmaxf(worst, fabsf(first_logprob[1][i] - first_logprob[0][i]));
        printf("engine on cuda, extensions: first-token logprobs within %.3g of the "
               "simulator's\n", (double)worst);
        assert_true(worst <= 1e-2f);
        harness_close(&gpu);
    }
    harness_close(&sim);
}

int main(void)
{
    rig_backends_register();
    struct rig_device_config dc;
    memset(&dc, 0, sizeof dc);
    struct rig_device *device = NULL;
    if (rig_hal_open("cuda", &dc, 1, &device) != RIG_OK) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    rig_hal_close(device);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_on_gpu),
        cmocka_unit_test(test_sampling_extensions_on_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
