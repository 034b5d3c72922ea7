/* test_support.h — helpers shared by the cmocka tests: a seeded PRNG for random inputs,
 * float comparisons with a normalised error (as ggml's test-backend-ops), bf16 fills, and
 * opening simulator devices with every backend registered. */
#ifndef RIG_TEST_SUPPORT_H
#define RIG_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the three headers above first. */
#include <cmocka.h>

#include "hal/hal.h"

/* xorshift64* state for test inputs; deterministic per seed. */
struct rig_test_rng {
    uint64_t state;
};
void rig_test_rng_seed(struct rig_test_rng *rng, uint64_t seed);
uint64_t rig_test_rng_next(struct rig_test_rng *rng);
/* Uniform float in [lo, hi). */
float rig_test_rng_float(struct rig_test_rng *rng, float lo, float hi);
/* Uniform integer in [lo, hi]. */
int64_t rig_test_rng_int(struct rig_test_rng *rng, int64_t lo, int64_t hi);
/* Fills n bf16 values uniform in [lo, hi). */
void rig_test_fill_bf16(struct rig_test_rng *rng, uint16_t *out, size_t n, float lo, float hi);

/* Normalised mean squared error sum((a-b)^2) / sum(b^2) (0 when both are zero). */
double rig_test_nmse(const float *a, const float *b, size_t n);
/* Largest |a - b|. */
double rig_test_max_abs_diff(const float *a, const float *b, size_t n);

/* Opens `count` simulator devices (every backend registered first); asserts success. */
void rig_test_open_sim(int32_t count, bool timing_only, struct rig_device **devices);

#endif /* RIG_TEST_SUPPORT_H */
