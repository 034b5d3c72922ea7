/* qk_norm_rope_store.cuh — q/k RMSNorm (optional), neox RoPE and the K/V store of one layer in
 * one kernel. Launcher of the HAL op `qk_norm_rope_store` (semantics: hal/ops.h, struct
 * rig_op_qk_norm_rope_store). Enqueues on launch->stream; never allocates or synchronises, so it
 * can be captured into a graph. Returns RIG_OK, RIG_E_UNSUPPORTED for a head dim above 512, or
 * RIG_E_DEVICE when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_QK_NORM_ROPE_STORE_CUH
#define RIG_CUDA_OPS_QK_NORM_ROPE_STORE_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_qk_norm_rope_store(const struct rig_cuda_launch *launch,
                                               const struct rig_op_qk_norm_rope_store *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_QK_NORM_ROPE_STORE_CUH */
