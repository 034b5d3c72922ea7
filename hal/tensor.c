/* tensor.c — tensor descriptor helpers and fp16 conversion. */
#include "hal/tensor.h"

#include <math.h>

#include "hal/status.h"

size_t rig_dtype_size(enum rig_dtype dtype)
{
    switch (dtype) {
#define RIG__DTYPE_SIZE(name, size, text)                                                  \
    case RIG_DTYPE_##name:                                                                 \
        return size;
        RIG_DTYPE_MAP(RIG__DTYPE_SIZE)
#undef RIG__DTYPE_SIZE
    case RIG_DTYPE_COUNT:
        break;
    }
    return 0;
}

const char *rig_dtype_name(enum rig_dtype dtype)
{
    switch (dtype) {
#define RIG__DTYPE_TEXT(name, size, text)                                                  \
    case RIG_DTYPE_##name:                                                                 \
        return text;
        RIG_DTYPE_MAP(RIG__DTYPE_TEXT)
#undef RIG__DTYPE_TEXT
    case RIG_DTYPE_COUNT:
        break;
    }
    return "?";
}

struct rig_tensor rig_tensor_make(void *data, enum rig_dtype dtype, int32_t ndim,
                                  const int64_t *shape)
{
    RIG_ASSERT(ndim >= 1 && ndim <= RIG_TENSOR_DIMS_MAX);
    struct rig_tensor t = {.data = data, .dtype = dtype, .ndim = ndim};
    for (int32_t d = 0; d < RIG_TENSOR_DIMS_MAX; d++) {
        t.shape[d] = 1;
        t.stride[d] = 0;
    }
    int64_t stride = 1;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        RIG_ASSERT(shape[d] >= 0);
        t.shape[d] = shape[d];
        t.stride[d] = stride;
        stride *= shape[d] > 0 ? shape[d] : 1;
    }
    return t;
}

struct rig_tensor rig_tensor_1d(void *data, enum rig_dtype dtype, int64_t n0)
{
    return rig_tensor_make(data, dtype, 1, (int64_t[]){n0});
}

struct rig_tensor rig_tensor_2d(void *data, enum rig_dtype dtype, int64_t n0, int64_t n1)
{
    return rig_tensor_make(data, dtype, 2, (int64_t[]){n0, n1});
}

struct rig_tensor rig_tensor_3d(void *data, enum rig_dtype dtype, int64_t n0, int64_t n1,
                                int64_t n2)
{
    return rig_tensor_make(data, dtype, 3, (int64_t[]){n0, n1, n2});
}

struct rig_tensor rig_tensor_none(void)
{
    return (struct rig_tensor){.data = NULL, .dtype = RIG_DTYPE_BF16, .ndim = 0};
}

bool rig_tensor_is_contiguous(const struct rig_tensor *t)
{
    int64_t stride = 1;
    for (int32_t d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != stride) return false;
        stride *= t->shape[d];
    }
    return true;
}

bool rig_tensor_rows_contiguous(const struct rig_tensor *t)
{
    return t->ndim >= 1 && (t->stride[t->ndim - 1] == 1 || t->shape[t->ndim - 1] == 1);
}

void *rig_tensor_at(const struct rig_tensor *t, const int64_t *index)
{
    int64_t offset = 0;
    for (int32_t d = 0; d < t->ndim; d++) {
        RIG_ASSERT(index[d] >= 0 && index[d] < t->shape[d]);
        offset += index[d] * t->stride[d];
    }
    /* uintptr_t arithmetic: phantom addresses are never dereferenced here. */
    return (void *)((uintptr_t)t->data + (uintptr_t)(offset * (int64_t)rig_dtype_size(t->dtype)));
}

struct rig_tensor rig_tensor_slice(const struct rig_tensor *t, int32_t dim, int64_t start,
                                   int64_t count)
{
    RIG_ASSERT(dim >= 0 && dim < t->ndim);
    RIG_ASSERT(start >= 0 && count >= 0 && start + count <= t->shape[dim]);
    struct rig_tensor v = *t;
    v.shape[dim] = count;
    if (t->data != NULL) {
        int64_t offset = start * t->stride[dim] * (int64_t)rig_dtype_size(t->dtype);
        v.data = (void *)((uintptr_t)t->data + (uintptr_t)offset);
    }
    return v;
}

float rig_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    int32_t exponent = (h >> 10) & 0x1f;
    uint32_t mantissa = h & 0x3ffu;
    float magnitude;
    if (exponent == 0) {
        magnitude = ldexpf((float)mantissa, -24);
    } else if (exponent == 31) {
        magnitude = mantissa ? NAN : INFINITY;
    } else {
        magnitude = ldexpf((float)(mantissa | 0x400u), exponent - 25);
    }
    uint32_t bits;
    memcpy(&bits, &magnitude, sizeof bits);
    bits |= sign;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t rig_f32_to_f16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    float a = fabsf(f);
    if (isnan(f)) return (uint16_t)(sign | 0x7e00u);
    if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00u);
    if (a < ldexpf(1.0f, -14)) { /* subnormal: units of 2^-24, round half to even */
        float units = a * ldexpf(1.0f, 24);
        return (uint16_t)(sign | (uint16_t)lrintf(units));
    }
    int exponent;
    float fraction = frexpf(a, &exponent); /* a = fraction * 2^exponent, fraction in [0.5,1) */
    long mantissa = lrintf(ldexpf(fraction, 11)); /* 11 significant bits, nearest even */
    if (mantissa == 2048) {
        mantissa = 1024;
        exponent++;
    }
    return (uint16_t)(sign | (uint16_t)((exponent + 14) << 10) | (uint16_t)(mantissa & 0x3ff));
}
