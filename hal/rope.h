/* rope.h — the inverse frequencies of rotary position embedding, computed on the host.
 *
 * Both backends rotate with the same frequencies: the simulator's reference kernels
 * (sim/kernels/rope.c, qk_norm_rope_store.c) and the CUDA ops (cuda/ops/rope.cu,
 * qk_norm_rope_store.cu, which pass them to the kernel by value). They live here, below both,
 * so neither backend includes the other.
 *
 * inv_freq follows Hugging Face's `_compute_default_rope_parameters` (1 / theta^(2i/D) in
 * fp32) and `_compute_llama3_parameters` for llama3 scaling: frequencies whose wavelength is
 * shorter than original_max_position / high_freq_factor are kept, longer than
 * original_max_position / low_freq_factor are divided by `factor`, and the band between is
 * interpolated smoothly. A pure function; safe from any thread.
 */
#ifndef RIG_ROPE_H
#define RIG_ROPE_H

#include <stdint.h>

#include "hal/ops.h"
#include "hal/status.h"

/* The inverse frequency of rotary pair i (0 <= i < head_dim/2) under `params`, in fp32:
 * theta^(-2i/D), with llama3 scaling applied. Can't fail (bad arguments are a bug). */
float rig_rope_inv_freq(const struct rig_rope_params *params, int32_t i, int32_t head_dim);

#endif /* RIG_ROPE_H */
