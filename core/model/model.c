/* model.c — one rank of a decoder-only transformer over HAL ops (model.h).
 *
 * rig_model_create sizes everything from the config, the TP degree and the limits, checks
 * the checkpoint before taking any device memory, allocates three buffers (weights, KV,
 * activations) and loads the weights. rig_model_forward only issues ops on views of those
 * buffers: it allocates nothing and never reads device memory on the host, so it works in
 * timing-only simulation and under CUDA graph capture.
 *
 * The forward follows vLLM's fused-residual order, which is numerically Hugging Face's:
 * residual = embedding; for each layer h = norm(residual) (the add of the previous
 * layer's MLP output fused in), attention, residual += o_proj (fused with the post-
 * attention norm), MLP; a last fused add + final norm; the LM head on the last position of
 * each request only.
 *
 * A batch of a few rows (at most fuse_rows padded tokens, at TP 1; 1 by default, model.h)
 * runs the same arithmetic in five ops a layer instead of eight: a step of a few rows is bound
 * by per-kernel latency, not bytes, so the norms and residual adds ride on the GEMMs beside
 * them (hal/ops.h, the
 * GEMM's fused forms, which give the same bits): qkv with the input norm as its prologue,
 * attention_decode_store, o accumulating into the residual, gate_up with the post-attention
 * norm as its prologue, down with silu_mul as its prologue accumulating into the residual;
 * after the last layer a plain norm of the residual. At TP > 1 an all-reduce sits between o
 * (and down) and the residual add, so those batches run the plain ops. Every decode batch
 * issues q/k norm + RoPE + the K/V store and its attention as one op (attention_decode_store);
 * a prefill batch as two (qk_norm_rope_store, attention_prefill).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/model_impl.h"
#include "hal/startup.h"

static enum rig_status rig__dims_fail(char *error, size_t error_len, const char *format,
                                      long long a, long long b)
{
    snprintf(error, error_len, format, a, b);
    return RIG_E_INVALID;
}

enum rig_status rig__model_dims(const struct rig_model_config *c, int32_t tp, int32_t rank,
                                struct rig__dims *d, char *error, size_t error_len)
{
    if (tp < 1 || tp > RIG_DEVICES_MAX || rank < 0 || rank >= tp)
        return rig__dims_fail(error, error_len, "rank %lld of TP size %lld is invalid", rank,
                              tp);
    if (c->num_heads % tp != 0)
        return rig__dims_fail(error, error_len, "%lld attention heads do not split over TP %lld",
                              c->num_heads, tp);
    if (c->num_kv_heads % tp != 0 && tp % c->num_kv_heads != 0)
        return rig__dims_fail(error, error_len,
                              "%lld KV heads neither split over nor replicate to TP %lld",
                              c->num_kv_heads, tp);
    if (c->intermediate_size % tp != 0)
        return rig__dims_fail(error, error_len, "intermediate size %lld does not split over "
                              "TP %lld", c->intermediate_size, tp);
    if (c->num_layers > RIG__LAYERS_MAX)
        return rig__dims_fail(error, error_len, "%lld layers (at most %lld)", c->num_layers,
                              RIG__LAYERS_MAX);
    memset(d, 0, sizeof *d);
    d->tp = tp;
    d->rank = rank;
    d->hidden = c->hidden_size;
    d->head_dim = c->head_dim;
    d->q_heads = c->num_heads / tp;
    d->kv_heads = rig_model_kv_heads_per_rank(c, tp);
    d->kv_head0 = (int64_t)rank * c->num_kv_heads / tp; /* replicated: rank's share */
    d->inter = c->intermediate_size / tp;
    d->vocab = c->vocab_size;
    d->vocab_rank = (c->vocab_size + tp - 1) / tp;
    d->vocab_start = (int64_t)rank * d->vocab_rank;
    int64_t held = d->vocab - d->vocab_start;
    d->vocab_held = held < 0 ? 0 : (held > d->vocab_rank ? d->vocab_rank : held);
    d->qkv_width = (d->q_heads + 2 * d->kv_heads) * d->head_dim;
    return RIG_OK;
}

