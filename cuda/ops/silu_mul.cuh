/* silu_mul.cuh — SiLU(gate) * up over in = [gate | up]. Launcher of the HAL op `silu_mul`
 * (semantics: hal/ops.h, struct rig_op_silu_mul). Enqueues on launch->stream; never allocates or
 * synchronises, so it can be captured into a graph. Returns RIG_OK, or RIG_E_DEVICE when a launch
 * fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_SILU_MUL_CUH
#define RIG_CUDA_OPS_SILU_MUL_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_silu_mul(const struct rig_cuda_launch *launch,
                                     const struct rig_op_silu_mul *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_SILU_MUL_CUH */
