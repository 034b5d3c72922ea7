/* test_model_harness.h — a minimal scheduler for the model tests (test_model*.c).
 *
 * Builds struct rig_forward_batch the way the scheduler does — a token-granular page table
 * ([ROWS, ROW_LEN], slot 1 + row * ROW_LEN + position unless a row points elsewhere, slot 0
 * the dummy), per-token ids / positions / KV slots, per-request cumulative lengths — in one
 * METADATA buffer per rank, and runs it on every TP rank (a thread per rank, since
 * collectives block until all ranks arrive). Static functions: included by one test file
 * each.
 */
#ifndef RIG_TEST_MODEL_HARNESS_H
#define RIG_TEST_MODEL_HARNESS_H

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/model.h"
#include "tests/support/test_support.h"

#define ROWS 16
#define ROW_LEN 256
#define MAX_TOKENS 256
#define TP_MAX 4
#define PROMPTS 5
#define STEPS 32
#define STEP_RATIO_MAX 1.5 /* rig's error at any step / HF bf16's worst error on the model */

struct batch_host {
    enum rig_batch_phase phase;
    bool sample;
    int32_t requests, tokens;
    int32_t input_ids[MAX_TOKENS], positions[MAX_TOKENS], out_loc[MAX_TOKENS];
    int32_t table_idx[ROWS], cu_q[ROWS + 1], kv_len[ROWS], last_idx[ROWS];
    float temperature[ROWS], top_p[ROWS];
    int32_t top_k[ROWS], sample_pos[ROWS];
    int64_t seed[ROWS];
    int32_t page_table[ROWS * ROW_LEN];
};

struct rank {
    struct rig_device *device;
    struct rig_stream *stream;
    struct rig_comm *comm;
    struct rig_model *model;
    struct rig_buffer *meta;
    const struct batch_host *host;
    enum rig_status status;
};

struct group {
    int32_t tp;
    struct rig_device *devices[TP_MAX];
    struct rig_comm *comms[TP_MAX];
    struct rank ranks[TP_MAX];
    struct batch_host host;
    bool read_logits;           /* false in timing-only mode (phantom) or for a big vocab */
    float logits[ROWS * 1024];  /* [requests, vocab] of the last forward */
    int32_t tokens[ROWS];       /* sampled tokens of the last forward */
};

/* Byte offsets of the batch arrays in the METADATA buffer. */
enum {
    OFF_IDS = 0,
    OFF_POS = OFF_IDS + 4 * MAX_TOKENS,
    OFF_LOC = OFF_POS + 4 * MAX_TOKENS,
    OFF_TABLE_IDX = OFF_LOC + 4 * MAX_TOKENS,
    OFF_CU_Q = OFF_TABLE_IDX + 4 * ROWS,
    OFF_KV_LEN = OFF_CU_Q + 4 * (ROWS + 8),
    OFF_LAST = OFF_KV_LEN + 4 * ROWS,
    OFF_TEMP = OFF_LAST + 4 * ROWS,
    OFF_TOP_K = OFF_TEMP + 4 * ROWS,
    OFF_TOP_P = OFF_TOP_K + 4 * ROWS,
    OFF_SEED = OFF_TOP_P + 4 * ROWS,
    OFF_SPOS = OFF_SEED + 8 * ROWS,
    OFF_OUT = OFF_SPOS + 4 * ROWS,
    OFF_PAGE = OFF_OUT + 4 * ROWS,
    META_BYTES = OFF_PAGE + 4 * ROWS * ROW_LEN,
};

/* Opens `tp` simulator devices and creates a model rank on each; fails the test on error. */
static void group_open(struct group *grp, const struct rig_model_config *config,
                       const struct rig_weights_source *source, int32_t tp, bool timing_only)
{
    memset(grp, 0, sizeof *grp);
    grp->tp = tp;
    grp->read_logits = !timing_only && config->vocab_size <= 1024;
    rig_test_open_sim(tp, timing_only, grp->devices);
    if (tp > 1) assert_int_equal(rig_hal_comm_create(grp->devices, tp, grp->comms), RIG_OK);
    struct rig_model_limits limits = {.max_tokens = MAX_TOKENS, .max_requests = ROWS,
                                      .kv_slots = 1 + ROWS * ROW_LEN};
    for (int32_t r = 0; r < tp; r++) {
        struct rank *rank = &grp->ranks[r];
        char error[256];
        rank->device = grp->devices[r];
        rank->comm = grp->comms[r];
        assert_int_equal(rig_hal_stream_create(rank->device, &rank->stream), RIG_OK);
        enum rig_status status = rig_model_create(config, source, &limits, rank->device,
                                                  rank->stream, rank->comm, &rank->model,
                                                  error, sizeof error);
        if (status != RIG_OK) fail_msg("rank %d: %s", r, error);
        rig_model_keep_logits(rank->model, true);
        assert_int_equal(rig_hal_buffer_alloc(rank->device, META_BYTES, RIG_MEMORY_METADATA,
                                              &rank->meta), RIG_OK);
    }
}

