/* gather_rows.cu — out[r, :] = in[idx[r], :] for bf16 or f32 rows (see gather_rows.cuh).
 * One block per output row, copying 16 bytes at a time when rows allow, else one element
 * at a time. An index outside [0, T) writes a zero row (the simulator asserts instead). */
#include "cuda/ops/common.cuh"
#include "cuda/ops/gather_rows.cuh"

RIG_CUDA_MODULE(gather_rows)

template <typename UNIT>
static __global__ void rig__gather_rows_kernel(char *out, int64_t out_stride_bytes, const char *in,
                                               int64_t in_stride_bytes, int64_t in_rows,
                                               const int32_t *idx, int64_t units)
{
    rig_cuda_pdl_begin(); /* before any read of what earlier kernels wrote */
    int64_t r = blockIdx.x;
    int64_t source = idx[r];
    bool valid = source >= 0 && source < in_rows;
    UNIT *dst = reinterpret_cast<UNIT *>(out + r * out_stride_bytes);
    const UNIT *src = reinterpret_cast<const UNIT *>(in + (valid ? source : 0) * in_stride_bytes);
    for (int64_t i = threadIdx.x; i < units; i += blockDim.x) {
        UNIT value;
        if (valid) {
            value = src[i];
        } else {
            memset(&value, 0, sizeof value);
        }
        dst[i] = value;
    }
}

enum rig_status rig_cuda_op_gather_rows(const struct rig_cuda_launch *launch,
                                        const struct rig_op_gather_rows *p)
{
    int64_t rows = p->out.shape[0];
    size_t size = rig_dtype_size(p->in.dtype);
    int64_t row_bytes = p->out.shape[1] * (int64_t)size;
    int64_t out_stride = p->out.stride[0] * (int64_t)size;
    int64_t in_stride = p->in.stride[0] * (int64_t)size;
    if (rows == 0 || row_bytes == 0) return RIG_OK;
    bool vec = row_bytes % 16 == 0 && out_stride % 16 == 0 && in_stride % 16 == 0 &&
               rig_cuda_aligned(p->out.data, 16) && rig_cuda_aligned(p->in.data, 16);
    char *out = (char *)p->out.data;
    const char *in = (const char *)p->in.data;
    const int32_t *idx = (const int32_t *)p->idx.data;
    if (vec) {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__gather_rows_kernel<uint4>,
                                         dim3((unsigned)rows), dim3(128), 0, out, out_stride, in,
                                         in_stride, p->in.shape[0], idx, row_bytes / 16));
    } else if (size == 4) {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__gather_rows_kernel<uint32_t>,
                                         dim3((unsigned)rows), dim3(128), 0, out, out_stride, in,
                                         in_stride, p->in.shape[0], idx, row_bytes / 4));
    } else {
        RIG_CUDA_TRY(rig_cuda_launch_pdl(launch, rig__gather_rows_kernel<uint16_t>,
                                         dim3((unsigned)rows), dim3(128), 0, out, out_stride, in,
                                         in_stride, p->in.shape[0], idx, row_bytes / 2));
    }
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
