/* gemm_skinny.cuh — the skinny path of the HAL op `gemm` (out = a . b^T (+ bias), hal/ops.h,
 * struct rig_op_gemm) for at most RIG_CUDA_SKINNY_ROWS_MAX rows of a: the projections of a
 * decode step at batch 17-64, where cuBLAS spends 7.5-12 us on a weight that needs 1.4-4.2 us
 * of bandwidth (Qwen3-0.6B on the H100, docs/performance.md) because its tiles leave most
 * multiprocessors idle and it cannot start before its predecessor ends.
 *
 * The kernel (gemm_skinny.cu) streams the weight once at the memory's bandwidth and does the
 * arithmetic on tensor cores (mma.sync m16n8k16, fp32 accumulation), like gemv.cu, but a warp
 * holds four 8-column tiles and up to four 16-row tiles, so each activation it loads serves
 * 32 columns, and the K range is split across blocks where the columns alone would not fill
 * the GPU. A block loads its first weights before it waits for its predecessor (programmatic
 * dependent launch): weights are never written during a forward.
 *
 * Results: each output is one fp32 sum — tensor-core partial sums over fixed K ranges, added
 * in a fixed order (warps by a fixed tree, then splits in index order) — plus the bias in
 * fp32, rounded once at the store, as the simulator (sim/kernels/gemm.c) rounds. The order
 * depends only on N, K and the multiprocessor count, never on M, so a row's result does not
 * depend on its batch within this path (it may differ in the last bits from gemv.cu's and
 * cuBLAS's, which add in other orders). Deterministic run to run.
 *
 * Memory: a split GEMM writes its partial sums to the stream's scratch and counts arrivals in
 * the stream's counters (cuda_internal.h); the last block of a column tile adds them and
 * resets its counter, so both are free again when the kernel ends. The launcher enqueues one
 * kernel on launch->stream, never allocates or synchronises, and can be captured into a graph.
 * Both functions are called by the thread that owns the stream; the plan is host arithmetic.
 */
#ifndef RIG_CUDA_OPS_GEMM_SKINNY_CUH
#define RIG_CUDA_OPS_GEMM_SKINNY_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most rows of a (M) the skinny kernel takes: four m16 tiles. Past 64 the activations a
 * block re-reads (M / 32 times the weight bytes over all blocks) outweigh the weight. */
#define RIG_CUDA_SKINNY_ROWS_MAX 64
/* Output columns of one block (and of each of its warps: four n8 tiles). */
#define RIG_CUDA_SKINNY_COLUMNS 32

/* How one GEMM of N columns and depth K is cut (a pure function of N, K and the GPU). */
struct rig_cuda_skinny_plan {
    int64_t tiles;  /* column tiles of RIG_CUDA_SKINNY_COLUMNS: the grid's x */
    int32_t splits; /* K ranges across blocks: the grid's y (1: no partial sums) */
    int32_t steps;  /* 32-k steps of K (the last may be partly past K: zeros) */
    int32_t steps_per_split;
    int32_t warps; /* per block, each over a contiguous run of its split's steps */
    int32_t steps_per_warp;
};

/* Plans N columns of depth K on `sm_count` multiprocessors, for a scratch of `scratch_bytes`
 * and `counters` arrival counters: the fewest splits (at most 16, each at least 4 steps) for
 * which the grid covers 90 % of the multiprocessors, then enough warps (at most 8) that each
 * runs about 4 steps. False when N or K is 0 or too large. Can't fail otherwise. */
bool rig_cuda_skinny_plan(int64_t n, int64_t k, int32_t sm_count, size_t scratch_bytes,
                          int64_t counters, struct rig_cuda_skinny_plan *plan);

/* True when the kernel can run `p` (already checked by hal/op_check.c): 1 <= M <= 64, K a
 * multiple of 8, a and b 16-byte aligned with row strides that are multiples of 8 elements
 * (a's stride is unused when M == 1, b's when N == 1). Can't fail. */
bool rig_cuda_skinny_accepts(const struct rig_op_gemm *p);

/* Enqueues out = a . b^T (+ bias) for a `p` that rig_cuda_skinny_accepts. Returns RIG_OK, or
 * RIG_E_DEVICE when the launch fails (reported on stderr). */
enum rig_status rig_cuda_skinny_launch(const struct rig_cuda_launch *launch,
                                       const struct rig_op_gemm *p);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_GEMM_SKINNY_CUH */
