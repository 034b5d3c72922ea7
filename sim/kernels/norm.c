/* norm.c — RMSNorm, fused residual-add + RMSNorm, and per-head RMSNorm (Qwen3 q/k norm).
 *
 * All three follow Hugging Face's LlamaRMSNorm / Qwen3RMSNorm exactly where it rounds:
 *   x     = input widened to fp32
 *   y     = bf16(x * rsqrt(mean(x^2) + eps))      (`hidden_states.to(input_dtype)`)
 *   out   = bf16(weight * y)                       (a bf16 * bf16 product, stored as bf16)
 * The mean of squares is accumulated in fp32 in index order, so the result is a pure function
 * of the input bytes. Every row is read completely before anything of it is written, which
 * is what lets `out` alias `in` (and the residual) safely.
 */
#include "sim/kernels.h"

#include <math.h>

#include "sim/kernels/access.h"
#include "sim/kernels/head.h"

void rig_sim_rms_norm_vector(uint16_t *out, const uint16_t *in, const uint16_t *weight, int64_t n,
                             float eps)
{
    RIG_ASSERT(n > 0);
    float sum_squares = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float x = rig_bf16_to_f32(in[i]);
        sum_squares += x * x;
    }
    float inverse_rms = 1.0f / sqrtf(sum_squares / (float)n + eps);
    for (int64_t i = 0; i < n; i++) {
        float normalised = rig_bf16_round(rig_bf16_to_f32(in[i]) * inverse_rms);
        out[i] = rig_f32_to_bf16(rig_bf16_to_f32(weight[i]) * normalised);
    }
}

/* The weight vector [H] as a contiguous pointer (a 1-D tensor with innermost stride 1). */
static const uint16_t *rig__weight(const struct rig_tensor *weight)
{
    RIG_ASSERT(weight->ndim == 1 && weight->dtype == RIG_DTYPE_BF16);
    return (const uint16_t *)weight->data;
}

void rig_sim_op_rms_norm(const struct rig_op_rms_norm *p)
{
    int64_t tokens = p->out.shape[0];
    int64_t hidden = p->out.shape[1];
    const uint16_t *weight = rig__weight(&p->weight);
    for (int64_t t = 0; t < tokens; t++) {
        rig_sim_rms_norm_vector(rig_sim_row_bf16(&p->out, t), rig_sim_row_bf16(&p->in, t), weight,
                                hidden, p->eps);
    }
}

void rig_sim_op_add_rms_norm(const struct rig_op_add_rms_norm *p)
{
    int64_t tokens = p->out.shape[0];
    int64_t hidden = p->out.shape[1];
    const uint16_t *weight = rig__weight(&p->weight);
    for (int64_t t = 0; t < tokens; t++) {
        uint16_t *residual = rig_sim_row_bf16(&p->residual, t);
        const uint16_t *in = rig_sim_row_bf16(&p->in, t);
        /* The whole row of `in` is consumed here, before `out` (which may alias it) is
         * written below. */
        for (int64_t i = 0; i < hidden; i++) {
            residual[i] = rig_f32_to_bf16(rig_bf16_to_f32(residual[i]) + rig_bf16_to_f32(in[i]));
        }
        rig_sim_rms_norm_vector(rig_sim_row_bf16(&p->out, t), residual, weight, hidden, p->eps);
    }
}

void rig_sim_op_head_rms_norm(const struct rig_op_head_rms_norm *p)
{
    int64_t tokens = p->x.shape[0];
    int64_t heads = p->x.shape[1];
    int64_t head_dim = p->x.shape[2];
    const uint16_t *weight = rig__weight(&p->weight);
    for (int64_t t = 0; t < tokens; t++) {
        for (int64_t h = 0; h < heads; h++) {
            uint16_t *x = rig_sim_vec_bf16(&p->x, t, h);
            rig_sim_rms_norm_vector(x, x, weight, head_dim, p->eps);
        }
    }
}
