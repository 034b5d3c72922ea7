/* copy.cuh — Strided element copy of up to 4 dims, bf16 <-> f32 conversion allowed. Launcher of
 * the HAL op `copy` (semantics: hal/ops.h, struct rig_op_copy). Enqueues on launch->stream; never
 * allocates or synchronises, so it can be captured into a graph. Returns RIG_OK, or RIG_E_DEVICE
 * when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_COPY_CUH
#define RIG_CUDA_OPS_COPY_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_copy(const struct rig_cuda_launch *launch, const struct rig_op_copy *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_COPY_CUH */
