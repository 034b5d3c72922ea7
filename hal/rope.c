/* rope.c — RoPE inverse frequencies on the host (see rope.h). */
#include "hal/rope.h"

#include <math.h>

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

float rig_rope_inv_freq(const struct rig_rope_params *params, int32_t i, int32_t head_dim)
{
    RIG_ASSERT(head_dim > 0 && head_dim % 2 == 0);
    RIG_ASSERT(i >= 0 && i < head_dim / 2);
    float exponent = (float)(2 * i) / (float)head_dim;
    float inv_freq = 1.0f / powf(params->theta, exponent);
    if (params->scaling == RIG_ROPE_SCALING_LLAMA3) return rig__llama3_scale(params, inv_freq);
    RIG_ASSERT(params->scaling == RIG_ROPE_SCALING_NONE);
    return inv_freq;
}
