/* args.c — checked parsing of command-line numbers (args.h). */
#include "tools/rig/args.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool rig__is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Decimal digits, an optional '-' first when `sign`; at least one digit, nothing else. */
static bool rig__integer_syntax(const char *text, bool sign)
{
    const char *p = text;
    if (sign && *p == '-') p++;
    if (!rig__is_digit(*p)) return false;
    while (rig__is_digit(*p)) p++;
    return *p == '\0';
}

enum rig_status rig_args_u64(const char *text, uint64_t lo, uint64_t hi, uint64_t *out,
                             char *msg, size_t msg_len)
{
    RIG_ASSERT(text != NULL && lo <= hi);
    if (!rig__integer_syntax(text, false)) {
        snprintf(msg, msg_len, "'%s' is not a whole number from %" PRIu64 " to %" PRIu64, text,
                 lo, hi);
        return RIG_E_PARSE;
    }
    errno = 0;
    unsigned long long value = strtoull(text, NULL, 10);
    if (errno == ERANGE || value < lo || value > hi) {
        snprintf(msg, msg_len, "'%s' is out of range: from %" PRIu64 " to %" PRIu64, text, lo,
                 hi);
        return RIG_E_RANGE;
    }
    *out = (uint64_t)value;
    return RIG_OK;
}

enum rig_status rig_args_i64(const char *text, int64_t lo, int64_t hi, int64_t *out, char *msg,
                             size_t msg_len)
{
    RIG_ASSERT(text != NULL && lo <= hi);
    if (!rig__integer_syntax(text, lo < 0)) {
        snprintf(msg, msg_len, "'%s' is not a whole number from %" PRId64 " to %" PRId64, text,
                 lo, hi);
        return RIG_E_PARSE;
    }
    errno = 0;
    long long value = strtoll(text, NULL, 10);
    if (errno == ERANGE || value < lo || value > hi) {
        snprintf(msg, msg_len, "'%s' is out of range: from %" PRId64 " to %" PRId64, text, lo,
                 hi);
        return RIG_E_RANGE;
    }
    *out = (int64_t)value;
    return RIG_OK;
}

enum rig_status rig_args_i32(const char *text, int32_t lo, int32_t hi, int32_t *out, char *msg,
                             size_t msg_len)
{
    int64_t value = 0;
    enum rig_status status = rig_args_i64(text, lo, hi, &value, msg, msg_len);
    if (status == RIG_OK) *out = (int32_t)value;
    return status;
}

enum rig_status rig_args_f64(const char *text, double lo, double hi, double *out, char *msg,
                             size_t msg_len)
{
    RIG_ASSERT(text != NULL && lo <= hi);
    /* strtod would also take leading spaces, '+', hex floats, "nan" and "inf". */
    const char *p = text[0] == '-' ? text + 1 : text;
    bool syntax = rig__is_digit(p[0]) || (p[0] == '.' && rig__is_digit(p[1]));
    for (const char *q = p; syntax && *q != '\0'; q++)
        syntax = rig__is_digit(*q) || strchr(".eE-+", *q) != NULL;
    char *end = NULL;
    errno = 0;
    double value = syntax ? strtod(text, &end) : 0.0;
    if (!syntax || end == text || *end != '\0') {
        snprintf(msg, msg_len, "'%s' is not a number from %g to %g", text, lo, hi);
        return RIG_E_PARSE;
    }
    if (errno == ERANGE || !isfinite(value) || value < lo || value > hi) {
        snprintf(msg, msg_len, "'%s' is out of range: from %g to %g", text, lo, hi);
        return RIG_E_RANGE;
    }
    *out = value;
    return RIG_OK;
}

enum rig_status rig_args_i32_list(const char *text, int32_t lo, int32_t hi, int32_t *out,
                                  int32_t capacity, int32_t *count, char *msg, size_t msg_len)
{
    RIG_ASSERT(text != NULL && capacity > 0);
    char item[32];
    int32_t n = 0;
    for (const char *p = text;; n++) {
        size_t len = strcspn(p, ",");
        if (n == capacity) {
            snprintf(msg, msg_len, "'%s' has more than %d numbers", text, capacity);
            return RIG_E_CAPACITY;
        }
        if (len >= sizeof item) len = sizeof item - 1; /* too long for any int32: refused */
        memcpy(item, p, len);
        item[len] = '\0';
        int32_t value = 0;
        enum rig_status status = rig_args_i32(item, lo, hi, &value, msg, msg_len);
        if (status != RIG_OK) return status;
        out[n] = value;
        if (p[strcspn(p, ",")] == '\0') break;
        p += strcspn(p, ",") + 1;
        if (*p == ' ') p++;
    }
    *count = n + 1;
    return RIG_OK;
}
