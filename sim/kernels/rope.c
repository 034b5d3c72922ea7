/* rope.c — rotary position embedding, neox style (rotate-half), with llama3 scaling.
 *
 * For pair i in [0, D/2) of a head vector x: x1 = x[i], x2 = x[i + D/2],
 * angle = position * inv_freq(i) (fp32), and
 *   x[i]       = bf16(x1 * cos(angle) - x2 * sin(angle))
 *   x[i + D/2] = bf16(x2 * cos(angle) + x1 * sin(angle))
 * computed in fp32 from fp32 cos/sin (as SGLang / FlashInfer do; Hugging Face rounds cos and
 * sin to bf16 first, a difference well inside the golden tests' tolerance).
 *
 * inv_freq is hal/rope.h's, shared with the CUDA backend.
 */
#include "sim/kernels.h"

#include <math.h>

#include "hal/rope.h"
#include "sim/kernels/access.h"
#include "sim/kernels/head.h"

void rig_sim_rope_angles(const float *inv_freq, int32_t position, int64_t half, float *cosines,
                         float *sines)
{
    RIG_ASSERT_MSG(position >= 0, "rope: negative position");
    RIG_ASSERT(half >= 0 && half <= RIG_SIM_HEAD_DIM_MAX / 2);
    for (int64_t i = 0; i < half; i++) {
        float angle = (float)position * inv_freq[i];
        cosines[i] = cosf(angle);
        sines[i] = sinf(angle);
    }
}

void rig_sim_rope_vector(uint16_t *v, const float *cosines, const float *sines, int64_t half)
{
    for (int64_t i = 0; i < half; i++) {
        float x1 = rig_bf16_to_f32(v[i]);
        float x2 = rig_bf16_to_f32(v[i + half]);
        v[i] = rig_f32_to_bf16(x1 * cosines[i] - x2 * sines[i]);
        v[i + half] = rig_f32_to_bf16(x2 * cosines[i] + x1 * sines[i]);
    }
}

void rig_sim_op_rope(const struct rig_op_rope *p)
{
    int64_t head_dim = p->q.shape[2];
    int64_t half = head_dim / 2;
    RIG_ASSERT(head_dim <= RIG_SIM_HEAD_DIM_MAX && p->k.shape[2] == head_dim);
    float inv_freq[RIG_SIM_HEAD_DIM_MAX / 2]; /* (D/2) */
    for (int64_t i = 0; i < half; i++) {
        inv_freq[i] = rig_rope_inv_freq(&p->params, (int32_t)i, (int32_t)head_dim);
    }
    for (int64_t t = 0; t < p->q.shape[0]; t++) {
        float cosines[RIG_SIM_HEAD_DIM_MAX / 2]; /* (D/2) */
        float sines[RIG_SIM_HEAD_DIM_MAX / 2];   /* (D/2) */
        rig_sim_rope_angles(inv_freq, rig_sim_get_i32(&p->positions, t), half, cosines, sines);
        for (int64_t h = 0; h < p->q.shape[1]; h++)
            rig_sim_rope_vector(rig_sim_vec_bf16(&p->q, t, h), cosines, sines, half);
        for (int64_t h = 0; h < p->k.shape[1]; h++)
            rig_sim_rope_vector(rig_sim_vec_bf16(&p->k, t, h), cosines, sines, half);
    }
}
