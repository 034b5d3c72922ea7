/* rope.c — rotary position embedding, neox style (rotate-half), with llama3 scaling.
 *
 * For pair i in [0, D/2) of a head vector x: x1 = x[i], x2 = x[i + D/2],
 * angle = position * inv_freq(i) (fp32), and
 *   x[i]       = bf16(x1 * cos(angle) - x2 * sin(angle))
 *   x[i + D/2] = bf16(x2 * cos(angle) + x1 * sin(angle))
 * computed in fp32 from fp32 cos/sin (as SGLang / FlashInfer do; Hugging Face rounds cos and
 * sin to bf16 first, a difference well inside the golden tests' tolerance).
 *
 * inv_freq follows Hugging Face's `_compute_default_rope_parameters` (1 / theta^(2i/D) in
 * fp32) and `_compute_llama3_parameters` for llama3 scaling: frequencies whose wavelength is
 * shorter than original_max_position / high_freq_factor are kept, longer than
 * original_max_position / low_freq_factor are divided by `factor`, and the band between is
 * interpolated smoothly.
 */
#include "sim/kernels.h"

#include <math.h>

#include "sim/kernels/access.h"
#include "sim/kernels/head.h"

/* 2π, as Python's math.pi * 2 (M_PI is not in strict C11). */
#define RIG__TWO_PI 6.283185307179586

static float rig__llama3_scale(const struct rig_rope_params *params, float inv_freq)
{
    /* Python computes these two in float64, torch compares them with an fp32 tensor. */
    double original = (double)params->original_max_position;
    float low_freq_wavelen = (float)(original / (double)params->low_freq_factor);
    float high_freq_wavelen = (float)(original / (double)params->high_freq_factor);
    float wavelen = (float)RIG__TWO_PI / inv_freq;
    if (wavelen < high_freq_wavelen) return inv_freq;
    if (wavelen > low_freq_wavelen) return inv_freq / params->factor;
    float band = (float)((double)params->high_freq_factor - (double)params->low_freq_factor);
    float smooth = ((float)original / wavelen - params->low_freq_factor) / band;
    return (1.0f - smooth) * inv_freq / params->factor + smooth * inv_freq;
}

float rig_sim_rope_inv_freq(const struct rig_rope_params *params, int32_t i, int32_t head_dim)
{
    RIG_ASSERT(head_dim > 0 && head_dim % 2 == 0);
    RIG_ASSERT(i >= 0 && i < head_dim / 2);
    float exponent = (float)(2 * i) / (float)head_dim;
    float inv_freq = 1.0f / powf(params->theta, exponent);
    if (params->scaling == RIG_ROPE_SCALING_LLAMA3) return rig__llama3_scale(params, inv_freq);
    RIG_ASSERT(params->scaling == RIG_ROPE_SCALING_NONE);
    return inv_freq;
}

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
        inv_freq[i] = rig_sim_rope_inv_freq(&p->params, (int32_t)i, (int32_t)head_dim);
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
