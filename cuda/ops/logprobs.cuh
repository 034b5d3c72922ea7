/* logprobs.cuh — log-probabilities of the sampled token and of the N most likely tokens of each
 * row. Launcher of the HAL op `logprobs` (semantics: hal/ops.h, struct rig_op_logprobs).
 * Enqueues on launch->stream; never allocates or synchronises, so it can be captured into a
 * graph. Returns RIG_OK, or RIG_E_DEVICE when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_LOGPROBS_CUH
#define RIG_CUDA_OPS_LOGPROBS_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_logprobs(const struct rig_cuda_launch *launch,
                                     const struct rig_op_logprobs *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_LOGPROBS_CUH */
