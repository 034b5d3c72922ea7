/* buffer.c — the growable byte buffer (see buffer.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/serve/buffer.h"

static enum rig_status rig__reserve(struct rig_serve_buffer *b, size_t extra)
{
    size_t limit = b->limit != 0 ? b->limit : RIG_SERVE_BUFFER_LIMIT;
    if (extra > limit || b->len + extra > limit) return RIG_E_CAPACITY;
    size_t need = b->len + extra + 1;
    if (need <= b->capacity) return RIG_OK;
    size_t capacity = b->capacity > 0 ? b->capacity : 256;
    while (capacity < need) capacity *= 2;
    char *grown = realloc(b->data, capacity);
    if (grown == NULL) return RIG_E_NO_MEMORY;
    b->data = grown;
    b->capacity = capacity;
    return RIG_OK;
}

enum rig_status rig_serve_buffer_append(struct rig_serve_buffer *b, const char *data, size_t len)
{
    enum rig_status status = rig__reserve(b, len);
    if (status != RIG_OK) return status;
    if (len > 0) memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return RIG_OK;
}

enum rig_status rig_serve_buffer_printf(struct rig_serve_buffer *b, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    int need = vsnprintf(NULL, 0, format, args);
    va_end(args);
    RIG_ASSERT(need >= 0);
    enum rig_status status = rig__reserve(b, (size_t)need);
    if (status != RIG_OK) return status;
    va_start(args, format);
    vsnprintf(b->data + b->len, (size_t)need + 1, format, args);
    va_end(args);
    b->len += (size_t)need;
    return RIG_OK;
}

void rig_serve_buffer_consume(struct rig_serve_buffer *b, size_t count)
{
    RIG_ASSERT(count <= b->len);
    if (count == 0) return;
    memmove(b->data, b->data + count, b->len - count);
    b->len -= count;
    b->data[b->len] = '\0';
}

void rig_serve_buffer_free(struct rig_serve_buffer *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->capacity = 0;
}
