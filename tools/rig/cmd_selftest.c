/* cmd_selftest.c — `rig selftest`: the model's forward on simulated TP ranks against one device.
 *
 * Every check runs core/model's own forward (rig_model_forward: the op sequence is written
 * there once) on the dummy weights of the "tiny" preset, on one simulated device and on a TP
 * group of simulated devices driven by one thread per rank, with batches staged here the way
 * the scheduler stages them (core/engine/batch.h). Each run is three steps: a prefill of
 * three tokens of request 0; a prefill of four more tokens of request 0 (three cached) and
 * three of request 1; a decode step of both, eagerly and then captured as a CUDA graph (its
 * collectives inside) and replayed; the next decode step eagerly and by replaying that graph
 * with the new step's metadata (as the engine replays decode graphs). The checks:
 *   - TP logits match the single device's (normalised squared error < 1e-3) with the same
 *     tokens, every rank samples the same tokens from the same all-gathered logits, the
 *     graph replay equals the eager step bit for bit;
 *   - cases: TP=2 greedy (rerun: identical bytes and virtual timestamps; the timeline is
 *     printed), KV heads replicated (TP=4 over 2 KV heads), a vocabulary of 1021 (not
 *     divisible by the TP size: padded shards whose columns are never sampled), and the
 *     sampled path (temperature, top-k, top-p on the all-gathered logits);
 *   - a Qwen3-32B decode step (64 requests × 4096 tokens of context) on four timing-only
 *     simulated H100s, eagerly and as a graph: the ranks agree and the graph is no slower.
 * Exit 0 when every check passes, 1 otherwise.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/model.h"
#include "hal/hal.h"
#include "sim/sim.h"
#include "tools/rig/commands.h"

enum {
    RIG__TP_MAX = 4,
    RIG__ROWS_MAX = 64, /* requests of the largest batch (the Qwen3-32B step) */
    RIG__VOCAB_MAX = 1024,
    RIG__STEPS = 6, /* prefill, prefill after a prefix, decode ×2 (eager, graph) ×2 */
};

/* A batch's sizes: page-table rows (one per request), row length, tokens. */
struct rig__shape {
    int32_t rows, row_len, tokens;
};

/* One batch as the scheduler stages it: a rig_forward_batch whose tensors are carved from
 * one block, in host memory to fill and at the same offsets in each rank's METADATA buffer
 * to run; one upload moves it all. */
struct rig__stage {
    struct rig__shape shape;
    uint8_t *host;
    size_t bytes;
    struct rig_forward_batch batch; /* tensors into `host`, full size */
    float temperature, top_p;       /* sampling of every request added */
    int32_t top_k;
};

/* Carves the batch's tensors at `base` (sizes only when NULL); returns the bytes. */
static size_t rig__carve(uint8_t *base, const struct rig__shape *s, struct rig_forward_batch *b)
{
    enum rig_dtype i32 = RIG_DTYPE_I32, f32 = RIG_DTYPE_F32;
    int64_t R = s->rows, T = s->tokens;
    struct {
        struct rig_tensor *t;
        enum rig_dtype dtype;
        int64_t n0, n1;
    } plan[] = {
        {&b->input_ids, i32, T, 0},    {&b->positions, i32, T, 0},   {&b->out_loc, i32, T, 0},
        {&b->table_idx, i32, R, 0},    {&b->cu_q, i32, R + 1, 0},    {&b->kv_len, i32, R, 0},
        {&b->last_idx, i32, R, 0},     {&b->temperature, f32, R, 0}, {&b->top_k, i32, R, 0},
        {&b->top_p, f32, R, 0},        {&b->seed, RIG_DTYPE_I64, R, 0},
        {&b->sample_pos, i32, R, 0},   {&b->out_tokens, i32, R, 0},
        {&b->page_table, i32, R, s->row_len},
    };
    size_t at = 0;
    for (size_t i = 0; i < RIG_ARRAY_LEN(plan); i++) {
        void *data = base != NULL ? base + at : NULL;
        *plan[i].t = plan[i].n1 > 0 ? rig_tensor_2d(data, plan[i].dtype, plan[i].n0, plan[i].n1)
                                    : rig_tensor_1d(data, plan[i].dtype, plan[i].n0);
        size_t bytes = (size_t)rig_tensor_numel(plan[i].t) * rig_dtype_size(plan[i].dtype);
        at += (bytes + 255) / 256 * 256;
    }
    return at;
}

