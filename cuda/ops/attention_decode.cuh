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

/* Launcher of `attention_decode_store` (hal/ops.h): where the register path runs in its narrow
 * layout from 64 rows, one kernel, the store's work in its blocks' prologue
 * (attention_decode.cu, "The store prologue", rig__store_wanted); elsewhere
 * qk_norm_rope_store's kernel, then attention's. RIG_DECODE_STORE_FUSED=0: always two; 1: one
 * wherever the register path runs. */
enum rig_status rig_cuda_op_attention_decode_store(const struct rig_cuda_launch *launch,
                                                   const struct rig_op_attention_decode_store *p);

/* The register path's split count for `blocks` (rows x KV heads) >= 1 on a GPU holding
 * `capacity` >= 1 resident blocks: the fewest splits s <= limit whose s x blocks make at
 * least 90 % of one wave and leave the last wave at least 90 % full; else the s <= limit
 * with the fullest waves (1 when limit < 1). A pure host function (tests/test_decode_plan.c). */
int64_t rig_cuda_decode_waves(int64_t blocks, int64_t capacity, int64_t limit);

/* Whether `blocks` (rows x KV heads) >= 0 on a GPU holding `capacity` >= 1 resident blocks at
 * the natural occupancy make at least `percent` % (0..100; 0: never) of one wave, from which
 * the register path runs one split a row instead of rig_cuda_decode_waves's count
 * (RIG_DECODE_ONE_SPLIT). A pure host function (tests/test_decode_plan.c). */
bool rig_cuda_decode_one_split(int64_t blocks, int64_t capacity, int percent);

/* Keys a split of the register path takes of a row of `keys` keys when the launch planned
 * `splits` >= 1 (whole steps of `keys_per_step`): ceil(keys / splits), at least `split_steps`
 * steps, and for a row of at most cap x cap steps (`split_cap` > 0) enough that cap splits
 * cover it; the row runs ceil(keys / share) splits. The device's own rule
 * (attention_decode.cu, rig__decode_share), here for tests/test_decode_plan.c. */
int64_t rig_cuda_decode_share(int64_t keys, int32_t splits, int64_t keys_per_step,
                              int32_t split_steps, int32_t split_cap);

/* Splits the register path launches for a row of the page table's `cols` keys when it planned
 * `planned`: with a cap (`split_cap` > 0, rig_cuda_decode_share) no row of at most `cols`
 * keys runs more than max(cap, ceil(steps(cols) / cap)) splits, so the grid stops there (never
 * above `planned`); without one, `planned`. Every row's share is the same with the result as
 * with `planned`. A pure host function (tests/test_decode_plan.c). */
int32_t rig_cuda_decode_grid_splits(int32_t planned, int64_t cols, int64_t keys_per_step,
                                    int32_t split_cap);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_ATTENTION_DECODE_CUH */
