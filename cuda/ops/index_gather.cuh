/* index_gather.cuh — out[n] = src[idx[n]] over flat i32 arrays (token-pool loads). Launcher of the
 * HAL op `index_gather` (semantics: hal/ops.h, struct rig_op_index_gather). Enqueues on
 * launch->stream; never allocates or synchronises, so it can be captured into a graph. Returns
 * RIG_OK, or RIG_E_DEVICE when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_INDEX_GATHER_CUH
#define RIG_CUDA_OPS_INDEX_GATHER_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_index_gather(const struct rig_cuda_launch *launch,
                                         const struct rig_op_index_gather *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_INDEX_GATHER_CUH */