/* Carves the activation tensors (sizes only when `base` is NULL); returns the bytes. */
static size_t rig__activations(struct rig_model *m, uint8_t *base)
{
    const struct rig__dims *d = &m->dims;
    int64_t T = m->limits.max_tokens, R = m->limits.max_requests;
    size_t cursor = 0, local_offset = 0;
    struct {
        struct rig_tensor *t;
        enum rig_dtype dtype;
        int32_t ndim;
        int64_t shape[3];
    } plan[] = {
        {&m->residual, RIG_DTYPE_BF16, 2, {T, d->hidden, 1}},
        {&m->hidden, RIG_DTYPE_BF16, 2, {T, d->hidden, 1}},
        {&m->qkv, RIG_DTYPE_BF16, 2, {T, d->qkv_width, 1}},
        {&m->attn, RIG_DTYPE_BF16, 3, {T, d->q_heads, d->head_dim}},
        {&m->proj, RIG_DTYPE_BF16, 2, {T, d->hidden, 1}},
        {&m->gate_up, RIG_DTYPE_BF16, 2, {T, 2 * d->inter, 1}},
        {&m->act, RIG_DTYPE_BF16, 2, {T, d->inter, 1}},
        {&m->last, RIG_DTYPE_BF16, 2, {R, d->hidden, 1}},
        {&m->logits_local, RIG_DTYPE_F32, 2, {R, d->vocab_rank, 1}},
        {&m->gathered, RIG_DTYPE_F32, 3, {d->tp, R, d->vocab_rank}},
        {&m->logits, RIG_DTYPE_F32, 2, {R, d->vocab, 1}},
        {&m->penalty_counts, RIG_DTYPE_I32, 2, {R, d->vocab, 1}},
    };
    for (size_t i = 0; i < RIG_ARRAY_LEN(plan); i++) {
        bool shared = d->tp == 1 && (plan[i].t == &m->gathered || plan[i].t == &m->logits);
        if (shared) continue; /* TP 1: logits_local already is [R, V] */
        size_t bytes = rig_dtype_size(plan[i].dtype);
        for (int32_t k = 0; k < plan[i].ndim; k++) bytes *= (size_t)plan[i].shape[k];
        if (plan[i].t == &m->logits) m->logits_offset = cursor;
        if (plan[i].t == &m->logits_local) local_offset = cursor;
        if (base != NULL)
            *plan[i].t = rig_tensor_make(base + cursor, plan[i].dtype, plan[i].ndim,
                                         plan[i].shape);
        cursor += (bytes + RIG__ALIGN - 1) / RIG__ALIGN * RIG__ALIGN;
    }
    if (d->tp == 1) {
        m->logits_offset = local_offset;
        m->logits = m->logits_local;
        m->gathered = rig_tensor_none();
    }
    return cursor;
}

static void rig__kv_layout(struct rig_model *m)
{
    const struct rig__dims *d = &m->dims;
    int64_t shape[3] = {m->limits.kv_slots, d->kv_heads, d->head_dim};
    size_t per_cache = (size_t)(shape[0] * shape[1] * shape[2]) * sizeof(uint16_t);
    uint8_t *base = rig_hal_buffer_ptr(m->kv_buffer);
    for (int32_t l = 0; l < m->config.num_layers; l++) {
        m->layers[l].k_cache = rig_tensor_make(base + (size_t)(2 * l) * per_cache,
                                               RIG_DTYPE_BF16, 3, shape);
        m->layers[l].v_cache = rig_tensor_make(base + (size_t)(2 * l + 1) * per_cache,
                                               RIG_DTYPE_BF16, 3, shape);
    }
}

void rig_model_destroy(struct rig_model *model)
{
    if (model == NULL) return;
    rig_hal_buffer_free(model->activations_buffer);
    rig_hal_buffer_free(model->kv_buffer);
    rig_hal_buffer_free(model->weights_buffer);
    free(model->layers);
    free(model);
}

static enum rig_status rig__alloc(struct rig_model *m, size_t bytes, enum rig_memory_use use,
                                  struct rig_buffer **out, const char *what, char *error,
                                  size_t error_len)
{
    enum rig_status status = rig_hal_buffer_alloc(m->device, bytes, use, out);
    if (status != RIG_OK)
        snprintf(error, error_len, "allocating %zu bytes of %s on rank %d: %s", bytes, what,
                 m->dims.rank, rig_status_message(status));
    return status;
}

