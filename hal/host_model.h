/* host_model.h — the simulator's model of the engine's own host time (docs/simulator.md, "The
 * engine's host time, fitted").
 *
 * On a GPU the engine's CPU work takes its own wall time; on the simulator it is charged to the
 * virtual host clock (rig_hal_host_work_ns) from this model. It has four terms, each charged
 * where the engine does that work and each affine in what the step carries:
 *
 *   term      where it is charged          requests / tokens      new          finished
 *   SCHEDULE  choosing the batch           of the batch           first sched. 0
 *   PREPARE   writing its metadata         of the batch           first sched. 0
 *   PROCESS   taking its sampled tokens    of the batch           first sched. ended in it
 *   LOOP      from the latest processing   of the batch processed submitted    released
 *             to the next launch           (BASE: processings)
 *
 *   ns = c[BASE] x base + c[REQUESTS] x requests + c[TOKENS] x tokens + c[NEW] x new
 *        + c[FINISHED] x finished
 *
 * where `base` is 1 for each occurrence of the term (LOOP: each batch processed in the
 * window). The coefficients are nanoseconds, real and >= 0. The same counts are reported in
 * every step record (core/engine/engine.h, host_counts), so `rig profile`'s calibration fits
 * the coefficients from measured host columns against exactly what the simulator charges
 * (core/harness/bench/host_fit.h). Names: each coefficient is a simulator profile key and an op
 * table attribute, "host_<term>" + "_ns" | "_per_request_ns" | "_per_token_ns" |
 * "_per_new_ns" | "_per_finished_ns" (rig_host_model_keys).
 *
 * A plain value; the functions are pure and reentrant.
 */
#ifndef RIG_HAL_HOST_MODEL_H
#define RIG_HAL_HOST_MODEL_H

#include <stdint.h>

enum rig_host_term {
    RIG_HOST_SCHEDULE = 0,
    RIG_HOST_PREPARE = 1,
    RIG_HOST_PROCESS = 2,
    RIG_HOST_LOOP = 3,
    RIG_HOST_TERMS
};

enum rig_host_factor {
    RIG_HOST_BASE = 0,     /* each occurrence */
    RIG_HOST_REQUESTS = 1, /* a request of the batch */
    RIG_HOST_TOKENS = 2,   /* a token of the batch */
    RIG_HOST_NEW = 3,      /* a request scheduled for the first time (LOOP: submitted) */
    RIG_HOST_FINISHED = 4, /* a request that ended (LOOP: released) */
    RIG_HOST_FACTORS
};

struct rig_host_model {
    double ns[RIG_HOST_TERMS][RIG_HOST_FACTORS]; /* coefficients, ns per unit, >= 0 */
};

/* "host_schedule_ns", "host_schedule_per_request_ns", ..., "host_loop_per_finished_ns". */
extern const char *const rig_host_model_keys[RIG_HOST_TERMS][RIG_HOST_FACTORS];

/* The host time of `term` for `counts` (each >= 0): the affine sum, rounded to the nearest
 * nanosecond. Can't fail. */
int64_t rig_host_model_ns(const struct rig_host_model *model, enum rig_host_term term,
                          const int64_t counts[RIG_HOST_FACTORS]);

#endif /* RIG_HAL_HOST_MODEL_H */