static void group_close(struct group *grp)
{
    for (int32_t r = 0; r < grp->tp; r++) {
        rig_hal_buffer_free(grp->ranks[r].meta);
        rig_model_destroy(grp->ranks[r].model);
        rig_hal_stream_destroy(grp->ranks[r].stream);
        if (grp->comms[r] != NULL) rig_hal_comm_destroy(grp->comms[r]);
    }
    for (int32_t r = 0; r < grp->tp; r++) rig_hal_close(grp->devices[r]);
}

static void batch_begin(struct batch_host *h, enum rig_batch_phase phase, bool sample)
{
    h->phase = phase;
    h->sample = sample;
    h->requests = 0;
    h->tokens = 0;
    h->cu_q[0] = 0;
}

/* Appends a request: `count` new tokens of table row `row` after `start` cached ones. */
static void batch_add(struct batch_host *h, int32_t row, int32_t start, int32_t count,
                      const int32_t *tokens, int32_t sample_pos)
{
    assert_true(h->requests < ROWS && h->tokens + count <= MAX_TOKENS);
    assert_true(start + count <= ROW_LEN && count >= 1);
    for (int32_t i = 0; i < count; i++) {
        int32_t *slot = &h->page_table[row * ROW_LEN + start + i];
        if (*slot == 0) *slot = 1 + row * ROW_LEN + start + i; /* slot 0: the dummy */
        h->input_ids[h->tokens] = tokens[i];
        h->positions[h->tokens] = start + i;
        h->out_loc[h->tokens] = *slot;
        h->tokens++;
    }
    int32_t r = h->requests++;
    h->table_idx[r] = row;
    h->kv_len[r] = start + count;
    h->cu_q[r + 1] = h->tokens;
    h->last_idx[r] = h->tokens - 1;
    h->temperature[r] = 0.0f;
    h->top_k[r] = 0;
    h->top_p[r] = 1.0f;
    h->seed[r] = 7;
    h->sample_pos[r] = sample_pos;
}

static struct rig_tensor meta_1d(struct rank *rank, size_t offset, enum rig_dtype dtype,
                                 int64_t n)
{
    return rig_tensor_1d((uint8_t *)rig_hal_buffer_ptr(rank->meta) + offset, dtype, n);
}

static enum rig_status rank_upload(struct rank *rank, const struct batch_host *h)
{
    static const struct {
        size_t offset, field, size;
    } parts[] = {
        {OFF_IDS, offsetof(struct batch_host, input_ids), 4 * MAX_TOKENS},
        {OFF_POS, offsetof(struct batch_host, positions), 4 * MAX_TOKENS},
        {OFF_LOC, offsetof(struct batch_host, out_loc), 4 * MAX_TOKENS},
        {OFF_TABLE_IDX, offsetof(struct batch_host, table_idx), 4 * ROWS},
        {OFF_CU_Q, offsetof(struct batch_host, cu_q), 4 * (ROWS + 1)},
        {OFF_KV_LEN, offsetof(struct batch_host, kv_len), 4 * ROWS},
        {OFF_LAST, offsetof(struct batch_host, last_idx), 4 * ROWS},
        {OFF_TEMP, offsetof(struct batch_host, temperature), 4 * ROWS},
        {OFF_TOP_K, offsetof(struct batch_host, top_k), 4 * ROWS},
        {OFF_TOP_P, offsetof(struct batch_host, top_p), 4 * ROWS},
        {OFF_SEED, offsetof(struct batch_host, seed), 8 * ROWS},
        {OFF_SPOS, offsetof(struct batch_host, sample_pos), 4 * ROWS},
        {OFF_PAGE, offsetof(struct batch_host, page_table), 4 * ROWS * ROW_LEN},
    };
    for (size_t i = 0; i < RIG_ARRAY_LEN(parts); i++) {
        enum rig_status status = rig_hal_buffer_upload(rank->stream, rank->meta,
                                                       parts[i].offset,
                                                       (const uint8_t *)h + parts[i].field,
                                                       parts[i].size);
        if (status != RIG_OK) return status;
    }
    return RIG_OK;
}

