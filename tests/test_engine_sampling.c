/* test_engine_sampling.c — the sampling extensions (min_p, presence / frequency / repetition
 * penalties, logprobs) through the engine on the simulator's tiny model (seeded dummy
 * weights, full math), invariant checker on after every step.
 *
 * The reference for every generated token is "teacher forcing": a second engine (no
 * extensions, overlap off) prefills the prompt plus the tokens generated so far and keeps
 * the logits of the last position — the raw logits the first engine had at that step (the
 * simulator's kernels give the same bits for a decode row and a prefill row). The test then
 * applies the penalties by brute force over the vocabulary and takes the first maximum, or
 * computes the log-softmax in long double, and compares.
 *
 * - Validation at submit: each out-of-range field (NaN included) is RIG_E_INVALID with a
 *   message naming the field, and nothing is queued; the edges of each range are accepted;
 *   a vocabulary under 20 tokens bounds logprobs (its extended graphs give that many).
 * - Penalties change greedy output as the formulas say: six requests in one batch (plain,
 *   each penalty alone, all three, all three rewarding repeats) checked token by token; the
 *   penalised requests do not produce the plain greedy sequence; chunked prefill (the
 *   penalty reads the whole prompt) and overlap off give the same tokens; all of it again
 *   at TP 2 (every rank penalises its copy of the gathered logits).
 * - Logprobs: on_logprobs right after on_token for the same index, only for requests that
 *   asked; the sampled token's logprob and the top-N equal the reference log-softmax (greedy:
 *   temperature 1; sampled: the request's temperature), top-N sorted, ids distinct, a greedy
 *   token's logprob is the top one to the bit.
 * - min_p 1 at temperature 1 is greedy; with min_p 0.3 every sampled token has
 *   p >= 0.3 p_max under the reference.
 * - Decode batches with an extended request replay the extended graphs and give the tokens
 *   and logprobs of an eager run; plain decode batches replay the plain graphs.
 */
#include <math.h>

#include "tests/support/engine_harness.h"

static struct harness h;

enum { VOCAB = 1024, PROMPT = 12, STEPS = 10, LOGPROB_ROWS = 256 };

/* What on_logprobs reported, in arrival order. */
struct logprob_row {
    uint64_t uid;
    int32_t index, token, top_count;
    float logprob;
    int32_t top_ids[RIG_TOP_LOGPROBS_MAX];
    float top_logprobs[RIG_TOP_LOGPROBS_MAX];
};
static struct logprob_row logprob_rows[LOGPROB_ROWS];
static int32_t logprob_count;

static void on_logprobs(void *ctx, uint64_t uid, int32_t index, int32_t token, float logprob,
                        int32_t top_count, const int32_t *top_ids, const float *top_logprobs)
{
    struct harness *hh = ctx;
    /* right after on_token of the same token */
    assert_true(hh->log_len > 0 && hh->log[hh->log_len - 1] == 'T');
    assert_int_equal(hh->token_uids[hh->token_uid_count - 1], uid);
    assert_int_equal(harness_get(hh, uid)->token_count - 1, index);
    assert_int_equal(harness_get(hh, uid)->tokens[index], token);
    harness_log(hh, 'L');
    assert_true(logprob_count < LOGPROB_ROWS);
    struct logprob_row *row = &logprob_rows[logprob_count++];
    *row = (struct logprob_row){.uid = uid, .index = index, .token = token,
                                .top_count = top_count, .logprob = logprob};
    assert_true(top_count >= 0 && top_count <= RIG_TOP_LOGPROBS_MAX);
    memcpy(row->top_ids, top_ids, sizeof(int32_t) * (size_t)top_count);
    memcpy(row->top_logprobs, top_logprobs, sizeof(float) * (size_t)top_count);
}

static void open_engine(const struct rig_engine_config *c)
{
    logprob_count = 0;
    harness_open_observing(&h, c, harness_on_finish, on_logprobs);
}

static void real_config(struct rig_engine_config *c, int32_t tp)
{
    harness_config(c, "tiny", false);
    c->max_seq_len = 256;
    c->num_pages = 1024;
    c->tp_size = tp;
}

