/* norm_row.cuh — the RMSNorm of one row by one block, shared by rms_norm.cu and add_rms_norm.cu
 * (CUDA C++ only). The rounding is Hugging Face's, as the simulator's: out = bf16(w * bf16(x * (1
 * / sqrt(mean(x^2) + eps)))), fp32 in between. Each thread reads back only the elements it read
 * before, so `out` may alias the input row.
 */
#ifndef RIG_CUDA_OPS_NORM_ROW_CUH
#define RIG_CUDA_OPS_NORM_ROW_CUH

#include "cuda/ops/common.cuh"
#include "cuda/ops/elementwise.cuh"

/* Threads for a row of n values moved VEC at a time: a warp multiple, 32..1024. */
static inline unsigned rig_cuda_norm_threads(int64_t n, int vec)
{
    int64_t threads = rig_cuda_div_up(rig_cuda_div_up(n, vec), RIG_CUDA_WARP) * RIG_CUDA_WARP;
    if (threads > 1024) threads = 1024;
    return (unsigned)threads;
}

/* `sum_squares` is this thread's share of sum(x^2) over the row; the block reduces it. */
template <int VEC>
static __device__ __forceinline__ void
rig_cuda_norm_write(uint16_t *out, const uint16_t *x, const uint16_t *weight, int64_t n, float eps,
                    float sum_squares, float *shared)
{
    float total = rig_cuda_block_sum(sum_squares, shared);
    float inverse_rms = 1.0f / sqrtf(total / (float)n + eps);
    for (int64_t i = (int64_t)threadIdx.x * VEC; i < n; i += (int64_t)blockDim.x * VEC) {
        uint16_t xv[VEC], wv[VEC], ov[VEC];
        rig_cuda_load_bf16<VEC>(x + i, xv);
        rig_cuda_load_bf16<VEC>(weight + i, wv);
#pragma unroll
        for (int j = 0; j < VEC; j++)
            ov[j] = rig_cuda_norm_value(xv[j], wv[j], inverse_rms);
        rig_cuda_store_bf16<VEC>(out + i, ov);
    }
}

/* rig_cuda_norm_write for a row every thread of which holds at most one vector (n <= blockDim.x
 * x VEC): `xv` are the values at i = threadIdx.x x VEC, already read (and, for add_rms_norm,
 * written), `wv` the weights there, loaded by the caller (before its PDL wait: weights are never
 * written during a forward), `mine` whether i < n. The same sum in the same order and the same
 * rounding, without reading x again or waiting for the weights after the reduction. */
template <int VEC>
static __device__ __forceinline__ void
rig_cuda_norm_write_once(uint16_t *out, int64_t i, bool mine, const uint16_t (&xv)[VEC],
                         const uint16_t (&wv)[VEC], int64_t n, float eps, float sum_squares,
                         float *shared)
{
    float total = rig_cuda_block_sum(sum_squares, shared);
    float inverse_rms = 1.0f / sqrtf(total / (float)n + eps);
    if (!mine) return;
    uint16_t ov[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++)
        ov[j] = rig_cuda_norm_value(xv[j], wv[j], inverse_rms);
    rig_cuda_store_bf16<VEC>(out + i, ov);
}

/* Whether the norm kernels of `rows` rows take their early form (weights before the PDL wait,
 * a row of one vector a thread read once; rms_norm.cu, add_rms_norm.cu): up to
 * RIG_CUDA_NORM_EARLY_ROWS rows. Measured on an H200 (docs/performance.md, ninth session, call
 * 10): decode steps of 8 rows 0.7-1.5 % faster on all three presets, Qwen3-0.6B's of 64 rows
 * 0.7-1.7 % (the others' within 0.4 %), but Llama-3.2-1B's 256 x 512 step 1.2-1.6 % slower (the
 * op table: Qwen3-8B's 4,096-wide rows at 256, warm 4.04 -> 4.58 us), so larger batches and
 * prefill keep the earlier kernels; between 64 and 256 rows was not measured. RIG_NORM_EARLY=0
 * (read once; a measuring switch) never takes it. */
#define RIG_CUDA_NORM_EARLY_ROWS 64
static inline bool rig_cuda_norm_early(int64_t rows)
{
    static const bool on = rig_cuda_env("RIG_NORM_EARLY", 1) != 0;
    return on && rows <= RIG_CUDA_NORM_EARLY_ROWS;
}

#endif /* RIG_CUDA_OPS_NORM_ROW_CUH */
