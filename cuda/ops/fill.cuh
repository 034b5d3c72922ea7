/* fill.cuh — fills 32-bit words on a stream (the runtime API has only a byte memset). Backs
 * rig_hal_buffer_fill. Enqueues only; RIG_E_DEVICE when the launch fails.
 */
#ifndef RIG_CUDA_OPS_FILL_CUH
#define RIG_CUDA_OPS_FILL_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_fill_u32(cudaStream_t stream, void *dst, uint32_t value, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_FILL_CUH */