/* The reference: raw last-position logits of a prompt, from an engine without extensions. */
struct reference {
    struct rig_engine *engine;
    struct rig_stream *stream;
    uint64_t next_uid;
};

static void reference_open(struct reference *ref, int32_t tp)
{
    rig_backends_register();
    struct rig_engine_config c;
    real_config(&c, tp);
    c.overlap = false;
    char error[256] = "";
    assert_int_equal(rig_engine_create(&c, NULL, &ref->engine, error, sizeof error), RIG_OK);
    struct rig_model *model = rig_engine_model(ref->engine, 0);
    rig_model_keep_logits(model, true);
    assert_int_equal(rig_hal_stream_create(rig_model_device(model), &ref->stream), RIG_OK);
    ref->next_uid = 1;
}

static void reference_close(struct reference *ref)
{
    rig_hal_stream_destroy(ref->stream);
    rig_engine_destroy(ref->engine);
}

/* logits[VOCAB] after `prompt` followed by `generated` tokens. */
static void reference_logits(struct reference *ref, const int32_t *prompt, int32_t prompt_len,
                             const int32_t *generated, int32_t generated_len, float *logits)
{
    int32_t text[PROMPT + 64];
    assert_true(prompt_len + generated_len <= (int32_t)RIG_ARRAY_LEN(text));
    memcpy(text, prompt, sizeof(int32_t) * (size_t)prompt_len);
    memcpy(text + prompt_len, generated, sizeof(int32_t) * (size_t)generated_len);
    struct rig_submit s = harness_request_of(ref->next_uid++, text, prompt_len + generated_len);
    s.sampling.max_tokens = 1;
    assert_int_equal(rig_engine_submit(ref->engine, &s, NULL, 0), RIG_OK);
    char error[256];
    if (rig_driver_run(ref->engine, NULL, NULL, error, sizeof error) != RIG_OK)
        fail_msg("driver: %s", error);
    struct rig_model *model = rig_engine_model(ref->engine, 0);
    assert_int_equal(rig_model_download_logits(model, ref->stream, 1, logits), RIG_OK);
}

static int first_max(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) best = x[i] > x[best] ? i : best;
    return best;
}

struct extensions {
    const char *field; /* the one out of range, for the invalid cases */
    float min_p, presence, frequency, repetition;
    int32_t logprobs;
};

static struct rig_submit submit_with(uint64_t uid, const int32_t *prompt, int32_t len,
                                     const struct extensions *x)
{
    struct rig_submit s = harness_request_of(uid, prompt, len);
    s.sampling.min_p = x->min_p;
    s.sampling.presence_penalty = x->presence;
    s.sampling.frequency_penalty = x->frequency;
    s.sampling.repetition_penalty = x->repetition;
    s.sampling.logprobs = x->logprobs;
    return s;
}

