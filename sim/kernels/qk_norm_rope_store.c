/* qk_norm_rope_store.c — q/k norm, RoPE and the K/V store of one layer as one op.
 *
 * The oracle for the fused CUDA kernel, and by construction the composition
 * head_rms_norm(q), head_rms_norm(k), rope(q, k), store_kv(k, v): the same shared vector
 * functions (sim/kernels/head.h) in the same order on every head vector, so every bf16
 * rounding happens where the three ops round. Ops on different tokens and heads touch
 * disjoint memory (hal/ops.h forbids overlap), so doing a whole token at a time instead of
 * a whole op at a time changes no byte.
 */
#include "hal/rope.h"
#include "sim/kernels.h"

#include <string.h>

#include "sim/kernels/access.h"
#include "sim/kernels/head.h"

/* Norm (when weight is given) then rotate every head of token t of x ([T, heads, D]). */
static void rig__norm_rotate(const struct rig_tensor *x, int64_t t, const struct rig_tensor *weight,
                             float eps, const float *cosines, const float *sines)
{
    int64_t head_dim = x->shape[2];
    for (int64_t h = 0; h < x->shape[1]; h++) {
        uint16_t *v = rig_sim_vec_bf16(x, t, h);
        if (weight->data != NULL)
            rig_sim_rms_norm_vector(v, v, (const uint16_t *)weight->data, head_dim, eps);
        rig_sim_rope_vector(v, cosines, sines, head_dim / 2);
    }
}

void rig_sim_op_qk_norm_rope_store(const struct rig_op_qk_norm_rope_store *p)
{
    int64_t head_dim = p->q.shape[2], half = head_dim / 2;
    RIG_ASSERT(head_dim <= RIG_SIM_HEAD_DIM_MAX && p->k.shape[2] == head_dim);
    RIG_ASSERT((p->q_norm.data == NULL) == (p->k_norm.data == NULL));
    float inv_freq[RIG_SIM_HEAD_DIM_MAX / 2]; /* (D/2) */
    for (int64_t i = 0; i < half; i++)
        inv_freq[i] = rig_rope_inv_freq(&p->params, (int32_t)i, (int32_t)head_dim);
    size_t head_bytes = (size_t)head_dim * sizeof(uint16_t);
    int64_t slots = p->k_cache.shape[0];
    for (int64_t t = 0; t < p->q.shape[0]; t++) {
        float cosines[RIG_SIM_HEAD_DIM_MAX / 2]; /* (D/2) */
        float sines[RIG_SIM_HEAD_DIM_MAX / 2];   /* (D/2) */
        rig_sim_rope_angles(inv_freq, rig_sim_get_i32(&p->positions, t), half, cosines, sines);
        rig__norm_rotate(&p->q, t, &p->q_norm, p->eps, cosines, sines);
        rig__norm_rotate(&p->k, t, &p->k_norm, p->eps, cosines, sines);
        int64_t slot = rig_sim_get_i32(&p->out_loc, t);
        RIG_ASSERT_MSG(slot >= 0 && slot < slots, "qk_norm_rope_store: slot outside the KV cache");
        for (int64_t h = 0; h < p->k.shape[1]; h++) {
            memcpy(rig_sim_vec_bf16(&p->k_cache, slot, h), rig_sim_vec_bf16(&p->k, t, h),
                   head_bytes);
            memcpy(rig_sim_vec_bf16(&p->v_cache, slot, h), rig_sim_vec_bf16(&p->v, t, h),
                   head_bytes);
        }
    }
}
