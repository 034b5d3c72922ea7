/* elementwise.cuh — the element formulas that more than one kernel computes (CUDA C++ only):
 * the RMSNorm's normalised value and SiLU(gate) * up, each rounded where Hugging Face rounds
 * and the simulator rounds (sim/kernels/norm.c, sim/kernels/activation.c). The standalone
 * kernels (norm_row.cuh, silu_mul.cu) and the small-batch GEMM's prologues (gemv.cu) call
 * these (head_rms_norm.cu too), so a fused GEMM's operand is the bits the unfused ops would
 * store.
 */
#ifndef RIG_CUDA_OPS_ELEMENTWISE_CUH
#define RIG_CUDA_OPS_ELEMENTWISE_CUH

#include "cuda/ops/common.cuh"

/* bf16(w * bf16(x * inverse_rms)): one value of an RMSNorm row. */
static __device__ __forceinline__ uint16_t rig_cuda_norm_value(uint16_t x, uint16_t w,
                                                               float inverse_rms)
{
    float normalised = rig_bf16_round(rig_cuda_bf16(x) * inverse_rms);
    return rig_cuda_to_bf16(rig_cuda_bf16(w) * normalised);
}

/* bf16(bf16(silu(gate)) * up), silu(g) = g / (1 + e^-g). */
static __device__ __forceinline__ uint16_t rig_cuda_silu_mul_value(uint16_t gate, uint16_t up)
{
    float g = rig_cuda_bf16(gate);
    float activated = rig_bf16_round(g / (1.0f + expf(-g)));
    return rig_cuda_to_bf16(activated * rig_cuda_bf16(up));
}

#endif /* RIG_CUDA_OPS_ELEMENTWISE_CUH */
