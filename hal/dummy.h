/* dummy.h — seeded dummy weights: the value of each element, the same bits on host and device.
 *
 * Element `index` (row-major in the full tensor) of a tensor tagged `tag` (rig_dummy_tag of
 * its name) under `seed` is drawn from Philox4x32 (hal/philox.h) with key = seed and counter
 * = (index / 4 low word, high word, RIG_PHILOX_STREAM_WEIGHTS, tag), word index % 4, mapped
 * to u = 2·unit − 1 in (−1, 1) and stored as the bf16 of offset + scale·u. A pure function
 * of (seed, tag, index): a block can be filled in any order, split in any way, on any
 * backend, and every TP degree sees the same model. What scale and offset a tensor takes is
 * the model's choice (core/model/weights.c).
 *
 * The same bits everywhere: unit and u are exact in float (hal/philox.h), so only scale·u
 * and offset + (scale·u) round. nvcc would contract the two into one FMA (one rounding) and
 * change some values by one bf16 step, so device code spells the two roundings out with
 * __fmul_rn and __fadd_rn; host code keeps them in two statements, which neither GCC in ISO
 * mode (-std=c11: no contraction) nor Clang (contraction within a statement) fuses.
 *
 * The simulator fills blocks with rig_dummy_fill_host, the CUDA backend with its kernel
 * (cuda/ops/fill_dummy.cu); both call rig_dummy_from_word. Header-only, usable from C and
 * CUDA. Pure functions.
 */
#ifndef RIG_DUMMY_H
#define RIG_DUMMY_H

#include <stdint.h>

#include "hal/philox.h"
#include "hal/tensor.h" /* RIG_HOST_DEVICE, rig_f32_to_bf16 */

/* A [rows, cols] block of one tensor's dummy values, written row-major and contiguous
 * (row r, column c of the block at element r·cols + c of the destination). */
struct rig_dummy_piece {
    uint64_t seed;       /* the Philox key */
    uint32_t tag;        /* rig_dummy_tag of the tensor's name */
    float scale, offset; /* value = offset + scale·u, u uniform in (−1, 1) */
    int64_t width;       /* columns of the full tensor; 1 for a 1-D tensor */
    int64_t row0, col0;  /* the block's first row and column in the full tensor */
    int64_t rows, cols;  /* the block's shape; col0 + cols <= width */
};

/* The bf16 bits of offset + scale·u for one Philox word. */
static inline RIG_HOST_DEVICE uint16_t rig_dummy_from_word(uint32_t word, float scale,
                                                           float offset)
{
    float unit = rig_philox_u32_to_unit(word); /* exact: (k + 1/2) / 2^23 */
#ifdef __CUDA_ARCH__
    float u = __fadd_rn(__fmul_rn(2.0f, unit), -1.0f); /* exact: (2k + 1 − 2^23) / 2^23 */
    return rig_f32_to_bf16(__fadd_rn(offset, __fmul_rn(scale, u)));
#else
    float u = 2.0f * unit - 1.0f;
    float product = scale * u;
    return rig_f32_to_bf16(offset + product);
#endif
}

/* The four Philox words of elements [4·group, 4·group + 4) of a tensor. */
static inline RIG_HOST_DEVICE struct rig_philox_out rig_dummy_words(uint64_t seed, uint32_t tag,
                                                                    uint64_t group)
{
    return rig_philox4x32(seed, (uint32_t)group, (uint32_t)(group >> 32),
                          RIG_PHILOX_STREAM_WEIGHTS, tag);
}

/* FNV-1a of a tensor's name: the last Philox counter word of its values. */
static inline uint32_t rig_dummy_tag(const char *name)
{
    uint32_t hash = 2166136261u;
    for (const char *p = name; *p != '\0'; p++) hash = (hash ^ (uint8_t)*p) * 16777619u;
    return hash;
}

/* Writes the block of `piece` to out[rows·cols] on the host, one Philox call per four
 * elements of the full tensor. The simulator's fill (and a test's reference). */
static inline void rig_dummy_fill_host(const struct rig_dummy_piece *piece, uint16_t *out)
{
    for (int64_t r = 0; r < piece->rows; r++) {
        uint64_t first = (uint64_t)((piece->row0 + r) * piece->width + piece->col0);
        uint64_t group = UINT64_MAX;
        struct rig_philox_out bits = {{0, 0, 0, 0}};
        for (int64_t c = 0; c < piece->cols; c++) {
            uint64_t index = first + (uint64_t)c;
            if (index / 4 != group) {
                group = index / 4;
                bits = rig_dummy_words(piece->seed, piece->tag, group);
            }
            out[r * piece->cols + c] =
                rig_dummy_from_word(bits.v[index % 4], piece->scale, piece->offset);
        }
    }
}

#endif /* RIG_DUMMY_H */
