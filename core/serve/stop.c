/* stop.c — the stop-string matcher over a sliding window (see stop.h).
 *
 * _GNU_SOURCE: glibc declares memmem (also in the BSDs and macOS; POSIX 2024). */
#define _GNU_SOURCE 1
#include <string.h>

#include "core/serve/stop.h"

void rig_serve_stop_init(struct rig_serve_stop *m, const char *const *stops, const size_t *lens,
                         int32_t count)
{
    RIG_ASSERT(count >= 0 && count <= RIG_SERVE_STOP_MAX);
    memset(m, 0, sizeof *m);
    m->stops = stops;
    m->lens = lens;
    m->count = count;
    m->matched_index = -1;
    for (int32_t i = 0; i < count; i++) {
        RIG_ASSERT(lens[i] >= 1 && lens[i] <= RIG_SERVE_STOP_BYTES_MAX);
        m->longest = lens[i] > m->longest ? lens[i] : m->longest;
    }
}

/* The earliest stop string in the window: its offset, or -1. */
static int64_t rig__find(struct rig_serve_stop *m)
{
    int64_t best = -1;
    for (int32_t i = 0; i < m->count; i++) {
        const char *at = memmem(m->window, m->held, m->stops[i], m->lens[i]);
        if (at == NULL) continue;
        int64_t offset = at - m->window;
        if (best < 0 || offset < best) {
            best = offset;
            m->matched_index = i;
        }
    }
    return best;
}

/* Bytes at the window's end that begin some stop string (the longest such tail). */
static size_t rig__partial_tail(const struct rig_serve_stop *m)
{
    size_t most = m->held < m->longest ? m->held : m->longest - 1;
    for (size_t k = most; k > 0; k--) {
        const char *tail = m->window + m->held - k;
        for (int32_t i = 0; i < m->count; i++)
            if (m->lens[i] > k && memcmp(tail, m->stops[i], k) == 0) return k;
    }
    return 0;
}

/* Emits the window's first `count` bytes and keeps the rest. */
static void rig__emit_head(struct rig_serve_stop *m, size_t count, rig_serve_emit_fn emit,
                           void *ctx)
{
    RIG_ASSERT(count <= m->held);
    if (count > 0) emit(ctx, m->window, count);
    memmove(m->window, m->window + count, m->held - count);
    m->held -= count;
}

bool rig_serve_stop_feed(struct rig_serve_stop *m, const char *text, size_t len,
                         rig_serve_emit_fn emit, void *ctx)
{
    if (m->matched) return true;
    if (m->count == 0) {
        if (len > 0) emit(ctx, text, len);
        return false;
    }
    size_t done = 0;
    while (done < len) {
        size_t room = sizeof m->window - m->held;
        size_t take = len - done < room ? len - done : room;
        RIG_ASSERT(take > 0);
        memcpy(m->window + m->held, text + done, take);
        m->held += take;
        done += take;
        int64_t found = rig__find(m);
        if (found >= 0) {
            rig__emit_head(m, (size_t)found, emit, ctx);
            m->held = 0;
            m->matched = true;
            return true;
        }
        if (done == len) break;
        /* More follows: keep what a match could still start in, cut at a character. */
        size_t cut = m->held - (m->longest - 1);
        while (cut > 0 && ((unsigned char)m->window[cut] & 0xC0) == 0x80) cut--;
        rig__emit_head(m, cut, emit, ctx);
    }
    rig__emit_head(m, m->held - rig__partial_tail(m), emit, ctx);
    return false;
}

void rig_serve_stop_flush(struct rig_serve_stop *m, rig_serve_emit_fn emit, void *ctx)
{
    if (!m->matched) rig__emit_head(m, m->held, emit, ctx);
}