/* Uploads the batch and issues the forward on one rank (run on the rank's thread). */
static void *rank_forward(void *arg)
{
    struct rank *rank = arg;
    const struct batch_host *h = rank->host;
    int32_t R = h->requests, T = h->tokens;
    rank->status = rank_upload(rank, h);
    if (rank->status != RIG_OK) return NULL;
    struct rig_forward_batch b = {
        .phase = h->phase, .num_requests = R, .num_tokens = T, .padded_requests = R,
        .padded_tokens = T, .sample = h->sample,
        .input_ids = meta_1d(rank, OFF_IDS, RIG_DTYPE_I32, T),
        .positions = meta_1d(rank, OFF_POS, RIG_DTYPE_I32, T),
        .out_loc = meta_1d(rank, OFF_LOC, RIG_DTYPE_I32, T),
        .table_idx = meta_1d(rank, OFF_TABLE_IDX, RIG_DTYPE_I32, R),
        .cu_q = meta_1d(rank, OFF_CU_Q, RIG_DTYPE_I32, R + 1),
        .kv_len = meta_1d(rank, OFF_KV_LEN, RIG_DTYPE_I32, R),
        .last_idx = meta_1d(rank, OFF_LAST, RIG_DTYPE_I32, R),
        .temperature = meta_1d(rank, OFF_TEMP, RIG_DTYPE_F32, R),
        .top_k = meta_1d(rank, OFF_TOP_K, RIG_DTYPE_I32, R),
        .top_p = meta_1d(rank, OFF_TOP_P, RIG_DTYPE_F32, R),
        .seed = meta_1d(rank, OFF_SEED, RIG_DTYPE_I64, R),
        .sample_pos = meta_1d(rank, OFF_SPOS, RIG_DTYPE_I32, R),
        .page_table = rig_tensor_2d((uint8_t *)rig_hal_buffer_ptr(rank->meta) + OFF_PAGE,
                                    RIG_DTYPE_I32, ROWS, ROW_LEN),
        .out_tokens = meta_1d(rank, OFF_OUT, RIG_DTYPE_I32, R),
    };
    for (int32_t r = 0; r < R; r++) {
        int32_t q = h->cu_q[r + 1] - h->cu_q[r];
        if (q > b.max_q_len) b.max_q_len = q;
        if (h->kv_len[r] > b.max_kv_len) b.max_kv_len = h->kv_len[r];
    }
    rank->status = rig_model_forward(rank->model, rank->stream, &b);
    if (rank->status == RIG_OK) rank->status = rig_hal_stream_synchronize(rank->stream);
    return NULL;
}

/* Runs the host batch on every rank (a thread per rank when TP > 1), then reads rank 0's
 * logits and every rank's tokens, which must agree. */
static void group_forward(struct group *grp)
{
    pthread_t threads[TP_MAX];
    for (int32_t r = 0; r < grp->tp; r++) grp->ranks[r].host = &grp->host;
    if (grp->tp == 1) {
        rank_forward(&grp->ranks[0]);
    } else {
        for (int32_t r = 0; r < grp->tp; r++)
            assert_int_equal(pthread_create(&threads[r], NULL, rank_forward, &grp->ranks[r]), 0);
        for (int32_t r = 0; r < grp->tp; r++) assert_int_equal(pthread_join(threads[r], NULL), 0);
    }
    for (int32_t r = 0; r < grp->tp; r++) {
        if (grp->ranks[r].status != RIG_OK)
            fail_msg("rank %d: forward failed: %s (%s)", r, rig_status_name(grp->ranks[r].status),
                     rig_hal_stream_error(grp->ranks[r].stream));
    }
    struct rank *rank0 = &grp->ranks[0];
    if (grp->read_logits)
        assert_int_equal(rig_model_download_logits(rank0->model, rank0->stream,
                                                   grp->host.requests, grp->logits), RIG_OK);
    if (!grp->host.sample) return;
    size_t bytes = 4 * (size_t)grp->host.requests;
    for (int32_t r = 0; r < grp->tp; r++) {
        int32_t tokens[ROWS];
        struct rank *rank = &grp->ranks[r];
        assert_int_equal(rig_hal_buffer_download(rank->stream, rank->meta, OFF_OUT,
                                                 r == 0 ? grp->tokens : tokens, bytes), RIG_OK);
        assert_int_equal(rig_hal_stream_synchronize(rank->stream), RIG_OK);
        if (r > 0) assert_memory_equal(tokens, grp->tokens, bytes);
    }
}