/* Takes the three buffers and points every tensor into them. */
static enum rig_status rig__model_buffers(struct rig_model *m, char *error, size_t error_len)
{
    size_t weights = rig__weights_bytes(&m->config, &m->dims);
    size_t kv = (size_t)m->config.num_layers * 2u * (size_t)m->limits.kv_slots *
                (size_t)(m->dims.kv_heads * m->dims.head_dim) * sizeof(uint16_t);
    size_t activations = rig__activations(m, NULL);
    enum rig_status status = rig__alloc(m, weights, RIG_MEMORY_WEIGHTS, &m->weights_buffer,
                                        "weights", error, error_len);
    if (status == RIG_OK)
        status = rig__alloc(m, kv, RIG_MEMORY_KV, &m->kv_buffer, "KV cache", error, error_len);
    if (status == RIG_OK)
        status = rig__alloc(m, activations, RIG_MEMORY_ACTIVATIONS, &m->activations_buffer,
                            "activations", error, error_len);
    if (status != RIG_OK) return status;
    rig__weights_layout(m);
    rig__kv_layout(m);
    rig__activations(m, rig_hal_buffer_ptr(m->activations_buffer));
    return RIG_OK;
}

static enum rig_status rig__check_limits(const struct rig_model_limits *limits, char *error,
                                         size_t error_len)
{
    if (limits->max_tokens >= 1 && limits->max_requests >= 1 && limits->kv_slots >= 1 &&
        limits->max_requests <= limits->max_tokens)
        return RIG_OK;
    snprintf(error, error_len,
             "model limits need 1 <= max_requests (%d) <= max_tokens (%d) and kv_slots (%d) "
             ">= 1", limits->max_requests, limits->max_tokens, limits->kv_slots);
    return RIG_E_INVALID;
}

/* The fused layer's batch bound: RIG_FUSE_ROWS when set (model.h), else the default. */
static enum rig_status rig__fuse_rows(int32_t *rows, char *error, size_t error_len)
{
    const char *value = getenv("RIG_FUSE_ROWS");
    *rows = RIG_MODEL_FUSE_ROWS;
    if (value == NULL) return RIG_OK;
    char *end = NULL;
    long parsed = strtol(value, &end, 10);
    if (end == value || *end != '\0' || parsed < 0 || parsed > RIG_MODEL_FUSE_ROWS_MAX) {
        snprintf(error, error_len, "RIG_FUSE_ROWS: '%s' is not a row count (0 .. %d)", value,
                 RIG_MODEL_FUSE_ROWS_MAX);
        return RIG_E_INVALID;
    }
    *rows = (int32_t)parsed;
    return RIG_OK;
}

enum rig_status rig_model_create(const struct rig_model_config *config,
                                 const struct rig_weights_source *weights,
                                 const struct rig_model_limits *limits,
                                 struct rig_device *device, struct rig_stream *stream,
                                 struct rig_comm *comm, struct rig_model **out, char *error,
                                 size_t error_len)
{
    RIG_ASSERT(config != NULL && weights != NULL && limits != NULL && out != NULL);
    RIG_ASSERT(device != NULL && stream != NULL && error != NULL && error_len > 0);
    error[0] = '\0';
    int32_t tp = comm != NULL ? rig_hal_comm_size(comm) : 1;
    int32_t rank = comm != NULL ? rig_hal_comm_rank(comm) : 0;
    struct rig__dims dims;
    int32_t fuse_rows = 0;
    enum rig_status status = rig__check_limits(limits, error, error_len);
    if (status == RIG_OK) status = rig__fuse_rows(&fuse_rows, error, error_len);
    if (status == RIG_OK) status = rig__model_dims(config, tp, rank, &dims, error, error_len);
    if (status == RIG_OK && !rig_hal_device_info(device)->timing_only)
        status = rig__weights_check(config, &dims, weights->path, error, error_len);
    if (status != RIG_OK) return status;
    struct rig_model *m = calloc(1, sizeof *m);
    struct rig__layer *layers = calloc((size_t)config->num_layers, sizeof *layers);
    if (m == NULL || layers == NULL) {
        free(m);
        free(layers);
        snprintf(error, error_len, "out of host memory");
        return RIG_E_NO_MEMORY;
    }
    *m = (struct rig_model){.config = *config, .limits = *limits, .dims = dims,
                            .device = device, .comm = tp > 1 ? comm : NULL,
                            .fuse_rows = fuse_rows, .layers = layers};
    status = rig__model_buffers(m, error, error_len);
    if (status == RIG_OK) rig_startup_mark("model buffers allocated (rank %d)", rank);
    if (status == RIG_OK) status = rig__weights_load(m, weights, stream, error, error_len);
    if (status == RIG_OK) rig_startup_mark("weights loaded (rank %d)", rank);
    if (status != RIG_OK) {
        rig_model_destroy(m);
        return status;
    }
    *out = m;
    return RIG_OK;
}

