/* weights.c — where each weight of a rank lives, and filling it from a checkpoint or from
 * seeded dummy values.
 *
 * One plan (rig__plan) walks the model's tensors in a fixed order and, for each, carves its
 * place in the weights buffer and lists the pieces of Hugging Face tensors that fill it:
 * QKV is q_proj's, k_proj's and v_proj's rows for this rank's heads stacked ([Hq_r*D +
 * 2*Hk_r*D, H]); gate_up is gate_proj's then up_proj's rows ([2*I_r, H]); o_proj and
 * down_proj keep all rows and this rank's columns (row-parallel); the embedding and an
 * untied LM head keep this rank's vocabulary rows (rows past V stay zero). The same plan
 * sizes the buffer, points the tensors and drives the loading, so they cannot disagree.
 *
 * Dummy weights (vLLM's --load-format dummy): element i (row-major, of the full HF tensor)
 * of tensor `name` is drawn from Philox with key = seed and counter = (i / 4 low, high
 * word, RIG_PHILOX_STREAM_WEIGHTS, fnv1a(name)), word i % 4: a pure function of the name
 * and the global index, so every TP degree sees the same model. Matrices are uniform with
 * standard deviation 0.02 (HF's initializer_range), norm weights 1 ± 0.1, biases ± 0.02:
 * small enough that activations stay finite through RMSNorm-ed layers, large enough that
 * logits are not all ties (vLLM's ±1e-3 makes every logit ~0). The device generates them:
 * one rig_hal_buffer_fill_dummy per piece, queued on the stream with one synchronize at the
 * end (hal/dummy.h holds the value function, whose bits the simulator computes on the host
 * and the CUDA kernel on the GPU), so a model with dummy weights starts with no host work
 * per element and no upload. A checkpoint is read on the host and uploaded in chunks through
 * one staging block, each chunk's copy waited for before the block is reused.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/model_impl.h"
#include "core/model/safetensors.h"
#include "hal/dummy.h"

enum rig__piece_kind {
    RIG__PIECE_MATRIX = 0,
    RIG__PIECE_NORM = 1,
    RIG__PIECE_BIAS = 2,
};

/* A block of one HF tensor copied into the weights buffer. */
struct rig__piece {
    char name[96];
    enum rig__piece_kind kind;
    int64_t full_rows, full_cols; /* HF shape; full_cols == 0: 1-D [full_rows] */
    int64_t row0, rows, col0, cols;
    size_t dst_offset;            /* bytes into the weights buffer; rows*cols bf16 follow */
};

#define RIG__PIECES_PER_LAYER 14
#define RIG__PIECES_GLOBAL 4

struct rig__plan_state {
    size_t cursor;               /* bytes carved so far */
    uint8_t *base;               /* device address of the buffer, NULL when only sizing */
    struct rig__piece *pieces;   /* (capacity) or NULL */
    int32_t count, capacity;
};

static size_t rig__carve(struct rig__plan_state *s, size_t bytes)
{
    size_t offset = s->cursor;
    s->cursor += (bytes + RIG__ALIGN - 1) / RIG__ALIGN * RIG__ALIGN;
    return offset;
}

static void rig__piece(struct rig__plan_state *s, enum rig__piece_kind kind, int64_t full_rows,
                       int64_t full_cols, int64_t row0, int64_t rows, int64_t col0,
                       int64_t cols, size_t dst_offset, const char *format, ...)
{
    if (s->pieces == NULL || rows == 0) return;
    RIG_ASSERT(s->count < s->capacity);
    struct rig__piece *p = &s->pieces[s->count++];
    va_list ap;
    va_start(ap, format);
    vsnprintf(p->name, sizeof p->name, format, ap);
    va_end(ap);
    p->kind = kind;
    p->full_rows = full_rows;
    p->full_cols = full_cols;
    p->row0 = row0;
    p->rows = rows;
    p->col0 = col0;
    p->cols = cols;
    p->dst_offset = dst_offset;
}