static void test_validation(void **state)
{
    (void)state;
    struct rig_engine_config c;
    harness_config(&c, "tiny", true);
    harness_open(&h, &c);
    int32_t prompt[4] = {1, 2, 3, 4};
    const struct extensions bad[] = {
        {"min_p", -0.01f, 0, 0, 1, -1},
        {"min_p", 1.01f, 0, 0, 1, -1},
        {"min_p", NAN, 0, 0, 1, -1},
        {"presence_penalty", 0, -2.5f, 0, 1, -1},
        {"presence_penalty", 0, 2.01f, 0, 1, -1},
        {"presence_penalty", 0, NAN, 0, 1, -1},
        {"frequency_penalty", 0, 0, -2.01f, 1, -1},
        {"frequency_penalty", 0, 0, 3.0f, 1, -1},
        {"frequency_penalty", 0, 0, INFINITY, 1, -1},
        {"repetition_penalty", 0, 0, 0, 0.0f, -1},
        {"repetition_penalty", 0, 0, 0, -1.0f, -1},
        {"repetition_penalty", 0, 0, 0, 2.5f, -1},
        {"repetition_penalty", 0, 0, 0, NAN, -1},
        {"logprobs", 0, 0, 0, 1, -2},
        {"logprobs", 0, 0, 0, 1, 21},
    };
    for (size_t i = 0; i < RIG_ARRAY_LEN(bad); i++) {
        struct rig_submit s = submit_with(100 + i, prompt, 4, &bad[i]);
        char reason[256] = "";
        assert_int_equal(rig_engine_submit(h.engine, &s, reason, sizeof reason), RIG_E_INVALID);
        if (strstr(reason, bad[i].field) == NULL)
            fail_msg("case %zu: \"%s\" does not name %s", i, reason, bad[i].field);
        assert_null(rig_engine_find(h.engine, s.uid));
    }
    const struct extensions edges[] = {
        {"", 0, -2, -2, 2, 20},
        {"", 1, 2, 2, 0.01f, 0},
        {"", 0.5f, 0, 0, 1, -1},
    };
    for (size_t i = 0; i < RIG_ARRAY_LEN(edges); i++) {
        struct rig_submit s = submit_with(200 + i, prompt, 4, &edges[i]);
        assert_int_equal(rig_engine_submit(h.engine, &s, NULL, 0), RIG_OK);
    }
    harness_run(&h);
    for (size_t i = 0; i < RIG_ARRAY_LEN(edges); i++)
        assert_int_equal(harness_get(&h, 200 + i)->reason, RIG_END_LENGTH);
    harness_close(&h);
    /* a vocabulary of 16 tokens bounds logprobs too (and the extended graphs give 16) */
    c.model.vocab_size = 16;
    harness_open(&h, &c);
    const struct extensions too_many = {"logprobs", 0, 0, 0, 1, 17}, all = {"", 0, 0, 0, 1, 16};
    struct rig_submit s = submit_with(300, prompt, 4, &too_many);
    char reason[256] = "";
    assert_int_equal(rig_engine_submit(h.engine, &s, reason, sizeof reason), RIG_E_INVALID);
    assert_non_null(strstr(reason, "logprobs 17 is more than the vocabulary's 16 tokens"));
    s = submit_with(301, prompt, 4, &all);
    assert_int_equal(rig_engine_submit(h.engine, &s, NULL, 0), RIG_OK);
    harness_run(&h);
    assert_int_equal(harness_get(&h, 301)->reason, RIG_END_LENGTH);
    harness_close(&h);
}


/* --- penalties ----------------------------------------------------------------------------- */

struct penalties {
    uint64_t uid;
    float repetition, frequency, presence;
};

static const struct penalties penalty_cases[] = {
    {1, 1.0f, 0.0f, 0.0f}, /* plain, in the same batches */
    {2, 1.8f, 0.0f, 0.0f},  {3, 1.0f, 1.2f, 0.0f},    {4, 1.0f, 0.0f, 1.5f},
    {5, 1.3f, 0.7f, 0.4f},  {6, 0.5f, -0.5f, -0.5f}, /* rewards repeats */
};

/* A prompt with repeated ids, so that the repetition penalty meets duplicates in it. */
static void penalty_prompt(int32_t *prompt)
{
    static const int32_t ids[PROMPT] = {5, 9, 5, 17, 9, 5, 300, 301, 17, 5, 42, 9};
    memcpy(prompt, ids, sizeof ids);
}

static void submit_penalties(const int32_t *prompt)
{
    for (size_t i = 0; i < RIG_ARRAY_LEN(penalty_cases); i++) {
        const struct penalties *p = &penalty_cases[i];
        struct rig_submit s = harness_request_of(p->uid, prompt, PROMPT);
        s.sampling.max_tokens = STEPS;
        s.sampling.repetition_penalty = p->repetition;
        s.sampling.frequency_penalty = p->frequency;
        s.sampling.presence_penalty = p->presence;
        assert_int_equal(rig_engine_submit(h.engine, &s, NULL, 0), RIG_OK);
    }
}