void rig_model_set_fuse_rows(struct rig_model *model, int32_t rows)
{
    RIG_ASSERT(model != NULL);
    RIG_ASSERT(rows >= 0 && rows <= RIG_MODEL_FUSE_ROWS_MAX);
    model->fuse_rows = rows;
}

void rig_model_keep_logits(struct rig_model *model, bool keep)
{
    RIG_ASSERT(model != NULL);
    model->keep_logits = keep;
}

struct rig_tensor rig_model_logits(const struct rig_model *model)
{
    RIG_ASSERT(model != NULL);
    return model->logits;
}

const struct rig_model_config *rig_model_get_config(const struct rig_model *model)
{
    RIG_ASSERT(model != NULL);
    return &model->config;
}

struct rig_device *rig_model_device(const struct rig_model *model)
{
    RIG_ASSERT(model != NULL);
    return model->device;
}

enum rig_status rig_model_download_logits(struct rig_model *model, struct rig_stream *stream,
                                          int32_t rows, float *out)
{
    RIG_ASSERT(model != NULL && stream != NULL && out != NULL);
    if (rows < 0 || rows > model->limits.max_requests) return RIG_E_RANGE;
    size_t bytes = (size_t)rows * (size_t)model->dims.vocab * sizeof(float);
    if (bytes == 0) return RIG_OK;
    enum rig_status status = rig_hal_buffer_download(stream, model->activations_buffer,
                                                     model->logits_offset, out, bytes);
    if (status != RIG_OK) return status;
    return rig_hal_stream_synchronize(stream);
}

/* Every op of the forward goes through here: issued on `s`, or handed to the sink of
 * rig_model_forward_ops with the layer being issued and what the op is. */
static enum rig_status rig__issue(struct rig_model *m, struct rig_stream *s, const char *name,
                                  const struct rig_op *op)
{
    if (m->sink != NULL) return m->sink->op(m->sink->ctx, m->layer, name, op);
    return rig_hal_op(s, op);
}

/* The first `rows` rows of a tensor (a view; same strides). */
static struct rig_tensor rig__rows(const struct rig_tensor *t, int64_t rows)
{
    return rig_tensor_slice(t, 0, 0, rows);
}

/* Heads [first, first + count) of the [T, qkv_width] QKV rows as a [T, count, D] view. */
static struct rig_tensor rig__heads(const struct rig_model *m, int64_t tokens, int64_t first,
                                    int64_t count)
{
    int64_t D = m->dims.head_dim;
    struct rig_tensor t = m->qkv;
    t.data = (uint16_t *)m->qkv.data + first * D;
    t.ndim = 3;
    t.shape[0] = tokens;
    t.shape[1] = count;
    t.shape[2] = D;
    t.stride[0] = m->dims.qkv_width;
    t.stride[1] = D;
    t.stride[2] = 1;
    return t;
}

static enum rig_status rig__all_reduce(struct rig_model *m, struct rig_stream *s,
                                       struct rig_tensor data)
{
    if (m->comm == NULL || m->local_only) return RIG_OK;
    struct rig_op_all_reduce p = {.data = data, .comm = m->comm};
    return rig__issue(m, s, "all_reduce",
                      &(struct rig_op){.kind = RIG_OP_ALL_REDUCE, .u.all_reduce = p});
}

/* Makes `g` (reading m->hidden) read m->residual instead, with the norm of `weight` as its
 * prologue, which writes m->hidden as the norm op would (the fused forms, hal/ops.h). */
