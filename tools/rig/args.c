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

/* Prints a flag's failure (args.h) and passes on whether it parsed. */
static bool rig__flag_report(enum rig_status status, const char *command, const char *option,
                             const char *msg)
{
    if (status == RIG_OK) return true;
    fprintf(stderr, "rig %s: %s: %s\n", command, option, msg);
    return false;
}

bool rig_args_flag_i64(const char *command, const char *option, const char *text, int64_t lo,
                       int64_t hi, int64_t *out)
{
    char msg[160];
    return rig__flag_report(rig_args_i64(text, lo, hi, out, msg, sizeof msg), command, option, msg);
}

bool rig_args_flag_i32(const char *command, const char *option, const char *text, int32_t lo,
                       int32_t hi, int32_t *out)
{
    char msg[160];
    return rig__flag_report(rig_args_i32(text, lo, hi, out, msg, sizeof msg), command, option, msg);
}

bool rig_args_flag_u64(const char *command, const char *option, const char *text, uint64_t lo,
                       uint64_t hi, uint64_t *out)
{
    char msg[160];
    return rig__flag_report(rig_args_u64(text, lo, hi, out, msg, sizeof msg), command, option, msg);
}

bool rig_args_flag_f64(const char *command, const char *option, const char *text, double lo,
                       double hi, double *out)
{
    RIG_ASSERT(text != NULL);
    if (hi == INFINITY && strcmp(text, "inf") == 0) {
        *out = INFINITY;
        return true;
    }
    char msg[160];
    return rig__flag_report(rig_args_f64(text, lo, hi, out, msg, sizeof msg), command, option, msg);
}

bool rig_args_next_item(const char **cursor, const char *separators, char *item,
                        size_t item_len)
{
    const char *p = *cursor + strspn(*cursor, separators);
    if (*p == '\0') return false;
    size_t len = strcspn(p, separators);
    size_t kept = len < item_len - 1 ? len : item_len - 1; /* too long for a number anyway */
    memcpy(item, p, kept);
    item[kept] = '\0';
    *cursor = p + len;
    return true;
}

/* Splits a comma-separated list (spaces around items allowed) into items for `parse`; on
 * error *count is unchanged. */
static enum rig_status rig__list(const char *text, int32_t capacity, int32_t *count,
                                 enum rig_status (*parse)(const char *item, int32_t index,
                                                          void *ctx, char *msg, size_t len),
                                 void *ctx, char *msg, size_t msg_len)
{
    RIG_ASSERT(text != NULL && capacity > 0);
    int32_t n = 0;
    for (const char *p = text;; p++) {
        size_t len = strcspn(p, ",");
        size_t from = strspn(p, " "), to = len;
        while (to > from && p[to - 1] == ' ') to--;
        char item[32];
        if (to == from || to - from >= sizeof item) {
            snprintf(msg, msg_len, "'%s' is not a comma-separated list of numbers", text);
            return to == from ? RIG_E_PARSE : RIG_E_RANGE;
        }
        if (n == capacity) {
            snprintf(msg, msg_len, "'%s' has more than %d numbers", text, capacity);
            return RIG_E_CAPACITY;
        }
        memcpy(item, p + from, to - from);
        item[to - from] = '\0';
        enum rig_status status = parse(item, n++, ctx, msg, msg_len);
        if (status != RIG_OK) return status;
        p += len;
        if (*p == '\0') break;
    }
    *count = n;
    return RIG_OK;
}

struct rig__i32_list {
    int32_t lo, hi;
    int32_t *out;
};

static enum rig_status rig__i32_item(const char *item, int32_t index, void *ctx, char *msg,
                                     size_t len)
{
    struct rig__i32_list *l = ctx;
    return rig_args_i32(item, l->lo, l->hi, &l->out[index], msg, len);
}

enum rig_status rig_args_i32_list(const char *text, int32_t lo, int32_t hi, int32_t *out,
                                  int32_t capacity, int32_t *count, char *msg, size_t msg_len)
{
    struct rig__i32_list l = {lo, hi, out};
    return rig__list(text, capacity, count, rig__i32_item, &l, msg, msg_len);
}

struct rig__f64_list {
    double lo, hi;
    double *out;
};

static enum rig_status rig__f64_item(const char *item, int32_t index, void *ctx, char *msg,
                                     size_t len)
{
    struct rig__f64_list *l = ctx;
    return rig_args_f64(item, l->lo, l->hi, &l->out[index], msg, len);
}

enum rig_status rig_args_f64_list(const char *text, double lo, double hi, double *out,
                                  int32_t capacity, int32_t *count, char *msg, size_t msg_len)
{
    struct rig__f64_list l = {lo, hi, out};
    return rig__list(text, capacity, count, rig__f64_item, &l, msg, msg_len);
}