/* The contract's penalties applied to a whole row by brute force over the vocabulary. */
static void naive_penalties(float *logits, const int32_t *prompt, const int32_t *generated,
                            int32_t k, const struct penalties *p)
{
    for (int32_t v = 0; v < VOCAB; v++) {
        bool seen = false;
        int32_t count = 0;
        for (int32_t i = 0; i < PROMPT; i++) seen |= prompt[i] == v;
        for (int32_t i = 0; i < k; i++) count += generated[i] == v;
        if (!seen && count == 0) continue;
        float x = logits[v] > 0.0f ? logits[v] / p->repetition : logits[v] * p->repetition;
        x = fmaf(-(float)count, p->frequency, x);
        logits[v] = count > 0 ? x - p->presence : x;
    }
}

/* The penalty cases at TP degree `tp` (the reference engine has the same degree: TP changes
 * the floating-point sums of the logits). */
static void check_penalties(int32_t tp)
{
    int32_t prompt[PROMPT];
    penalty_prompt(prompt);
    struct rig_engine_config c;
    real_config(&c, tp);
    open_engine(&c);
    submit_penalties(prompt);
    harness_run(&h);
    static struct harness first;
    first = h;
    harness_close(&h);
    struct reference ref;
    reference_open(&ref, tp);
    float logits[VOCAB];
    for (size_t i = 0; i < RIG_ARRAY_LEN(penalty_cases); i++) {
        const struct harness_request *r = harness_get(&first, penalty_cases[i].uid);
        assert_int_equal(r->token_count, STEPS);
        for (int32_t k = 0; k < STEPS; k++) {
            reference_logits(&ref, prompt, PROMPT, r->tokens, k, logits);
            naive_penalties(logits, prompt, r->tokens, k, &penalty_cases[i]);
            if (first_max(logits, VOCAB) != r->tokens[k])
                fail_msg("request %zu step %d: token %d, the penalised argmax is %d", i, k,
                         r->tokens[k], first_max(logits, VOCAB));
        }
    }
    reference_close(&ref);
    const struct harness_request *plain = harness_get(&first, 1), *all = harness_get(&first, 5);
    assert_memory_not_equal(plain->tokens, all->tokens, sizeof(int32_t) * STEPS);
    assert_memory_not_equal(plain->tokens, harness_get(&first, 2)->tokens,
                            sizeof(int32_t) * STEPS);
    /* chunked prefill (budget 8 < 12) and overlap off: the same tokens */
    c.prefill_budget = 8;
    c.overlap = false;
    open_engine(&c);
    submit_penalties(prompt);
    harness_run(&h);
    for (size_t i = 0; i < RIG_ARRAY_LEN(penalty_cases); i++)
        assert_memory_equal(harness_get(&h, penalty_cases[i].uid)->tokens,
                            harness_get(&first, penalty_cases[i].uid)->tokens,
                            sizeof(int32_t) * STEPS);
    harness_close(&h);
}

static void test_penalties_greedy(void **state)
{
    (void)state;
    check_penalties(1);
}

static void test_penalties_tp2(void **state)
{
    (void)state;
    check_penalties(2);
}

/* --- logprobs ------------------------------------------------------------------------------ */

struct logprob_case {
    uint64_t uid;
    float temperature;
    int32_t top_k, logprobs;
};

static const struct logprob_case logprob_cases[] = {
    {10, 0.0f, -1, 5}, {11, 0.8f, -1, 3}, {12, 0.0f, -1, 0}, {13, 0.0f, -1, -1},
    {14, 1.3f, 50, 20},
};

static void submit_logprobs(const int32_t *prompt, bool with_logprobs)
{
    for (size_t i = 0; i < RIG_ARRAY_LEN(logprob_cases); i++) {
        const struct logprob_case *q = &logprob_cases[i];
        struct rig_submit s = harness_request_of(q->uid, prompt, PROMPT);
        s.sampling.max_tokens = STEPS;
        s.sampling.temperature = q->temperature;
        s.sampling.top_k = q->top_k;
        s.sampling.has_seed = true;
        s.sampling.seed = 77 + q->uid;
        s.sampling.logprobs = with_logprobs ? q->logprobs : -1;
        assert_int_equal(rig_engine_submit(h.engine, &s, NULL, 0), RIG_OK);
    }
}

/* Row `row` against the reference: logprob, the top ids (brute-force ranking, ties to the
 * lower id) and their logprobs, in long double. */
