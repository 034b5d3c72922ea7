/* model_impl.h — the model's private state, shared by model.c (create, forward) and
 * weights.c (layout and loading). Not for use outside core/model/.
 *
 * One rank's share of the model lives in three device buffers allocated in
 * rig_model_create: weights, KV cache, activations. The tensors below are views into them
 * (offsets aligned to RIG__ALIGN bytes). Sizes per rank: Hq_r = Hq / tp query heads,
 * Hk_r = rig_model_kv_heads_per_rank KV heads, I_r = I / tp, Vp = ceil(V / tp) vocabulary
 * rows (rank r holds ids r*Vp .. r*Vp + Vp - 1; rows past V are zero).
 */
#ifndef RIG_MODEL_IMPL_H
#define RIG_MODEL_IMPL_H

#include "core/model/model.h"

#define RIG__ALIGN 256
#define RIG__LAYERS_MAX 1024

struct rig__layer {
    struct rig_tensor input_norm; /* [H] bf16 */
    struct rig_tensor qkv;        /* [(Hq_r + 2 Hk_r) * D, H] bf16: q rows, k rows, v rows */
    struct rig_tensor qkv_bias;   /* [(Hq_r + 2 Hk_r) * D] bf16, absent without qkv bias */
    struct rig_tensor q_norm;     /* [D] bf16, absent without qk norm */
    struct rig_tensor k_norm;     /* [D] bf16, absent without qk norm */
    struct rig_tensor o_proj;     /* [H, Hq_r * D] bf16 */
    struct rig_tensor post_norm;  /* [H] bf16 */
    struct rig_tensor gate_up;    /* [2 I_r, H] bf16: gate rows, then up rows */
    struct rig_tensor down;       /* [H, I_r] bf16 */
    struct rig_tensor k_cache;    /* [S, Hk_r, D] bf16 */
    struct rig_tensor v_cache;    /* [S, Hk_r, D] bf16 */
};

/* Per-rank sizes derived from the config and the TP degree. */
struct rig__dims {
    int32_t tp, rank;
    int64_t hidden;      /* H */
    int64_t head_dim;    /* D */
    int64_t q_heads;     /* Hq_r */
    int64_t kv_heads;    /* Hk_r */
    int64_t kv_head0;    /* first global KV head this rank holds */
    int64_t inter;       /* I_r */
    int64_t vocab;       /* V (global) */
    int64_t vocab_rank;  /* Vp rows per rank */
    int64_t vocab_start; /* rank * Vp */
    int64_t vocab_held;  /* real rows this rank holds: min(Vp, V - start), >= 0 */
    int64_t qkv_width;   /* (Hq_r + 2 Hk_r) * D */
};

struct rig_model {
    struct rig_model_config config;
    struct rig_model_limits limits;
    struct rig__dims dims;
    struct rig_device *device;
    struct rig_comm *comm; /* NULL at TP 1 */
    bool keep_logits;
    bool local_only; /* the batch being issued leaves collectives out (batch.h) */
    int32_t fuse_rows; /* batches of up to this many padded tokens run the fused layer (model.c);
                          0: never */
    const struct rig_model_op_sink *sink; /* rig_model_forward_ops: ops go here; else NULL */
    int32_t layer;                        /* the layer being issued; -1 outside the layers */

    struct rig_buffer *weights_buffer;     /* every weight of this rank */
    struct rig_buffer *kv_buffer;          /* k/v caches of every layer */
    struct rig_buffer *activations_buffer; /* the tensors below */

    struct rig_tensor embed;      /* [Vp, H] bf16 */
    struct rig_tensor final_norm; /* [H] bf16 */
    struct rig_tensor lm_head;    /* [Vp, H] bf16: embed itself when tied */
    struct rig__layer *layers;    /* (num_layers) */

    struct rig_tensor residual;     /* [T, H] bf16 */
    struct rig_tensor hidden;       /* [T, H] bf16 */
    struct rig_tensor qkv;          /* [T, qkv_width] bf16 */
    struct rig_tensor attn;         /* [T, Hq_r, D] bf16 */
    struct rig_tensor proj;         /* [T, H] bf16: o_proj and down outputs */
    struct rig_tensor gate_up;      /* [T, 2 I_r] bf16 */
    struct rig_tensor act;          /* [T, I_r] bf16 */
    struct rig_tensor last;         /* [R, H] bf16 */
    struct rig_tensor logits_local; /* [R, Vp] f32 */
    struct rig_tensor gathered;     /* [tp, R, Vp] f32, absent at TP 1 */
    struct rig_tensor logits;       /* [R, V] f32: logits_local itself at TP 1 */
    struct rig_tensor penalty_counts; /* [R, V] i32 scratch of the penalize op */
    size_t logits_offset;           /* byte offset of `logits` in activations_buffer */
};

/* Fills `dims` for rank `rank` of `tp`; RIG_E_INVALID with a message when the shapes do
 * not split over tp ranks. */
enum rig_status rig__model_dims(const struct rig_model_config *config, int32_t tp,
                                int32_t rank, struct rig__dims *dims, char *error,
                                size_t error_len);

/* Lays the weights out in model->weights_buffer (already allocated with
 * rig__weights_bytes bytes) and points the weight tensors at them. Can't fail. */
void rig__weights_layout(struct rig_model *model);
/* Bytes the weights of one rank take in the layout of rig__weights_layout. */
size_t rig__weights_bytes(const struct rig_model_config *config, const struct rig__dims *dims);

/* Checks every tensor the model needs against the checkpoint at `path` (present, shape,
 * dtype) without allocating device memory. NULL path (dummy weights) always passes. */
enum rig_status rig__weights_check(const struct rig_model_config *config,
                                   const struct rig__dims *dims, const char *path,
                                   char *error, size_t error_len);
/* Loads this rank's shards (from `source`) into the laid-out weight tensors, through a
 * bounded host staging buffer, on `stream`. Skipped in timing-only mode. */
enum rig_status rig__weights_load(struct rig_model *model, const struct rig_weights_source *source,
                                  struct rig_stream *stream, char *error, size_t error_len);

#endif /* RIG_MODEL_IMPL_H */