static void rig__norm_prologue(const struct rig_model *m, struct rig_op_gemm *g, int64_t T,
                               struct rig_tensor weight)
{
    g->a = rig__rows(&m->residual, T);
    g->prologue = RIG_GEMM_PROLOGUE_RMS_NORM;
    g->operand = rig__rows(&m->hidden, T);
    g->norm_weight = weight;
    g->eps = m->config.rms_norm_eps;
}

/* Makes `g` (writing m->proj) add its product into m->residual instead, as the next
 * add_rms_norm would have. */
static void rig__accumulate(const struct rig_model *m, struct rig_op_gemm *g, int64_t T)
{
    RIG_ASSERT(g->bias.data == NULL);
    g->out = rig__rows(&m->residual, T);
    g->accumulate = true;
}

/* Layer `l`'s attention over the QKV rows in m->qkv: q/k norm + RoPE + store K/V, then
 * attention into m->attn. A decode batch issues both as one op (attention_decode_store: the
 * CUDA backend's register path can run the store in its prologue, a node fewer a layer, where
 * that measured faster); a prefill batch as two. */
static enum rig_status rig__attend(struct rig_model *m, struct rig_stream *s,
                                   const struct rig_forward_batch *b, int32_t l)
{
    const struct rig__layer *w = &m->layers[l];
    int64_t T = b->padded_tokens;
    struct rig_tensor q = rig__heads(m, T, 0, m->dims.q_heads);
    struct rig_tensor k = rig__heads(m, T, m->dims.q_heads, m->dims.kv_heads);
    struct rig_tensor v = rig__heads(m, T, m->dims.q_heads + m->dims.kv_heads, m->dims.kv_heads);
    /* q/k norm (Qwen3), RoPE and the K/V store in one kernel: at small batches a decode
     * step is bound by per-kernel latency, not bytes. */
    bool qk_norm = m->config.qk_norm;
    struct rig_op_qk_norm_rope_store store = {.q = q,
                                              .k = k,
                                              .v = v,
                                              .k_cache = w->k_cache,
                                              .v_cache = w->v_cache,
                                              .q_norm = qk_norm ? w->q_norm : rig_tensor_none(),
                                              .k_norm = qk_norm ? w->k_norm : rig_tensor_none(),
                                              .positions = b->positions,
                                              .out_loc = b->out_loc,
                                              .eps = m->config.rms_norm_eps,
                                              .params = m->config.rope};
    float scale = 1.0f / sqrtf((float)m->dims.head_dim);
    struct rig_tensor out = rig__rows(&m->attn, T);
    if (b->phase == RIG_BATCH_DECODE) { /* token r is request r's newest position */
        struct rig_op_attention_decode p = {
            .out = out, .q = q, .k_cache = w->k_cache, .v_cache = w->v_cache,
            .page_table = b->page_table, .table_idx = b->table_idx, .kv_len = b->kv_len,
            .scale = scale};
        struct rig_op op = {.kind = RIG_OP_ATTENTION_DECODE_STORE,
                            .u.attention_decode_store = {.store = store, .attend = p}};
        return rig__issue(m, s, "attention_decode_store", &op);
    }
    RIG_TRY(rig__issue(
        m, s, "qk_norm_rope_store",
        &(struct rig_op){.kind = RIG_OP_QK_NORM_ROPE_STORE, .u.qk_norm_rope_store = store}));
    struct rig_op_attention_prefill p = {
        .out = out, .q = q, .k_cache = w->k_cache, .v_cache = w->v_cache,
        .page_table = b->page_table, .table_idx = b->table_idx, .cu_q = b->cu_q,
        .kv_len = b->kv_len, .scale = scale};
    struct rig_op op = {.kind = RIG_OP_ATTENTION_PREFILL, .u.attention_prefill = p};
    return rig__issue(m, s, "attention_prefill", &op);
}

/* Attention block of layer `l`: QKV, attention (rig__attend), o_proj. The result (before the
 * residual add) is left in m->proj; `fused`: QKV normalises the residual itself and o_proj
 * adds into it. */