static void check_logprob_row(const struct logprob_row *row, const struct logprob_case *q,
                              const float *logits)
{
    float t = q->temperature > 0.0f ? q->temperature : 1.0f;
    long double total = 0.0L;
    for (int v = 0; v < VOCAB; v++) total += expl((long double)(logits[v] / t));
    long double lse = logl(total);
    double want = (double)((long double)(logits[row->token] / t) - lse);
    if (!(fabs(row->logprob - want) <= 1e-5))
        fail_msg("request %llu step %d: logprob %.9g, want %.9g", (unsigned long long)row->uid,
                 row->index, row->logprob, want);
    assert_int_equal(row->top_count, q->logprobs);
    bool taken[VOCAB] = {false};
    for (int32_t k = 0; k < row->top_count; k++) {
        int best = -1;
        for (int v = 0; v < VOCAB; v++)
            if (!taken[v] && (best < 0 || logits[v] / t > logits[best] / t)) best = v;
        taken[best] = true;
        assert_int_equal(row->top_ids[k], best);
        double top = (double)((long double)(logits[best] / t) - lse);
        assert_true(fabs(row->top_logprobs[k] - top) <= 1e-5);
        if (k > 0) assert_true(row->top_logprobs[k] <= row->top_logprobs[k - 1]);
    }
    if (q->temperature <= 0.0f && row->top_count > 0) {
        assert_int_equal(row->top_ids[0], row->token);
        assert_true(row->logprob == row->top_logprobs[0]); /* the greedy token is the top */
    }
}

static void test_logprobs(void **state)
{
    (void)state;
    int32_t prompt[PROMPT];
    harness_prompt(prompt, PROMPT, 3, VOCAB);
    struct rig_engine_config c;
    real_config(&c, 1);
    open_engine(&c);
    submit_logprobs(prompt, true);
    harness_run(&h);
    harness_close(&h);
    static struct harness first;
    first = h;
    int32_t rows = logprob_count;
    assert_int_equal(rows, 4 * STEPS); /* every token of the four that asked, none of 13 */
    struct reference ref;
    reference_open(&ref, 1);
    float logits[VOCAB];
    for (int32_t i = 0; i < rows; i++) {
        const struct logprob_row *row = &logprob_rows[i];
        const struct logprob_case *q = NULL;
        for (size_t k = 0; k < RIG_ARRAY_LEN(logprob_cases); k++)
            if (logprob_cases[k].uid == row->uid) q = &logprob_cases[k];
        assert_non_null(q);
        assert_true(q->logprobs >= 0);
        const int32_t *tokens = harness_get(&first, row->uid)->tokens;
        reference_logits(&ref, prompt, PROMPT, tokens, row->index, logits);
        check_logprob_row(row, q, logits);
    }
    reference_close(&ref);
    /* asking for logprobs changes no token */
    open_engine(&c);
    submit_logprobs(prompt, false);
    harness_run(&h);
    assert_int_equal(logprob_count, 0);
    for (size_t i = 0; i < RIG_ARRAY_LEN(logprob_cases); i++)
        assert_memory_equal(harness_get(&h, logprob_cases[i].uid)->tokens,
                            harness_get(&first, logprob_cases[i].uid)->tokens,
                            sizeof(int32_t) * STEPS);
    harness_close(&h);
}

/* --- min_p and graphs ---------------------------------------------------------------------- */

static void submit_min_p(uint64_t uid, const int32_t *prompt, float temperature, float min_p,
                         int32_t max_tokens)
{
    struct rig_submit s = harness_request_of(uid, prompt, PROMPT);
    s.sampling.max_tokens = max_tokens;
    s.sampling.temperature = temperature;
    s.sampling.min_p = min_p;
    s.sampling.has_seed = true;
    s.sampling.seed = 5;
    assert_int_equal(rig_engine_submit(h.engine, &s, NULL, 0), RIG_OK);
}

