/* attention.c — paged causal attention: prefill over a cached prefix, and decode.
 *
 * Both ops reduce to one primitive: a query head vector attends to the first `keys` positions
 * of a page-table row, reading K and V of KV head `head_kv` at slot page_table[row, pos].
 * Scores s_j = scale * (q . k_j) in fp32; softmax with the maximum subtracted; output
 * sum_j softmax_j * v_j in fp32, rounded to bf16 once at the store.
 *
 * Why two passes instead of a score buffer: the number of keys is bounded only by the
 * context length, and the kernels allocate nothing. The first pass finds the maximum score,
 * the second recomputes each score (bit-identical: same order, same operations) and
 * accumulates exp(s_j - max) and the weighted V. Positions are visited in increasing order,
 * so the result is a pure function of the inputs.
 *
 * GQA: query head h reads KV head h / (Hq / Hk).
 */
#include "sim/kernels.h"

#include <math.h>

#include "sim/kernels/access.h"

/* Everything about one request's row of the cache that the primitive needs. */
struct rig__kv_view {
    const struct rig_tensor *k_cache; /* [S, Hk, D] */
    const struct rig_tensor *v_cache; /* [S, Hk, D] */
    const int32_t *slots;             /* (L) page_table row of the request */
    int64_t slot_count;               /* S, for range asserts */
};

static float rig__score(const uint16_t *q, const uint16_t *k, int64_t head_dim, float scale)
{
    float dot = 0.0f;
    for (int64_t d = 0; d < head_dim; d++) dot += rig_bf16_to_f32(q[d]) * rig_bf16_to_f32(k[d]);
    return dot * scale;
}

static int64_t rig__slot(const struct rig__kv_view *kv, int64_t position)
{
    int64_t slot = kv->slots[position];
    RIG_ASSERT_MSG(slot >= 0 && slot < kv->slot_count, "attention: slot outside the KV cache");
    return slot;
}

/* out = softmax(scale * q . K[0..keys)) V[0..keys) for one head; keys >= 1. */
static void rig__attend(uint16_t *out, const uint16_t *q, const struct rig__kv_view *kv,
                        int64_t head_kv, int64_t keys, float scale)
{
    int64_t head_dim = kv->k_cache->shape[2];
    RIG_ASSERT(keys >= 1);
    RIG_ASSERT(head_dim <= RIG_SIM_HEAD_DIM_MAX);
    float max_score = -INFINITY;
    for (int64_t j = 0; j < keys; j++) {
        const uint16_t *k = rig_sim_vec_bf16(kv->k_cache, rig__slot(kv, j), head_kv);
        float s = rig__score(q, k, head_dim, scale);
        if (s > max_score) max_score = s;
    }
    float acc[RIG_SIM_HEAD_DIM_MAX] = {0}; /* (D) sum_j w_j * v_j */
    float weight_sum = 0.0f;
    for (int64_t j = 0; j < keys; j++) {
        int64_t slot = rig__slot(kv, j);
        float s = rig__score(q, rig_sim_vec_bf16(kv->k_cache, slot, head_kv), head_dim, scale);
        float w = expf(s - max_score);
        weight_sum += w;
        const uint16_t *v = rig_sim_vec_bf16(kv->v_cache, slot, head_kv);
        for (int64_t d = 0; d < head_dim; d++) acc[d] += w * rig_bf16_to_f32(v[d]);
    }
    /* The maximum contributes exp(0) = 1; NaN (non-finite weights) passes on to the logits,
     * where the sampler flags the row. */
    RIG_ASSERT(!(weight_sum < 1.0f));
    for (int64_t d = 0; d < head_dim; d++) out[d] = rig_f32_to_bf16(acc[d] / weight_sum);
}

/* The cache view of request r: its page-table row, with its KV length checked against it. */
static struct rig__kv_view rig__view(const struct rig_tensor *k_cache,
                                     const struct rig_tensor *v_cache,
                                     const struct rig_tensor *page_table,
                                     const struct rig_tensor *table_idx, int64_t r,
                                     int64_t kv_len)
{
    int64_t row = rig_sim_get_i32(table_idx, r);
    RIG_ASSERT_MSG(row >= 0 && row < page_table->shape[0], "attention: table row out of range");
    RIG_ASSERT_MSG(kv_len >= 0 && kv_len <= page_table->shape[1],
                   "attention: kv_len longer than a page-table row");
    struct rig__kv_view view = {
        .k_cache = k_cache,
        .v_cache = v_cache,
        .slots = (const int32_t *)rig_sim_addr(page_table, row, 0),
        .slot_count = k_cache->shape[0],
    };
    return view;
}

void rig_sim_op_attention_prefill(const struct rig_op_attention_prefill *p)
{
    int64_t requests = p->table_idx.shape[0];
    int64_t heads_q = p->q.shape[1];
    int64_t group = heads_q / p->k_cache.shape[1];
    RIG_ASSERT(rig_sim_get_i32(&p->cu_q, 0) == 0);
    RIG_ASSERT(rig_sim_get_i32(&p->cu_q, requests) == p->q.shape[0]);
    for (int64_t r = 0; r < requests; r++) {
        int64_t q_begin = rig_sim_get_i32(&p->cu_q, r);
        int64_t q_end = rig_sim_get_i32(&p->cu_q, r + 1);
        int64_t kv_len = rig_sim_get_i32(&p->kv_len, r);
        RIG_ASSERT_MSG(q_begin <= q_end, "attention_prefill: cu_q not increasing");
        RIG_ASSERT_MSG(q_end - q_begin <= kv_len, "attention_prefill: more queries than keys");
        struct rig__kv_view kv = rig__view(&p->k_cache, &p->v_cache, &p->page_table,
                                           &p->table_idx, r, kv_len);
        int64_t first_position = kv_len - (q_end - q_begin);
        for (int64_t t = q_begin; t < q_end; t++) {
            int64_t keys = first_position + (t - q_begin) + 1; /* causal: up to itself */
            for (int64_t h = 0; h < heads_q; h++) {
                rig__attend(rig_sim_vec_bf16(&p->out, t, h), rig_sim_vec_bf16(&p->q, t, h), &kv,
                            h / group, keys, p->scale);
            }
        }
    }
}

void rig_sim_op_attention_decode(const struct rig_op_attention_decode *p)
{
    int64_t requests = p->table_idx.shape[0];
    int64_t heads_q = p->q.shape[1];
    int64_t group = heads_q / p->k_cache.shape[1];
    for (int64_t r = 0; r < requests; r++) {
        int64_t kv_len = rig_sim_get_i32(&p->kv_len, r);
        RIG_ASSERT_MSG(kv_len >= 1, "attention_decode: a request with no keys");
        struct rig__kv_view kv = rig__view(&p->k_cache, &p->v_cache, &p->page_table,
                                           &p->table_idx, r, kv_len);
        for (int64_t h = 0; h < heads_q; h++) {
            rig__attend(rig_sim_vec_bf16(&p->out, r, h), rig_sim_vec_bf16(&p->q, r, h), &kv,
                        h / group, kv_len, p->scale);
        }
    }
}
