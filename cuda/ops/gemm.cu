/* gemm.cu — out[m, n] = sum_k a[m, k] * b[n, k] (+ bias[n]) through cuBLAS (see gemm.cuh).
 *
 * Row-major views are column-major views of their transposes, so with b [N, K] (the Hugging
 * Face weight layout) the product out^T = b . a^T is one column-major GEMM: A = b read
 * transposed (ld = b's row stride), B = a untransposed (ld = a's row stride), C = out^T
 * (ld = out's row stride), m = N, n = M, k = K. Row-strided views (q/k/v slices of a fused
 * buffer) work through the leading dimensions.
 *
 * bf16 in, fp32 accumulate (CUBLAS_COMPUTE_32F), bf16 or f32 out. A bias is broadcast into
 * out first and added by the GEMM itself with beta = 1, so bf16 results are rounded once,
 * bf16(sum + bias), as the simulator rounds. The handle is the stream's own, bound to an
 * explicit workspace (cuda_internal.h), so the call is graph-capturable.
 */
#include "cuda/ops/common.cuh"
#include "cuda/ops/gemm.cuh"

template <typename OUT>
static __global__ void rig__bias_fill_kernel(OUT *out, int64_t out_stride,
                                             const uint16_t *bias, int64_t rows, int64_t cols)
{
    int64_t index = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= rows * cols) return;
    int64_t r = index / cols, c = index % cols;
    if constexpr (sizeof(OUT) == 4) {
        out[r * out_stride + c] = rig_cuda_bf16(bias[c]);
    } else {
        out[r * out_stride + c] = bias[c];
    }
}

static enum rig_status rig__bias_fill(const struct rig_cuda_launch *launch,
                                      const struct rig_op_gemm *p)
{
    int64_t rows = p->out.shape[0], cols = p->out.shape[1];
    unsigned blocks = (unsigned)rig_cuda_div_up(rows * cols, 256);
    const uint16_t *bias = (const uint16_t *)p->bias.data;
    if (p->out.dtype == RIG_DTYPE_F32) {
        rig__bias_fill_kernel<float><<<blocks, 256, 0, launch->stream>>>(
            (float *)p->out.data, p->out.stride[0], bias, rows, cols);
    } else {
        rig__bias_fill_kernel<uint16_t><<<blocks, 256, 0, launch->stream>>>(
            (uint16_t *)p->out.data, p->out.stride[0], bias, rows, cols);
    }
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}

/* A leading dimension cuBLAS accepts: the row stride, at least the row length, at least 1. */
static int rig__ld(const struct rig_tensor *t)
{
    int64_t ld = t->stride[0] > t->shape[1] ? t->stride[0] : t->shape[1];
    return (int)(ld > 1 ? ld : 1);
}

enum rig_status rig_cuda_op_gemm(const struct rig_cuda_launch *launch,
                                 const struct rig_op_gemm *p)
{
    int64_t m = p->out.shape[0], n = p->out.shape[1], k = p->a.shape[1];
    if (m == 0 || n == 0) return RIG_OK;
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) return RIG_E_RANGE;
    float alpha = 1.0f, beta = 0.0f;
    if (p->bias.data != NULL) {
        enum rig_status status = rig__bias_fill(launch, p);
        if (status != RIG_OK) return status;
        beta = 1.0f;
    }
    cudaDataType_t out_type = p->out.dtype == RIG_DTYPE_F32 ? CUDA_R_32F : CUDA_R_16BF;
    RIG_CUBLAS_TRY(cublasGemmEx(launch->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k,
                                &alpha, p->b.data, CUDA_R_16BF, rig__ld(&p->b), p->a.data,
                                CUDA_R_16BF, rig__ld(&p->a), &beta, p->out.data, out_type,
                                rig__ld(&p->out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return RIG_OK;
}
