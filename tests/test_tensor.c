/* test_tensor.c — hal/tensor.h: bf16 and fp16 conversions and the tensor descriptor helpers.
 *
 * bf16: round to nearest with ties to even (checked on hand-made bit patterns at and around
 * the halfway point), infinities, overflow to infinity, NaN kept a quiet NaN, subnormals.
 * fp16: every one of the 65536 bit patterns decodes to the value the IEEE formula gives
 * (computed here independently with ldexp) and encodes back to itself (NaN payloads aside,
 * which become the canonical quiet NaN); halfway cases round to even; overflow and
 * underflow. Descriptors: row-major strides from make, slices (shape, data offset,
 * contiguity), rig_tensor_at addresses, numel, dtype sizes and names.
 */
#include "tests/support/test_support.h"

#include <math.h>
#include <string.h>

static float from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void test_bf16_rounding(void **state)
{
    (void)state;
    assert_int_equal(rig_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(rig_f32_to_bf16(-2.0f), 0xc000);
    assert_int_equal(rig_f32_to_bf16(0.0f), 0x0000);
    assert_int_equal(rig_f32_to_bf16(-0.0f), 0x8000);
    /* 1 + 2^-8 is halfway between 0x3f80 and 0x3f81: ties go to the even 0x3f80 */
    assert_int_equal(rig_f32_to_bf16(from_bits(0x3f808000u)), 0x3f80);
    /* 1 + 3 * 2^-8 is halfway between 0x3f81 and 0x3f82: to the even 0x3f82 */
    assert_int_equal(rig_f32_to_bf16(from_bits(0x3f818000u)), 0x3f82);
    /* just above / below halfway */
    assert_int_equal(rig_f32_to_bf16(from_bits(0x3f808001u)), 0x3f81);
    assert_int_equal(rig_f32_to_bf16(from_bits(0x3f807fffu)), 0x3f80);
    assert_int_equal(rig_f32_to_bf16(from_bits(0xbf818000u)), 0xbf82);
    /* rounding up carries into the exponent: 0x3fffffff (~2) -> 2.0 */
    assert_int_equal(rig_f32_to_bf16(from_bits(0x3fffffffu)), 0x4000);
    assert_true(rig_bf16_round(3.14159265f) == 3.140625f);
}

static void test_bf16_special_values(void **state)
{
    (void)state;
    assert_int_equal(rig_f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(rig_f32_to_bf16(-INFINITY), 0xff80);
    /* the largest float rounds to infinity, as on the GPU */
    assert_int_equal(rig_f32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);
    /* the largest bf16 stays */
    assert_int_equal(rig_f32_to_bf16(from_bits(0x7f7f0000u)), 0x7f7f);
    /* NaNs stay NaN and become quiet, whatever their payload (no rounding into inf) */
    uint32_t nans[] = {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0x7f80ffffu};
    for (size_t i = 0; i < RIG_ARRAY_LEN(nans); i++) {
        uint16_t h = rig_f32_to_bf16(from_bits(nans[i]));
        assert_true(isnan(rig_bf16_to_f32(h)));
        assert_true((h & 0x0040u) != 0);
        assert_int_equal(h & 0x8000u, (nans[i] >> 16) & 0x8000u);
    }
    /* subnormals: bf16 has float32's exponent range, so they round on the same grid */
    assert_int_equal(rig_f32_to_bf16(from_bits(0x00010000u)), 0x0001);
    assert_int_equal(rig_f32_to_bf16(from_bits(0x00008000u)), 0x0000); /* tie to even */
    assert_int_equal(rig_f32_to_bf16(from_bits(0x00018000u)), 0x0002); /* tie to even */
    assert_int_equal(rig_f32_to_bf16(from_bits(0x00008001u)), 0x0001);
    assert_true(rig_bf16_to_f32(0x0001) == ldexpf(1.0f, -133));
    /* the smallest normal rounds into it from below */
    assert_int_equal(rig_f32_to_bf16(from_bits(0x007fffffu)), 0x0080);
}

/* Every bf16 value widens exactly and narrows back to itself (NaNs to a quiet NaN). */
static void test_bf16_round_trip(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = rig_bf16_to_f32((uint16_t)h);
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        assert_int_equal(bits, h << 16);
        if (isnan(f)) continue;
        assert_int_equal(rig_f32_to_bf16(f), h);
    }
}

/* The IEEE binary16 value of a bit pattern, from the definition. */
static double f16_value(uint16_t h)
{
    int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    double magnitude;
    if (exponent == 0) {
        magnitude = ldexp(mantissa, -24);
    } else if (exponent == 31) {
        magnitude = mantissa ? NAN : INFINITY;
    } else {
        magnitude = ldexp(1024 + mantissa, exponent - 25);
    }
    return sign ? -magnitude : magnitude;
}

static void test_f16_all_patterns(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = rig_f16_to_f32((uint16_t)h);
        double want = f16_value((uint16_t)h);
        bool nan_pattern = ((h >> 10) & 0x1f) == 31 && (h & 0x3ff) != 0;
        if (nan_pattern) {
            assert_true(isnan(f));
            uint16_t back = rig_f32_to_f16(f);
            assert_true((back & 0x7c00u) == 0x7c00u && (back & 0x3ffu) != 0);
            continue;
        }
        assert_true((double)f == want);
        assert_true((signbit(f) != 0) == ((h & 0x8000u) != 0)); /* -0 keeps its sign */
        assert_int_equal(rig_f32_to_f16(f), h);
    }
}

