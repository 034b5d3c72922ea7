/* driver.h — the one loop that runs the engine: feed arrivals, step, wait on the clock.
 *
 * Every user of the engine drives it through rig_driver_run: a scenario replay and a swarm
 * run (an arrival source that submits requests at their arrival times), `rig generate` and
 * the tests (everything submitted up front: no source), and a server (a live inbox, inbox.h,
 * that other threads post to). One iteration: drain the inbox, let the source submit and
 * abort what is due at the engine's clock, then — when the engine has work — one
 * rig_engine_step and the source's after_step; when it has none, move the clock to the next
 * event (the simulator's virtual clock jumps; on CUDA the host waits) or, with an inbox,
 * block until a message comes.
 *
 * Pace: FAST lets the virtual clock run ahead of the wall clock (a scenario of an hour runs
 * in seconds); REALTIME makes the simulator keep to the wall clock — each step waits until
 * the wall time since the start catches up with the virtual time since the start, and an
 * idle engine's clock follows the wall — so a server on the simulator answers at the speed
 * the modelled device would. On CUDA the host clock is the wall clock and both paces agree.
 *
 * Stopping: with an inbox, rig_inbox_close (or *stop set, e.g. by a signal handler) makes the
 * driver end queued submits as ABORT, abort every live request, step until the engine is
 * idle and return RIG_OK. A source's after_step returning false stops the run at once
 * (RIG_OK: the source knows why). Bounds: max_iterations when > 0; otherwise the run fails
 * with RIG_E_STATE after RIG_DRIVER_IDLE_SPINS_MAX iterations in a row in which nothing
 * happened (no step progress, no message, the clock not moved).
 *
 * Threads: the calling thread is the driver's thread — the only one that calls the engine;
 * observer callbacks run on it. Other threads only post to the inbox.
 */
#ifndef RIG_DRIVER_H
#define RIG_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine/engine.h"
#include "core/engine/inbox.h"

/* Iterations in a row without progress before the driver calls the run stalled. */
#define RIG_DRIVER_IDLE_SPINS_MAX 1024

struct rig_arrival_source {
    void *ctx;
    /* Submits/aborts everything due at or before now_ns (engine host clock). <0 stops the run
     * with `error` filled. NULL: nothing to feed. */
    enum rig_status (*feed)(void *ctx, struct rig_engine *engine, int64_t now_ns, char *error,
                            size_t error_len);
    /* Next time something is due (engine host clock, ns), or -1 when nothing is scheduled.
     * NULL: nothing is. */
    int64_t (*next_event_ns)(void *ctx);
    /* Optional: after every step (checks, progress, fault schedules); false stops the run. */
    bool (*after_step)(void *ctx, struct rig_engine *engine, bool progress);
};

enum rig_driver_pace {
    RIG_DRIVER_PACE_FAST = 0,     /* virtual clock jumps; no sleeping (scenarios, swarm) */
    RIG_DRIVER_PACE_REALTIME = 1, /* simulator: each step waits until wall time catches up
                                     with the virtual clock (rig serve --sim-pace realtime) */
};

struct rig_driver_options {
    struct rig_inbox *inbox; /* optional live inbox (server): drained before each feed;
                                when idle with no scheduled event the driver blocks in
                                rig_inbox_wait instead of returning; returns when closed
                                and drained */
    enum rig_driver_pace pace;
    int64_t max_iterations; /* bound; <= 0: derived from the work */
    volatile int *stop;     /* optional: set by a signal handler → abort all, drain */
};

/* Runs until the source has nothing more and the engine is idle (or the inbox is closed).
 * `src` and `options` may be NULL (no source: run what was submitted; default options).
 * Errors: the engine's step error, the source's error, or RIG_E_STATE on a stall (work queued
 * that can never be scheduled) or when max_iterations run out, message in `error`. */
enum rig_status rig_driver_run(struct rig_engine *engine, const struct rig_arrival_source *src,
                               const struct rig_driver_options *options, char *error,
                               size_t error_len);

#endif /* RIG_DRIVER_H */
