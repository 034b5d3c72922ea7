/* mma_rows.cuh — the register-level pieces shared by the two small-M GEMM kernels (gemv.cu,
 * gemm_skinny.cu): a streamed 16-byte weight load, a cached 16-byte activation load, and one
 * m16n8k16 bf16 tensor-core step with fp32 accumulation (CUDA C++ only, header-only).
 *
 * The k permutation both kernels rely on. Lane (g, t) = (lane / 4, lane % 4) of a warp loads
 * 16 bytes (8 values of k) of weight row g at k0 + 8t and the same 16 bytes of activation rows
 * g and g + 8. Those 8 values are taken as the lane's k-slots {2t, 2t+1, 2t+8, 2t+9} of two
 * consecutive k16 mmas (values 0-3 the first, 4-7 the second). That is a permutation of k, but
 * the same one for the A operand (activations, rows = tokens) and the B operand (weights,
 * columns = outputs), so each dot product is unchanged: the fragment layouts of m16n8k16 give
 * lane (g, t) exactly A[g][slots], A[g+8][slots] and B[slots][g]. rig_cuda_mma_step does both
 * mmas of one such 32-k step.
 */
#ifndef RIG_CUDA_OPS_MMA_ROWS_CUH
#define RIG_CUDA_OPS_MMA_ROWS_CUH

#include <stdint.h>

#include "cuda/cuda_internal.h"

/* 16 bytes of weights, read once: kept out of L1 (ld.global.nc.L1::no_allocate). */
static __device__ __forceinline__ uint4 rig_cuda_load_stream(const uint16_t *p)
{
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

/* 16 bytes of activations, read by many blocks: through L1. */
static __device__ __forceinline__ uint4 rig_cuda_load_cached(const uint16_t *p)
{
    return __ldg(reinterpret_cast<const uint4 *>(p));
}

/* c += A . B over one 16x8x16 bf16 tile, fp32 accumulate. a0/a2: row g, a1/a3: row g + 8. */
static __device__ __forceinline__ void rig_cuda_mma(float (&c)[4], uint32_t a0, uint32_t a1,
                                                    uint32_t a2, uint32_t a3, uint32_t b0,
                                                    uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* One 32-k step of the permutation above: rows g (low) and g + 8 (high) of A, row g of the
 * weights (column g of B), two k16 mmas into c. */
static __device__ __forceinline__ void rig_cuda_mma_step(float (&c)[4], const uint4 &low,
                                                         const uint4 &high, const uint4 &weight)
{
    rig_cuda_mma(c, low.x, high.x, low.y, high.y, weight.x, weight.y);
    rig_cuda_mma(c, low.z, high.z, low.w, high.w, weight.z, weight.w);
}

/* What both kernels need of a GEMM `p` (already checked by hal/op_check.c): 1 to max_rows
 * rows, K a multiple of 8 (whole 16-byte loads) and below INT32_MAX by a step of 32, a and b
 * 16-byte aligned with row strides that are multiples of 8 elements (a's stride is unused
 * when M == 1, b's when N == 1). Host only; can't fail. */
static inline bool rig_cuda_rows_accept(const struct rig_op_gemm *p, int64_t max_rows)
{
    int64_t rows = p->out.shape[0], columns = p->out.shape[1], depth = p->a.shape[1];
    if (rows < 1 || rows > max_rows) return false;
    if (columns > INT32_MAX || depth > INT32_MAX - 32 || depth % 8 != 0) return false;
    if (((uintptr_t)p->a.data | (uintptr_t)p->b.data) % 16 != 0) return false;
    if (rows > 1 && p->a.stride[0] % 8 != 0) return false;
    if (columns > 1 && p->b.stride[0] % 8 != 0) return false;
    return true;
}

/* A GEMM's operands as both kernels take them (kernel parameters: plain values). */
struct rig_cuda_rows_operands {
    void *out;            /* [M, N] bf16 | f32, row stride out_stride */
    const uint16_t *a;    /* [M, K] bf16, row stride a_stride */
    const uint16_t *b;    /* [N, K] bf16, row stride b_stride */
    const uint16_t *bias; /* [N] bf16, or NULL */
    int64_t out_stride, a_stride, b_stride;
    int32_t rows, columns, depth; /* M, N, K */
};

/* The operands of a `p` that rig_cuda_rows_accept took. Host only. */
static inline struct rig_cuda_rows_operands rig_cuda_rows_operands(const struct rig_op_gemm *p)
{
    struct rig_cuda_rows_operands o;
    o.out = p->out.data;
    o.a = (const uint16_t *)p->a.data;
    o.b = (const uint16_t *)p->b.data;
    o.bias = (const uint16_t *)p->bias.data;
    o.out_stride = p->out.stride[0];
    o.a_stride = p->a.stride[0];
    o.b_stride = p->b.stride[0];
    o.rows = (int32_t)p->out.shape[0];
    o.columns = (int32_t)p->out.shape[1];
    o.depth = (int32_t)p->a.shape[1];
    return o;
}

#endif /* RIG_CUDA_OPS_MMA_ROWS_CUH */
