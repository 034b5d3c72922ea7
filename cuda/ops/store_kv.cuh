/* store_kv.cuh — Writes new tokens' K and V at their KV slots (out_loc). Launcher of the HAL op
 * `store_kv` (semantics: hal/ops.h, struct rig_op_store_kv). Enqueues on launch->stream; never
 * allocates or synchronises, so it can be captured into a graph. Returns RIG_OK, or RIG_E_DEVICE
 * when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_STORE_KV_CUH
#define RIG_CUDA_OPS_STORE_KV_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_store_kv(const struct rig_cuda_launch *launch,
                                     const struct rig_op_store_kv *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_STORE_KV_CUH */
