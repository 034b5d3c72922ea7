/* inbox.h — the thread-safe, bounded inbox of messages to the engine.
 *
 * The engine is single-threaded: every call into it is made on the driver's thread
 * (driver.h). Other threads — a server's connection handlers — talk to it only through an
 * inbox: they post submits, aborts and cache flushes, which the driver applies between
 * steps, in arrival order (rig_inbox_drain). Tokens and ends come back through the engine's
 * observer, on the driver's thread.
 *
 * Bounds: at most `capacity` messages are queued; a prompt is copied into a token ring of
 * min(capacity × prompt_tokens_max, RIG_INBOX_TOKENS_MAX) tokens (at least one whole
 * prompt), sized at creation. A submit that finds either full is refused with RIG_E_CAPACITY
 * (back-pressure: a server answers 503); nothing is allocated after rig_inbox_create.
 *
 * Every uid accepted by rig_inbox_submit ends exactly once through the observer's on_finish:
 * as the engine ends it, as REJECTED when the engine refuses it (bad token, uid in use,
 * never fits), or as ABORT when the inbox is closed before the driver submitted it. While
 * the engine is full (its max_requests live) a submit stays queued, with every message
 * behind it, until a step makes room. A cache flush is applied once the engine is idle.
 *
 * Ownership: the inbox owns its buffers and a copy of each queued prompt.
 * Threads: rig_inbox_submit / _abort / _flush_cache / _close from any thread; rig_inbox_drain
 * and rig_inbox_wait from the driver's thread only; create and destroy while no other thread
 * uses it.
 */
#ifndef RIG_INBOX_H
#define RIG_INBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/engine.h"

/* Tokens the prompt ring holds at most, whatever the limits (64 MiB of int32). */
#define RIG_INBOX_TOKENS_MAX (1 << 24)

struct rig_inbox; /* opaque */

struct rig_inbox_limits {
    int32_t capacity;          /* messages queued at once (>= 1) */
    int32_t prompt_tokens_max; /* tokens of one prompt (>= 1) */
};

/* RIG_E_INVALID for limits below 1, RIG_E_NO_MEMORY; *out is NULL on error. */
enum rig_status rig_inbox_create(const struct rig_inbox_limits *limits, struct rig_inbox **out);
/* NULL is allowed. No thread may use the inbox any more. */
void rig_inbox_destroy(struct rig_inbox *inbox);

/* Any thread. Copies request->prompt. RIG_E_CAPACITY when full (backpressure: caller answers
 * 503), RIG_E_STATE after rig_inbox_close, RIG_E_INVALID for a prompt over prompt_tokens_max
 * (or empty). Nothing is queued on error. */
enum rig_status rig_inbox_submit(struct rig_inbox *inbox, const struct rig_submit *request);
/* Any thread. Queues an abort of uid (harmless if uid already ended or is unknown).
 * RIG_E_CAPACITY when full, RIG_E_STATE after close (the driver aborts everything then). */
enum rig_status rig_inbox_abort(struct rig_inbox *inbox, uint64_t uid);
/* Any thread. Queues "flush the prefix cache" (done by the driver when the engine is idle).
 * RIG_E_CAPACITY when full, RIG_E_STATE after close. */
enum rig_status rig_inbox_flush_cache(struct rig_inbox *inbox);
/* Any thread. No more submits; the driver aborts everything live, drains, and returns.
 * Idempotent; wakes a waiting driver. */
void rig_inbox_close(struct rig_inbox *inbox);
/* Any thread. Whether rig_inbox_close was called. */
bool rig_inbox_is_closed(struct rig_inbox *inbox);

/* Driver thread. Applies every queued message to the engine in arrival order
 * (rig_engine_submit / rig_engine_abort). A submit the engine refuses ends through the engine
 * observer's on_finish as REJECTED with the reason (so every submitted uid ends exactly once,
 * through one path). A submit that finds the engine full stops the drain: it and the messages
 * behind it stay queued for the next drain. After close, queued submits end as ABORT without
 * reaching the engine. Always RIG_OK (the status leaves room for a transport that can fail). */
enum rig_status rig_inbox_drain(struct rig_inbox *inbox, struct rig_engine *engine);
/* Driver thread. Blocks until a message is queued, the inbox is closed, or deadline_ns
 * (CLOCK_MONOTONIC) passes (deadline_ns < 0: no deadline); returns at once if a message is
 * already queued. */
void rig_inbox_wait(struct rig_inbox *inbox, int64_t deadline_ns);

/* CLOCK_MONOTONIC in nanoseconds: the clock of rig_inbox_wait's deadline. */
int64_t rig_inbox_clock_ns(void);

#endif /* RIG_INBOX_H */
