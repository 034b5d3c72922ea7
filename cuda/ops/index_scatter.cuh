/* index_scatter.cuh — dst[idx[n]] = src[n] over flat i32 arrays (token-pool writes). Launcher of
 * the HAL op `index_scatter` (semantics: hal/ops.h, struct rig_op_index_scatter). Enqueues on
 * launch->stream; never allocates or synchronises, so it can be captured into a graph. Returns
 * RIG_OK, or RIG_E_DEVICE when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_INDEX_SCATTER_CUH
#define RIG_CUDA_OPS_INDEX_SCATTER_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_index_scatter(const struct rig_cuda_launch *launch,
                                          const struct rig_op_index_scatter *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_INDEX_SCATTER_CUH */