static enum rig_status rig__attention(struct rig_model *m, struct rig_stream *s,
                                      const struct rig_forward_batch *b, int32_t l, bool fused)
{
    const struct rig__layer *w = &m->layers[l];
    int64_t T = b->padded_tokens;
    struct rig_op_gemm qkv = {.out = rig__rows(&m->qkv, T), .a = rig__rows(&m->hidden, T),
                              .b = w->qkv, .bias = w->qkv_bias};
    if (fused) rig__norm_prologue(m, &qkv, T, w->input_norm);
    RIG_TRY(rig__issue(m, s, "gemm qkv", &(struct rig_op){.kind = RIG_OP_GEMM, .u.gemm = qkv}));
    RIG_TRY(rig__attend(m, s, b, l));
    struct rig_tensor flat = rig_tensor_2d(m->attn.data, RIG_DTYPE_BF16, T,
                                           m->dims.q_heads * m->dims.head_dim);
    struct rig_op_gemm o = {.out = rig__rows(&m->proj, T), .a = flat, .b = w->o_proj,
                            .bias = rig_tensor_none()};
    if (fused) rig__accumulate(m, &o, T);
    RIG_TRY(rig__issue(m, s, "gemm o", &(struct rig_op){.kind = RIG_OP_GEMM, .u.gemm = o}));
    return fused ? RIG_OK : rig__all_reduce(m, s, rig__rows(&m->proj, T));
}

/* MLP of layer `l` on m->hidden; the result (before the residual add) is left in m->proj.
 * `fused`: gate_up normalises the residual itself, down takes silu_mul as its prologue and
 * adds into the residual. */
static enum rig_status rig__mlp(struct rig_model *m, struct rig_stream *s, int64_t T, int32_t l,
                                bool fused)
{
    const struct rig__layer *w = &m->layers[l];
    struct rig_op_gemm gate_up = {.out = rig__rows(&m->gate_up, T),
                                  .a = rig__rows(&m->hidden, T), .b = w->gate_up,
                                  .bias = rig_tensor_none()};
    if (fused) rig__norm_prologue(m, &gate_up, T, w->post_norm);
    RIG_TRY(
        rig__issue(m, s, "gemm gate_up", &(struct rig_op){.kind = RIG_OP_GEMM, .u.gemm = gate_up}));
    struct rig_op_silu_mul act = {.out = rig__rows(&m->act, T),
                                  .in = rig__rows(&m->gate_up, T)};
    if (!fused)
        RIG_TRY(rig__issue(m, s, "silu_mul",
                           &(struct rig_op){.kind = RIG_OP_SILU_MUL, .u.silu_mul = act}));
    struct rig_op_gemm down = {.out = rig__rows(&m->proj, T), .a = rig__rows(&m->act, T),
                               .b = w->down, .bias = rig_tensor_none()};
    if (fused) {
        down.a = act.in;
        down.prologue = RIG_GEMM_PROLOGUE_SILU_MUL;
        down.operand = act.out;
        rig__accumulate(m, &down, T);
    }
    RIG_TRY(rig__issue(m, s, "gemm down", &(struct rig_op){.kind = RIG_OP_GEMM, .u.gemm = down}));
    return fused ? RIG_OK : rig__all_reduce(m, s, rig__rows(&m->proj, T));
}

/* hidden = norm(residual += proj) with `weight`; without `add` (the first layer, or after
 * fused layers, whose GEMMs added into the residual) norm(residual). */
static enum rig_status rig__add_norm(struct rig_model *m, struct rig_stream *s, int64_t T,
                                     struct rig_tensor weight, bool add)
{
    float eps = m->config.rms_norm_eps;
    if (!add) {
        struct rig_op_rms_norm p = {.out = rig__rows(&m->hidden, T),
                                    .in = rig__rows(&m->residual, T), .weight = weight,
                                    .eps = eps};
        return rig__issue(m, s, "rms_norm",
                          &(struct rig_op){.kind = RIG_OP_RMS_NORM, .u.rms_norm = p});
    }
    struct rig_op_add_rms_norm p = {.out = rig__rows(&m->hidden, T),
                                    .residual = rig__rows(&m->residual, T),
                                    .in = rig__rows(&m->proj, T), .weight = weight, .eps = eps};
    return rig__issue(m, s, "add_rms_norm",
                      &(struct rig_op){.kind = RIG_OP_ADD_RMS_NORM, .u.add_rms_norm = p});
}

