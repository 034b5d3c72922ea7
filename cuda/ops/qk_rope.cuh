/* qk_rope.cuh — the rounding steps of q/k norm + RoPE that every kernel applying them shares
 * (qk_norm_rope_store.cu, and decode attention's store prologue in attention_decode.cu), so
 * that they round alike: the norm as bf16(w * bf16(x * inverse_rms)), then the rotation of a
 * pair (x1, x2) = (x[i], x[i + D/2]) from those bf16 values, each result rounded once. Pure
 * device functions; no state.
 */
#ifndef RIG_CUDA_OPS_QK_ROPE_CUH
#define RIG_CUDA_OPS_QK_ROPE_CUH

#include "cuda/ops/common.cuh"

/* bf16(w * bf16(x * inverse_rms)) as the float the next step reads; x itself without norm. */
static __device__ __forceinline__ float rig_cuda_qk_normed(uint16_t x, uint16_t w, bool norm,
                                                           float inverse_rms)
{
    if (!norm) return rig_cuda_bf16(x);
    float normalised = rig_bf16_round(rig_cuda_bf16(x) * inverse_rms);
    return rig_cuda_bf16(rig_cuda_to_bf16(rig_cuda_bf16(w) * normalised));
}

/* The first half's value of a rotated pair, and the second's. */
static __device__ __forceinline__ uint16_t rig_cuda_rope_low(float x1, float x2, float c, float s)
{
    return rig_cuda_to_bf16(x1 * c - x2 * s);
}

static __device__ __forceinline__ uint16_t rig_cuda_rope_high(float x1, float x2, float c, float s)
{
    return rig_cuda_to_bf16(x2 * c + x1 * s);
}

#endif /* RIG_CUDA_OPS_QK_ROPE_CUH */
