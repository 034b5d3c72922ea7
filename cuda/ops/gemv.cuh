/* gemv.cuh — the small-batch path of the HAL op `gemm` (out = a . b^T (+ bias), hal/ops.h,
 * struct rig_op_gemm) for at most RIG_CUDA_GEMV_ROWS_MAX rows of a: a decode step's
 * projections and LM head, where the time is the time to read the weight b once.
 *
 * The kernel streams b at the memory's bandwidth and does the arithmetic on tensor cores
 * (mma.sync m16n8k16, fp32 accumulation). Why 16 rows: the m16 operand of one mma holds all
 * the rows of a at once, so up to 16 rows cost the same instructions as 1 and the kernel stays
 * bound by the weight bytes; past 16 each further 16 rows would need a second set of
 * activation registers and accumulators, and cuBLAS's tiled kernels are the better tool there.
 *
 * rig_cuda_op_gemm (gemm.cu) takes this path when rig_cuda_gemv_accepts says so and cuBLAS
 * otherwise. Results: each output is one fp32 sum (tensor-core partial sums over fixed K
 * ranges, added in a fixed order), plus the bias in fp32, rounded once at the store, as the
 * simulator (sim/kernels/gemm.c) does; the order depends only on N, K and the device's
 * multiprocessor count, never on M, so a row's result does not depend on its batch.
 *
 * Both functions are called by the thread that owns the stream; the launcher enqueues one
 * kernel on launch->stream, never allocates or synchronises, and can be captured into a graph.
 */
#ifndef RIG_CUDA_OPS_GEMV_CUH
#define RIG_CUDA_OPS_GEMV_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most rows of a (M) the small-batch kernel takes: one m16 tensor-core operand. */
#define RIG_CUDA_GEMV_ROWS_MAX 16

/* True when the kernel can run `p` (already checked by hal/op_check.c): 1 <= M <= 16, K a
 * multiple of 8, a and b 16-byte aligned with row strides that are multiples of 8 elements
 * (a's stride is unused when M == 1, b's when N == 1). Can't fail. */
bool rig_cuda_gemv_accepts(const struct rig_op_gemm *p);

/* Enqueues out = a . b^T (+ bias) for a `p` that rig_cuda_gemv_accepts, with its fused forms
 * (hal/ops.h). Returns RIG_OK; RIG_E_UNSUPPORTED, enqueuing nothing, for a prologue the kernel
 * does not take (where its persistent form would run, or the operand rows do not fit its
 * shared memory: the caller runs the prologue as its own op); RIG_E_DEVICE when the launch
 * fails (reported on stderr). */
enum rig_status rig_cuda_gemv_launch(const struct rig_cuda_launch *launch,
                                     const struct rig_op_gemm *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_GEMV_CUH */