static enum rig_status rig__stage_open(struct rig__stage *s, const struct rig__shape *shape)
{
    memset(s, 0, sizeof *s);
    s->shape = *shape;
    s->bytes = rig__carve(NULL, shape, &s->batch);
    s->host = calloc(1, s->bytes);
    if (s->host == NULL) return RIG_E_NO_MEMORY;
    rig__carve(s->host, shape, &s->batch);
    s->top_p = 1.0f;
    return RIG_OK;
}

static void rig__stage_begin(struct rig__stage *s, enum rig_batch_phase phase)
{
    s->batch.phase = phase;
    s->batch.sample = true;
    s->batch.num_requests = s->batch.num_tokens = 0;
    s->batch.max_q_len = s->batch.max_kv_len = 0;
    ((int32_t *)s->batch.cu_q.data)[0] = 0;
}

/* Appends request `row`: `count` new tokens `ids` after `start` cached ones; its slots are
 * 1 + row * row_len + position (slot 0 is the dummy). */
static void rig__stage_add(struct rig__stage *s, int32_t row, int32_t start, int32_t count,
                           const int32_t *ids, int32_t sample_pos)
{
    struct rig_forward_batch *b = &s->batch;
    int32_t r = b->num_requests++, t0 = b->num_tokens, L = s->shape.row_len;
    RIG_ASSERT(r < s->shape.rows && t0 + count <= s->shape.tokens && start + count <= L);
    int32_t *page = (int32_t *)b->page_table.data + (size_t)row * (size_t)L;
    for (int32_t p = 0; p < start + count; p++) page[p] = 1 + row * L + p;
    for (int32_t i = 0; i < count; i++) {
        ((int32_t *)b->input_ids.data)[t0 + i] = ids[i];
        ((int32_t *)b->positions.data)[t0 + i] = start + i;
        ((int32_t *)b->out_loc.data)[t0 + i] = page[start + i];
    }
    b->num_tokens += count;
    ((int32_t *)b->table_idx.data)[r] = row;
    ((int32_t *)b->cu_q.data)[r + 1] = b->num_tokens;
    ((int32_t *)b->kv_len.data)[r] = start + count;
    ((int32_t *)b->last_idx.data)[r] = b->num_tokens - 1;
    ((float *)b->temperature.data)[r] = s->temperature;
    ((int32_t *)b->top_k.data)[r] = s->top_k;
    ((float *)b->top_p.data)[r] = s->top_p;
    ((int64_t *)b->seed.data)[r] = 1000 + row;
    ((int32_t *)b->sample_pos.data)[r] = sample_pos;
    if (count > b->max_q_len) b->max_q_len = count;
    if (start + count > b->max_kv_len) b->max_kv_len = start + count;
}

