/* test_model_golden.c — rig's forward on the simulator against Hugging Face transformers.
 *
 * tests/data/golden/{qwen3,llama,qwen2} hold small seeded models written by
 * tools/golden/make_golden.py (transformers 5.17, bf16 weights) with, per model, five
 * prompts of lengths 1..111 and the reference: transformers computing in fp32 over those
 * bf16 weights (the exact result a bf16 engine approximates), its 32 greedy tokens per
 * prompt and its logits at each of those steps, plus how far transformers' own bf16 run is
 * from it at each step (0.4-0.9 %, relative L2 of the logits). The test builds the batches
 * a scheduler would (token-granular page table, KV slots, cumulative lengths) and checks,
 * for each model:
 *  - teacher forcing: all prompts prefilled as one batch, then 31 decode batches fed the
 *    reference's tokens; at every step rig's logits are within relative L2 error 1.25e-2
 *    of the reference, their mean error below 1e-2 and at most 1.2 times the mean error of
 *    transformers' bf16 run (rig must be as exact as the bf16 engine everyone trusts; a
 *    bf16 engine is not exact, so a bound below that noise would test luck); rig's greedy
 *    token is the reference's or a near-tie (below);
 *  - free running: rig's own 32 greedy tokens equal the reference's up to the first
 *    near-tie;
 *  - chunked prefill (first half of each prompt in one batch, its KV kept, the rest in a
 *    second, mixed batch) and a prefix-cache hit (a new page-table row reusing another
 *    row's KV slots for all but the last few prompt tokens) give the reference's logits;
 *  - TP=2 and TP=4 (one thread per rank; collectives meet at a barrier) give the
 *    reference's logits and TP=1's within 1.25e-2 (row-parallel partial sums are rounded
 *    to bf16 before the all-reduce, as on GPUs; llama's vocabulary 1001 is not divisible
 *    by 2 or 4; qwen2's single KV head is replicated).
 *
 * Near-ties: rig rounds to bf16 where a bf16 engine stores, so its logits differ from the
 * exact reference by a few 1e-3 relative. When the reference's two best tokens are closer
 * than that, either choice is right. A mismatch at a step is accepted only when the
 * reference's logit of rig's token is within tau = 4 x RMS(rig - reference over that
 * step's logits) of the reference's maximum (~2.8 standard deviations of the difference
 * of two logits' errors), and at most 5 % of steps may use it. After an accepted near-tie,
 * free running stops comparing that prompt: its contexts differ from then on.
 */
#include <jansson.h>

#include "tests/test_model_harness.h"

#define MEAN_RATIO_MAX 1.2 /* rig's mean error / HF bf16's mean error, over a model's steps */
#define TIE_SIGMAS 4.0