static void test_f16_rounding(void **state)
{
    (void)state;
    /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0) */
    assert_int_equal(rig_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    /* 1 + 3 * 2^-11: halfway between 0x3c01 and 0x3c02, to the even 0x3c02 */
    assert_int_equal(rig_f32_to_f16(1.0f + 3.0f * ldexpf(1.0f, -11)), 0x3c02);
    assert_int_equal(rig_f32_to_f16(65504.0f), 0x7bff); /* largest half */
    assert_int_equal(rig_f32_to_f16(65519.0f), 0x7bff); /* below the halfway point */
    assert_int_equal(rig_f32_to_f16(65520.0f), 0x7c00); /* halfway rounds to infinity */
    assert_int_equal(rig_f32_to_f16(-1e9f), 0xfc00);
    /* subnormal halfway cases, in units of 2^-24 */
    assert_int_equal(rig_f32_to_f16(ldexpf(1.0f, -25)), 0x0000);        /* 0.5 -> 0 */
    assert_int_equal(rig_f32_to_f16(ldexpf(3.0f, -25)), 0x0002);        /* 1.5 -> 2 */
    assert_int_equal(rig_f32_to_f16(-ldexpf(1.0f, -24)), 0x8001);
    assert_int_equal(rig_f32_to_f16(ldexpf(1.0f, -30)), 0x0000);        /* underflow */
    /* the largest subnormal rounds up into the smallest normal */
    assert_int_equal(rig_f32_to_f16(ldexpf(1.0f, -14) - ldexpf(1.0f, -26)), 0x0400);
}

static void test_tensor_make_and_at(void **state)
{
    (void)state;
    float data[2 * 3 * 4];
    struct rig_tensor t = rig_tensor_3d(data, RIG_DTYPE_F32, 2, 3, 4);
    assert_int_equal(t.ndim, 3);
    assert_int_equal(t.stride[0], 12);
    assert_int_equal(t.stride[1], 4);
    assert_int_equal(t.stride[2], 1);
    assert_int_equal(t.shape[3], 1);
    assert_int_equal(t.stride[3], 0);
    assert_int_equal(rig_tensor_numel(&t), 24);
    assert_true(rig_tensor_is_contiguous(&t));
    assert_true(rig_tensor_rows_contiguous(&t));
    assert_ptr_equal(rig_tensor_at(&t, (int64_t[]){1, 2, 3}), &data[23]);
    assert_ptr_equal(rig_tensor_at(&t, (int64_t[]){0, 1, 0}), &data[4]);
    struct rig_tensor e = rig_tensor_2d(NULL, RIG_DTYPE_BF16, 0, 5);
    assert_int_equal(rig_tensor_numel(&e), 0);
    assert_int_equal(e.stride[0], 5);
    struct rig_tensor four = rig_tensor_make(data, RIG_DTYPE_I32, 4, (int64_t[]){1, 2, 3, 4});
    assert_int_equal(four.stride[0], 24);
    assert_int_equal(rig_tensor_numel(&four), 24);
    struct rig_tensor none = rig_tensor_none();
    assert_null(none.data);
    assert_int_equal(none.ndim, 0);
}