/* The TP>1 tail of the LM head: gather every rank's [R, Vp] logits, then copy each rank's
 * real columns into [R, V], leaving the padded columns (ids >= V) behind, so that they can
 * never be sampled. */
static enum rig_status rig__gather_logits(struct rig_model *m, struct rig_stream *s, int64_t R)
{
    const struct rig__dims *d = &m->dims;
    struct rig_op_all_gather gather = {
        .out = rig_tensor_3d(m->gathered.data, RIG_DTYPE_F32, d->tp, R, d->vocab_rank),
        .in = rig__rows(&m->logits_local, R), .comm = m->comm};
    RIG_TRY(rig__issue(m, s, "all_gather",
                       &(struct rig_op){.kind = RIG_OP_ALL_GATHER, .u.all_gather = gather}));
    for (int32_t k = 0; k < d->tp; k++) {
        int64_t start = (int64_t)k * d->vocab_rank;
        int64_t columns = d->vocab - start < d->vocab_rank ? d->vocab - start : d->vocab_rank;
        if (columns <= 0) continue;
        struct rig_tensor out = rig_tensor_2d((float *)m->logits.data + start, RIG_DTYPE_F32,
                                              R, columns);
        out.stride[0] = d->vocab;
        struct rig_tensor in = rig_tensor_2d((float *)m->gathered.data + k * R * d->vocab_rank,
                                             RIG_DTYPE_F32, R, columns);
        in.stride[0] = d->vocab_rank;
        struct rig_op_copy copy = {.out = out, .in = in};
        RIG_TRY(rig__issue(m, s, "copy", &(struct rig_op){.kind = RIG_OP_COPY, .u.copy = copy}));
    }
    return RIG_OK;
}

/* The sampling extensions around the sample op: penalties on the logits before it, logprobs
 * after it; each only when the batch carries its tensors. */
static enum rig_status rig__penalize(struct rig_model *m, struct rig_stream *s,
                                     const struct rig_forward_batch *b, int64_t R)
{
    if (b->repetition.data == NULL) return RIG_OK;
    struct rig_op_penalize p = {.logits = rig__rows(&m->logits, R),
                                .counts = rig__rows(&m->penalty_counts, R),
                                .token_pool = b->token_pool, .table_idx = b->table_idx,
                                .kv_len = b->kv_len, .out_len = b->sample_pos,
                                .repetition = b->repetition, .frequency = b->frequency,
                                .presence = b->presence};
    return rig__issue(m, s, "penalize", &(struct rig_op){.kind = RIG_OP_PENALIZE, .u.penalize = p});
}

static enum rig_status rig__logprobs(struct rig_model *m, struct rig_stream *s,
                                     const struct rig_forward_batch *b, int64_t R)
{
    if (b->out_logprob.data == NULL) return RIG_OK;
    struct rig_op_logprobs p = {.logprob = b->out_logprob, .top_ids = b->out_top_ids,
                                .top_logprobs = b->out_top_logprobs,
                                .logits = rig__rows(&m->logits, R),
                                .temperature = b->temperature, .tokens = b->out_tokens};
    return rig__issue(m, s, "logprobs", &(struct rig_op){.kind = RIG_OP_LOGPROBS, .u.logprobs = p});
}

/* Final hidden rows of the last token of each request → f32 logits [R, V] → (penalties) →
 * one token per request into batch->out_tokens (→ logprobs). */
