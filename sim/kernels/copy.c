/* copy.c — element-wise copy between two tensors of the same shape and any strides (up to
 * four dimensions): a permuted or sliced view in, a contiguous tensor out, or the reverse.
 * bf16 <-> f32 convert (f32 -> bf16 rounds to nearest even); any other pair must have one
 * dtype and is copied bit for bit. Overlapping in and out are not supported.
 */
#include "sim/kernels.h"

#include "sim/kernels/access.h"

/* Copies one element, converting between bf16 and f32 where the dtypes differ. */
static void rig__copy_element(void *out, enum rig_dtype out_dtype, const void *in,
                              enum rig_dtype in_dtype)
{
    if (out_dtype == in_dtype) {
        memcpy(out, in, rig_dtype_size(in_dtype));
    } else if (in_dtype == RIG_DTYPE_BF16 && out_dtype == RIG_DTYPE_F32) {
        uint16_t h;
        memcpy(&h, in, sizeof h);
        float f = rig_bf16_to_f32(h);
        memcpy(out, &f, sizeof f);
    } else {
        RIG_ASSERT(in_dtype == RIG_DTYPE_F32 && out_dtype == RIG_DTYPE_BF16);
        float f;
        memcpy(&f, in, sizeof f);
        uint16_t h = rig_f32_to_bf16(f);
        memcpy(out, &h, sizeof h);
    }
}

/* Byte offset of element (i0..i3) of a tensor padded to four dims (leading dims of 1). */
static int64_t rig__offset(const int64_t stride[RIG_TENSOR_DIMS_MAX],
                           const int64_t index[RIG_TENSOR_DIMS_MAX], size_t element_size)
{
    int64_t offset = 0;
    for (int32_t d = 0; d < RIG_TENSOR_DIMS_MAX; d++) offset += index[d] * stride[d];
    return offset * (int64_t)element_size;
}

/* The strides of t right-aligned into four dims, leading (missing) dims given stride 0. */
static void rig__strides4(const struct rig_tensor *t, int64_t stride[RIG_TENSOR_DIMS_MAX])
{
    int32_t pad = RIG_TENSOR_DIMS_MAX - t->ndim;
    for (int32_t d = 0; d < RIG_TENSOR_DIMS_MAX; d++) stride[d] = d < pad ? 0 : t->stride[d - pad];
}

void rig_sim_op_copy(const struct rig_op_copy *p)
{
    RIG_ASSERT(p->in.ndim == p->out.ndim);
    RIG_ASSERT(p->in.ndim >= 1 && p->in.ndim <= RIG_TENSOR_DIMS_MAX);
    int32_t pad = RIG_TENSOR_DIMS_MAX - p->in.ndim;
    int64_t shape[RIG_TENSOR_DIMS_MAX];
    for (int32_t d = 0; d < RIG_TENSOR_DIMS_MAX; d++) {
        shape[d] = d < pad ? 1 : p->out.shape[d - pad];
        RIG_ASSERT(d < pad || p->in.shape[d - pad] == shape[d]);
    }
    int64_t in_stride[RIG_TENSOR_DIMS_MAX], out_stride[RIG_TENSOR_DIMS_MAX];
    rig__strides4(&p->in, in_stride);
    rig__strides4(&p->out, out_stride);
    size_t in_size = rig_dtype_size(p->in.dtype), out_size = rig_dtype_size(p->out.dtype);
    int64_t i[RIG_TENSOR_DIMS_MAX];
    for (i[0] = 0; i[0] < shape[0]; i[0]++) {
        for (i[1] = 0; i[1] < shape[1]; i[1]++) {
            for (i[2] = 0; i[2] < shape[2]; i[2]++) {
                for (i[3] = 0; i[3] < shape[3]; i[3]++) {
                    rig__copy_element((char *)p->out.data + rig__offset(out_stride, i, out_size),
                                      p->out.dtype,
                                      (const char *)p->in.data + rig__offset(in_stride, i, in_size),
                                      p->in.dtype);
                }
            }
        }
    }
}
