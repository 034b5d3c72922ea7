/* head_rms_norm.cuh — Per-head RMSNorm in place (Qwen3 q/k norm): one warp per head vector.
 * Launcher of the HAL op `head_rms_norm` (semantics: hal/ops.h, struct rig_op_head_rms_norm).
 * Enqueues on launch->stream; never allocates or synchronises, so it can be captured into a graph.
 * Returns RIG_OK, or RIG_E_DEVICE when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_HEAD_RMS_NORM_CUH
#define RIG_CUDA_OPS_HEAD_RMS_NORM_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_head_rms_norm(const struct rig_cuda_launch *launch,
                                          const struct rig_op_head_rms_norm *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_HEAD_RMS_NORM_CUH */
