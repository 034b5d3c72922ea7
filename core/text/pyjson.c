/* pyjson.c — JSON text exactly as Python's json.dumps(x, ensure_ascii=False) writes it, which
 * is what the `tojson` filter of transformers' chat templates produces: ", " and ": "
 * separators, keys in their given order, control characters as \uXXXX in lower-case hex (the
 * short escapes for \b \f \n \r \t), every other character as itself, and floats as Python's
 * repr (the shortest text that reads back to the same double; exponent form below 1e-4 and from
 * 1e16 on). Parsing stays with jansson; only this rendering is ours, because no JSON library
 * writes Python's float repr. Iterative, with a bounded nesting depth.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text/tokenizer_impl.h"

#define RIG__JSON_DEPTH_MAX 64

static enum rig_status rig__put_string(struct rig_tokenizer_text *out, const char *text, size_t len,
                                       struct rig__tokenizer_error error)
{
    enum rig_status status = rig__text_append(out, "\"", 1, error);
    size_t run = 0; /* start of the bytes not yet written */
    for (size_t i = 0; i < len && status == RIG_OK; i++) {
        uint8_t c = (uint8_t)text[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        char escape[8];
        const char *shorts = "\"\"\\\\\bb\ff\nn\rr\tt";
        const char *found = NULL;
        for (const char *s = shorts; *s != '\0' && found == NULL; s += 2)
            found = *s == (char)c ? s : NULL;
        if (found != NULL)
            snprintf(escape, sizeof escape, "\\%c", found[1]);
        else
            snprintf(escape, sizeof escape, "\\u%04x", c);
        status = rig__text_append(out, text + run, i - run, error);
        if (status == RIG_OK) status = rig__text_append(out, escape, strlen(escape), error);
        run = i + 1;
    }
    if (status == RIG_OK) status = rig__text_append(out, text + run, len - run, error);
    return status == RIG_OK ? rig__text_append(out, "\"", 1, error) : status;
}

/* Python's repr(float) for a finite double; out has room for 32 bytes. */
static size_t rig__python_float(double value, char *out)
{
    if (value == 0) return (size_t)snprintf(out, 32, signbit(value) ? "-0.0" : "0.0");
    char shortest[40];
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(shortest, sizeof shortest, "%.*e", digits - 1, value);
        if (strtod(shortest, NULL) == value) break;
    }
    /* shortest is "[-]d[.ddd]e[+-]XX": collect the digits and the decimal exponent. */
    char mantissa[24];
    size_t n = 0, at = 0;
    bool negative = shortest[0] == '-';
    for (at = negative ? 1 : 0; shortest[at] != 'e'; at++) {
        if (shortest[at] != '.') mantissa[n++] = shortest[at];
    }
    int exponent = atoi(shortest + at + 1);
    size_t len = 0;
    if (negative) out[len++] = '-';
    if (exponent < -4 || exponent >= 16) {
        out[len++] = mantissa[0];
        if (n > 1)
            len += (size_t)snprintf(out + len, 32 - len, ".%.*s", (int)(n - 1), mantissa + 1);
        len += (size_t)snprintf(out + len, 32 - len, "e%c%02d", exponent < 0 ? '-' : '+',
                                abs(exponent));
    } else if (exponent < 0) {
        len += (size_t)snprintf(out + len, 32 - len, "0.%.*s%.*s", -exponent - 1, "0000", (int)n,
                                mantissa);
    } else {
        for (int i = 0; i <= exponent; i++)
            out[len++] = (size_t)i < n ? mantissa[i] : '0';
        out[len++] = '.';
        if (n > (size_t)exponent + 1) {
            memcpy(out + len, mantissa + exponent + 1, n - (size_t)exponent - 1);
            len += n - (size_t)exponent - 1;
        } else {
            out[len++] = '0';
        }
    }
    out[len] = '\0';
    return len;
}

/* Writes a scalar, or the opening bracket of a container. */
static enum rig_status rig__put_open(struct rig_tokenizer_text *out, const json_t *value,
                                     struct rig__tokenizer_error error)
{
    char number[40];
    switch (json_typeof(value)) {
    case JSON_OBJECT: return rig__text_append(out, "{", 1, error);
    case JSON_ARRAY: return rig__text_append(out, "[", 1, error);
    case JSON_STRING:
        return rig__put_string(out, json_string_value(value), json_string_length(value), error);
    case JSON_INTEGER:
        snprintf(number, sizeof number, "%" JSON_INTEGER_FORMAT, json_integer_value(value));
        return rig__text_append(out, number, strlen(number), error);
    case JSON_REAL:
        return rig__text_append(out, number, rig__python_float(json_real_value(value), number),
                                error);
    case JSON_TRUE: return rig__text_append(out, "true", 4, error);
    case JSON_FALSE: return rig__text_append(out, "false", 5, error);
    case JSON_NULL: return rig__text_append(out, "null", 4, error);
    }
    RIG_UNREACHABLE();
}

struct rig__json_frame {
    const json_t *container;
    size_t index; /* members written so far */
    void *iter;   /* objects: the next member */
};

enum rig_status rig__python_json_dumps(const json_t *value, struct rig_tokenizer_text *out,
                                       struct rig__tokenizer_error error)
{
    struct rig__json_frame stack[RIG__JSON_DEPTH_MAX];
    size_t depth = 0;
    enum rig_status status = rig__put_open(out, value, error);
    if (json_is_object(value) || json_is_array(value))
        stack[depth++] = (struct rig__json_frame){value, 0, json_object_iter((json_t *)value)};
    while (status == RIG_OK && depth > 0) {
        struct rig__json_frame *top = &stack[depth - 1];
        bool object = json_is_object(top->container);
        const json_t *member = NULL;
        if (object && top->iter != NULL) {
            member = json_object_iter_value(top->iter);
        } else if (!object && top->index < json_array_size(top->container)) {
            member = json_array_get(top->container, top->index);
        }
        if (member == NULL) {
            status = rig__text_append(out, object ? "}" : "]", 1, error);
            depth--;
            continue;
        }
        if (top->index++ > 0) status = rig__text_append(out, ", ", 2, error);
        if (object && status == RIG_OK) {
            const char *key = json_object_iter_key(top->iter);
            status = rig__put_string(out, key, json_object_iter_key_len(top->iter), error);
            if (status == RIG_OK) status = rig__text_append(out, ": ", 2, error);
            top->iter = json_object_iter_next((json_t *)top->container, top->iter);
        }
        if (status == RIG_OK) status = rig__put_open(out, member, error);
        if (status != RIG_OK || !(json_is_object(member) || json_is_array(member))) continue;
        if (depth == RIG__JSON_DEPTH_MAX)
            return rig__tokenizer_fail(error, RIG_E_CAPACITY, "JSON nested deeper than %d",
                                       RIG__JSON_DEPTH_MAX);
        stack[depth++] = (struct rig__json_frame){member, 0, json_object_iter((json_t *)member)};
    }
    return status;
}
