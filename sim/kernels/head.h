/* head.h — the per-head and per-row vector math that several reference kernels share
 * (sim/kernels/ only).
 *
 * head_rms_norm and rope each apply one of these to every head vector; the fused
 * qk_norm_rope_store applies both, then copies. rms_norm and silu_mul apply theirs to every
 * row, and the GEMM's prologues (hal/ops.h) to every row of its left operand. Sharing the very
 * functions (not copies of them) is what makes a fused op bit-identical to the ops it
 * replaces run in sequence.
 *
 * Thread safety: pure functions of their arguments.
 */
#ifndef RIG_SIM_KERNELS_HEAD_H
#define RIG_SIM_KERNELS_HEAD_H

#include <stdint.h>

#include "hal/ops.h"

/* out[0..n) = bf16(weight * bf16(in * rsqrt(mean(in^2) + eps))); out may equal in. */
void rig_sim_rms_norm_vector(uint16_t *out, const uint16_t *in, const uint16_t *weight, int64_t n,
                             float eps);

/* out[0..n) = bf16(bf16(silu(gate)) * up): one row of silu_mul; out must not overlap the
 * inputs unless it equals gate. */
void rig_sim_silu_mul_row(uint16_t *out, const uint16_t *gate, const uint16_t *up, int64_t n);

/* cos and sin of position * inv_freq[i] for i in [0, half), in fp32. */
void rig_sim_rope_angles(const float *inv_freq, int32_t position, int64_t half, float *cosines,
                         float *sines);

/* Rotates one head vector of 2 * half values in place (neox rotate-half, see rope.c). */
void rig_sim_rope_vector(uint16_t *v, const float *cosines, const float *sines, int64_t half);

#endif /* RIG_SIM_KERNELS_HEAD_H */
