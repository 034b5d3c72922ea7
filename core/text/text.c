/* text.c — the tokenizer's small shared pieces: writing an error message, growable
 * id/text buffers, hashing, and strict UTF-8 scanning (validation, lossy conversion as Rust's
 * String::from_utf8_lossy, and the "complete prefix" rule the incremental detokenizer needs).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text/tokenizer_impl.h"

enum rig_status rig__tokenizer_fail(struct rig__tokenizer_error error, enum rig_status status,
                                    const char *format, ...)
{
    RIG_ASSERT(status < 0);
    if (error.text == NULL || error.len == 0) return status;
    va_list args;
    va_start(args, format);
    vsnprintf(error.text, error.len, format, args);
    va_end(args);
    return status;
}

uint64_t rig__tokenizer_hash(const void *data, size_t len)
{
    const uint8_t *bytes = data;
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        hash ^= bytes[i];
        hash *= 0x100000001b3ull;
    }
    return hash == 0 ? 1 : hash;
}

void rig_tokenizer_ids_free(struct rig_tokenizer_ids *ids)
{
    if (ids == NULL) return;
    free(ids->ids);
    *ids = (struct rig_tokenizer_ids){0};
}

void rig_tokenizer_text_free(struct rig_tokenizer_text *text)
{
    if (text == NULL) return;
    free(text->data);
    *text = (struct rig_tokenizer_text){0};
}

enum rig_status rig__ids_reserve(struct rig_tokenizer_ids *ids, size_t extra,
                                 struct rig__tokenizer_error error)
{
    RIG_ASSERT(ids->count <= ids->capacity);
    if (ids->capacity - ids->count >= extra) return RIG_OK;
    size_t capacity = ids->capacity < 64 ? 64 : ids->capacity;
    while (capacity - ids->count < extra) {
        if (capacity > SIZE_MAX / 2 / sizeof(int32_t))
            return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "token id buffer too large");
        capacity *= 2;
    }
    int32_t *grown = realloc(ids->ids, capacity * sizeof(int32_t));
    if (grown == NULL)
        return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory growing token ids");
    ids->ids = grown;
    ids->capacity = capacity;
    return RIG_OK;
}

enum rig_status rig__text_reserve(struct rig_tokenizer_text *text, size_t extra,
                                  struct rig__tokenizer_error error)
{
    RIG_ASSERT(text->len <= text->capacity);
    if (extra > SIZE_MAX / 4)
        return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "text buffer too large");
    if (text->capacity - text->len > extra) return RIG_OK; /* room for the NUL too */
    size_t capacity = text->capacity < 256 ? 256 : text->capacity;
    while (capacity - text->len <= extra) {
        if (capacity > SIZE_MAX / 4)
            return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "text buffer too large");
        capacity *= 2;
    }
    char *grown = realloc(text->data, capacity);
    if (grown == NULL)
        return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory growing text");
    text->data = grown;
    text->capacity = capacity;
    return RIG_OK;
}

enum rig_status rig__text_append(struct rig_tokenizer_text *text, const char *data, size_t len,
                                 struct rig__tokenizer_error error)
{
    enum rig_status status = rig__text_reserve(text, len, error);
    if (status != RIG_OK) return status;
    if (len > 0) memcpy(text->data + text->len, data, len);
    text->len += len;
    text->data[text->len] = '\0';
    return RIG_OK;
}

enum rig__utf8_kind {
    RIG__UTF8_VALID,     /* a complete, valid character */
    RIG__UTF8_INVALID,   /* a maximal subpart that no further byte can complete */
    RIG__UTF8_TRUNCATED, /* the bytes ran out inside a character that is valid so far */
};

/* Classifies the sequence at bytes[0] (len > 0); *count is the bytes it covers (>= 1). The
 * ranges are Unicode's Table 3-7 (well-formed UTF-8), so overlongs and surrogates fail on the
 * byte where they first become impossible, which is what "maximal subpart" means. */
static enum rig__utf8_kind rig__utf8_classify(const uint8_t *bytes, size_t len, size_t *count)
{
    RIG_ASSERT(len > 0);
    uint8_t lead = bytes[0];
    size_t need;
    uint8_t low = 0x80, high = 0xBF; /* allowed range of the second byte */
    *count = 1;
    if (lead < 0x80) return RIG__UTF8_VALID;
    if (lead >= 0xC2 && lead <= 0xDF)
        need = 1;
    else if (lead >= 0xE0 && lead <= 0xEF)
        need = 2;
    else if (lead >= 0xF0 && lead <= 0xF4)
        need = 3;
    else
        return RIG__UTF8_INVALID;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
    for (size_t i = 1; i <= need; i++) {
        if (i >= len) {
            *count = i;
            return RIG__UTF8_TRUNCATED;
        }
        uint8_t lo = i == 1 ? low : 0x80, hi = i == 1 ? high : 0xBF;
        if (bytes[i] < lo || bytes[i] > hi) {
            *count = i;
            return RIG__UTF8_INVALID;
        }
    }
    *count = need + 1;
    return RIG__UTF8_VALID;
}

size_t rig__utf8_invalid_at(const uint8_t *text, size_t len)
{
    size_t at = 0;
    while (at < len) {
        if (text[at] < 0x80) {
            at++;
            continue;
        }
        size_t count;
        if (rig__utf8_classify(text + at, len - at, &count) != RIG__UTF8_VALID) return at;
        at += count;
    }
    return len;
}

size_t rig__utf8_lossy(const uint8_t *bytes, size_t len, char *out)
{
    size_t at = 0, written = 0;
    while (at < len) {
        size_t count;
        if (rig__utf8_classify(bytes + at, len - at, &count) == RIG__UTF8_VALID) {
            memcpy(out + written, bytes + at, count);
            written += count;
        } else {
            memcpy(out + written, "\xEF\xBF\xBD", 3);
            written += 3;
        }
        at += count;
    }
    return written;
}

size_t rig__utf8_complete_prefix(const uint8_t *bytes, size_t len)
{
    size_t at = 0;
    while (at < len) {
        size_t count;
        if (rig__utf8_classify(bytes + at, len - at, &count) == RIG__UTF8_TRUNCATED) return at;
        at += count;
    }
    return len;
}
