/* copy.cu — out = in element by element over up to 4 strided dims (see copy.cuh).
 * Same dtype: the element's bytes are moved as they are (1, 2, 4 or 8 bytes). bf16 <-> f32:
 * widened exactly, or rounded to nearest even as the simulator does. One thread per element;
 * the indices are recovered from the linear element number, outermost dimension first. */
#include "cuda/ops/common.cuh"
#include "cuda/ops/copy.cuh"

RIG_CUDA_MODULE(copy)

struct rig__copy_view {
    char *data;
    int64_t stride[RIG_TENSOR_DIMS_MAX]; /* in elements, 4 dims (unused: 0) */
    int32_t size;                        /* bytes per element */
    int32_t dtype;                       /* enum rig_dtype */
};

struct rig__copy_shape {
    int64_t shape[RIG_TENSOR_DIMS_MAX]; /* unused dims: 1 */
};

static __device__ __forceinline__ void
rig__copy_element(char *dst, int32_t dst_dtype, const char *src, int32_t src_dtype, int32_t size)
{
    if (src_dtype == RIG_DTYPE_BF16 && dst_dtype == RIG_DTYPE_F32) {
        *reinterpret_cast<float *>(dst) = rig_cuda_bf16(*reinterpret_cast<const uint16_t *>(src));
    } else if (src_dtype == RIG_DTYPE_F32 && dst_dtype == RIG_DTYPE_BF16) {
        *reinterpret_cast<uint16_t *>(dst) =
            rig_cuda_to_bf16(*reinterpret_cast<const float *>(src));
    } else if (size == 8) {
        *reinterpret_cast<uint64_t *>(dst) = *reinterpret_cast<const uint64_t *>(src);
    } else if (size == 4) {
        *reinterpret_cast<uint32_t *>(dst) = *reinterpret_cast<const uint32_t *>(src);
    } else if (size == 2) {
        *reinterpret_cast<uint16_t *>(dst) = *reinterpret_cast<const uint16_t *>(src);
    } else {
        *dst = *src;
    }
}

static __global__ void rig__copy_kernel(struct rig__copy_view out, struct rig__copy_view in,
                                        struct rig__copy_shape shape, int64_t total)
{
    int64_t linear = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (linear >= total) return;
    int64_t out_offset = 0, in_offset = 0, rest = linear;
#pragma unroll
    for (int d = RIG_TENSOR_DIMS_MAX - 1; d >= 0; d--) {
        int64_t index = rest % shape.shape[d];
        rest /= shape.shape[d];
        out_offset += index * out.stride[d];
        in_offset += index * in.stride[d];
    }
    rig__copy_element(out.data + out_offset * out.size, out.dtype, in.data + in_offset * in.size,
                      in.dtype, in.size);
}

static struct rig__copy_view rig__view(const struct rig_tensor *t)
{
    struct rig__copy_view view;
    memset(&view, 0, sizeof view);
    view.data = (char *)t->data;
    for (int32_t d = 0; d < t->ndim; d++)
        view.stride[d] = t->stride[d];
    view.size = (int32_t)rig_dtype_size(t->dtype);
    view.dtype = (int32_t)t->dtype;
    return view;
}

enum rig_status rig_cuda_op_copy(const struct rig_cuda_launch *launch, const struct rig_op_copy *p)
{
    int64_t total = rig_tensor_numel(&p->out);
    if (total == 0) return RIG_OK;
    struct rig__copy_shape shape;
    for (int32_t d = 0; d < RIG_TENSOR_DIMS_MAX; d++)
        shape.shape[d] = d < p->out.ndim ? p->out.shape[d] : 1;
    rig__copy_kernel<<<(unsigned)rig_cuda_div_up(total, 256), 256, 0, launch->stream>>>(
        rig__view(&p->out), rig__view(&p->in), shape, total);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
