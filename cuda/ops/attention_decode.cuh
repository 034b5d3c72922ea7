/* attention_decode.cuh — Decode attention: split-KV flash decoding with GQA grouping, the
 * splits merged in the same launch (or, on the staged path, a combine pass). Launcher of the
 * HAL op `attention_decode` (semantics: hal/ops.h, struct rig_op_attention_decode). Enqueues
 * on launch->stream; never allocates or synchronises, so it can be captured into a graph.
 * Returns RIG_OK, or RIG_E_DEVICE when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_ATTENTION_DECODE_CUH
#define RIG_CUDA_OPS_ATTENTION_DECODE_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_attention_decode(const struct rig_cuda_launch *launch,
                                             const struct rig_op_attention_decode *p);

/* The register path's split count for `blocks` (rows x KV heads) >= 1 on a GPU holding
 * `capacity` >= 1 resident blocks: the fewest splits s <= limit whose s x blocks make at
 * least 90 % of one wave and leave the last wave at least 90 % full; else the s <= limit
 * with the fullest waves (1 when limit < 1). A pure host function (tests/test_decode_plan.c). */
int64_t rig_cuda_decode_waves(int64_t blocks, int64_t capacity, int64_t limit);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_ATTENTION_DECODE_CUH */
