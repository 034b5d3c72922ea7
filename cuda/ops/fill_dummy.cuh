/* fill_dummy.cuh — seeded dummy weights written on the device: the values of hal/dummy.h,
 * bit for bit those the simulator computes on the host. Backs rig_hal_buffer_fill_dummy, so a
 * model with dummy weights loads with no host generation and no upload. Enqueues only;
 * RIG_E_DEVICE when the launch fails.
 */
#ifndef RIG_CUDA_OPS_FILL_DUMMY_CUH
#define RIG_CUDA_OPS_FILL_DUMMY_CUH

#include "cuda/cuda_internal.h"
#include "hal/dummy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the block of `piece` (non-empty, checked by the dispatch layer) to `dst`
 * ([rows, cols] bf16, contiguous, 2-byte aligned). */
enum rig_status rig_cuda_fill_dummy_bf16(cudaStream_t stream, void *dst,
                                         const struct rig_dummy_piece *piece);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_FILL_DUMMY_CUH */
