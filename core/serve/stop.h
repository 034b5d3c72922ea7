/* stop.h — stop strings matched across token boundaries, in streamed text.
 *
 * Text arrives piece by piece (one detokenized token at a time); a stop string may span any
 * number of pieces. The matcher emits only text that can no longer be part of a stop string:
 * it holds back the longest tail that is a prefix of some stop string, and when a stop string
 * appears it emits the text before it and nothing after (the stop string itself is never
 * emitted, as OpenAI and SGLang do). Emitted text never ends inside a UTF-8 character when the
 * input pieces do not (stop strings are valid UTF-8, so a held tail starts a character).
 *
 * Work per byte is bounded: the window is at most 2 x RIG_SERVE_STOP_BYTES_MAX bytes and each
 * window is searched once per stop string (memmem). Plain data, no allocation; one owner.
 */
#ifndef RIG_SERVE_STOP_H
#define RIG_SERVE_STOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/serve/request.h"

#define RIG__STOP_WINDOW (2 * RIG_SERVE_STOP_BYTES_MAX + 8)

/* Where emitted text goes: `emit(ctx, text, len)`; it may be called several times per feed. */
typedef void (*rig_serve_emit_fn)(void *ctx, const char *text, size_t len);

struct rig_serve_stop {
    const char *const *stops;     /* (count) the stop strings, not owned */
    const size_t *lens;           /* (count) their lengths, each in [1, STOP_BYTES_MAX] */
    int32_t count;
    size_t longest;               /* the longest stop string's length */
    char window[RIG__STOP_WINDOW]; /* (held) text held back */
    size_t held;
    bool matched;                 /* a stop string was found: the stream is over */
    int32_t matched_index;        /* which one; -1 none */
};

void rig_serve_stop_init(struct rig_serve_stop *m, const char *const *stops, const size_t *lens,
                         int32_t count);
/* Feeds `len` bytes; emits what is safe. Returns true when a stop string matched (now or
 * before); after that nothing is emitted. Can't fail. */
bool rig_serve_stop_feed(struct rig_serve_stop *m, const char *text, size_t len,
                         rig_serve_emit_fn emit, void *ctx);
/* The stream ended without a match: emits what is held. Can't fail. */
void rig_serve_stop_flush(struct rig_serve_stop *m, rig_serve_emit_fn emit, void *ctx);

#endif /* RIG_SERVE_STOP_H */
