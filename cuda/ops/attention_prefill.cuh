/* attention_prefill.cuh — Causal paged attention over a cached prefix: FlashAttention-2 on
 * tensor cores (mma.sync bf16; WMMA for odd views), GQA heads packed into the tile rows.
 * Launcher of the HAL op `attention_prefill` (semantics: hal/ops.h, struct
 * rig_op_attention_prefill). Enqueues on launch->stream; never allocates or synchronises, so it
 * can be captured into a graph. Returns RIG_OK, or RIG_E_DEVICE when a launch fails (reported
 * on stderr).
 */
#ifndef RIG_CUDA_OPS_ATTENTION_PREFILL_CUH
#define RIG_CUDA_OPS_ATTENTION_PREFILL_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_attention_prefill(const struct rig_cuda_launch *launch,
                                              const struct rig_op_attention_prefill *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_ATTENTION_PREFILL_CUH */
