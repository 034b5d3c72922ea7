/* index_gather.cu — out[n] = src[idx[n]] over flat i32 arrays (see index_gather.cuh).
 * An index outside [0, M) reads as 0 (the simulator asserts instead). */
#include "cuda/ops/common.cuh"
#include "cuda/ops/index_gather.cuh"

RIG_CUDA_MODULE(index_gather)

static __global__ void rig__index_gather_kernel(int32_t *out, int64_t out_stride,
                                                const int32_t *src, int64_t src_stride, int64_t m,
                                                const int32_t *idx, int64_t idx_stride, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int64_t j = idx[i * idx_stride];
    out[i * out_stride] = (j >= 0 && j < m) ? src[j * src_stride] : 0;
}

enum rig_status rig_cuda_op_index_gather(const struct rig_cuda_launch *launch,
                                         const struct rig_op_index_gather *p)
{
    int64_t n = p->out.shape[0];
    if (n == 0) return RIG_OK;
    /* A 1-D tensor's only stride is its innermost one, which op_check requires to be 1;
     * it is still honoured here. */
    rig__index_gather_kernel<<<(unsigned)rig_cuda_div_up(n, 256), 256, 0, launch->stream>>>(
        (int32_t *)p->out.data, p->out.stride[0], (const int32_t *)p->src.data, p->src.stride[0],
        p->src.shape[0], (const int32_t *)p->idx.data, p->idx.stride[0], n);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
