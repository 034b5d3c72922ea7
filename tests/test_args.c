/* test_args.c — tools/rig/args.h, the checked parser behind every number on rig's command
 * line.
 *
 * Checks: unsigned 64-bit integers keep all their digits up to 2^64 − 1 (seeds above 2^53
 * lost digits through strtod), one past it is out of range; what strtoul/strtod would take
 * but a number flag must not — a sign, spaces, exponents, hex, "nan", "inf", trailing text,
 * the empty string — is a parse error; ranges are inclusive and checked; real numbers must be
 * finite; lists of ids refuse negatives, empty items and too many items; on error the output
 * is unchanged and the message quotes the text. The flag helpers print exactly
 * "rig <command>: <option>: <message>" on stderr (captured through a temporary file) and
 * take "inf" only where the range is unbounded above.
 */
#include "tests/support/test_support.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/rig/args.h"

static char msg[200];

static void test_u64(void **state)
{
    (void)state;
    uint64_t v = 7;
    assert_int_equal(rig_args_u64("9000000000000000550", 0, UINT64_MAX, &v, msg, sizeof msg),
                     RIG_OK);
    assert_true(v == 9000000000000000550ull);
    assert_int_equal(rig_args_u64("18446744073709551615", 0, UINT64_MAX, &v, msg, sizeof msg),
                     RIG_OK);
    assert_true(v == UINT64_MAX);
    v = 7;
    assert_int_equal(rig_args_u64("18446744073709551616", 0, UINT64_MAX, &v, msg, sizeof msg),
                     RIG_E_RANGE);
    assert_non_null(strstr(msg, "'18446744073709551616' is out of range"));
    static const char *const bad[] = {"", "-1", "+1", " 1", "1 ", "1e30", "inf", "nan",
                                      "0x10", "12abc", "1.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rig_args_u64(bad[i], 0, UINT64_MAX, &v, msg, sizeof msg),
                         RIG_E_PARSE);
        assert_true(v == 7);
    }
    assert_int_equal(rig_args_u64("0", 1, 10, &v, msg, sizeof msg), RIG_E_RANGE);
    assert_int_equal(rig_args_u64("10", 1, 10, &v, msg, sizeof msg), RIG_OK);
    assert_true(v == 10);
}

static void test_i64_i32(void **state)
{
    (void)state;
    int64_t v = 3;
    assert_int_equal(rig_args_i64("-9223372036854775808", INT64_MIN, INT64_MAX, &v, msg,
                                  sizeof msg), RIG_OK);
    assert_true(v == INT64_MIN);
    assert_int_equal(rig_args_i64("9223372036854775808", INT64_MIN, INT64_MAX, &v, msg,
                                  sizeof msg), RIG_E_RANGE);
    /* A range without negatives refuses the sign as syntax. */
    assert_int_equal(rig_args_i64("-5", 0, 100, &v, msg, sizeof msg), RIG_E_PARSE);
    assert_int_equal(rig_args_i64("-5", -4, 100, &v, msg, sizeof msg), RIG_E_RANGE);
    assert_int_equal(rig_args_i64("-", -4, 100, &v, msg, sizeof msg), RIG_E_PARSE);
    int32_t w = 9;
    assert_int_equal(rig_args_i32("abc", 1, 100, &w, msg, sizeof msg), RIG_E_PARSE);
    assert_string_equal(msg, "'abc' is not a whole number from 1 to 100");
    assert_int_equal(rig_args_i32("2147483648", 1, INT32_MAX, &w, msg, sizeof msg),
                     RIG_E_RANGE);
    assert_int_equal(w, 9);
    assert_int_equal(rig_args_i32("100", 1, 100, &w, msg, sizeof msg), RIG_OK);
    assert_int_equal(w, 100);
}

static void test_f64(void **state)
{
    (void)state;
    double v = 2.0;
    assert_int_equal(rig_args_f64("0.5", 0.0, 1.0, &v, msg, sizeof msg), RIG_OK);
    assert_true(v == 0.5);
    assert_int_equal(rig_args_f64(".25", 0.0, 1.0, &v, msg, sizeof msg), RIG_OK);
    assert_int_equal(rig_args_f64("1e-3", 0.0, 1.0, &v, msg, sizeof msg), RIG_OK);
    assert_true(v == 1e-3);
    v = 2.0;
    static const char *const bad[] = {"", "nan", "NaN", "inf", "-inf", "infinity", "0x1p3",
                                      " 1", "1 ", "+1", "1e", "--1", "1,5", "abc"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rig_args_f64(bad[i], -1e300, 1e300, &v, msg, sizeof msg),
                         RIG_E_PARSE);
        assert_true(v == 2.0);
    }
    assert_int_equal(rig_args_f64("1e999", 0.0, 1e300, &v, msg, sizeof msg), RIG_E_RANGE);
    assert_int_equal(rig_args_f64("-0.5", 0.0, 1.0, &v, msg, sizeof msg), RIG_E_RANGE);
    assert_non_null(strstr(msg, "'-0.5' is out of range: from 0 to 1"));
    assert_true(v == 2.0);
}