/* A [rows, cols] bf16 tensor at a freshly carved offset (1-D when cols == 0). */
static struct rig_tensor rig__tensor(struct rig__plan_state *s, int64_t rows, int64_t cols,
                                     size_t *offset)
{
    int64_t width = cols == 0 ? 1 : cols;
    *offset = rig__carve(s, (size_t)(rows * width) * sizeof(uint16_t));
    void *data = s->base != NULL ? s->base + *offset : (void *)(uintptr_t)RIG__ALIGN;
    return cols == 0 ? rig_tensor_1d(data, RIG_DTYPE_BF16, rows)
                     : rig_tensor_2d(data, RIG_DTYPE_BF16, rows, cols);
}

static void rig__plan_attention(struct rig__plan_state *s, const struct rig_model_config *c,
                                const struct rig__dims *d, int32_t l, struct rig__layer *w)
{
    int64_t D = d->head_dim, H = d->hidden;
    int64_t q_rows = d->q_heads * D, kv_rows = d->kv_heads * D;
    int64_t q_row0 = (int64_t)d->rank * q_rows, kv_row0 = d->kv_head0 * D;
    int64_t q_full = (int64_t)c->num_heads * D, kv_full = (int64_t)c->num_kv_heads * D;
    const char *proj[3] = {"q_proj", "k_proj", "v_proj"};
    int64_t full[3] = {q_full, kv_full, kv_full}, row0[3] = {q_row0, kv_row0, kv_row0};
    int64_t rows[3] = {q_rows, kv_rows, kv_rows};
    size_t offset, bias_offset = 0;
    w->qkv = rig__tensor(s, d->qkv_width, H, &offset);
    if (c->qkv_bias) w->qkv_bias = rig__tensor(s, d->qkv_width, 0, &bias_offset);
    for (int i = 0, at = 0; i < 3; at += (int)rows[i], i++) {
        rig__piece(s, RIG__PIECE_MATRIX, full[i], H, row0[i], rows[i], 0, H,
                   offset + (size_t)(at * H) * 2, "model.layers.%d.self_attn.%s.weight", l,
                   proj[i]);
        if (c->qkv_bias)
            rig__piece(s, RIG__PIECE_BIAS, full[i], 0, row0[i], rows[i], 0, 1,
                       bias_offset + (size_t)at * 2, "model.layers.%d.self_attn.%s.bias", l,
                       proj[i]);
    }
    if (c->qk_norm) {
        w->q_norm = rig__tensor(s, D, 0, &offset);
        rig__piece(s, RIG__PIECE_NORM, D, 0, 0, D, 0, 1, offset,
                   "model.layers.%d.self_attn.q_norm.weight", l);
        w->k_norm = rig__tensor(s, D, 0, &offset);
        rig__piece(s, RIG__PIECE_NORM, D, 0, 0, D, 0, 1, offset,
                   "model.layers.%d.self_attn.k_norm.weight", l);
    }
    w->o_proj = rig__tensor(s, H, q_rows, &offset);
    rig__piece(s, RIG__PIECE_MATRIX, H, q_full, 0, H, q_row0, q_rows, offset,
               "model.layers.%d.self_attn.o_proj.weight", l);
}

static void rig__plan_layer(struct rig__plan_state *s, const struct rig_model_config *c,
                            const struct rig__dims *d, int32_t l, struct rig__layer *w)
{
    int64_t H = d->hidden, I = c->intermediate_size, I_r = d->inter;
    size_t offset;
    w->input_norm = rig__tensor(s, H, 0, &offset);
    rig__piece(s, RIG__PIECE_NORM, H, 0, 0, H, 0, 1, offset,
               "model.layers.%d.input_layernorm.weight", l);
    rig__plan_attention(s, c, d, l, w);
    w->post_norm = rig__tensor(s, H, 0, &offset);
    rig__piece(s, RIG__PIECE_NORM, H, 0, 0, H, 0, 1, offset,
               "model.layers.%d.post_attention_layernorm.weight", l);
    w->gate_up = rig__tensor(s, 2 * I_r, H, &offset);
    rig__piece(s, RIG__PIECE_MATRIX, I, H, d->rank * I_r, I_r, 0, H, offset,
               "model.layers.%d.mlp.gate_proj.weight", l);
    rig__piece(s, RIG__PIECE_MATRIX, I, H, d->rank * I_r, I_r, 0, H,
               offset + (size_t)(I_r * H) * 2, "model.layers.%d.mlp.up_proj.weight", l);
    w->down = rig__tensor(s, H, I_r, &offset);
    rig__piece(s, RIG__PIECE_MATRIX, H, I, 0, H, d->rank * I_r, I_r, offset,
               "model.layers.%d.mlp.down_proj.weight", l);
}