static double rel_l2(const float *a, const float *b, int32_t n)
{
    return sqrt(rig_test_nmse(a, b, (size_t)n));
}

/* --- golden data (tests/data/golden, tools/golden/make_golden.py) ---------------------- */

struct golden {
    char dir[256];
    struct rig_model_config config;
    int32_t vocab;
    int32_t prompt_len[PROMPTS];
    int32_t prompts[PROMPTS][MAX_TOKENS];
    int32_t greedy[PROMPTS][STEPS];
    float *logits; /* [PROMPTS, STEPS, vocab] */
    double hf_bf16_err[PROMPTS][STEPS]; /* HF's bf16 run vs the reference, relative L2 */
    double hf_bf16_max;                 /* the largest of those */
    double step_max;                    /* STEP_RATIO_MAX * hf_bf16_max: any one step's bound */
};

/* Host side of one batch, and the host copy of the page table. */
static void golden_load(struct golden *g, const char *name)
{
    memset(g, 0, sizeof *g);
    snprintf(g->dir, sizeof g->dir, "%s/golden/%s", RIG_TEST_DATA_DIR, name);
    char error[256], path[512];
    assert_int_equal(rig_model_config_load(g->dir, &g->config, error, sizeof error), RIG_OK);
    snprintf(path, sizeof path, "%s/reference.json", g->dir);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    assert_non_null(root);
    g->vocab = (int32_t)json_integer_value(json_object_get(root, "vocab_size"));
    assert_int_equal(g->vocab, g->config.vocab_size);
    assert_true(g->vocab <= 1024);
    assert_int_equal(json_integer_value(json_object_get(root, "steps")), STEPS);
    json_t *prompts = json_object_get(root, "prompts"), *greedy = json_object_get(root, "greedy");
    json_t *hf_err = json_object_get(root, "hf_bf16_rel_l2");
    assert_int_equal(json_array_size(prompts), PROMPTS);
    for (int p = 0; p < PROMPTS; p++) {
        json_t *prompt = json_array_get(prompts, (size_t)p);
        g->prompt_len[p] = (int32_t)json_array_size(prompt);
        assert_true(g->prompt_len[p] >= 1 && g->prompt_len[p] + STEPS <= ROW_LEN);
        for (int i = 0; i < g->prompt_len[p]; i++)
            g->prompts[p][i] = (int32_t)json_integer_value(json_array_get(prompt, (size_t)i));
        for (int s = 0; s < STEPS; s++) {
            g->greedy[p][s] = (int32_t)json_integer_value(
                json_array_get(json_array_get(greedy, (size_t)p), (size_t)s));
            g->hf_bf16_err[p][s] =
                json_number_value(json_array_get(json_array_get(hf_err, (size_t)p), (size_t)s));
            assert_true(g->hf_bf16_err[p][s] > 0.0 && g->hf_bf16_err[p][s] < 0.05);
            if (g->hf_bf16_err[p][s] > g->hf_bf16_max) g->hf_bf16_max = g->hf_bf16_err[p][s];
        }
    }
    json_decref(root);
    g->step_max = STEP_RATIO_MAX * g->hf_bf16_max;
    size_t count = (size_t)PROMPTS * STEPS * (size_t)g->vocab;
    g->logits = malloc(count * sizeof(float));
    assert_non_null(g->logits);
    snprintf(path, sizeof path, "%s/logits.f32", g->dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(g->logits, sizeof(float), count, f), count);
    fclose(f);
}

static const float *golden_row(const struct golden *g, int p, int s)
{
    return g->logits + ((size_t)p * STEPS + (size_t)s) * (size_t)g->vocab;
}

#endif /* RIG_TEST_MODEL_HARNESS_H */