/* `full` (carved in a rank's METADATA buffer) cut to the staged batch's sizes. */
static struct rig_forward_batch rig__batch_view(const struct rig__stage *s,
                                                const struct rig_forward_batch *full)
{
    const struct rig_forward_batch *h = &s->batch;
    int64_t R = h->num_requests, T = h->num_tokens;
    struct rig_forward_batch b = *full;
    b.phase = h->phase;
    b.sample = h->sample;
    b.num_requests = b.padded_requests = (int32_t)R;
    b.num_tokens = b.padded_tokens = (int32_t)T;
    b.max_q_len = h->max_q_len;
    b.max_kv_len = h->max_kv_len;
    struct rig_tensor *per_token[] = {&b.input_ids, &b.positions, &b.out_loc};
    struct rig_tensor *per_request[] = {&b.table_idx,  &b.kv_len, &b.last_idx,
                                        &b.temperature, &b.top_k, &b.top_p,
                                        &b.seed,        &b.sample_pos, &b.out_tokens};
    for (size_t i = 0; i < RIG_ARRAY_LEN(per_token); i++)
        *per_token[i] = rig_tensor_slice(per_token[i], 0, 0, T);
    for (size_t i = 0; i < RIG_ARRAY_LEN(per_request); i++)
        *per_request[i] = rig_tensor_slice(per_request[i], 0, 0, R);
    b.cu_q = rig_tensor_slice(&b.cu_q, 0, 0, R + 1);
    return b;
}

/* --- a TP group of model ranks, one thread each ------------------------------------------ */

enum rig__action { RIG__CREATE, RIG__EAGER, RIG__CAPTURE, RIG__REPLAY };

struct rig__group;

/* One rank: its device, model, metadata buffer and what its last step gave. */
struct rig__rank {
    struct rig__group *group;
    struct rig_device *device;
    struct rig_comm *comm; /* NULL at TP 1 */
    struct rig_stream *stream;
    struct rig_event *begin, *end;
    struct rig_model *model;
    struct rig_buffer *meta;
    struct rig_forward_batch batch; /* full-size tensors in `meta` */
    struct rig_graph *graph;
    enum rig_status status;
    char error[200];
    int64_t step_ns, issue_ns; /* device time of the last step, host time issuing it */
    int32_t tokens[RIG__ROWS_MAX];
    float logits[4 * RIG__VOCAB_MAX]; /* (requests, vocab) of the last step, when read */
};

struct rig__group {
    int32_t tp;
    bool read_logits;
    const struct rig_model_config *config;
    const struct rig_model_limits *limits;
    struct rig__stage *stage;
    enum rig__action action;
    struct rig_device *devices[RIG__TP_MAX];
    struct rig_comm *comms[RIG__TP_MAX];
    struct rig__rank ranks[RIG__TP_MAX];
};

static enum rig_status rig__rank_create(struct rig__rank *k)
{
    const struct rig__group *g = k->group;
    struct rig_weights_source weights = {.path = NULL, .dummy_seed = 0x5eed};
    RIG_TRY(rig_hal_stream_create(k->device, &k->stream));
    RIG_TRY(rig_hal_event_create(k->device, &k->begin));
    RIG_TRY(rig_hal_event_create(k->device, &k->end));
    RIG_TRY(rig_model_create(g->config, &weights, g->limits, k->device, k->stream, k->comm,
                             &k->model, k->error, sizeof k->error));
    rig_model_keep_logits(k->model, g->read_logits);
    RIG_TRY(rig_hal_buffer_alloc(k->device, g->stage->bytes, RIG_MEMORY_METADATA, &k->meta));
    rig__carve(rig_hal_buffer_ptr(k->meta), &g->stage->shape, &k->batch);
    return RIG_OK;
}

/* Uploads the staged batch and runs it — eagerly, captured into k->graph, or by replaying
 * that graph — timed by events; then reads the tokens (and the logits) back. */
