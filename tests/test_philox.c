/* test_philox.c — hal/philox.h, the counter-based RNG behind sampling noise, timing-only
 * tokens and dummy weights.
 *
 * Checks: the Philox4x32-10 known-answer vectors published with Random123 (kat_vectors),
 * which pin the round function, the key schedule and the word order; that the key's low 32
 * bits are key word 0; uniform floats lie in the open interval (0, 1) with the mean and
 * variance of U(0, 1) over 1e5 draws; sampling noise depends on (seed, position, index)
 * only and the streams differ; rig_mix64 gives distinct seeds for distinct (a, b).
 */
#include "tests/support/test_support.h"

#include <math.h>
#include <stdlib.h>

#include "hal/philox.h"

struct kat {
    uint32_t counter[4];
    uint32_t key[2];
    uint32_t expected[4];
};

/* Random123 kat_vectors, "philox4x32 10" lines. */
static const struct kat KATS[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
     {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
     {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
};

static void test_known_answers(void **state)
{
    (void)state;
    for (size_t i = 0; i < RIG_ARRAY_LEN(KATS); i++) {
        const struct kat *k = &KATS[i];
        uint64_t key = ((uint64_t)k->key[1] << 32) | k->key[0];
        struct rig_philox_out out =
            rig_philox4x32(key, k->counter[0], k->counter[1], k->counter[2], k->counter[3]);
        for (int w = 0; w < 4; w++) assert_int_equal(out.v[w], k->expected[w]);
    }
}

/* Swapping the key's halves or one counter bit changes the output. */
static void test_key_and_counter_sensitivity(void **state)
{
    (void)state;
    const struct kat *k = &KATS[2];
    uint64_t key = ((uint64_t)k->key[1] << 32) | k->key[0];
    uint64_t swapped = ((uint64_t)k->key[0] << 32) | k->key[1];
    struct rig_philox_out a = rig_philox4x32(key, 1, 2, 3, 4);
    struct rig_philox_out b = rig_philox4x32(swapped, 1, 2, 3, 4);
    struct rig_philox_out c = rig_philox4x32(key, 1, 2, 3, 5);
    assert_true(a.v[0] != b.v[0] || a.v[1] != b.v[1]);
    assert_true(a.v[0] != c.v[0] || a.v[1] != c.v[1]);
    struct rig_philox_out again = rig_philox4x32(key, 1, 2, 3, 4);
    assert_memory_equal(&a, &again, sizeof a);
}

static void test_uniform_moments(void **state)
{
    (void)state;
    enum { N = 100000 };
    double sum = 0.0, sum_squares = 0.0;
    float lowest = 1.0f, highest = 0.0f;
    for (uint32_t i = 0; i < N; i++) {
        float u = rig_philox_uniform(0x0123456789abcdefull, i / 1000, i % 1000);
        sum += u;
        sum_squares += (double)u * u;
        lowest = fminf(lowest, u);
        highest = fmaxf(highest, u);
    }
    double mean = sum / N, variance = sum_squares / N - mean * mean;
    /* 5 standard errors: sd of the mean is sqrt(1/12 / N) ~ 9.1e-4; of the variance
     * sqrt(1/180 / N) ~ 2.4e-4 */
    assert_true(fabs(mean - 0.5) < 5 * 9.2e-4);
    assert_true(fabs(variance - 1.0 / 12.0) < 5 * 2.4e-4);
    assert_true(lowest > 0.0f && lowest < 1e-3f);
    assert_true(highest < 1.0f && highest > 1.0f - 1e-3f);
    /* the extremes of the grid stay strictly inside (0, 1), so -log(-log(u)) is finite */
    assert_true(rig_philox_u32_to_unit(0) == ldexpf(1.0f, -24));
    assert_true(rig_philox_u32_to_unit(0xffffffffu) == 1.0f - ldexpf(1.0f, -24));
    assert_true(rig_philox_u32_to_unit(0x80000000u) == 0.5f + ldexpf(1.0f, -24));
    assert_true(isfinite(-logf(-logf(rig_philox_u32_to_unit(0xffffffffu)))));
    assert_true(isfinite(-logf(-logf(rig_philox_u32_to_unit(0)))));
}

/* Sampling noise is key = seed, counter = (position, index, SAMP, 0), word 0. */
static void test_uniform_definition(void **state)
{
    (void)state;
    uint64_t seed = 0xfeedfacecafebeefull;
    for (uint32_t position = 0; position < 50; position += 7) {
        for (uint32_t index = 0; index < 50; index += 5) {
            struct rig_philox_out bits =
                rig_philox4x32(seed, position, index, RIG_PHILOX_STREAM_SAMPLING, 0);
            assert_true(rig_philox_uniform(seed, position, index) ==
                        rig_philox_u32_to_unit(bits.v[0]));
            struct rig_philox_out timing =
                rig_philox4x32(seed, position, index, RIG_PHILOX_STREAM_TIMING, 0);
            assert_true(timing.v[0] != bits.v[0] || timing.v[1] != bits.v[1]);
        }
    }
}

static int compare_u64(const void *left, const void *right)
{
    uint64_t a = *(const uint64_t *)left, b = *(const uint64_t *)right;
    return (a > b) - (a < b);
}

static void test_mix64_distinct(void **state)
{
    (void)state;
    enum { SIDE = 100 };
    uint64_t *values = calloc(SIDE * SIDE, sizeof *values);
    assert_non_null(values);
    for (uint64_t a = 0; a < SIDE; a++) {
        for (uint64_t b = 0; b < SIDE; b++) values[a * SIDE + b] = rig_mix64(a, b);
    }
    qsort(values, SIDE * SIDE, sizeof *values, compare_u64);
    for (size_t i = 1; i < SIDE * SIDE; i++) assert_true(values[i] != values[i - 1]);
    free(values);
    assert_true(rig_mix64(1, 2) != rig_mix64(2, 1)); /* not symmetric */
    assert_true(rig_mix64(7, 7) == rig_mix64(7, 7));
    /* consecutive request uids under one seed flip about half of the bits */
    uint64_t difference = rig_mix64(42, 1000) ^ rig_mix64(42, 1001);
    int flipped = 0;
    for (int bit = 0; bit < 64; bit++) flipped += (int)((difference >> bit) & 1u);
    assert_true(flipped > 16 && flipped < 48);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_key_and_counter_sensitivity),
        cmocka_unit_test(test_uniform_moments),
        cmocka_unit_test(test_uniform_definition),
        cmocka_unit_test(test_mix64_distinct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
