/* silu_mul.cu — out = bf16(bf16(silu(gate)) * up), in = [gate | up] (see silu_mul.cuh).
 * One thread per VEC outputs; 16-byte accesses when rows allow. */
#include "cuda/ops/common.cuh"
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/silu_mul.cuh"

RIG_CUDA_MODULE(silu_mul)

template <int VEC>
static __global__ void rig__silu_mul_kernel(uint16_t *out, int64_t out_stride, const uint16_t *in,
                                            int64_t in_stride, int64_t tokens, int64_t inter)
{
    rig_cuda_pdl_begin(); /* before any read of what earlier kernels wrote */
    int64_t chunks = inter / VEC;
    int64_t index = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= tokens * chunks) return;
    int64_t t = index / chunks, i = (index % chunks) * VEC;
    const uint16_t *gate = in + t * in_stride + i;
    uint16_t g[VEC], u[VEC], o[VEC];
    rig_cuda_load_bf16<VEC>(gate, g);
    rig_cuda_load_bf16<VEC>(gate + inter, u);
#pragma unroll
    for (int j = 0; j < VEC; j++)
        o[j] = rig_cuda_silu_mul_value(g[j], u[j]);
    rig_cuda_store_bf16<VEC>(out + t * out_stride + i, o);
}

enum rig_status rig_cuda_op_silu_mul(const struct rig_cuda_launch *launch,
                                     const struct rig_op_silu_mul *p)
{
    int64_t tokens = p->out.shape[0], inter = p->out.shape[1];
    if (tokens == 0 || inter == 0) return RIG_OK;
    uint16_t *out = (uint16_t *)p->out.data;
    const uint16_t *in = (const uint16_t *)p->in.data;
    bool vec = rig_cuda_rows_vec8(out, p->out.stride[0], inter) &&
               rig_cuda_rows_vec8(in, p->in.stride[0], inter);
    int64_t chunks = tokens * (vec ? inter / 8 : inter);
    unsigned blocks = (unsigned)rig_cuda_div_up(chunks, 256);
    if (vec) {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__silu_mul_kernel<8>, dim3(blocks), dim3(256),
                                         0, out, p->out.stride[0], in, p->in.stride[0], tokens,
                                         inter));
    } else {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__silu_mul_kernel<1>, dim3(blocks), dim3(256),
                                         0, out, p->out.stride[0], in, p->in.stride[0], tokens,
                                         inter));
    }
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
