/* penalize.cuh — presence, frequency and repetition penalties over each row's token history,
 * in place on the logits. Launcher of the HAL op `penalize` (semantics: hal/ops.h, struct
 * rig_op_penalize). Enqueues on launch->stream; never allocates or synchronises, so it can
 * be captured into a graph. Returns RIG_OK, or RIG_E_DEVICE when a launch fails (reported on
 * stderr).
 */
#ifndef RIG_CUDA_OPS_PENALIZE_CUH
#define RIG_CUDA_OPS_PENALIZE_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_penalize(const struct rig_cuda_launch *launch,
                                     const struct rig_op_penalize *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_PENALIZE_CUH */
