/* access.h — element and row addressing for the reference kernels (sim/kernels/ only).
 *
 * Every tensor an op receives has a contiguous innermost dimension (checked by hal/op_check.c)
 * but may be a strided view in its outer dimensions: q, k and v are slices of one fused qkv
 * buffer, rows may be padded. These helpers turn (outer indices) into a pointer to the
 * innermost row so the kernels can loop over plain arrays. Indices are asserted in range:
 * an index outside its tensor is a bug in the kernel or in the caller.
 *
 * Thread safety: pure pointer arithmetic on the caller's descriptors.
 */
#ifndef RIG_SIM_KERNELS_ACCESS_H
#define RIG_SIM_KERNELS_ACCESS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "hal/status.h"
#include "hal/tensor.h"

/* Byte address of the element at (i0, i1) of a tensor of rank >= 2 (innermost index 0). */
static inline void *rig_sim_addr(const struct rig_tensor *t, int64_t i0, int64_t i1)
{
    RIG_ASSERT(i0 >= 0 && i0 < t->shape[0]);
    RIG_ASSERT(t->ndim < 2 || (i1 >= 0 && i1 < t->shape[1]));
    int64_t offset = i0 * t->stride[0] + (t->ndim >= 2 ? i1 * t->stride[1] : 0);
    return (char *)t->data + offset * (int64_t)rig_dtype_size(t->dtype);
}

/* Row i of a 2-D bf16 tensor: shape[1] contiguous values. */
static inline uint16_t *rig_sim_row_bf16(const struct rig_tensor *t, int64_t i)
{
    RIG_ASSERT(t->dtype == RIG_DTYPE_BF16 && t->ndim == 2);
    return (uint16_t *)rig_sim_addr(t, i, 0);
}

/* Row i of a 2-D f32 tensor. */
static inline float *rig_sim_row_f32(const struct rig_tensor *t, int64_t i)
{
    RIG_ASSERT(t->dtype == RIG_DTYPE_F32 && t->ndim == 2);
    return (float *)rig_sim_addr(t, i, 0);
}

/* The innermost vector [i, j, :] of a 3-D bf16 tensor (one head of one token). */
static inline uint16_t *rig_sim_vec_bf16(const struct rig_tensor *t, int64_t i, int64_t j)
{
    RIG_ASSERT(t->dtype == RIG_DTYPE_BF16 && t->ndim == 3);
    RIG_ASSERT(j >= 0 && j < t->shape[1]);
    return (uint16_t *)rig_sim_addr(t, i, j);
}

/* Element i of a 1-D i32 tensor. */
static inline int32_t *rig_sim_ptr_i32(const struct rig_tensor *t, int64_t i)
{
    RIG_ASSERT(t->dtype == RIG_DTYPE_I32 && t->ndim == 1);
    return (int32_t *)rig_sim_addr(t, i, 0);
}

static inline int32_t rig_sim_get_i32(const struct rig_tensor *t, int64_t i)
{
    return *rig_sim_ptr_i32(t, i);
}

/* Element i of a 1-D f32 tensor. */
static inline float rig_sim_get_f32(const struct rig_tensor *t, int64_t i)
{
    RIG_ASSERT(t->dtype == RIG_DTYPE_F32 && t->ndim == 1);
    return *(const float *)rig_sim_addr(t, i, 0);
}

/* Element i of a 1-D i64 tensor, as the uint64 bits it carries. */
static inline uint64_t rig_sim_get_u64(const struct rig_tensor *t, int64_t i)
{
    RIG_ASSERT(t->dtype == RIG_DTYPE_I64 && t->ndim == 1);
    return *(const uint64_t *)rig_sim_addr(t, i, 0);
}

/* Element i of a 1-D bf16 tensor, widened to float. */
static inline float rig_sim_get_bf16(const struct rig_tensor *t, int64_t i)
{
    RIG_ASSERT(t->dtype == RIG_DTYPE_BF16 && t->ndim == 1);
    return rig_bf16_to_f32(*(const uint16_t *)rig_sim_addr(t, i, 0));
}

/* Whether a row of logits is a distribution: no NaN or +Inf, and some logit above -Inf
 * (-Inf alone masks a token; hal/ops.h, struct rig_op_sample). */
static inline bool rig_sim_logits_valid(const float *logits, int64_t vocab)
{
    bool bad = false, some = false;
    for (int64_t i = 0; i < vocab; i++) {
        bad |= !(logits[i] < INFINITY);
        some |= logits[i] > -INFINITY;
    }
    return some && !bad;
}

/* Largest head dim the kernels keep per-head scratch for on the stack (DeepSeek-class 576
 * would need a bigger bound; every model rig targets has D <= 256). */
#define RIG_SIM_HEAD_DIM_MAX 512

#endif /* RIG_SIM_KERNELS_ACCESS_H */
