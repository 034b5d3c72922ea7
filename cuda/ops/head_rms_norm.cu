/* head_rms_norm.cu — per-head RMSNorm in place (Qwen3 q_norm / k_norm): one warp per head
 * vector of D values, lanes striding over it; 4 warps per block (see head_rms_norm.cuh). */
#include "cuda/ops/common.cuh"
#include "cuda/ops/head_rms_norm.cuh"
#include "cuda/ops/elementwise.cuh"

RIG_CUDA_MODULE(head_rms_norm)

#define RIG__WARPS_PER_BLOCK 4

static __global__ void rig__head_rms_norm_kernel(uint16_t *x, int64_t stride_t, int64_t stride_h,
                                                 int64_t heads, int64_t vectors,
                                                 const uint16_t *weight, int64_t dim, float eps)
{
    int64_t vector = (int64_t)blockIdx.x * RIG__WARPS_PER_BLOCK + threadIdx.x / RIG_CUDA_WARP;
    int lane = threadIdx.x % RIG_CUDA_WARP;
    if (vector >= vectors) return; /* a whole warp leaves together */
    uint16_t *v = x + (vector / heads) * stride_t + (vector % heads) * stride_h;
    float sum_squares = 0.0f;
    for (int64_t i = lane; i < dim; i += RIG_CUDA_WARP) {
        float value = rig_cuda_bf16(v[i]);
        sum_squares += value * value;
    }
    float total = rig_cuda_warp_sum(sum_squares);
    float inverse_rms = 1.0f / sqrtf(total / (float)dim + eps);
    for (int64_t i = lane; i < dim; i += RIG_CUDA_WARP)
        v[i] = rig_cuda_norm_value(v[i], weight[i], inverse_rms);
}

enum rig_status rig_cuda_op_head_rms_norm(const struct rig_cuda_launch *launch,
                                          const struct rig_op_head_rms_norm *p)
{
    int64_t vectors = p->x.shape[0] * p->x.shape[1];
    if (vectors == 0 || p->x.shape[2] == 0) return RIG_OK;
    int64_t blocks = rig_cuda_div_up(vectors, RIG__WARPS_PER_BLOCK);
    rig__head_rms_norm_kernel<<<(unsigned)blocks, RIG__WARPS_PER_BLOCK * RIG_CUDA_WARP, 0,
                                launch->stream>>>(
        (uint16_t *)p->x.data, p->x.stride[0], p->x.stride[1], p->x.shape[1], vectors,
        (const uint16_t *)p->weight.data, p->x.shape[2], p->eps);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