static void test_i32_list(void **state)
{
    (void)state;
    int32_t ids[3] = {0}, count = -1;
    assert_int_equal(rig_args_i32_list("151644, 5,7", 0, INT32_MAX, ids, 3, &count, msg,
                                       sizeof msg), RIG_OK);
    assert_int_equal(count, 3);
    assert_int_equal(ids[0], 151644);
    assert_int_equal(ids[2], 7);
    count = -1;
    assert_int_equal(rig_args_i32_list("151644,-5", 0, INT32_MAX, ids, 3, &count, msg,
                                       sizeof msg), RIG_E_PARSE);
    assert_non_null(strstr(msg, "'-5'"));
    assert_int_equal(rig_args_i32_list("1,,2", 0, 9, ids, 3, &count, msg, sizeof msg),
                     RIG_E_PARSE);
    assert_int_equal(rig_args_i32_list("", 0, 9, ids, 3, &count, msg, sizeof msg),
                     RIG_E_PARSE);
    assert_int_equal(rig_args_i32_list("1,", 0, 9, ids, 3, &count, msg, sizeof msg),
                     RIG_E_PARSE);
    assert_int_equal(rig_args_i32_list("1,2,3,4", 0, 9, ids, 3, &count, msg, sizeof msg),
                     RIG_E_CAPACITY);
    assert_int_equal(rig_args_i32_list("123456789012345678901234567890123456", 0, 9, ids, 3,
                                       &count, msg, sizeof msg), RIG_E_RANGE);
    assert_int_equal(count, -1);
}

/* Sends stderr to a temporary file until capture_end, which reads what was printed. */
struct capture {
    FILE *file;
    int saved; /* the original stderr */
};

static struct capture capture_begin(void)
{
    struct capture c = {tmpfile(), -1};
    assert_non_null(c.file);
    fflush(stderr);
    c.saved = dup(2);
    assert_true(c.saved >= 0);
    assert_true(dup2(fileno(c.file), 2) >= 0);
    return c;
}

static void capture_end(struct capture c, char *out, size_t len)
{
    fflush(stderr);
    assert_true(dup2(c.saved, 2) >= 0);
    close(c.saved);
    rewind(c.file);
    size_t n = fread(out, 1, len - 1, c.file);
    out[n] = '\0';
    fclose(c.file);
}

static void test_flags(void **state)
{
    (void)state;
    char printed[256];
    int64_t i64 = 7;
    struct capture c = capture_begin();
    bool ok = rig_args_flag_i64("serve", "--port", "80", 0, 65535, &i64);
    capture_end(c, printed, sizeof printed);
    assert_true(ok && i64 == 80);
    assert_string_equal(printed, "");
    c = capture_begin();
    ok = rig_args_flag_i64("serve", "--port", "1e3", 0, 65535, &i64);
    capture_end(c, printed, sizeof printed);
    assert_true(!ok && i64 == 80);
    assert_string_equal(printed,
                        "rig serve: --port: '1e3' is not a whole number from 0 to 65535\n");
    int32_t i32 = 7;
    c = capture_begin();
    ok = rig_args_flag_i32("fleet", "--tp", "9", 1, 8, &i32);
    capture_end(c, printed, sizeof printed);
    assert_true(!ok && i32 == 7);
    assert_string_equal(printed, "rig fleet: --tp: '9' is out of range: from 1 to 8\n");
    uint64_t u64 = 7;
    assert_true(
        rig_args_flag_u64("generate", "--seed", "18446744073709551615", 0, UINT64_MAX, &u64));
    assert_true(u64 == UINT64_MAX);
    /* "inf" only where the range has no upper bound. */
    double f64 = 7;
    assert_true(rig_args_flag_f64("bench serve", "--request-rate", "inf", 1e-9, INFINITY, &f64));
    assert_true(isinf(f64));
    c = capture_begin();
    ok = rig_args_flag_f64("bench serve", "--burstiness", "inf", 1e-3, 1e6, &f64);
    capture_end(c, printed, sizeof printed);
    assert_true(!ok && isinf(f64));
    assert_string_equal(
        printed, "rig bench serve: --burstiness: 'inf' is not a number from 0.001 to 1e+06\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u64),      cmocka_unit_test(test_i64_i32), cmocka_unit_test(test_f64),
        cmocka_unit_test(test_i32_list), cmocka_unit_test(test_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
