/* rms_norm.cu — RMSNorm, one block per row (see rms_norm.cuh, norm_row.cuh). */
#include "cuda/ops/norm_row.cuh"
#include "cuda/ops/rms_norm.cuh"

RIG_CUDA_MODULE(rms_norm)

/* x[i .. i + VEC) into v, its squares added to *sum. */
template <int VEC>
static __device__ __forceinline__ void rig__square_vector(const uint16_t *x, int64_t i,
                                                          uint16_t (&v)[VEC], float *sum)
{
    rig_cuda_load_bf16<VEC>(x + i, v);
#pragma unroll
    for (int j = 0; j < VEC; j++)
        *sum += rig_cuda_bf16(v[j]) * rig_cuda_bf16(v[j]);
}

/* EARLY, for a row of one vector a thread: the weights loaded before the PDL wait (weights are
 * never written during a forward) and the row read once (rig_cuda_norm_write_once: the same
 * bits). Taken for small batches only (rig_cuda_norm_early, norm_row.cuh). */
template <int VEC, bool EARLY>
static __global__ void rig__rms_norm_kernel(uint16_t *out, int64_t out_stride, const uint16_t *in,
                                            int64_t in_stride, const uint16_t *weight, int64_t n,
                                            float eps)
{
    __shared__ float shared[RIG_CUDA_WARP];
    const uint16_t *x = in + (int64_t)blockIdx.x * in_stride;
    int64_t at = (int64_t)threadIdx.x * VEC;
    if (EARLY && n <= (int64_t)blockDim.x * VEC) {
        uint16_t wv[VEC] = {0}, v[VEC] = {0};
        if (at < n) rig_cuda_load_bf16<VEC>(weight + at, wv);
        rig_cuda_pdl_begin(); /* before any read of what earlier kernels wrote */
        float sum_squares = 0.0f;
        if (at < n) rig__square_vector<VEC>(x, at, v, &sum_squares);
        rig_cuda_norm_write_once<VEC>(out + (int64_t)blockIdx.x * out_stride, at, at < n, v, wv, n,
                                      eps, sum_squares, shared);
        return;
    }
    rig_cuda_pdl_begin(); /* before any read of what earlier kernels wrote */
    float sum_squares = 0.0f;
    for (int64_t i = (int64_t)threadIdx.x * VEC; i < n; i += (int64_t)blockDim.x * VEC) {
        uint16_t v[VEC];
        rig__square_vector<VEC>(x, i, v, &sum_squares);
    }
    rig_cuda_norm_write<VEC>(out + (int64_t)blockIdx.x * out_stride, x, weight, n, eps, sum_squares,
                             shared);
}

enum rig_status rig_cuda_op_rms_norm(const struct rig_cuda_launch *launch,
                                     const struct rig_op_rms_norm *p)
{
    int64_t rows = p->out.shape[0], n = p->out.shape[1];
    if (rows == 0 || n == 0) return RIG_OK;
    uint16_t *out = (uint16_t *)p->out.data;
    const uint16_t *in = (const uint16_t *)p->in.data;
    const uint16_t *weight = (const uint16_t *)p->weight.data;
    bool vec = rig_cuda_rows_vec8(out, p->out.stride[0], n) &&
               rig_cuda_rows_vec8(in, p->in.stride[0], n) && rig_cuda_aligned(weight, 16);
    bool early = rig_cuda_norm_early(rows);
    if (vec) {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(
            launch, early ? rig__rms_norm_kernel<8, true> : rig__rms_norm_kernel<8, false>,
            dim3((unsigned)rows), dim3(rig_cuda_norm_threads(n, 8)), 0, out, p->out.stride[0], in,
            p->in.stride[0], weight, n, p->eps));
    } else {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(
            launch, early ? rig__rms_norm_kernel<1, true> : rig__rms_norm_kernel<1, false>,
            dim3((unsigned)rows), dim3(rig_cuda_norm_threads(n, 1)), 0, out, p->out.stride[0], in,
            p->in.stride[0], weight, n, p->eps));
    }
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