static int32_t argmax(const float *row, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

/* Checks rig's logits `row` of prompt p at step s against the reference; returns true when
 * rig's greedy token differs from the reference's by an accepted near-tie (fails the test
 * otherwise). */
static bool check_step(const struct golden *g, int p, int s, const float *row, const char *what)
{
    const float *ref = golden_row(g, p, s);
    double err = rel_l2(row, ref, g->vocab);
    if (!(err < g->step_max))
        fail_msg("%s: %s prompt %d step %d: relative L2 error %.3g >= %.3g", what,
                 g->config.name, p, s, err, g->step_max);
    int32_t mine = argmax(row, g->vocab), theirs = g->greedy[p][s];
    if (mine == theirs) return false;
    double sq = 0.0;
    for (int32_t i = 0; i < g->vocab; i++) sq += (double)(row[i] - ref[i]) * (row[i] - ref[i]);
    double tau = TIE_SIGMAS * sqrt(sq / g->vocab);
    double gap = (double)ref[theirs] - (double)ref[mine];
    if (gap > tau)
        fail_msg("%s: %s prompt %d step %d: rig picks %d, reference %d; gap %.4g > tau %.4g", what,
                 g->config.name, p, s, mine, theirs, gap, tau);
    return true;
}

/* Prefill of every prompt as one batch, then STEPS-1 decode batches fed the reference's tokens.
 * Leaves rig's logits in `out` [PROMPTS, STEPS, vocab]; returns the near-tie count. */
static int teacher_forcing(const struct golden *g, int32_t tp, float *out)
{
    struct group *grp = calloc(1, sizeof *grp);
    assert_non_null(grp);
    group_open(grp, &g->config, &(struct rig_weights_source){.path = g->dir}, tp, false);
    int ties = 0;
    char what[32];
    snprintf(what, sizeof what, "teacher forcing TP=%d", tp);
    for (int s = 0; s < STEPS; s++) {
        batch_begin(&grp->host, s == 0 ? RIG_BATCH_PREFILL : RIG_BATCH_DECODE, true);
        for (int p = 0; p < PROMPTS; p++) {
            if (s == 0)
                batch_add(&grp->host, p, 0, g->prompt_len[p], g->prompts[p], 0);
            else
                batch_add(&grp->host, p, g->prompt_len[p] + s - 1, 1, &g->greedy[p][s - 1], s);
        }
        group_forward(grp);
        for (int p = 0; p < PROMPTS; p++) {
            const float *row = grp->logits + (size_t)p * (size_t)g->vocab;
            /* The sampler at temperature 0 is the first maximum of the same logits. */
            assert_int_equal(grp->tokens[p], argmax(row, g->vocab));
            ties += check_step(g, p, s, row, what);
            memcpy(out + ((size_t)p * STEPS + (size_t)s) * (size_t)g->vocab, row,
                   sizeof(float) * (size_t)g->vocab);
        }
    }
    group_close(grp);
    free(grp);
    assert_true(ties * 20 <= PROMPTS * STEPS); /* at most 5 % near-ties */
    return ties;
}

static void run_teacher_forcing(const char *name)
{
    struct golden g;
    golden_load(&g, name);
    float *logits = malloc(sizeof(float) * PROMPTS * STEPS * (size_t)g.vocab);
    assert_non_null(logits);
    int ties = teacher_forcing(&g, 1, logits);
    double rig_sum = 0.0, rig_max = 0.0, hf_sum = 0.0, hf_max = 0.0;
    for (int p = 0; p < PROMPTS; p++) {
        for (int s = 0; s < STEPS; s++) {
            size_t row = (size_t)p * STEPS + (size_t)s;
            double err = rel_l2(logits + row * (size_t)g.vocab, golden_row(&g, p, s), g.vocab);
            rig_sum += err;
            rig_max = err > rig_max ? err : rig_max;
            hf_sum += g.hf_bf16_err[p][s];
            hf_max = g.hf_bf16_err[p][s] > hf_max ? g.hf_bf16_err[p][s] : hf_max;
        }
    }
    assert_true(rig_sum <= MEAN_RATIO_MAX * hf_sum);
    print_message("%s: TP=1 teacher forcing: %d near-ties in %d steps; relative L2 to the "
                  "reference: rig mean %.4f max %.4f, HF bf16 mean %.4f max %.4f\n", name,
                  ties, PROMPTS * STEPS, rig_sum / (PROMPTS * STEPS), rig_max,
                  hf_sum / (PROMPTS * STEPS), hf_max);
    free(logits);
    free(g.logits);
}

/* TP=2 and TP=4 against the reference and against TP=1. */
static void run_tensor_parallel(const char *name)
{
    struct golden g;
    golden_load(&g, name);
    size_t n = (size_t)PROMPTS * STEPS * (size_t)g.vocab;
    float *tp1 = malloc(sizeof(float) * n), *tpn = malloc(sizeof(float) * n);
    assert_non_null(tp1);
    assert_non_null(tpn);
    teacher_forcing(&g, 1, tp1);
    for (int32_t tp = 2; tp <= TP_MAX; tp *= 2) {
        teacher_forcing(&g, tp, tpn);
        double worst = 0.0;
        for (size_t row = 0; row < (size_t)PROMPTS * STEPS; row++) {
            double err = rel_l2(tpn + row * (size_t)g.vocab, tp1 + row * (size_t)g.vocab,
                                g.vocab);
            if (err > worst) worst = err;
        }
        print_message("%s: TP=%d vs TP=1: worst relative L2 %.3g\n", name, tp, worst);
        assert_true(worst < g.step_max);
    }
    free(tp1);
    free(tpn);
    free(g.logits);
}

/* rig's own greedy continuation: equal to the reference's up to the first near-tie. */
static void run_free_running(const char *name)
{
    struct golden g;
    golden_load(&g, name);
    struct group *grp = calloc(1, sizeof *grp);
    assert_non_null(grp);
    group_open(grp, &g.config, &(struct rig_weights_source){.path = g.dir}, 1, false);
    bool diverged[PROMPTS] = {false};
    int32_t previous[PROMPTS];
    int matched = 0;
    for (int s = 0; s < STEPS; s++) {
        batch_begin(&grp->host, s == 0 ? RIG_BATCH_PREFILL : RIG_BATCH_DECODE, true);
        for (int p = 0; p < PROMPTS; p++) {
            if (s == 0)
                batch_add(&grp->host, p, 0, g.prompt_len[p], g.prompts[p], 0);
            else
                batch_add(&grp->host, p, g.prompt_len[p] + s - 1, 1, &previous[p], s);
        }
        group_forward(grp);
        for (int p = 0; p < PROMPTS; p++) {
            previous[p] = grp->tokens[p];
            if (diverged[p]) continue;
            const float *row = grp->logits + (size_t)p * (size_t)g.vocab;
            diverged[p] = check_step(&g, p, s, row, "free running");
            matched += !diverged[p];
        }
    }
    print_message("%s: free running: %d of %d greedy tokens equal the reference's\n", name, matched,
                  PROMPTS * STEPS);
    group_close(grp);
    free(grp);
    free(g.logits);
}

/* Chunked prefill, then a prefix-cache hit in fresh rows, each followed by decode steps. */
static void run_chunked_and_prefix(const char *name)
{
    struct golden g;
    golden_load(&g, name);
    struct group *grp = calloc(1, sizeof *grp);
    assert_non_null(grp);
    group_open(grp, &g.config, &(struct rig_weights_source){.path = g.dir}, 1, false);
    int32_t half[PROMPTS];
    batch_begin(&grp->host, RIG_BATCH_PREFILL, false);
    for (int p = 0; p < PROMPTS; p++) {
        half[p] = g.prompt_len[p] / 2;
        if (half[p] > 0) batch_add(&grp->host, p, 0, half[p], g.prompts[p], 0);
    }
    group_forward(grp);
    /* The second chunks: a mixed batch (a one-token extend looks like a decode). */
    batch_begin(&grp->host, RIG_BATCH_MIXED, true);
    for (int p = 0; p < PROMPTS; p++)
        batch_add(&grp->host, p, half[p], g.prompt_len[p] - half[p], g.prompts[p] + half[p], 0);
    group_forward(grp);
    for (int p = 0; p < PROMPTS; p++)
        check_step(&g, p, 0, grp->logits + (size_t)p * (size_t)g.vocab, "chunked prefill");
    for (int s = 1; s < 4; s++) {
        batch_begin(&grp->host, RIG_BATCH_DECODE, true);
        for (int p = 0; p < PROMPTS; p++)
            batch_add(&grp->host, p, g.prompt_len[p] + s - 1, 1, &g.greedy[p][s - 1], s);
        group_forward(grp);
        for (int p = 0; p < PROMPTS; p++)
            check_step(&g, p, s, grp->logits + (size_t)p * (size_t)g.vocab, "after chunks");
    }
    /* Prefix hit: row PROMPTS + p points its first tokens at row p's KV slots. */
    batch_begin(&grp->host, RIG_BATCH_PREFILL, true);
    for (int p = 0; p < PROMPTS; p++) {
        int32_t row = PROMPTS + p, len = g.prompt_len[p];
        int32_t cached = len > 4 ? len - 3 : len - 1;
        memcpy(&grp->host.page_table[row * ROW_LEN], &grp->host.page_table[p * ROW_LEN],
               sizeof(int32_t) * (size_t)cached);
        batch_add(&grp->host, row, cached, len - cached, g.prompts[p] + cached, 0);
    }
    group_forward(grp);
    for (int p = 0; p < PROMPTS; p++)
        check_step(&g, p, 0, grp->logits + (size_t)p * (size_t)g.vocab, "prefix hit");
    batch_begin(&grp->host, RIG_BATCH_DECODE, true);
    for (int p = 0; p < PROMPTS; p++)
        batch_add(&grp->host, PROMPTS + p, g.prompt_len[p], 1, &g.greedy[p][0], 1);
    group_forward(grp);
    for (int p = 0; p < PROMPTS; p++)
        check_step(&g, p, 1, grp->logits + (size_t)p * (size_t)g.vocab, "decode after hit");
    group_close(grp);
    free(grp);
    free(g.logits);
}

static void test_qwen3_teacher_forcing(void **state) { (void)state; run_teacher_forcing("qwen3"); }
static void test_llama_teacher_forcing(void **state) { (void)state; run_teacher_forcing("llama"); }
static void test_qwen2_teacher_forcing(void **state) { (void)state; run_teacher_forcing("qwen2"); }
static void test_qwen3_free_running(void **state) { (void)state; run_free_running("qwen3"); }
static void test_llama_free_running(void **state) { (void)state; run_free_running("llama"); }
static void test_qwen2_free_running(void **state) { (void)state; run_free_running("qwen2"); }
static void test_qwen3_chunked_prefix(void **state)
{
    (void)state;
    run_chunked_and_prefix("qwen3");
}
static void test_llama_chunked_prefix(void **state)
{
    (void)state;
    run_chunked_and_prefix("llama");
}
static void test_qwen2_chunked_prefix(void **state)
{
    (void)state;
    run_chunked_and_prefix("qwen2");
}
static void test_qwen3_tp(void **state) { (void)state; run_tensor_parallel("qwen3"); }
static void test_llama_tp(void **state) { (void)state; run_tensor_parallel("llama"); }
static void test_qwen2_tp(void **state) { (void)state; run_tensor_parallel("qwen2"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3_teacher_forcing),
        cmocka_unit_test(test_llama_teacher_forcing),
        cmocka_unit_test(test_qwen2_teacher_forcing),
        cmocka_unit_test(test_qwen3_free_running),
        cmocka_unit_test(test_llama_free_running),
        cmocka_unit_test(test_qwen2_free_running),
        cmocka_unit_test(test_qwen3_chunked_prefix),
        cmocka_unit_test(test_llama_chunked_prefix),
        cmocka_unit_test(test_qwen2_chunked_prefix),
        cmocka_unit_test(test_qwen3_tp),
        cmocka_unit_test(test_llama_tp),
        cmocka_unit_test(test_qwen2_tp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
