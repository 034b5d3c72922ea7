/* gemm.cuh — GEMM out = a . b^T (+ bias), bf16 in, fp32 accumulate, bf16 or f32 out, through
 * cuBLAS, or gemv.cuh's kernel for up to 16 rows of a. Launcher of the HAL op `gemm` (semantics:
 * hal/ops.h, struct rig_op_gemm). Enqueues on launch->stream; never allocates or synchronises,
 * so it can be captured into a graph. Returns RIG_OK, or RIG_E_DEVICE when a launch fails
 * (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_GEMM_CUH
#define RIG_CUDA_OPS_GEMM_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_gemm(const struct rig_cuda_launch *launch, const struct rig_op_gemm *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_GEMM_CUH */
