/* add_rms_norm.cu — residual = bf16(residual + in), out = rms_norm(residual), one block per
 * row (see add_rms_norm.cuh, norm_row.cuh). Every thread consumes its elements of `in`
 * before writing anything of `out`, so out may alias in. */
#include "cuda/ops/add_rms_norm.cuh"
#include "cuda/ops/norm_row.cuh"

RIG_CUDA_MODULE(add_rms_norm)

/* residual[i .. i + VEC) = bf16(residual + in) there, into rv, and its squares added to *sum. */
template <int VEC>
static __device__ __forceinline__ void rig__add_vector(uint16_t *r, const uint16_t *x, int64_t i,
                                                       uint16_t (&rv)[VEC], float *sum)
{
    uint16_t xv[VEC];
    rig_cuda_load_bf16<VEC>(r + i, rv);
    rig_cuda_load_bf16<VEC>(x + i, xv);
#pragma unroll
    for (int j = 0; j < VEC; j++) {
        rv[j] = rig_cuda_to_bf16(rig_cuda_bf16(rv[j]) + rig_cuda_bf16(xv[j]));
        *sum += rig_cuda_bf16(rv[j]) * rig_cuda_bf16(rv[j]);
    }
    rig_cuda_store_bf16<VEC>(r + i, rv);
}

/* EARLY, for a row of one vector a thread: the weights loaded before the PDL wait and the row
 * kept in registers (rig_cuda_norm_write_once; the same bits). */
template <int VEC, bool EARLY>
static __global__ void rig__add_rms_norm_kernel(uint16_t *out, int64_t out_stride,
                                                uint16_t *residual, int64_t residual_stride,
                                                const uint16_t *in, int64_t in_stride,
                                                const uint16_t *weight, int64_t n, float eps)
{
    __shared__ float shared[RIG_CUDA_WARP];
    uint16_t *r = residual + (int64_t)blockIdx.x * residual_stride;
    const uint16_t *x = in + (int64_t)blockIdx.x * in_stride;
    int64_t at = (int64_t)threadIdx.x * VEC;
    if (EARLY && n <= (int64_t)blockDim.x * VEC) {
        uint16_t wv[VEC] = {0}, rv[VEC] = {0};
        if (at < n) rig_cuda_load_bf16<VEC>(weight + at, wv); /* weights: before the wait */
        rig_cuda_pdl_begin(); /* before any read of what earlier kernels wrote */
        float sum_squares = 0.0f;
        if (at < n) rig__add_vector<VEC>(r, x, at, rv, &sum_squares);
        rig_cuda_norm_write_once<VEC>(out + (int64_t)blockIdx.x * out_stride, at, at < n, rv, wv,
                                      n, eps, sum_squares, shared);
        return;
    }
    rig_cuda_pdl_begin(); /* before any read of what earlier kernels wrote */
    float sum_squares = 0.0f;
    for (int64_t i = (int64_t)threadIdx.x * VEC; i < n; i += (int64_t)blockDim.x * VEC) {
        uint16_t rv[VEC];
        rig__add_vector<VEC>(r, x, i, rv, &sum_squares);
    }
    rig_cuda_norm_write<VEC>(out + (int64_t)blockIdx.x * out_stride, r, weight, n, eps, sum_squares,
                             shared);
}

enum rig_status rig_cuda_op_add_rms_norm(const struct rig_cuda_launch *launch,
                                         const struct rig_op_add_rms_norm *p)
{
    int64_t rows = p->out.shape[0], n = p->out.shape[1];
    if (rows == 0 || n == 0) return RIG_OK;
    uint16_t *out = (uint16_t *)p->out.data;
    uint16_t *residual = (uint16_t *)p->residual.data;
    const uint16_t *in = (const uint16_t *)p->in.data;
    const uint16_t *weight = (const uint16_t *)p->weight.data;
    bool vec = rig_cuda_rows_vec8(out, p->out.stride[0], n) &&
               rig_cuda_rows_vec8(residual, p->residual.stride[0], n) &&
               rig_cuda_rows_vec8(in, p->in.stride[0], n) && rig_cuda_aligned(weight, 16);
    bool early = rig_cuda_norm_early(rows);
    if (vec) {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(
            launch, early ? rig__add_rms_norm_kernel<8, true> : rig__add_rms_norm_kernel<8, false>,
            dim3((unsigned)rows), dim3(rig_cuda_norm_threads(n, 8)), 0, out, p->out.stride[0],
            residual, p->residual.stride[0], in, p->in.stride[0], weight, n, p->eps));
    } else {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(
            launch, early ? rig__add_rms_norm_kernel<1, true> : rig__add_rms_norm_kernel<1, false>,
            dim3((unsigned)rows), dim3(rig_cuda_norm_threads(n, 1)), 0, out, p->out.stride[0],
            residual, p->residual.stride[0], in, p->in.stride[0], weight, n, p->eps));
    }
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
