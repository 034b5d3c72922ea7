/* test_support.c — see test_support.h. */
#include "tests/support/test_support.h"

#include <math.h>

#include "hal/backends.h"

void rig_test_rng_seed(struct rig_test_rng *rng, uint64_t seed)
{
    rng->state = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    if (rng->state == 0) rng->state = 1;
}

uint64_t rig_test_rng_next(struct rig_test_rng *rng)
{
    uint64_t x = rng->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng->state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

float rig_test_rng_float(struct rig_test_rng *rng, float lo, float hi)
{
    float unit = (float)(rig_test_rng_next(rng) >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * unit;
}

int64_t rig_test_rng_int(struct rig_test_rng *rng, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(rig_test_rng_next(rng) % span);
}

void rig_test_fill_bf16(struct rig_test_rng *rng, uint16_t *out, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) out[i] = rig_f32_to_bf16(rig_test_rng_float(rng, lo, hi));
}

double rig_test_nmse(const float *a, const float *b, size_t n)
{
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        err += d * d;
        ref += (double)b[i] * (double)b[i];
    }
    if (ref == 0.0) return err == 0.0 ? 0.0 : INFINITY;
    return err / ref;
}

double rig_test_max_abs_diff(const float *a, const float *b, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > worst || isnan(d)) worst = d;
    }
    return worst;
}

void rig_test_open_sim(int32_t count, bool timing_only, struct rig_device **devices)
{
    rig_backends_register();
    struct rig_device_config config = {.timing_only = timing_only, .profile = "h100", .seed = 1};
    assert_int_equal(rig_hal_open("sim", &config, count, devices), RIG_OK);
}