static enum rig_status rig__rank_step(struct rig__rank *k, enum rig__action action)
{
    const struct rig__stage *s = k->group->stage;
    struct rig_forward_batch b = rig__batch_view(s, &k->batch);
    RIG_TRY(rig_hal_buffer_upload(k->stream, k->meta, 0, s->host, s->bytes));
    if (action == RIG__CAPTURE) {
        RIG_TRY(rig_hal_graph_capture_begin(k->stream));
        enum rig_status status = rig_model_forward(k->model, k->stream, &b);
        struct rig_graph *graph = NULL;
        enum rig_status end = rig_hal_graph_capture_end(k->stream, &graph);
        k->graph = graph;
        RIG_TRY(status);
        RIG_TRY(end);
    }
    int64_t t0 = rig_hal_now_ns(k->device);
    RIG_TRY(rig_hal_event_record(k->begin, k->stream));
    if (action == RIG__EAGER)
        RIG_TRY(rig_model_forward(k->model, k->stream, &b));
    else
        RIG_TRY(rig_hal_graph_launch(k->graph, k->stream));
    k->issue_ns = rig_hal_now_ns(k->device) - t0;
    RIG_TRY(rig_hal_event_record(k->end, k->stream));
    RIG_TRY(rig_hal_event_synchronize(k->end));
    RIG_TRY(rig_hal_event_elapsed_ns(k->begin, k->end, &k->step_ns));
    size_t offset = (size_t)((uint8_t *)b.out_tokens.data - (uint8_t *)k->batch.input_ids.data);
    RIG_TRY(rig_hal_buffer_download(k->stream, k->meta, offset, k->tokens,
                                    sizeof(int32_t) * (size_t)b.num_requests));
    RIG_TRY(rig_hal_stream_synchronize(k->stream));
    if (!k->group->read_logits) return RIG_OK;
    return rig_model_download_logits(k->model, k->stream, b.num_requests, k->logits);
}

static void *rig__rank_act(void *arg)
{
    struct rig__rank *k = arg;
    if (k->status != RIG_OK) return NULL;
    k->status = k->group->action == RIG__CREATE ? rig__rank_create(k)
                                                 : rig__rank_step(k, k->group->action);
    return NULL;
}

/* Every rank does `action`, each on its own thread (collectives wait for every rank).
 * Returns nonzero, naming the rank, when one failed. */
static int rig__group_act(struct rig__group *g, enum rig__action action)
{
    pthread_t threads[RIG__TP_MAX];
    int32_t started = 0;
    g->action = action;
    for (; started < g->tp; started++)
        if (pthread_create(&threads[started], NULL, rig__rank_act, &g->ranks[started]) != 0)
            break;
    for (int32_t r = 0; r < started; r++) pthread_join(threads[r], NULL);
    int failed = started != g->tp;
    for (int32_t r = 0; r < g->tp; r++) {
        const struct rig__rank *k = &g->ranks[r];
        if (k->status == RIG_OK) continue;
        fprintf(stderr, "rig selftest: rank %d of %d: %s %s\n", r, g->tp,
                rig_status_name(k->status), k->error);
        failed = 1;
    }
    return failed;
}

static int rig__group_open(struct rig__group *g, int32_t tp, bool timing_only)
{
    struct rig_device_config config = {.timing_only = timing_only, .profile = "h100", .seed = 1};
    g->tp = tp;
    if (rig_hal_open("sim", &config, tp, g->devices) != RIG_OK) return 1;
    if (tp > 1 && rig_hal_comm_create(g->devices, tp, g->comms) != RIG_OK) {
        for (int32_t r = 0; r < tp; r++) rig_hal_close(g->devices[r]);
        return 1;
    }
    for (int32_t r = 0; r < tp; r++)
        g->ranks[r] = (struct rig__rank){.group = g, .device = g->devices[r],
                                         .comm = tp > 1 ? g->comms[r] : NULL};
    return rig__group_act(g, RIG__CREATE);
}

static void rig__group_close(struct rig__group *g)
{
    for (int32_t r = 0; r < g->tp; r++) {
        struct rig__rank *k = &g->ranks[r];
        rig_hal_graph_destroy(k->graph);
        rig_hal_buffer_free(k->meta);
        rig_model_destroy(k->model);
        rig_hal_event_destroy(k->begin);
        rig_hal_event_destroy(k->end);
        rig_hal_stream_destroy(k->stream);
        if (g->tp > 1) rig_hal_comm_destroy(g->comms[r]);
    }
    for (int32_t r = 0; r < g->tp; r++) rig_hal_close(g->devices[r]);
}

/* --- the small model: TP ranks against one device ---------------------------------------- */