/* Walks every tensor; fills `model`'s weight tensors when given. Returns the bytes. */
static size_t rig__plan(const struct rig_model_config *c, const struct rig__dims *d,
                        struct rig__plan_state *s, struct rig_model *model)
{
    struct rig__layer scratch;
    size_t offset;
    int64_t H = d->hidden;
    struct rig_tensor embed = rig__tensor(s, d->vocab_rank, H, &offset);
    rig__piece(s, RIG__PIECE_MATRIX, d->vocab, H, d->vocab_start, d->vocab_held, 0, H, offset,
               "model.embed_tokens.weight");
    struct rig_tensor lm_head = embed;
    if (!c->tie_word_embeddings) {
        lm_head = rig__tensor(s, d->vocab_rank, H, &offset);
        rig__piece(s, RIG__PIECE_MATRIX, d->vocab, H, d->vocab_start, d->vocab_held, 0, H,
                   offset, "lm_head.weight");
    }
    struct rig_tensor final_norm = rig__tensor(s, H, 0, &offset);
    rig__piece(s, RIG__PIECE_NORM, H, 0, 0, H, 0, 1, offset, "model.norm.weight");
    for (int32_t l = 0; l < c->num_layers; l++) {
        struct rig__layer *w = model != NULL ? &model->layers[l] : &scratch;
        memset(w, 0, sizeof *w);
        rig__plan_layer(s, c, d, l, w);
    }
    if (model != NULL) {
        model->embed = embed;
        model->lm_head = lm_head;
        model->final_norm = final_norm;
    }
    return s->cursor;
}

size_t rig__weights_bytes(const struct rig_model_config *config, const struct rig__dims *dims)
{
    struct rig__plan_state s = {0};
    return rig__plan(config, dims, &s, NULL);
}

void rig__weights_layout(struct rig_model *model)
{
    struct rig__plan_state s = {.base = rig_hal_buffer_ptr(model->weights_buffer)};
    size_t bytes = rig__plan(&model->config, &model->dims, &s, model);
    RIG_ASSERT(bytes <= rig_hal_buffer_size(model->weights_buffer));
}

/* The pieces of this rank, in plan order; the caller frees. NULL when out of memory. */
static struct rig__piece *rig__pieces(const struct rig_model_config *c,
                                      const struct rig__dims *d, int32_t *count)
{
    int32_t capacity = RIG__PIECES_GLOBAL + RIG__PIECES_PER_LAYER * c->num_layers;
    struct rig__plan_state s = {.pieces = calloc((size_t)capacity, sizeof(struct rig__piece)),
                                .capacity = capacity};
    if (s.pieces == NULL) return NULL;
    rig__plan(c, d, &s, NULL);
    *count = s.count;
    return s.pieces;
}

/* The dummy values of piece `p` (see the file comment): scale and offset by its kind. */
static struct rig_dummy_piece rig__dummy_of(const struct rig__piece *p, uint64_t seed)
{
    const float half_range = 0.02f * 1.7320508f; /* uniform with std 0.02 */
    float scale = p->kind == RIG__PIECE_NORM ? 0.1f
                  : p->kind == RIG__PIECE_BIAS ? 0.02f : half_range;
    float offset = p->kind == RIG__PIECE_NORM ? 1.0f : 0.0f;
    return (struct rig_dummy_piece){.seed = seed, .tag = rig_dummy_tag(p->name),
                                    .scale = scale, .offset = offset,
                                    .width = p->full_cols == 0 ? 1 : p->full_cols,
                                    .row0 = p->row0, .col0 = p->col0, .rows = p->rows,
                                    .cols = p->cols};
}

