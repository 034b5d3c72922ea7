/* add_rms_norm.cuh — Fused residual add + RMSNorm: residual = bf16(residual + in), out =
 * rms_norm(residual). Launcher of the HAL op `add_rms_norm` (semantics: hal/ops.h, struct
 * rig_op_add_rms_norm). Enqueues on launch->stream; never allocates or synchronises, so it can be
 * captured into a graph. Returns RIG_OK, or RIG_E_DEVICE when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_ADD_RMS_NORM_CUH
#define RIG_CUDA_OPS_ADD_RMS_NORM_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_add_rms_norm(const struct rig_cuda_launch *launch,
                                         const struct rig_op_add_rms_norm *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_ADD_RMS_NORM_CUH */