enum { RIG__ROWS = 2, RIG__ROW_LEN = 16, RIG__TOKENS = 8 };

/* What one run of the three steps (and the graph replay) gave. */
struct rig__outcome {
    int32_t vocab;
    float logits[RIG__STEPS][RIG__ROWS * RIG__VOCAB_MAX]; /* rank 0's, per step */
    int32_t tokens[RIG__STEPS][RIG__ROWS];
    bool ranks_agree; /* every rank: the same logits and tokens at every step */
    int64_t host_ns[RIG__TP_MAX], busy_ns[RIG__TP_MAX], ops[RIG__TP_MAX], bytes[RIG__TP_MAX];
};

/* Stages step `step` of the run: prefill of request 0's first three tokens; four more of
 * request 0 after those three (cached) and three of request 1; decode of both (steps 2 and
 * 3: the tokens of step 1), decode of the next (steps 4 and 5: the tokens of step 2). */
static void rig__stage_step(struct rig__stage *s, int32_t step,
                            const int32_t (*sampled)[RIG__ROWS])
{
    static const int32_t prompt0[] = {11, 402, 57, 990, 3, 250, 777}, prompt1[] = {5, 600, 81};
    if (step == 0) {
        rig__stage_begin(s, RIG_BATCH_PREFILL);
        rig__stage_add(s, 0, 0, 3, prompt0, 0);
    } else if (step == 1) {
        rig__stage_begin(s, RIG_BATCH_PREFILL);
        rig__stage_add(s, 0, 3, 4, prompt0 + 3, 0);
        rig__stage_add(s, 1, 0, 3, prompt1, 0);
    } else {
        int32_t next = step < 4 ? 0 : 1; /* tokens decoded before this one */
        rig__stage_begin(s, RIG_BATCH_DECODE);
        rig__stage_add(s, 0, 7 + next, 1, &sampled[1 + next][0], 1 + next);
        rig__stage_add(s, 1, 3 + next, 1, &sampled[1 + next][1], 1 + next);
    }
}

/* Copies rank 0's results of `step` into `out` and checks the other ranks agree. */
static void rig__collect(const struct rig__group *g, int32_t step, struct rig__outcome *out)
{
    size_t n = (size_t)g->stage->batch.num_requests;
    size_t logit_bytes = n * (size_t)out->vocab * sizeof(float);
    memcpy(out->logits[step], g->ranks[0].logits, logit_bytes);
    memcpy(out->tokens[step], g->ranks[0].tokens, n * sizeof(int32_t));
    for (int32_t r = 1; r < g->tp; r++) {
        out->ranks_agree &= memcmp(g->ranks[r].logits, g->ranks[0].logits, logit_bytes) == 0;
        out->ranks_agree &= memcmp(g->ranks[r].tokens, g->ranks[0].tokens,
                                   n * sizeof(int32_t)) == 0;
    }
}