static void test_tensor_slice(void **state)
{
    (void)state;
    uint16_t data[4 * 6 * 8];
    struct rig_tensor t = rig_tensor_3d(data, RIG_DTYPE_BF16, 4, 6, 8);
    /* rows 1..2: still contiguous, data moves by one row */
    struct rig_tensor rows = rig_tensor_slice(&t, 0, 1, 2);
    assert_ptr_equal(rows.data, &data[48]);
    assert_int_equal(rows.shape[0], 2);
    assert_true(rig_tensor_is_contiguous(&rows));
    /* heads 2..4 of every token (a q/k/v slice): not contiguous, rows still are */
    struct rig_tensor heads = rig_tensor_slice(&t, 1, 2, 3);
    assert_ptr_equal(heads.data, &data[16]);
    assert_int_equal(heads.stride[0], 48);
    assert_false(rig_tensor_is_contiguous(&heads));
    assert_true(rig_tensor_rows_contiguous(&heads));
    assert_ptr_equal(rig_tensor_at(&heads, (int64_t[]){3, 2, 7}), &data[3 * 48 + 4 * 8 + 7]);
    /* an empty slice at the end is allowed */
    struct rig_tensor empty = rig_tensor_slice(&t, 0, 4, 0);
    assert_int_equal(rig_tensor_numel(&empty), 0);
    /* a phantom (NULL) tensor keeps NULL data when sliced */
    struct rig_tensor phantom = rig_tensor_3d(NULL, RIG_DTYPE_BF16, 4, 6, 8);
    assert_null(rig_tensor_slice(&phantom, 1, 3, 2).data);
    /* a transposed view: neither contiguous nor row-contiguous */
    struct rig_tensor transposed = rig_tensor_2d(data, RIG_DTYPE_BF16, 8, 6);
    transposed.stride[0] = 1;
    transposed.stride[1] = 8;
    assert_false(rig_tensor_is_contiguous(&transposed));
    assert_false(rig_tensor_rows_contiguous(&transposed));
}

static void test_dtypes(void **state)
{
    (void)state;
    assert_int_equal(rig_dtype_size(RIG_DTYPE_F32), 4);
    assert_int_equal(rig_dtype_size(RIG_DTYPE_BF16), 2);
    assert_int_equal(rig_dtype_size(RIG_DTYPE_F16), 2);
    assert_int_equal(rig_dtype_size(RIG_DTYPE_I32), 4);
    assert_int_equal(rig_dtype_size(RIG_DTYPE_I64), 8);
    assert_int_equal(rig_dtype_size(RIG_DTYPE_U8), 1);
    assert_int_equal(rig_dtype_size(RIG_DTYPE_COUNT), 0);
    assert_string_equal(rig_dtype_name(RIG_DTYPE_BF16), "bf16");
    assert_string_equal(rig_dtype_name(RIG_DTYPE_I64), "i64");
    assert_string_equal(rig_dtype_name(RIG_DTYPE_COUNT), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_bf16_special_values),
        cmocka_unit_test(test_bf16_round_trip),
        cmocka_unit_test(test_f16_all_patterns),
        cmocka_unit_test(test_f16_rounding),
        cmocka_unit_test(test_tensor_make_and_at),
        cmocka_unit_test(test_tensor_slice),
        cmocka_unit_test(test_dtypes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
