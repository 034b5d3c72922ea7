/* rope.cuh — Neox RoPE in place on q and k; inverse frequencies computed on the host by the
 * simulator's rig_sim_rope_inv_freq and passed by value. Launcher of the HAL op `rope` (semantics:
 * hal/ops.h, struct rig_op_rope). Enqueues on launch->stream; never allocates or synchronises, so
 * it can be captured into a graph. Returns RIG_OK, or RIG_E_DEVICE when a launch fails (reported
 * on stderr).
 */
#ifndef RIG_CUDA_OPS_ROPE_CUH
#define RIG_CUDA_OPS_ROPE_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_rope(const struct rig_cuda_launch *launch, const struct rig_op_rope *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_ROPE_CUH */