/* Runs the steps of the small model `config` on `tp` ranks; returns nonzero on a failure. */
static int rig__run_small(const struct rig_model_config *config, int32_t tp,
                          const struct rig__stage *sampling, struct rig__outcome *out)
{
    struct rig__shape shape = {RIG__ROWS, RIG__ROW_LEN, RIG__TOKENS};
    struct rig_model_limits limits = {.max_tokens = RIG__TOKENS, .max_requests = RIG__ROWS,
                                      .kv_slots = 1 + RIG__ROWS * RIG__ROW_LEN};
    static struct rig__stage stage;
    static struct rig__group group;
    memset(out, 0, sizeof *out);
    out->vocab = config->vocab_size;
    out->ranks_agree = true;
    if (rig__stage_open(&stage, &shape) != RIG_OK) return 1;
    stage.temperature = sampling->temperature;
    stage.top_k = sampling->top_k;
    stage.top_p = sampling->top_p;
    memset(&group, 0, sizeof group);
    group = (struct rig__group){.read_logits = true, .config = config, .limits = &limits,
                                .stage = &stage};
    int failed = rig__group_open(&group, tp, false);
    /* the graph is captured at step 3 and replayed with step 5's metadata, as the engine
     * replays a decode graph for the batches after its capture */
    static const enum rig__action actions[RIG__STEPS] = {
        RIG__EAGER, RIG__EAGER, RIG__EAGER, RIG__CAPTURE, RIG__EAGER, RIG__REPLAY};
    for (int32_t step = 0; step < RIG__STEPS && !failed; step++) {
        rig__stage_step(&stage, step, (const int32_t (*)[RIG__ROWS])out->tokens);
        failed |= rig__group_act(&group, actions[step]);
        if (!failed) rig__collect(&group, step, out);
    }
    for (int32_t r = 0; r < tp && !failed; r++) {
        struct rig_sim_stats stats;
        failed |= rig_sim_get_stats(group.devices[r], &stats) != RIG_OK;
        out->host_ns[r] = rig_hal_now_ns(group.devices[r]);
        out->busy_ns[r] = stats.device_busy_ns;
        out->ops[r] = stats.ops_issued;
        out->bytes[r] = stats.bytes_allocated;
    }
    rig__group_close(&group);
    free(stage.host);
    return failed;
}

/* Normalised squared error of `a` against the reference `b`. */
static double rig__nmse(const float *a, const float *b, size_t n)
{
    double err = 0, ref = 0;
    for (size_t i = 0; i < n; i++) {
        err += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        ref += (double)b[i] * b[i];
    }
    return ref > 0 ? err / ref : err;
}

/* One case: `config` on `tp` ranks against one device. Prints a line; returns nonzero when
 * a check fails. `tp_out` (may be NULL) receives the TP run. */
static int rig__check_case(const char *label, const struct rig_model_config *config, int32_t tp,
                           const struct rig__stage *sampling, struct rig__outcome *tp_out)
{
    static struct rig__outcome single, group;
    if (rig__run_small(config, 1, sampling, &single) ||
        rig__run_small(config, tp, sampling, &group))
        return 1;
    size_t n = (size_t)RIG__ROWS * (size_t)config->vocab_size;
    double nmse = 0;
    bool tokens = true, in_vocab = true;
    for (int32_t step = 1; step < RIG__STEPS; step++) { /* all but the first prefill */
        double e = rig__nmse(group.logits[step], single.logits[step], n);
        nmse = e > nmse ? e : nmse;
        tokens &= memcmp(group.tokens[step], single.tokens[step], sizeof single.tokens[0]) == 0;
        for (int32_t r = 0; r < RIG__ROWS; r++)
            in_vocab &= group.tokens[step][r] >= 0 && group.tokens[step][r] < config->vocab_size;
    }
    bool graph = true; /* captured at step 3, replayed at 5: each equals the eager step */
    for (int32_t step = 3; step < RIG__STEPS; step += 2)
        graph &= memcmp(group.logits[step], group.logits[step - 1], sizeof group.logits[0]) == 0 &&
                 memcmp(group.tokens[step], group.tokens[step - 1], sizeof group.tokens[0]) == 0;
    printf("  %-28s TP=%d vs TP=1: logits nmse %.3g (limit 1e-3); tokens %s [%d %d | %d %d]%s; "
           "ranks agree: %s; graph replay %s\n",
           label, tp, nmse, tokens ? "equal" : "DIFFER", group.tokens[1][0], group.tokens[1][1],
           group.tokens[2][0], group.tokens[2][1], in_vocab ? "" : " OUT OF VOCABULARY",
           group.ranks_agree ? "yes" : "NO", graph ? "= eager" : "DIFFERS from eager");
    if (tp_out != NULL) *tp_out = group;
    return !(nmse < 1e-3) || !tokens || !in_vocab || !group.ranks_agree || !graph;
}

