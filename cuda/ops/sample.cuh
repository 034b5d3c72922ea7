/* sample.cuh — Sampling: greedy argmax, or temperature / top-k / top-p with Philox Gumbel noise,
 * the simulator's exact algorithm (hal/ops.h). Launcher of the HAL op `sample` (semantics:
 * hal/ops.h, struct rig_op_sample). Enqueues on launch->stream; never allocates or synchronises,
 * so it can be captured into a graph. Returns RIG_OK, or RIG_E_DEVICE when a launch fails
 * (reported on stderr).
 */
#ifndef RIG_CUDA_OPS_SAMPLE_CUH
#define RIG_CUDA_OPS_SAMPLE_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rig_status rig_cuda_op_sample(const struct rig_cuda_launch *launch,
                                   const struct rig_op_sample *p);

/* For tests and measurements: the cluster size (blocks per row, 1, 2, 4 or 8) pass 2 takes now
 * for `rows` rows (>= 1) on a device of `sm_count` multiprocessors, after the cluster-fit guard
 * and the RIG_SAMPLE_CLUSTER / RIG_SAMPLE_CLUSTER_MAX switches (sample.cu, rig__cluster_size);
 * and how many clusters of `size` (1, 2, 4 or 8) pass-2 blocks the device holds at once, as the
 * guard was told (0: none fit, or the query failed). Both ask the device current on the calling
 * thread the first time either runs in the process, and the answer is kept. Cannot fail. */
int32_t rig_cuda_sample_cluster(int64_t rows, int32_t sm_count);
int32_t rig_cuda_sample_cluster_fit(int32_t size);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_SAMPLE_CUH */