static enum rig_status rig__lm_head(struct rig_model *m, struct rig_stream *s,
                                    const struct rig_forward_batch *b)
{
    int64_t R = b->padded_requests;
    struct rig_op_gather_rows last = {.out = rig__rows(&m->last, R),
                                      .in = rig__rows(&m->hidden, b->padded_tokens),
                                      .idx = b->last_idx};
    RIG_TRY(rig__issue(m, s, "gather_rows",
                       &(struct rig_op){.kind = RIG_OP_GATHER_ROWS, .u.gather_rows = last}));
    struct rig_op_gemm head = {.out = rig__rows(&m->logits_local, R),
                               .a = rig__rows(&m->last, R), .b = m->lm_head,
                               .bias = rig_tensor_none()};
    RIG_TRY(
        rig__issue(m, s, "gemm lm_head", &(struct rig_op){.kind = RIG_OP_GEMM, .u.gemm = head}));
    if (m->comm != NULL && !m->local_only) RIG_TRY(rig__gather_logits(m, s, R));
    if (!b->sample) return RIG_OK;
    RIG_TRY(rig__penalize(m, s, b, R));
    struct rig_op_sample sample = {.tokens = b->out_tokens, .logits = rig__rows(&m->logits, R),
                                   .temperature = b->temperature, .top_k = b->top_k,
                                   .top_p = b->top_p, .seed = b->seed,
                                   .position = b->sample_pos, .min_p = b->min_p,
                                   .checked = b->out_checked};
    RIG_TRY(
        rig__issue(m, s, "sample", &(struct rig_op){.kind = RIG_OP_SAMPLE, .u.sample = sample}));
    return rig__logprobs(m, s, b, R);
}

/* Whether a batch of T padded tokens runs the fused layer (file comment): at most fuse_rows
 * rows, and no all-reduce between a GEMM and the residual add it would take in (TP 1). Not
 * for a TP > 1 batch that leaves its collectives out either: that is the engine's warm
 * forward (batch.h), which must issue the ops the serving forwards of its size issue, so
 * that their kernels load before any collective is in flight. */
static bool rig__fused(const struct rig_model *m, int64_t T)
{
    return T <= m->fuse_rows && m->comm == NULL;
}

/* The forward of `batch`, its ops issued through rig__issue. */
static enum rig_status rig__forward(struct rig_model *model, struct rig_stream *stream,
                                    const struct rig_forward_batch *batch)
{
    RIG_ASSERT(model != NULL && batch != NULL);
    RIG_ASSERT(batch->num_tokens <= batch->padded_tokens);
    RIG_ASSERT(batch->num_requests <= batch->padded_requests);
    struct rig_model *m = model;
    m->local_only = batch->local_only;
    int64_t T = batch->padded_tokens;
    if (T > m->limits.max_tokens || batch->padded_requests > m->limits.max_requests)
        return RIG_E_CAPACITY;
    if (T < 1 || batch->padded_requests < 1) return RIG_E_INVALID;
    RIG_ASSERT(batch->phase != RIG_BATCH_DECODE || T == batch->padded_requests);
    struct rig_op_embedding embed = {.out = rig__rows(&m->residual, T), .table = m->embed,
                                     .ids = batch->input_ids,
                                     .vocab_start = m->dims.vocab_start};
    RIG_TRY(rig__issue(m, stream, "embedding",
                       &(struct rig_op){.kind = RIG_OP_EMBEDDING, .u.embedding = embed}));
    RIG_TRY(rig__all_reduce(m, stream, rig__rows(&m->residual, T)));
    bool fused = rig__fused(m, T);
    for (int32_t l = 0; l < m->config.num_layers; l++) {
        m->layer = l;
        if (!fused) RIG_TRY(rig__add_norm(m, stream, T, m->layers[l].input_norm, l > 0));
        RIG_TRY(rig__attention(m, stream, batch, l, fused));
        if (!fused) RIG_TRY(rig__add_norm(m, stream, T, m->layers[l].post_norm, true));
        RIG_TRY(rig__mlp(m, stream, T, l, fused));
    }
    m->layer = -1;
    RIG_TRY(rig__add_norm(m, stream, T, m->final_norm, !fused));
    if (!batch->sample && !m->keep_logits) return RIG_OK; /* a non-final prefill chunk */
    return rig__lm_head(m, stream, batch);
}

enum rig_status rig_model_forward(struct rig_model *model, struct rig_stream *stream,
                                  const struct rig_forward_batch *batch)
{
    RIG_ASSERT(model != NULL && stream != NULL && model->sink == NULL);
    model->layer = -1;
    return rig__forward(model, stream, batch);
}

enum rig_status rig_model_forward_ops(struct rig_model *model,
                                      const struct rig_forward_batch *batch,
                                      const struct rig_model_op_sink *sink)
{
    RIG_ASSERT(model != NULL && sink != NULL && sink->op != NULL);
    model->sink = sink;
    model->layer = -1;
    enum rig_status status = rig__forward(model, NULL, batch);
    model->sink = NULL;
    return status;
}
