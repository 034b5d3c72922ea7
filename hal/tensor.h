/* tensor.h — dtypes, bf16 conversion and the small tensor descriptor the HAL ops take.
 *
 * A `struct rig_tensor` describes memory; it never owns it. `data` is a device address (on
 * the simulator a host address, or a phantom address in timing-only mode that must never be
 * dereferenced). Strides are in elements, outermost dimension first, as in PyTorch.
 * A tensor with `data == NULL` stands for "absent" where an op argument is optional.
 *
 * bf16 is stored as uint16_t (the top half of an IEEE float32); conversion from float rounds
 * to nearest even, as the GPU does, and turns NaN into a quiet NaN.
 *
 * Thread safety: pure functions of their arguments.
 */
#ifndef RIG_TENSOR_H
#define RIG_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define RIG_HOST_DEVICE __host__ __device__
#else
#define RIG_HOST_DEVICE
#endif

#define RIG_TENSOR_DIMS_MAX 4

#define RIG_DTYPE_MAP(X)                                                                   \
    X(F32, 4, "f32")                                                                       \
    X(BF16, 2, "bf16")                                                                     \
    X(F16, 2, "f16")                                                                       \
    X(I32, 4, "i32")                                                                       \
    X(I64, 8, "i64")                                                                       \
    X(U8, 1, "u8")

enum rig_dtype {
#define RIG__DTYPE_ENUM(name, size, text) RIG_DTYPE_##name,
    RIG_DTYPE_MAP(RIG__DTYPE_ENUM)
#undef RIG__DTYPE_ENUM
        RIG_DTYPE_COUNT
};

struct rig_tensor {
    void *data;                          /* device address of element [0, ...]; NULL = absent */
    enum rig_dtype dtype;
    int32_t ndim;                        /* 1 .. RIG_TENSOR_DIMS_MAX */
    int64_t shape[RIG_TENSOR_DIMS_MAX];  /* (ndim), unused entries 1 */
    int64_t stride[RIG_TENSOR_DIMS_MAX]; /* (ndim) in elements, unused entries 0 */
};

/* Bytes per element of a dtype; 0 for a value outside the enum. Can't fail. */
size_t rig_dtype_size(enum rig_dtype dtype);
/* Short name of a dtype ("bf16"); "?" outside the enum. Can't fail. */
const char *rig_dtype_name(enum rig_dtype dtype);

/* A contiguous tensor of the given shape (row-major strides). ndim in 1..4. */
struct rig_tensor rig_tensor_make(void *data, enum rig_dtype dtype, int32_t ndim,
                                  const int64_t *shape);
struct rig_tensor rig_tensor_1d(void *data, enum rig_dtype dtype, int64_t n0);
struct rig_tensor rig_tensor_2d(void *data, enum rig_dtype dtype, int64_t n0, int64_t n1);
struct rig_tensor rig_tensor_3d(void *data, enum rig_dtype dtype, int64_t n0, int64_t n1,
                                int64_t n2);
/* The absent tensor (data NULL), for optional op arguments. */
struct rig_tensor rig_tensor_none(void);

/* Number of elements (product of the shape). Inline: the simulator's cost model asks for it
 * several times per op. */
static inline int64_t rig_tensor_numel(const struct rig_tensor *t)
{
    int64_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}
/* True when the strides are the row-major strides of the shape. */
bool rig_tensor_is_contiguous(const struct rig_tensor *t);
/* True when the innermost stride is 1 (rows may be padded). */
bool rig_tensor_rows_contiguous(const struct rig_tensor *t);
/* Address of the element at the given indices (ndim of them). Pure pointer arithmetic: the
 * result is only dereferenced by code that owns real memory. */
void *rig_tensor_at(const struct rig_tensor *t, const int64_t *index);
/* A view of `count` entries of dimension `dim` starting at `start` (same strides). */
struct rig_tensor rig_tensor_slice(const struct rig_tensor *t, int32_t dim, int64_t start,
                                   int64_t count);

static inline RIG_HOST_DEVICE float rig_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline RIG_HOST_DEVICE uint16_t rig_f32_to_bf16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x0040u);
    bits += 0x7fffu + ((bits >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(bits >> 16);
}

/* Rounds a float to the nearest bf16 value and back: what storing in bf16 does. */
static inline RIG_HOST_DEVICE float rig_bf16_round(float f)
{
    return rig_bf16_to_f32(rig_f32_to_bf16(f));
}

/* IEEE half (fp16) to float and back (round to nearest even), for loading fp16 weights. */
float rig_f16_to_f32(uint16_t h);
uint16_t rig_f32_to_f16(float f);

#endif /* RIG_TENSOR_H */
