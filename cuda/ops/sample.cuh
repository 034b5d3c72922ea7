/* sample.cuh — Sampling: greedy argmax, or temperature / top-k / top-p with Philox Gumbel noise,
 * the simulator's exact algorithm (hal/ops.h). Launcher of the HAL op `sample` (semantics:
 * hal/ops.h, struct rig_op_sample). Enqueues on launch->stream; never allocates or synchronises,
 * so it can be captured into a graph. Returns RIG_OK, or RIG_E_DEVICE when a launch fails
 * (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_SAMPLE_CUH
#define RIG_CUDA_OPS_SAMPLE_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_sample(const struct rig_cuda_launch *launch,
                                   const struct rig_op_sample *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_SAMPLE_CUH */
