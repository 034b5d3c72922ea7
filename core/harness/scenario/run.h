/* run.h — replaying a scenario on the engine and recording what happened.
 *
 * The glue between a loaded scenario (scenario.h) and the engine (core/engine/engine.h): it builds
 * the engine's configuration from the scenario's settings, submits each request when the
 * engine's clock reaches its arrival time (the simulator's virtual clock jumps to the next
 * arrival when the engine is idle; on CUDA the host waits), aborts requests at their abort
 * times, steps the engine until everything has drained, and fills a struct rig_results
 * (results.h) from the engine's observer callbacks: every token with its time, every ended
 * request, every step. After the drain it counts leaked KV pages and invariant violations.
 *
 * Which requests ran in a step: the engine's step record carries no request list, so it is
 * rebuilt — a request is in the step whose schedule time equals its first-scheduled time
 * (its first step), in every prefill/mixed step until its first token (its prompt chunks),
 * and in every step that gave it a token. Lists are sorted by uid.
 *
 * Time: scenario time 0 is the engine's clock once the engine is ready (weights loaded,
 * graphs captured), so start-up never counts in a latency; every host time recorded (arrival,
 * tokens, finish) is relative to it — on the simulator's virtual clock and on CUDA's wall
 * clock alike. Step start/end times are the engine's device timeline (from engine start).
 *
 * Back-pressure: the engine holds at most `max_requests` live requests; an arrival that finds
 * it full waits (keeping its arrival time, so the wait counts in its TTFT) and is retried
 * after the next step. Requests that arrive later than their abort time are never submitted
 * and end as aborted.
 *
 * Threads: the caller's thread drives the engine; not reentrant per engine.
 */
#ifndef RIG_SCENARIO_RUN_H
#define RIG_SCENARIO_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine/engine.h"
#include "core/harness/results/results.h"
#include "core/harness/scenario/scenario.h"

/* When the invariant checker runs: after every step (O(pages) each), or once at the end. */
enum rig_run_check {
    RIG_RUN_CHECK_AUTO = 0, /* every step for small scenarios (<= 64 requests), else end */
    RIG_RUN_CHECK_STEP = 1,
    RIG_RUN_CHECK_END = 2,
};

struct rig_run_options {
    enum rig_run_check check;
    /* Called every `progress_every` steps (0 = never) with the requests ended so far. */
    void (*progress)(void *user, int64_t steps, int32_t ended, int32_t total, int64_t now_ns);
    void *user;
    int64_t progress_every;
    /* Invariant violation messages (may be NULL: dropped). */
    void (*violation)(void *user, const char *message);
    /* Planted bugs for the engine (core/engine/debug.h): tests replaying a swarm failure
     * only; 0 in every normal run. */
    uint32_t debug_plant;
    /* Where the TP ranks run: threads (default), or one per process of an MPI job (the
     * caller has initialised MPI; every process runs the same scenario). Only process 0
     * records: the others run their rank's share and return with `results` empty. */
    enum rig_ranks_kind ranks;
    /* Record each step's host counts in results->host (rig_results_init_host): `rig
     * profile`'s calibration of the host model (core/harness/bench/host_fit.h). */
    bool host_counts;
};

/* Runs `scenario` on its backend and fills `results` (initialised here; the caller frees it
 * with rig_results_free, also on error). On error — a model that does not load, an engine
 * that cannot be created, a device error, an engine that stalls with work queued, a token
 * id outside the vocabulary — returns a negative status with a message in `error`. */
enum rig_status rig_scenario_run(const struct rig_scenario *scenario,
                                 const struct rig_run_options *options,
                                 struct rig_results *results, char *error, size_t error_len);

/* The engine configuration the scenario asks for (engine defaults where it is silent). On
 * error (an unknown preset, a config.json that does not load) a message in `error`. */
enum rig_status rig_scenario_engine_config(const struct rig_scenario *scenario,
                                           struct rig_engine_config *config, char *error,
                                           size_t error_len);
/* The results' identification (results->meta, pages_total) for a run of `scenario` on
 * `engine`, created from `config`. Can't fail. */
void rig_scenario_results_meta(const struct rig_scenario *scenario,
                               const struct rig_engine_config *config, struct rig_engine *engine,
                               struct rig_results *results);
/* Request `uid` as the engine takes it, arriving at its scenario time + origin_ns. */
struct rig_submit rig_scenario_submit_of(const struct rig_scenario *scenario, int32_t uid,
                                         int64_t origin_ns);

#endif /* RIG_SCENARIO_RUN_H */
