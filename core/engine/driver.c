/* driver.c — the one loop that runs the engine (see driver.h). */
#include "core/engine/driver.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#define RIG__STOP_POLL_NS       50000000 /* how often a blocked driver looks at *stop */
#define RIG__SHUTDOWN_STEPS_MAX 1024     /* steps to finish in-flight batches after abort-all */

struct rig__driver {
    struct rig_engine *engine;
    const struct rig_arrival_source *src; /* NULL: none */
    struct rig_driver_options options;
    int64_t wall_origin_ns;  /* CLOCK_MONOTONIC when the run started */
    int64_t clock_origin_ns; /* the engine's clock then */
    char *error;
    size_t error_len;
};

static int64_t rig__next_event(const struct rig__driver *d)
{
    if (d->src == NULL || d->src->next_event_ns == NULL) return -1;
    return d->src->next_event_ns(d->src->ctx);
}

static bool rig__stopping(const struct rig__driver *d)
{
    if (d->options.stop != NULL && *d->options.stop != 0) return true;
    return d->options.inbox != NULL && rig_inbox_is_closed(d->options.inbox);
}

/* Waits until wall time `wall_ns` (CLOCK_MONOTONIC) — on the inbox when there is one, so a
 * message cuts the wait short. True when the time was reached. */
static bool rig__sleep_until(const struct rig__driver *d, int64_t wall_ns)
{
    if (d->options.inbox != NULL) {
        rig_inbox_wait(d->options.inbox, wall_ns);
        return rig_inbox_clock_ns() >= wall_ns;
    }
    struct timespec until = {(time_t)(wall_ns / 1000000000), (long)(wall_ns % 1000000000)};
    int rc = EINTR;
    for (int32_t tries = 0; rc == EINTR && tries < 64 && !rig__stopping(d); tries++)
        rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
    return rig_inbox_clock_ns() >= wall_ns;
}

/* Moves the engine's clock to `t_ns` (an event ahead): at once at FAST pace; at REALTIME
 * pace once the wall clock gets there (not at all when a message comes first). */
static void rig__advance(const struct rig__driver *d, int64_t t_ns)
{
    if (d->options.pace == RIG_DRIVER_PACE_REALTIME &&
        !rig__sleep_until(d, d->wall_origin_ns + (t_ns - d->clock_origin_ns)))
        return;
    rig_engine_wait_until_ns(d->engine, t_ns);
}

/* REALTIME pace: an idle engine's clock follows the wall clock, so a request arriving now
 * gets the time it arrived at. */
static void rig__follow_wall(const struct rig__driver *d)
{
    if (d->options.pace != RIG_DRIVER_PACE_REALTIME || !rig_engine_idle(d->engine)) return;
    int64_t t = d->clock_origin_ns + (rig_inbox_clock_ns() - d->wall_origin_ns);
    if (t > rig_engine_now_ns(d->engine)) rig_engine_wait_until_ns(d->engine, t);
}

static enum rig_status rig__step(const struct rig__driver *d, bool *progress)
{
    *progress = false;
    enum rig_status status = rig_engine_step(d->engine, progress);
    if (status >= 0) return status;
    const char *why = rig_engine_error(d->engine); /* TP: the rank and the collective */
    snprintf(d->error, d->error_len, "engine step failed: %s%s%s", rig_status_message(status),
             why[0] != '\0' ? ": " : "", why);
    return status;
}

static enum rig_status rig__stalled(const struct rig__driver *d)
{
    snprintf(d->error, d->error_len,
             "the engine stalled with requests queued that can never be scheduled");
    return RIG_E_STATE;
}

/* Closing: queued submits end as ABORT, every live request is aborted, in-flight batches
 * are finished; then the engine is idle. */
