/* gather_rows.cuh — out[r, :] = in[idx[r], :] for bf16 or f32 rows. Launcher of the HAL op
 * `gather_rows` (semantics: hal/ops.h, struct rig_op_gather_rows). Enqueues on launch->stream;
 * never allocates or synchronises, so it can be captured into a graph. Returns RIG_OK, or
 * RIG_E_DEVICE when a launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_GATHER_ROWS_CUH
#define RIG_CUDA_OPS_GATHER_ROWS_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_gather_rows(const struct rig_cuda_launch *launch,
                                        const struct rig_op_gather_rows *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_GATHER_ROWS_CUH */
