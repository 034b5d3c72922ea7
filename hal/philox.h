/* philox.h — Philox4x32-10, the counter-based RNG behind every random number in rig.
 *
 * Why counter-based: a sampled token must be a pure function of (seed, request, position) so that
 * the output never depends on which batch a request ran in, batch order, overlap, chunk size or TP
 * degree (docs/architecture.md §7). Philox (Salmon et al., "Parallel random numbers: as easy as 1,
 * 2, 3", SC'11) maps (key, counter) to four 32-bit words with no state, so the simulator and the
 * CUDA kernels compute the same numbers independently.
 *
 * Sampling noise for token `index` of the vocabulary at output `position` of a request with
 * 64-bit seed `seed` is rig_philox_uniform(seed, position, index): key = seed, counter =
 * (position, index, RIG_PHILOX_STREAM_SAMPLING, 0).
 *
 * Header-only, usable from C and CUDA (__host__ __device__). Pure functions.
 */
#ifndef RIG_PHILOX_H
#define RIG_PHILOX_H

#include <stdint.h>

#include "hal/tensor.h" /* RIG_HOST_DEVICE */

#define RIG_PHILOX_STREAM_SAMPLING 0x53414d50u /* "SAMP" */
#define RIG_PHILOX_STREAM_TIMING 0x54494d45u   /* "TIME": tokens of timing-only runs */
#define RIG_PHILOX_STREAM_WEIGHTS 0x57474854u  /* "WGHT": seeded dummy weights */

struct rig_philox_out {
    uint32_t v[4];
};

static inline RIG_HOST_DEVICE void rig__philox_mulhilo(uint32_t a, uint32_t b, uint32_t *hi,
                                                       uint32_t *lo)
{
    uint64_t product = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(product >> 32);
    *lo = (uint32_t)product;
}

/* Philox4x32 with 10 rounds on counter (c0..c3) and key `key`. */
static inline RIG_HOST_DEVICE struct rig_philox_out rig_philox4x32(uint64_t key, uint32_t c0,
                                                                   uint32_t c1, uint32_t c2,
                                                                   uint32_t c3)
{
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    uint32_t x0 = c0, x1 = c1, x2 = c2, x3 = c3;
    for (int round = 0; round < 10; round++) {
        uint32_t hi0, lo0, hi1, lo1;
        rig__philox_mulhilo(0xD2511F53u, x0, &hi0, &lo0);
        rig__philox_mulhilo(0xCD9E8D57u, x2, &hi1, &lo1);
        uint32_t y0 = hi1 ^ x1 ^ k0;
        uint32_t y1 = lo1;
        uint32_t y2 = hi0 ^ x3 ^ k1;
        uint32_t y3 = lo0;
        x0 = y0;
        x1 = y1;
        x2 = y2;
        x3 = y3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    struct rig_philox_out out = {{x0, x1, x2, x3}};
    return out;
}

/* A float uniform in the open interval (0, 1), from the top 23 bits of one Philox word:
 * (k + 0.5) / 2^23. Why 23 and not 24: (k + 0.5) with k < 2^24 needs 25 significant bits,
 * so for the largest k it rounds to 2^24 and u becomes exactly 1.0 — and the Gumbel noise
 * -log(-log(1)) is +infinity, which would pick that token whatever its logit. With 23 bits
 * every value is exact, from 2^-24 to 1 - 2^-24. */
static inline RIG_HOST_DEVICE float rig_philox_u32_to_unit(uint32_t word)
{
    return ((float)(word >> 9) + 0.5f) * (1.0f / 8388608.0f);
}

/* Sampling noise: a uniform in (0, 1) for vocabulary entry `index` at `position`. */
static inline RIG_HOST_DEVICE float rig_philox_uniform(uint64_t seed, uint32_t position,
                                                       uint32_t index)
{
    struct rig_philox_out r =
        rig_philox4x32(seed, position, index, RIG_PHILOX_STREAM_SAMPLING, 0);
    return rig_philox_u32_to_unit(r.v[0]);
}

/* SplitMix64 finaliser: mixes (seed, request uid) into a per-request sampling seed. */
static inline RIG_HOST_DEVICE uint64_t rig_mix64(uint64_t a, uint64_t b)
{
    uint64_t z = a + 0x9E3779B97F4A7C15ull * (b + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif /* RIG_PHILOX_H */