static void test_min_p(void **state)
{
    (void)state;
    int32_t prompt[PROMPT];
    harness_prompt(prompt, PROMPT, 4, VOCAB);
    struct rig_engine_config c;
    real_config(&c, 1);
    open_engine(&c);
    submit_min_p(20, prompt, 0.0f, 0.0f, STEPS);
    submit_min_p(21, prompt, 1.0f, 1.0f, STEPS);
    submit_min_p(22, prompt, 1.5f, 0.3f, STEPS);
    harness_run(&h);
    const int32_t *greedy = harness_get(&h, 20)->tokens, *cut = harness_get(&h, 22)->tokens;
    assert_memory_equal(harness_get(&h, 21)->tokens, greedy, sizeof(int32_t) * STEPS);
    struct reference ref;
    reference_open(&ref, 1);
    float logits[VOCAB];
    for (int32_t k = 0; k < STEPS; k++) {
        reference_logits(&ref, prompt, PROMPT, cut, k, logits);
        double z_max = logits[first_max(logits, VOCAB)] / 1.5f;
        double ratio = exp((double)(logits[cut[k]] / 1.5f) - z_max);
        if (!(ratio >= 0.3)) fail_msg("step %d: token %d has p / p_max = %g", k, cut[k], ratio);
    }
    reference_close(&ref);
    harness_close(&h);
}

/* Decode steps that hold a request with an extension replay the extended graphs (the others
 * the plain ones); tokens and logprobs equal an eager run (graphs off), and the plain
 * request's tokens are those it gets alone. */
static void run_mixed(const struct rig_engine_config *c, const int32_t *prompt)
{
    open_engine(c);
    submit_min_p(30, prompt, 0.0f, 0.0f, STEPS);
    struct rig_submit s = harness_request_of(31, prompt, PROMPT);
    s.sampling.max_tokens = 4;
    s.sampling.logprobs = 2;
    s.sampling.temperature = 0.9f;
    s.sampling.min_p = 0.1f;
    s.sampling.presence_penalty = 1.0f;
    assert_int_equal(rig_engine_submit(h.engine, &s, NULL, 0), RIG_OK);
    harness_run(&h);
}

static void test_extended_batches_replay_graphs(void **state)
{
    (void)state;
    int32_t prompt[PROMPT];
    harness_prompt(prompt, PROMPT, 5, VOCAB);
    struct rig_engine_config c;
    real_config(&c, 1);
    assert_true(c.cuda_graphs);
    open_engine(&c);
    submit_min_p(30, prompt, 0.0f, 0.0f, STEPS);
    harness_run(&h);
    int32_t alone[STEPS];
    memcpy(alone, harness_get(&h, 30)->tokens, sizeof alone);
    harness_close(&h);
    c.cuda_graphs = false;
    run_mixed(&c, prompt);
    static struct harness eager;
    static struct logprob_row eager_rows[LOGPROB_ROWS];
    int32_t eager_count = logprob_count;
    memcpy(eager_rows, logprob_rows, sizeof eager_rows);
    harness_close(&h);
    eager = h;
    c.cuda_graphs = true;
    run_mixed(&c, prompt);
    assert_memory_equal(harness_get(&h, 30)->tokens, alone, sizeof alone);
    assert_memory_equal(harness_get(&h, 31)->tokens, harness_get(&eager, 31)->tokens,
                        sizeof(int32_t) * 4);
    assert_int_equal(logprob_count, eager_count);
    assert_int_equal(logprob_count, 4);
    assert_memory_equal(logprob_rows, eager_rows, sizeof(logprob_rows[0]) * 4);
    int32_t extended = 0, plain = 0;
    for (int32_t i = 0; i < h.step_count; i++) {
        const struct rig_step_record *step = &h.steps[i];
        if (step->phase != RIG_BATCH_DECODE) continue;
        assert_true(step->graph_used);
        bool has = false;
        for (int32_t k = 0; k < step->batch_size; k++) has |= h.step_uids[i][k] == 31;
        extended += has;
        plain += !has;
    }
    assert_true(extended >= 2 && plain >= 2);
    harness_close(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_penalties_greedy),
        cmocka_unit_test(test_penalties_tp2),
        cmocka_unit_test(test_logprobs),
        cmocka_unit_test(test_min_p),
        cmocka_unit_test(test_extended_batches_replay_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
