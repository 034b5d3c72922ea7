/* index_scatter.cu — dst[idx[n]] = src[n] over flat i32 arrays (see index_scatter.cuh).
 * Indices are distinct (the op's contract), so the order of the writes does not matter. An
 * index outside [0, M) is skipped (the simulator asserts instead). */
#include "cuda/ops/common.cuh"
#include "cuda/ops/index_scatter.cuh"

RIG_CUDA_MODULE(index_scatter)

static __global__ void rig__index_scatter_kernel(int32_t *dst, int64_t dst_stride, int64_t m,
                                                 const int32_t *src, int64_t src_stride,
                                                 const int32_t *idx, int64_t idx_stride, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int64_t j = idx[i * idx_stride];
    if (j >= 0 && j < m) dst[j * dst_stride] = src[i * src_stride];
}

enum rig_status rig_cuda_op_index_scatter(const struct rig_cuda_launch *launch,
                                          const struct rig_op_index_scatter *p)
{
    int64_t n = p->src.shape[0];
    if (n == 0) return RIG_OK;
    rig__index_scatter_kernel<<<(unsigned)rig_cuda_div_up(n, 256), 256, 0, launch->stream>>>(
        (int32_t *)p->dst.data, p->dst.stride[0], p->dst.shape[0], (const int32_t *)p->src.data,
        p->src.stride[0], (const int32_t *)p->idx.data, p->idx.stride[0], n);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