static void rig__print_timeline(const char *label, const struct rig__outcome *o, int32_t tp)
{
    for (int32_t r = 0; r < tp; r++)
        printf("  %-6s rank %d: host %9.3f us, device busy %9.3f us, %lld ops, %lld bytes "
               "allocated\n",
               label, r, (double)o->host_ns[r] / 1e3, (double)o->busy_ns[r] / 1e3,
               (long long)o->ops[r], (long long)o->bytes[r]);
}

/* The small model's cases. Returns nonzero when a check fails. */
static int rig__small_checks(void)
{
    struct rig_model_config tiny, odd;
    if (rig_model_config_preset("tiny", &tiny) != RIG_OK) return 1;
    odd = tiny;
    odd.vocab_size = 1021;
    struct rig__stage greedy = {.temperature = 0.0f, .top_k = 0, .top_p = 1.0f};
    struct rig__stage sampled = {.temperature = 0.8f, .top_k = 20, .top_p = 0.9f};
    printf("rig selftest: %s (dummy weights): %d layers, H=%d, %d/%d heads, D=%d, I=%d, V=%d; "
           "%d requests, a cached prefix, two decode steps eager and as a graph\n",
           tiny.name, tiny.num_layers, tiny.hidden_size, tiny.num_heads, tiny.num_kv_heads,
           tiny.head_dim, tiny.intermediate_size, tiny.vocab_size, RIG__ROWS);
    static struct rig__outcome first, again, one;
    int failed = rig__check_case("greedy", &tiny, 2, &greedy, &first);
    failed |= rig__check_case("KV heads replicated (2 on 4)", &tiny, 4, &greedy, NULL);
    failed |= rig__check_case("vocabulary 1021", &odd, 2, &greedy, NULL);
    failed |= rig__check_case("vocabulary 1021", &odd, 4, &greedy, NULL);
    failed |= rig__check_case("sampled (T 0.8, k 20, p 0.9)", &tiny, 2, &sampled, NULL);
    failed |= rig__run_small(&tiny, 2, &greedy, &again);
    failed |= rig__run_small(&tiny, 1, &greedy, &one);
    bool repeat = memcmp(first.logits, again.logits, sizeof first.logits) == 0 &&
                  memcmp(first.tokens, again.tokens, sizeof first.tokens) == 0 &&
                  memcmp(first.host_ns, again.host_ns, sizeof first.host_ns) == 0 &&
                  memcmp(first.busy_ns, again.busy_ns, sizeof first.busy_ns) == 0;
    printf("  rerun of TP=2: %s\n", repeat ? "identical bytes and timestamps" : "DIFFERENT");
    rig__print_timeline("TP=1", &one, 1);
    rig__print_timeline("TP=2", &first, 2);
    return failed || !repeat;
}

/* --- timing only: a Qwen3-32B decode step on 4 simulated H100s --------------------------- */

enum { RIG__Q_TP = 4, RIG__Q_BATCH = 64, RIG__Q_CONTEXT = 4096 };

/* The device time of each op kind `device` added since `before`, printed after `label`. */
static void rig__print_breakdown(struct rig_device *device, const struct rig_sim_stats *before)
{
    struct rig_sim_stats after;
    if (rig_sim_get_stats(device, &after) != RIG_OK) return;
    printf("  device time of the graph step by op:");
    const char *separator = " ";
    for (int32_t kind = 0; kind < RIG_OP_COUNT; kind++) {
        int64_t count = after.op_count[kind] - before->op_count[kind];
        if (count == 0) continue;
        printf("%s%s %.2f ms (%lld)", separator, rig_op_name((enum rig_op_kind)kind),
               (double)(after.op_ns[kind] - before->op_ns[kind]) / 1e6, (long long)count);
        separator = ", ";
    }
    printf("\n");
}

/* Runs the step eagerly, then captured and replayed; prints what the simulator predicts and
 * checks it is self-consistent. Returns nonzero when it is not. */
