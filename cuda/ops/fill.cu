/* fill.cu — 32-bit fill (see fill.cuh). */
#include "cuda/ops/common.cuh"
#include "cuda/ops/fill.cuh"

RIG_CUDA_MODULE(fill)

static __global__ void rig__fill_u32_kernel(uint32_t *dst, uint32_t value, size_t count)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        dst[i] = value;
}

enum rig_status rig_cuda_fill_u32(cudaStream_t stream, void *dst, uint32_t value, size_t count)
{
    RIG_ASSERT(dst != NULL && count > 0);
    int64_t blocks = rig_cuda_div_up((int64_t)count, 256);
    if (blocks > 65536) blocks = 65536; /* grid-stride loop covers the rest */
    rig__fill_u32_kernel<<<(unsigned)blocks, 256, 0, stream>>>((uint32_t *)dst, value, count);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