static enum rig_status rig__shutdown(const struct rig__driver *d)
{
    if (d->options.inbox != NULL) {
        rig_inbox_close(d->options.inbox);
        rig_inbox_drain(d->options.inbox, d->engine);
    }
    rig_engine_abort_all(d->engine);
    for (int32_t n = 0; n < RIG__SHUTDOWN_STEPS_MAX; n++) {
        if (rig_engine_idle(d->engine)) return RIG_OK;
        bool progress = false;
        enum rig_status status = rig__step(d, &progress);
        if (status < 0) return status;
    }
    return rig__stalled(d);
}

/* Idle with nothing scheduled: returns true when the run is over; with an inbox, blocks until
 * a message comes (or the stop flag may have been set). */
static bool rig__idle_wait(const struct rig__driver *d)
{
    if (d->options.inbox == NULL) return true;
    int64_t deadline = d->options.stop != NULL ? rig_inbox_clock_ns() + RIG__STOP_POLL_NS : -1;
    rig_inbox_wait(d->options.inbox, deadline);
    return false;
}

/* One iteration. *done when the run is over; *moved when something happened (a step made
 * progress, the clock moved, the driver waited for a message). */
static enum rig_status rig__iteration(const struct rig__driver *d, bool *done, bool *moved)
{
    struct rig_engine *engine = d->engine;
    rig__follow_wall(d);
    if (d->options.inbox != NULL) rig_inbox_drain(d->options.inbox, engine);
    int64_t before = rig_engine_now_ns(engine);
    if (d->src != NULL && d->src->feed != NULL) {
        enum rig_status status = d->src->feed(d->src->ctx, engine, before, d->error, d->error_len);
        if (status < 0) return status;
    }
    bool idle = rig_engine_idle(engine);
    int64_t event = rig__next_event(d);
    if (idle && event < 0) {
        *done = rig__idle_wait(d);
        *moved = true;
        return RIG_OK;
    }
    if (idle) {
        rig__advance(d, event);
        *moved = rig_engine_now_ns(engine) != before;
        return RIG_OK;
    }
    bool progress = false;
    enum rig_status status = rig__step(d, &progress);
    if (status < 0) return status;
    if (d->src != NULL && d->src->after_step != NULL &&
        !d->src->after_step(d->src->ctx, engine, progress)) {
        *done = true;
        return RIG_OK;
    }
    if (!progress && event >= 0) rig__advance(d, event);
    if (!progress && event < 0 && !rig_engine_idle(engine)) return rig__stalled(d);
    if (d->options.pace == RIG_DRIVER_PACE_REALTIME)
        rig__sleep_until(d, d->wall_origin_ns + (rig_engine_now_ns(engine) - d->clock_origin_ns));
    *moved = progress || rig_engine_now_ns(engine) != before;
    return RIG_OK;
}

enum rig_status rig_driver_run(struct rig_engine *engine, const struct rig_arrival_source *src,
                               const struct rig_driver_options *options, char *error,
                               size_t error_len)
{
    RIG_ASSERT(engine != NULL);
    RIG_ASSERT(error != NULL || error_len == 0);
    struct rig__driver d = {.engine = engine, .src = src, .error = error, .error_len = error_len};
    if (options != NULL) d.options = *options;
    RIG_ASSERT(d.options.pace == RIG_DRIVER_PACE_FAST ||
               d.options.pace == RIG_DRIVER_PACE_REALTIME);
    d.wall_origin_ns = rig_inbox_clock_ns();
    d.clock_origin_ns = rig_engine_now_ns(engine);
    int64_t bound = d.options.max_iterations;
    int32_t spins = 0;
    for (int64_t iteration = 0; bound <= 0 || iteration < bound; iteration++) {
        if (rig__stopping(&d)) return rig__shutdown(&d);
        bool done = false, moved = false;
        enum rig_status status = rig__iteration(&d, &done, &moved);
        if (status < 0 || done) return status;
        spins = moved ? 0 : spins + 1;
        if (bound <= 0 && spins > RIG_DRIVER_IDLE_SPINS_MAX) return rig__stalled(&d);
    }
    snprintf(error, error_len, "the run did not finish within %lld iterations", (long long)bound);
    return RIG_E_STATE;
}
