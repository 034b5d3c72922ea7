/* buffer.h — a growable byte buffer for response bodies, SSE events and metrics text.
 *
 * Always NUL-terminated once anything was appended. Growth doubles, up to `limit` bytes
 * (0: RIG_SERVE_BUFFER_LIMIT), so a runaway response cannot eat the host: an append past the
 * limit fails with RIG_E_CAPACITY and leaves the buffer as it was. Owned by one thread at a
 * time; used on HTTP and detokenizer threads only (never the engine's).
 */
#ifndef RIG_SERVE_BUFFER_H
#define RIG_SERVE_BUFFER_H

#include <stddef.h>

#include "hal/status.h"

#define RIG_SERVE_BUFFER_LIMIT ((size_t)1 << 30)

struct rig_serve_buffer {
    char *data;      /* (capacity) bytes; data[len] == '\0' */
    size_t len;
    size_t capacity;
    size_t limit;    /* 0: RIG_SERVE_BUFFER_LIMIT */
};

/* Appends `len` bytes. RIG_E_NO_MEMORY / RIG_E_CAPACITY leave the buffer unchanged. */
enum rig_status rig_serve_buffer_append(struct rig_serve_buffer *b, const char *data, size_t len);
/* printf-style append, same failures. */
enum rig_status rig_serve_buffer_printf(struct rig_serve_buffer *b, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* Drops the first `count` bytes (count <= len). Can't fail. */
void rig_serve_buffer_consume(struct rig_serve_buffer *b, size_t count);
void rig_serve_buffer_free(struct rig_serve_buffer *b);

#endif /* RIG_SERVE_BUFFER_H */
