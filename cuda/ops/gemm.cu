/* gemm.cu — out[m, n] = sum_k a[m, k] * b[n, k] (+ bias[n]) through cuBLAS (see gemm.cuh).
 *
 * A GEMM goes through its cuBLASLt plan (gemm_plan.cuh: the algorithm chosen once per size
 * class of M) and falls back to cublasGemmEx (cuBLAS's own choice per exact shape) where the
 * plan table has none.
 *
 * Row-major views are column-major views of their transposes, so with b [N, K] (the Hugging
 * Face weight layout) the product out^T = b . a^T is one column-major GEMM: A = b read
 * transposed (ld = b's row stride), B = a untransposed (ld = a's row stride), C = out^T
 * (ld = out's row stride), m = N, n = M, k = K. Row-strided views (q/k/v slices of a fused
 * buffer) work through the leading dimensions.
 *
 * Up to 16 rows of a (a decode step), with aligned operands, the op runs gemv.cu's kernel
 * instead where it measured faster than cuBLAS (rig__gemv_pays). Everything else comes here.
 *
 * bf16 in, fp32 accumulate (CUBLAS_COMPUTE_32F), bf16 or f32 out. A bias is added to the fp32
 * sum by a small kernel before the one rounding, bf16(sum + bias), as the simulator rounds
 * (rig__gemm_scratch). The handle is the stream's own, bound to an explicit workspace
 * (cuda_internal.h), so the call is graph-capturable.
 *
 * The fused forms (hal/ops.h: a prologue, accumulate) run on the small-batch kernel whenever it
 * takes them, whatever the shape: they exist to save a decode step's nodes. Elsewhere (more
 * than 16 rows, unaligned operands, a prologue where the small-batch kernel's persistent form
 * runs or whose rows do not fit its shared memory: gemv.cu) they are taken apart into the ops
 * they stand for
 * (rig__gemm_unfused): the prologue's own kernel into `operand`, the plain GEMM, and the add
 * in rig__gemm_scratch's finishing kernel. Both give the unfused ops' bits.
 */
#include "cuda/ops/common.cuh"
#include "cuda/ops/gemm.cuh"
#include "cuda/ops/gemm_plan.cuh"
#include "cuda/ops/gemv.cuh"
#include "cuda/ops/rms_norm.cuh"
#include "cuda/ops/silu_mul.cuh"

RIG_CUDA_MODULE(gemm)

/* out[r, c] = OUT(sum[r, c] + bias[c]): the bias (when given) added in fp32 to the fp32 sum,
 * then one rounding (none for f32 out), exactly as the simulator stores; with `accumulate`
 * (bf16 out, no bias) out[r, c] = bf16(out[r, c] + bf16(sum[r, c])), the residual add of a
 * fused GEMM. `sum` may be `out` (f32). */
template <typename OUT>
static __global__ void rig__finish_kernel(OUT *out, int64_t out_stride, const float *sum,
                                          int64_t sum_stride, const uint16_t *bias,
                                          bool accumulate, int64_t rows, int64_t cols)
{
    int64_t index = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= rows * cols) return;
    int64_t r = index / cols, c = index % cols;
    float value = sum[r * sum_stride + c];
    if (bias != NULL) value += rig_cuda_bf16(bias[c]);
    OUT *at = out + r * out_stride + c;
    if constexpr (sizeof(OUT) == 4) {
        *at = value;
    } else if (accumulate) {
        *at = rig_cuda_to_bf16(rig_cuda_bf16(*at) + rig_bf16_round(value));
    } else {
        *at = rig_cuda_to_bf16(value);
    }
}

/* A leading dimension cuBLAS accepts: the row stride, at least the row length, at least 1. */
static int rig__ld(const struct rig_tensor *t)
{
    int64_t ld = t->stride[0] > t->shape[1] ? t->stride[0] : t->shape[1];
    return (int)(ld > 1 ? ld : 1);
}

/* The cuBLAS call of out[0..m) = a[0..m) . b^T, out of `out_type` with leading dimension
 * ld_out. */
static struct rig_cuda_gemm_call rig__call(const struct rig_op_gemm *p, int64_t m, const void *a,
                                           void *out, cudaDataType_t out_type, int ld_out)
{
    struct rig_cuda_gemm_call call = {.m = m, .n = p->out.shape[1], .k = rig_gemm_depth(p),
                                      .w = p->b.data, .ld_w = rig__ld(&p->b), .x = a,
                                      .ld_x = rig__ld(&p->a), .out = out, .ld_out = ld_out,
                                      .out_type = out_type};
    return call;
}