/* Checks one piece's HF tensor: present, the shape the config implies, a float dtype. */
static enum rig_status rig__check_piece(const struct rig_safetensors *st, const char *path,
                                        const struct rig__piece *p, char *error,
                                        size_t error_len)
{
    const struct rig_safetensors_tensor *t = rig_safetensors_find(st, p->name);
    if (t == NULL) {
        snprintf(error, error_len, "%s: missing tensor '%s'", path, p->name);
        return RIG_E_NOT_FOUND;
    }
    int32_t ndim = p->full_cols == 0 ? 1 : 2;
    if (t->ndim != ndim || t->shape[0] != p->full_rows ||
        (ndim == 2 && t->shape[1] != p->full_cols)) {
        snprintf(error, error_len,
                 "%s: tensor '%s' has shape [%lld, %lld] (%d dims), expected [%lld, %lld] "
                 "from config.json", path, p->name, (long long)t->shape[0],
                 (long long)t->shape[1], t->ndim, (long long)p->full_rows,
                 (long long)(ndim == 2 ? p->full_cols : 1));
        return RIG_E_SHAPE;
    }
    if (t->dtype != RIG_DTYPE_BF16 && t->dtype != RIG_DTYPE_F16 && t->dtype != RIG_DTYPE_F32) {
        snprintf(error, error_len, "%s: tensor '%s' has dtype %s (supported: BF16, F16, F32)",
                 path, p->name, t->dtype_name);
        return RIG_E_DTYPE;
    }
    return RIG_OK;
}

static enum rig_status rig__check_all(const struct rig_safetensors *st, const char *path,
                                      const struct rig__piece *pieces, int32_t count,
                                      char *error, size_t error_len)
{
    for (int32_t i = 0; i < count; i++) {
        enum rig_status status = rig__check_piece(st, path, &pieces[i], error, error_len);
        if (status != RIG_OK) return status;
    }
    return RIG_OK;
}

enum rig_status rig__weights_check(const struct rig_model_config *config,
                                   const struct rig__dims *dims, const char *path,
                                   char *error, size_t error_len)
{
    if (path == NULL) return RIG_OK;
    int32_t count = 0;
    struct rig__piece *pieces = rig__pieces(config, dims, &count);
    if (pieces == NULL) {
        snprintf(error, error_len, "out of host memory");
        return RIG_E_NO_MEMORY;
    }
    struct rig_safetensors *st = NULL;
    enum rig_status status = rig_safetensors_open(path, &st, error, error_len);
    if (status == RIG_OK) status = rig__check_all(st, path, pieces, count, error, error_len);
    rig_safetensors_close(st);
    free(pieces);
    return status;
}

#define RIG__STAGING_BYTES (32u << 20)

/* Fails on the first NaN or Inf of a block just read ([rows, p->cols] bf16 at HF row
 * `row0`), naming the tensor and the element's row-major index in it. */
static enum rig_status rig__check_finite(const struct rig__piece *p, int64_t row0, int64_t rows,
                                         const uint16_t *block, char *error, size_t error_len)
{
    int64_t n = rows * p->cols;
    int64_t i = 0;
    while (i < n && (block[i] & 0x7f80u) != 0x7f80u) i++; /* bf16: exponent all ones */
    if (i == n) return RIG_OK;
    int64_t width = p->full_cols == 0 ? 1 : p->full_cols;
    int64_t element = (row0 + i / p->cols) * width + p->col0 + i % p->cols;
    const char *what = (block[i] & 0x7fu) != 0 ? "NaN" : (block[i] & 0x8000u) ? "-Inf" : "+Inf";
    snprintf(error, error_len,
             "%s: element %lld is %s (a checkpoint with non-finite weights; "
             "--skip-weight-check loads it anyway)", p->name, (long long)element, what);
    return RIG_E_RANGE;
}

/* Uploads one piece of the checkpoint in chunks of rows through `staging`
 * (RIG__STAGING_BYTES), waiting for each chunk's copy before the next reuses it. */
