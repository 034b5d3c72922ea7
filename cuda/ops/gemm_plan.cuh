/* gemm_plan.cuh — cuBLASLt GEMM plans: each GEMM shape's algorithm chosen once per size class
 * of M, so a GEMM at a row count the process has not met before costs no heuristic search in
 * the step loop.
 *
 * Why: cublasGemmEx chooses its algorithm for each exact (M, N, K) the first time it meets it.
 * A prefill step's M is its token count, nearly always new in an online run: on the H100
 * (commit 3162574, `rig bench online --rates 4`) a one-request prefill whose token count was
 * new to the process took the host 3.5 ms at the median and up to 15.8 ms to issue, one whose
 * count had been seen 2.3 ms (docs/performance.md, "The lone-request prefill tail").
 *
 * Size classes: M <= 16 by the next power of two; above, four classes per octave (M rounded
 * up to a multiple of 2^(floor(log2(M - 1)) - 2)), up to RIG_CUDA_GEMM_PLAN_M_MAX. A family is
 * (device, N, K, leading dimensions, output type, operand alignment). Its first use chooses
 * the algorithm of every class up to RIG_CUDA_GEMM_PLAN_WARM_M (41 classes; on the H100 a
 * shape new to the process costs about 0.2 s either way, cublasGemmEx's first use of it
 * too, and each further M cublasGemmEx has not met 3.2-3.5 ms): host work only, so it may
 * happen while a graph is captured, and the engine's decode-graph capture at start-up meets
 * every family of the forward (a GEMM the small-batch kernel takes there makes its family
 * too: rig_cuda_gemm_plans_prepare). A class's algorithm, chosen for the class's
 * largest M, runs any M of the class: rows of a GEMM are independent and the algorithm's
 * tiling does not depend on M. Should cuBLASLt refuse it at some M, the call falls back to
 * cublasGemmEx (the class is then marked and always falls back). The family's first use
 * outside graph capture runs each distinct chosen algorithm once on one row of its operands,
 * so that cuBLASLt's lazy kernel loading (3-9 ms a step on the H100) happens then, not at a
 * class's first real use; the engine's warm-up forward after its decode-graph capture is
 * that first use (with graphs off, the first step is).
 *
 * Numerics as cublasGemmEx's under rig's handle: bf16 in, fp32 accumulation
 * (CUBLAS_COMPUTE_32F), split-K partial sums reduced in fp32 only (no reduction in the
 * output type), one rounding to the output type.
 *
 * Memory: one table per device (ordinals 0..15; past them every call falls back), static,
 * fixed in size (RIG_CUDA_GEMM_FAMILIES_MAX families; a call of a further family falls back
 * to cublasGemmEx), shared by every stream of the device, so a process chooses each algorithm
 * once however many engines it creates; each stream has its own cuBLASLt handle
 * (rig_cuda_gemm_plans_create). RIG_CUDA_GEMM_PLANS=0 in the environment
 * when a stream is created turns plans off for it (every call falls back): a measuring switch,
 * to time the old path with the same binary.
 * Threads: any; each device's table is under its own mutex, so TP ranks (each driving its
 * own device from its own thread) never wait for one another here (gemm_plan.cu says why
 * that matters: a shared lock deadlocked four ranks against their all-reduce).
 */
#ifndef RIG_CUDA_OPS_GEMM_PLAN_CUH
#define RIG_CUDA_OPS_GEMM_PLAN_CUH

#include "cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RIG_CUDA_GEMM_PLAN_M_MAX  ((int64_t)1 << 20) /* larger M: cublasGemmEx */
#define RIG_CUDA_GEMM_PLAN_WARM_M ((int64_t)1 << 13) /* classes chosen at a family's first use */

/* One column-major GEMM D[n, m] = op(W)[n, k] . X[k, m] as gemm.cu issues it: W is the weight
 * [N, K] row-major read transposed (ld_w = its row stride), X the activations [M, K] row-major
 * (ld_x), D the output [M, N] row-major (ld_out). */
struct rig_cuda_gemm_call {
    int64_t m, n, k;
    const void *w;
    int64_t ld_w;
    const void *x;
    int64_t ld_x;
    void *out;
    int64_t ld_out;
    cudaDataType_t out_type; /* CUDA_R_16BF or CUDA_R_32F */
};

/* A new, empty plan table with its cuBLASLt handle. RIG_E_NO_MEMORY, or RIG_E_DEVICE when the
 * handle cannot be created (reported on stderr); *out untouched then. */
enum rig_status rig_cuda_gemm_plans_create(struct rig_cuda_gemm_plans **out);
void rig_cuda_gemm_plans_destroy(struct rig_cuda_gemm_plans *plans);

/* Enqueues the call on launch->stream through its plan and sets *done; leaves *done false
 * (and enqueues nothing) when there is no plan for it: plans off, M beyond the classes, the
 * table full, no algorithm found, or cuBLASLt refused the class's algorithm — the caller then
 * runs cublasGemmEx. Never allocates device memory, never synchronises. Can't fail otherwise. */
void rig_cuda_gemm_plans_run(const struct rig_cuda_launch *launch,
                             const struct rig_cuda_gemm_call *call, bool *done);

/* Makes the call's family as rig_cuda_gemm_plans_run would (its algorithms chosen) and, outside
 * graph capture, warms it (each chosen algorithm run once on row 0 of the call's operands,
 * which the caller's own kernel overwrites next in stream order), but runs nothing else. For
 * GEMMs another kernel takes at this M (gemv.cu's at <= 16 rows) whose shapes cuBLAS runs at
 * larger M: a decode-only warm-up then leaves no family for the first prefill to make (on the
 * H100 a Llama-3.2-1B engine of 16 requests paid 336 ms in its first prefill step). Cheap once
 * the family is warm (a lookup under the table's lock). Can't fail. */
void rig_cuda_gemm_plans_prepare(const struct rig_cuda_launch *launch,
                                 const struct rig_cuda_gemm_call *call);

/* The class of `m` (1 <= m <= RIG_CUDA_GEMM_PLAN_M_MAX) and its largest M, for tests. */
int32_t rig_cuda_gemm_plan_class(int64_t m, int64_t *largest);

#ifdef __cplusplus
}
#endif

#endif /* RIG_CUDA_OPS_GEMM_PLAN_CUH */