/* out[0..m) = a[0..m) . b^T, out of `out_type` with leading dimension ld_out. */
static enum rig_status rig__gemm(const struct rig_cuda_launch *launch, const struct rig_op_gemm *p,
                                 int64_t m, const void *a, void *out, cudaDataType_t out_type,
                                 int ld_out)
{
    int64_t n = p->out.shape[1], k = rig_gemm_depth(p);
    struct rig_cuda_gemm_call call = rig__call(p, m, a, out, out_type, ld_out);
    bool done = false;
    rig_cuda_gemm_plans_run(launch, &call, &done);
    if (done) return RIG_OK;
    float alpha = 1.0f, beta = 0.0f;
    RIG_CUBLAS_TRY(cublasGemmEx(launch->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k,
                                &alpha, p->b.data, CUDA_R_16BF, rig__ld(&p->b), a, CUDA_R_16BF,
                                rig__ld(&p->a), &beta, out, out_type, ld_out, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    return RIG_OK;
}

/* With a bias the sum must reach the bias unrounded, and with accumulate the rounded sum must
 * be added to out's old value. f32 out (a bias): GEMM into out, then the bias in place. bf16
 * out: GEMM into the stream's fp32 scratch a block of rows at a time, then bias or add and one
 * rounding into out. (beta = 1 over a bias-filled bf16 out was tried: cuBLAS then rounds the
 * product to bf16 before adding C, one bf16 ulp off the simulator.) `p` is a plain GEMM but for
 * its accumulate flag. */
static enum rig_status rig__gemm_scratch(const struct rig_cuda_launch *launch,
                                         const struct rig_op_gemm *p)
{
    int64_t m = p->out.shape[0], n = p->out.shape[1];
    const uint16_t *bias = (const uint16_t *)p->bias.data;
    if (p->out.dtype == RIG_DTYPE_F32) {
        float *out = (float *)p->out.data;
        enum rig_status status =
            rig__gemm(launch, p, m, p->a.data, out, CUDA_R_32F, rig__ld(&p->out));
        if (status != RIG_OK) return status;
        rig__finish_kernel<float>
            <<<(unsigned)rig_cuda_div_up(m * n, 256), 256, 0, launch->stream>>>(
                out, p->out.stride[0], out, p->out.stride[0], bias, false, m, n);
        RIG_CUDA_LAUNCHED();
        return RIG_OK;
    }
    int64_t rows_per_block = (int64_t)(launch->scratch_bytes / ((size_t)n * sizeof(float)));
    if (rows_per_block < 1) return RIG_E_UNSUPPORTED;
    float *sum = (float *)launch->scratch;
    for (int64_t m0 = 0; m0 < m; m0 += rows_per_block) {
        int64_t rows = m - m0 < rows_per_block ? m - m0 : rows_per_block;
        const uint16_t *a = (const uint16_t *)p->a.data + m0 * p->a.stride[0];
        enum rig_status status = rig__gemm(launch, p, rows, a, sum, CUDA_R_32F, (int)n);
        if (status != RIG_OK) return status;
        uint16_t *out = (uint16_t *)p->out.data + m0 * p->out.stride[0];
        rig__finish_kernel<uint16_t>
            <<<(unsigned)rig_cuda_div_up(rows * n, 256), 256, 0, launch->stream>>>(
                out, p->out.stride[0], sum, n, bias, p->accumulate, rows, n);
        RIG_CUDA_LAUNCHED();
    }
    return RIG_OK;
}

/* Where the small-batch kernel beats cuBLAS, measured on the H100 at 230f6e2
 * (test_gemm_decode_timing, weights from HBM; docs/performance.md): it wins when a block has
 * a long run of K to stream (K >= 2048: o 1024 x 2048 4.2 vs 5.5 us, down 1024 x 3072 5.1 vs
 * 7.3 us) or when the grid is many waves deep (the LM head, N = 151936: 102 vs 118 us). With
 * K = 1024 and a few thousand columns each block is one latency-bound batch of loads and
 * cuBLAS is faster (qkv 4096 x 1024: 6.1 vs 5.1 us; gate_up 6144 x 1024: 7.2 vs 6.8 us). That
 * still holds under programmatic dependent launch, where this kernel prefetches its weights
 * while the previous kernel ends: taking it for qkv and gate_up made the batch-1 graph step
 * slower (H100, 87bedaf: 1.162 vs 1.130 ms at context 512, two runs each), and again with
 * its first weights loaded before the PDL wait (1011581: 1.146 / 1.141 vs 1.089 / 1.089 ms).
 * RIG_GEMV_ALWAYS=1 (read once, a measuring switch) takes the kernel for every shape it accepts. */
static bool rig__gemv_pays(const struct rig_cuda_launch *launch, const struct rig_op_gemm *p)
{
    static const long always = rig_cuda_env("RIG_GEMV_ALWAYS", 0); /* measuring: every shape */
    int64_t n = p->out.shape[1], k = rig_gemm_depth(p);
    return always != 0 || k >= 2048 || n >= 32 * 8 * (int64_t)launch->sm_count;
}

static bool rig__fused(const struct rig_op_gemm *p)
{
    return p->prologue != RIG_GEMM_PROLOGUE_NONE || p->accumulate;
}

/* The plain GEMM a fused one multiplies: its operand (a, without a prologue) by b, into out;
 * `accumulate` kept. */
static struct rig_op_gemm rig__plain(const struct rig_op_gemm *p)
{
    struct rig_op_gemm plain = *p;
    if (p->prologue != RIG_GEMM_PROLOGUE_NONE) plain.a = p->operand;
    plain.prologue = RIG_GEMM_PROLOGUE_NONE;
    plain.operand = rig_tensor_none();
    plain.norm_weight = rig_tensor_none();
    return plain;
}

/* A fused GEMM taken apart into the ops it stands for: the prologue's kernel into `operand`,
 * then the product of the operand (a GEMM again, which may accumulate on the small-batch
 * kernel); accumulate alone, where that kernel does not take it, added into out by
 * rig__gemm_scratch's finishing kernel. */
static enum rig_status rig__gemm_unfused(const struct rig_cuda_launch *launch,
                                         const struct rig_op_gemm *p)
{
    if (p->prologue == RIG_GEMM_PROLOGUE_NONE) return rig__gemm_scratch(launch, p);
    if (p->prologue == RIG_GEMM_PROLOGUE_RMS_NORM) {
        struct rig_op_rms_norm norm = {.out = p->operand, .in = p->a, .weight = p->norm_weight,
                                       .eps = p->eps};
        RIG_TRY(rig_cuda_op_rms_norm(launch, &norm));
    } else {
        struct rig_op_silu_mul act = {.out = p->operand, .in = p->a};
        RIG_TRY(rig_cuda_op_silu_mul(launch, &act));
    }
    struct rig_op_gemm plain = rig__plain(p);
    return rig_cuda_op_gemm(launch, &plain);
}

/* Whether the small-batch kernel may take p's prologue: RIG_GEMV_PROLOGUES (a measuring switch,
 * read once) is a mask of the prologues it takes, bit 0 RMS_NORM, bit 1 SILU_MUL (default 3,
 * both); a prologue outside it runs as its own kernel (rig__gemm_unfused). */
static bool rig__prologue_taken(const struct rig_op_gemm *p)
{
    static const long mask = rig_cuda_env("RIG_GEMV_PROLOGUES", 3);
    return p->prologue == RIG_GEMM_PROLOGUE_NONE || ((mask >> ((int)p->prologue - 1)) & 1) != 0;
}

enum rig_status rig_cuda_op_gemm(const struct rig_cuda_launch *launch, const struct rig_op_gemm *p)
{
    int64_t m = p->out.shape[0], n = p->out.shape[1], k = rig_gemm_depth(p);
    if (m == 0 || n == 0) return RIG_OK;
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) return RIG_E_RANGE;
    bool fused = rig__fused(p);
    if (fused && !rig__prologue_taken(p)) return rig__gemm_unfused(launch, p);
    if (rig_cuda_gemv_accepts(p) && (fused || rig__gemv_pays(launch, p))) {
        /* the same shape at more rows is cuBLAS's: have its plan made and warm before then,
         * as the cuBLAS path below will call it (a bias with bf16 out, or accumulate: into the
         * fp32 scratch) */
        struct rig_op_gemm plain = rig__plain(p);
        bool scratch = (p->bias.data != NULL || p->accumulate) && p->out.dtype != RIG_DTYPE_F32;
        cudaDataType_t type =
            scratch || p->out.dtype == RIG_DTYPE_F32 ? CUDA_R_32F : CUDA_R_16BF;
        struct rig_cuda_gemm_call call =
            rig__call(&plain, m, plain.a.data, scratch ? launch->scratch : p->out.data, type,
                      scratch ? (int)n : rig__ld(&p->out));
        static const bool prepare = rig_cuda_env("RIG_GEMM_PREPARE", 1) != 0; /* measuring */
        if (prepare) rig_cuda_gemm_plans_prepare(launch, &call);
        enum rig_status status = rig_cuda_gemv_launch(launch, p);
        if (status != RIG_E_UNSUPPORTED) return status; /* else a prologue it does not take */
    }
    if (fused) return rig__gemm_unfused(launch, p);
    if (p->bias.data != NULL) return rig__gemm_scratch(launch, p);
    cudaDataType_t out_type = p->out.dtype == RIG_DTYPE_F32 ? CUDA_R_32F : CUDA_R_16BF;
    return rig__gemm(launch, p, m, p->a.data, p->out.data, out_type, rig__ld(&p->out));
}