static int rig__predict_qwen3_32b(void)
{
    struct rig_model_config config;
    if (rig_model_config_preset("qwen3-32b", &config) != RIG_OK) return 1;
    struct rig__shape shape = {RIG__Q_BATCH, RIG__Q_CONTEXT + 1, RIG__Q_BATCH};
    struct rig_model_limits limits = {.max_tokens = RIG__Q_BATCH, .max_requests = RIG__Q_BATCH,
                                      .kv_slots = 1 + RIG__Q_BATCH * (RIG__Q_CONTEXT + 1)};
    static struct rig__stage stage;
    static struct rig__group group;
    if (rig__stage_open(&stage, &shape) != RIG_OK) return 1;
    rig__stage_begin(&stage, RIG_BATCH_DECODE); /* request r decodes token 4097 in row r */
    for (int32_t r = 0; r < RIG__Q_BATCH; r++)
        rig__stage_add(&stage, r, RIG__Q_CONTEXT, 1, &(int32_t){1000 + r}, 1);
    group = (struct rig__group){.config = &config, .limits = &limits, .stage = &stage};
    int failed = rig__group_open(&group, RIG__Q_TP, true);
    int64_t eager_ns[RIG__Q_TP] = {0}, eager_issue_ns = 0;
    struct rig_sim_stats before = {0};
    if (!failed) failed |= rig__group_act(&group, RIG__EAGER);
    for (int32_t r = 0; r < RIG__Q_TP; r++) eager_ns[r] = group.ranks[r].step_ns;
    eager_issue_ns = group.ranks[0].issue_ns;
    if (!failed) failed |= rig_sim_get_stats(group.devices[0], &before) != RIG_OK;
    if (!failed) failed |= rig__group_act(&group, RIG__CAPTURE);
    const struct rig__rank *k = &group.ranks[0];
    for (int32_t r = 0; r < RIG__Q_TP && !failed; r++) {
        failed |= eager_ns[r] != eager_ns[0] || group.ranks[r].step_ns != k->step_ns;
        for (int32_t b = 0; b < RIG__Q_BATCH; b++)
            failed |= group.ranks[r].tokens[b] < 0 || group.ranks[r].tokens[b] >= config.vocab_size;
    }
    failed |= !(k->step_ns <= eager_ns[0]) || eager_ns[0] < 1000000 || eager_ns[0] > 100000000;
    printf("timing only: Qwen3-32B decode step, batch %d x %d tokens of context, TP=%d on "
           "simulated H100s:\n  eager %.2f ms on the device (host %.2f ms issuing %d ops); "
           "CUDA graph %.2f ms (host %.3f ms)\n",
           RIG__Q_BATCH, RIG__Q_CONTEXT, RIG__Q_TP, (double)eager_ns[0] / 1e6,
           (double)eager_issue_ns / 1e6, k->graph ? rig_hal_graph_op_count(k->graph) : 0,
           (double)k->step_ns / 1e6, (double)k->issue_ns / 1e6);
    rig__print_breakdown(group.devices[0], &before);
    rig__group_close(&group);
    free(stage.host);
    return failed;
}

int rig_cmd_selftest(int argc, char **argv)
{
    if (argc > 1) {
        bool help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr,
                "usage: rig selftest\n\nRuns the model's forward (the tiny preset, dummy "
                "weights: prefill with a cached\nprefix, then a decode step eagerly and as a "
                "CUDA graph) on the simulator, on one\ndevice and on TP ranks in threads: TP=2, "
                "KV heads replicated on TP=4, a vocabulary\nnot divisible by the TP size, "
                "sampled tokens; checks that they agree and that a\nrerun is identical; prints "
                "the virtual timeline. Then predicts a Qwen3-32B decode step\non 4 simulated "
                "H100s in timing-only mode, eagerly and as a graph. Exit 0 on success.\n");
        return help ? 0 : 2;
    }
    int failed = rig__small_checks();
    failed |= rig__predict_qwen3_32b();
    printf("rig selftest: %s\n", failed ? "FAILED" : "ok");
    return failed ? 1 : 0;
}