static enum rig_status rig__load_piece(struct rig_model *model, const struct rig__piece *p,
                                       const struct rig_safetensors *st,
                                       const struct rig_weights_source *source,
                                       struct rig_stream *stream, uint16_t *staging, char *error,
                                       size_t error_len)
{
    size_t row_bytes = (size_t)p->cols * sizeof(uint16_t);
    int64_t chunk = (int64_t)(RIG__STAGING_BYTES / row_bytes);
    RIG_ASSERT(chunk >= 1);
    const struct rig_safetensors_tensor *t = rig_safetensors_find(st, p->name);
    RIG_ASSERT(t != NULL); /* checked by rig__weights_check */
    for (int64_t done = 0; done < p->rows; done += chunk) {
        int64_t rows = p->rows - done < chunk ? p->rows - done : chunk;
        enum rig_status status = RIG_OK;
        rig_safetensors_read_bf16(t, p->row0 + done, rows, p->col0, p->cols, staging);
        if (!source->skip_weight_check)
            status = rig__check_finite(p, p->row0 + done, rows, staging, error, error_len);
        if (status == RIG_OK)
            status = rig_hal_buffer_upload(stream, model->weights_buffer,
                                           p->dst_offset + (size_t)done * row_bytes, staging,
                                           (size_t)rows * row_bytes);
        if (status == RIG_OK) status = rig_hal_stream_synchronize(stream);
        if (status != RIG_OK) return status;
    }
    return RIG_OK;
}

/* Zeroes the whole weights buffer: vocabulary rows past V must be zero (their logits are
 * sliced off, but the embedding of an out-of-range id must not read garbage either). */
static enum rig_status rig__zero(struct rig_model *model, struct rig_stream *stream)
{
    size_t words = rig_hal_buffer_size(model->weights_buffer) / 4;
    return rig_hal_buffer_fill(stream, model->weights_buffer, 0, 0, words);
}

/* Every piece from the checkpoint at source->path, read on the host and uploaded; nothing
 * is issued before the checkpoint has opened and passed its checks. */
static enum rig_status rig__load_checkpoint(struct rig_model *model,
                                            const struct rig_weights_source *source,
                                            const struct rig__piece *pieces, int32_t count,
                                            struct rig_stream *stream, char *error,
                                            size_t error_len)
{
    uint16_t *staging = malloc(RIG__STAGING_BYTES);
    if (staging == NULL) {
        snprintf(error, error_len, "out of host memory");
        return RIG_E_NO_MEMORY;
    }
    struct rig_safetensors *st = NULL;
    enum rig_status status = rig_safetensors_open(source->path, &st, error, error_len);
    if (status == RIG_OK)
        status = rig__check_all(st, source->path, pieces, count, error, error_len);
    if (status == RIG_OK) status = rig__zero(model, stream);
    for (int32_t i = 0; i < count && status == RIG_OK; i++)
        status = rig__load_piece(model, &pieces[i], st, source, stream, staging, error,
                                 error_len);
    rig_safetensors_close(st);
    free(staging);
    return status;
}

/* Every piece's dummy values, generated on the device: one fill per piece, queued. */
static enum rig_status rig__load_dummy(struct rig_model *model, uint64_t seed,
                                       const struct rig__piece *pieces, int32_t count,
                                       struct rig_stream *stream)
{
    enum rig_status status = rig__zero(model, stream);
    for (int32_t i = 0; i < count && status == RIG_OK; i++) {
        struct rig_dummy_piece piece = rig__dummy_of(&pieces[i], seed);
        status = rig_hal_buffer_fill_dummy(stream, model->weights_buffer, pieces[i].dst_offset,
                                           &piece);
    }
    return status;
}

enum rig_status rig__weights_load(struct rig_model *model, const struct rig_weights_source *source,
                                  struct rig_stream *stream, char *error, size_t error_len)
{
    if (rig_hal_device_info(model->device)->timing_only) return RIG_OK; /* phantom weights */
    int32_t count = 0;
    struct rig__piece *pieces = rig__pieces(&model->config, &model->dims, &count);
    if (pieces == NULL) {
        snprintf(error, error_len, "out of host memory");
        return RIG_E_NO_MEMORY;
    }
    enum rig_status status =
        source->path != NULL
            ? rig__load_checkpoint(model, source, pieces, count, stream, error, error_len)
            : rig__load_dummy(model, source->dummy_seed, pieces, count, stream);
    if (status == RIG_OK) status = rig_hal_stream_synchronize(stream); /* the load's one wait */
    if (status != RIG_OK && error[0] == '\0')
        snprintf(error, error_len, "loading weights: %s", rig_status_message(status));
    free(pieces);
    return status;
}
