/* prefetch.cuh — an op's L2 prefetch hint (struct rig_op.prefetch, hal/ops.h) as a kernel of
 * its own, launched by the backend just before the op it rides on. Enqueues on launch->stream;
 * never allocates or synchronises, so it can be captured into a graph. Returns RIG_OK, or
 * RIG_E_DEVICE when the launch fails (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_PREFETCH_CUH
#define RIG_CUDA_OPS_PREFETCH_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* At most this many leading bytes of a hint are fetched: a third of an H100's 50 MB L2, so
 * that a hinted weight does not push out the step's activations. */
#define RIG_CUDA_PREFETCH_MAX_BYTES ((size_t)16 << 20)

enum rig_status rig_cuda_prefetch(const struct rig_cuda_launch *launch, const void *data,
                                  size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_PREFETCH_CUH */
