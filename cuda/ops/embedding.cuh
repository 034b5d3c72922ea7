/* embedding.cuh — Embedding gather with a vocabulary range (TP shard): one block per token,
 * 16-byte copies. Launcher of the HAL op `embedding` (semantics: hal/ops.h, struct
 * rig_op_embedding). Enqueues on launch->stream; never allocates or synchronises, so it can be
 * captured into a graph. Returns RIG_OK, or RIG_E_DEVICE when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_EMBEDDING_CUH
#define RIG_CUDA_OPS_EMBEDDING_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_embedding(const struct rig_cuda_launch *launch,
                                      const struct rig_op_embedding *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_EMBEDDING_CUH */
