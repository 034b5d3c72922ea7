/* results.h — the records of one run: what happened to every request and in every step.
 *
 * `rig run` fills a struct rig_results from the engine's records; the expectation checker
 * (core/harness/scenario/expect.h), the metrics (core/harness/results/metrics.h) and the HDF5
 * writer (core/harness/results/h5.h) read it. Keeping this plain data apart from the engine means
 * each of them can be tested with synthetic records, and the HDF5 layout (docs/results.md) is
 * defined in one place.
 *
 * Times are integers in nanoseconds on the run's clock (the simulator's virtual clock, or the
 * wall clock since the run started on CUDA); -1 means "never happened". They are converted to
 * float64 seconds only when written or summarised.
 *
 * Invariants (rig_results_check): request i has uid i; token rows of request i are
 * [token_offset, token_offset + output_len) and ascending in time; step request lists lie
 * inside step_uids; times of a finished request are ordered arrival <= first_scheduled <=
 * first_token <= finish.
 *
 * Ownership: rig_results_init allocates every array at its capacity (sized from the scenario
 * before the run, so nothing is allocated while the engine steps); rig_results_free releases
 * them. Threads: one writer thread; readers after the run.
 */
#ifndef RIG_RESULTS_H
#define RIG_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine/request.h"
#include "hal/host_model.h"
#include "hal/status.h"

#define RIG_RESULTS_TEXT_MAX 128
#define RIG_RESULTS_ID_MAX 48

enum rig_finish_reason {
    RIG_FINISH_NONE = 0,     /* never finished (still running when the run stopped) */
    RIG_FINISH_LENGTH = 1,   /* max_tokens or the context limit */
    RIG_FINISH_STOP = 2,     /* EOS or a stop token */
    RIG_FINISH_ABORT = 3,    /* aborted by the client / the scenario */
    RIG_FINISH_REJECTED = 4, /* refused at admission (too long for the context or the KV) */
};
#define RIG_FINISH_COUNT 5

enum rig_step_phase {
    RIG_STEP_PREFILL = 0,
    RIG_STEP_DECODE = 1,
    RIG_STEP_MIXED = 2,
};

struct rig_results_request {
    int64_t uid;
    char id[RIG_RESULTS_ID_MAX];
    int64_t arrival_ns;
    int64_t first_scheduled_ns; /* first step that computed any of its tokens */
    int64_t first_token_ns;     /* first output token available on the host */
    int64_t finish_ns;
    int32_t input_len;
    int32_t cached_len;         /* prompt tokens found in the prefix cache */
    int32_t output_len;
    int32_t finish_reason;      /* enum rig_finish_reason */
    int64_t first_step;         /* index of the first step it ran in; -1 never */
    int64_t finish_step;        /* index of the step that produced its last token; -1 */
    int64_t token_offset;       /* its rows in the token arrays */
};

struct rig_results_step {
    int32_t phase;              /* enum rig_step_phase */
    int32_t batch_size;         /* requests in the batch */
    int32_t tokens;             /* tokens computed (sum of extend lengths) */
    int32_t padded_size;        /* requests after CUDA-graph padding */
    int32_t graph_used;         /* 1 when the step replayed a captured graph */
    int32_t request_count;      /* entries of step_uids for this step (= batch_size) */
    int64_t request_offset;     /* first entry in step_uids */
    int64_t start_ns, end_ns;   /* on the device timeline */
    int64_t pages_free;
    int64_t pages_evictable;    /* cached, unlocked */
    int64_t pages_locked;       /* cached, locked by running requests */
    int64_t pages_used;         /* owned by running requests outside the cache */
    int64_t host_launch_ns;     /* host time to schedule, prepare and launch the step */
    int64_t host_schedule_ns;   /* of which choosing the batch */
    int64_t host_prepare_ns;    /* of which writing its metadata */
    int64_t host_issue_ns;      /* of which issuing it (the rest: waiting for staging) */
    int64_t host_process_ns;    /* host time to process its results */
    int64_t host_loop_ns;       /* host time between the latest processing and its launch */
};

/* What each host term of a step is a function of (rig_step_record's, hal/host_model.h), for
 * `rig profile`'s calibration (rig_results_init_host); not written to files. */
struct rig_results_host {
    int32_t counts[RIG_HOST_TERMS][RIG_HOST_FACTORS];
    bool loop_idle;             /* host_loop_ns holds more than the loop's work */
};

/* Identification written to the results file's root attributes. */
struct rig_results_meta {
    char scenario[RIG_RESULTS_TEXT_MAX];
    char scenario_sha256[65];   /* the scenario's content hash (see rig_scenario.sha256) */
    char backend[16];
    char device[RIG_RESULTS_TEXT_MAX];
    char model[RIG_RESULTS_TEXT_MAX];
    char policy[32];
    char decode_order[32];
    char cache[16];
    uint64_t seed;
    int32_t tp_size;
    int32_t page_size;
    int64_t num_pages;
    int32_t max_running_req;
    int32_t prefill_budget;
    int32_t overlap;
    int32_t timing_only;
};

/* A fleet run (core/harness/fleet/fleet.h): the router's decision for every request ... */
struct rig_results_route {
    int32_t replica; /* where the router sent it; -1 never routed */
    int32_t matched; /* prompt tokens the router believed cached there (cache_aware; else 0) */
    int32_t load;    /* that replica's live requests (queued + running) when it was sent */
};

/* ... and each replica's totals. */
struct rig_results_replica {
    int64_t requests;        /* routed to it */
    int64_t input_tokens;
    int64_t cached_tokens;   /* prompt tokens served from its cache */
    int64_t output_tokens;
    int64_t steps;
    int64_t busy_ns;         /* device time of its steps (rank 0) */
    int32_t peak_load;       /* most live requests at once */
    int32_t invariant_violations;
    int64_t pages_leaked;
};

#define RIG_RESULTS_REPLICAS_MAX 64

struct rig_results_fleet {
    char router[16];                     /* "round_robin", "least_load", "cache_aware" */
    int32_t replica_count, tp_size, load_cap;
    struct rig_results_route *routes;    /* (request_count) by uid */
    struct rig_results_replica replicas[RIG_RESULTS_REPLICAS_MAX]; /* (replica_count) */
};

struct rig_results {
    struct rig_results_meta meta;
    struct rig_results_request *requests; /* (request_count) */
    int64_t request_count;
    struct rig_results_step *steps;       /* (step_count), capacity step_capacity */
    int64_t step_count, step_capacity;
    int64_t *token_time_ns;               /* (token_count) when each output token was ready */
    int32_t *token_ids;                   /* (token_count) */
    int64_t token_count, token_capacity;
    int32_t *step_uids;                   /* (step_uid_count) requests of each step, in order */
    int64_t step_uid_count, step_uid_capacity;
    /* run-wide counters from the engine */
    int64_t invariant_violations;
    int64_t pages_leaked;                 /* pages neither free nor cached after the drain */
    int64_t cache_hit_tokens;             /* sum of cached_len */
    int64_t pages_total;
    /* the engine's overlap counters (rig_engine_stats; not written to the results file) */
    int64_t launches_behind_inflight, launches_ahead, launch_host_ns;
    /* A fleet run's routes and replicas (rig_results_init_fleet); NULL for one engine. A
     * fleet run records no steps (each replica's are summed in its totals). */
    struct rig_results_fleet *fleet;
    /* (step_capacity) each step's host counts (rig_results_init_host); NULL unless asked. */
    struct rig_results_host *host;
};

/* Allocates room for `requests` requests, `tokens` output tokens in all, `steps` steps and
 * `step_uids` step-request entries. RIG_E_NO_MEMORY (nothing allocated) on failure. The
 * caller then fills requests[0..requests) (uid, id, arrival, input_len at least). */
enum rig_status rig_results_init(struct rig_results *results, int64_t requests, int64_t tokens,
                                 int64_t steps, int64_t step_uids);
void rig_results_free(struct rig_results *results);
/* Adds the fleet part to initialised `results` (routes all -1). RIG_E_NO_MEMORY, nothing
 * changed, on failure. */
enum rig_status rig_results_init_fleet(struct rig_results *results);

/* Adds the steps' host counts to initialised `results` (zeros). RIG_E_NO_MEMORY, nothing
 * changed, on failure. */
enum rig_status rig_results_init_host(struct rig_results *results);

/* Appends a step with its requests (uids). RIG_E_CAPACITY when full, nothing changed. */
enum rig_status rig_results_add_step(struct rig_results *results,
                                     const struct rig_results_step *step,
                                     const int32_t *uids, int32_t uid_count);
/* Reserves `count` token rows; returns the first, or -1 when full. Tokens of one request
 * must be contiguous: callers reserve a request's max_tokens rows at admission. */
int64_t rig_results_reserve_tokens(struct rig_results *results, int64_t count);

/* Checks the invariants above; returns the number of violations and writes the first one's
 * description to `message` (may be NULL). */
int64_t rig_results_check(const struct rig_results *results, char *message, size_t message_len);

/* "length", "stop", "abort", "rejected", "none"; and the reverse (-1 unknown). */
/* The finish reason (enum rig_finish_reason) of an engine end reason: length and context →
 * LENGTH, eos and stop_token → STOP, abort → ABORT, rejected → REJECTED, none → NONE.
 * Can't fail. */
int32_t rig_results_finish_reason(enum rig_request_end end);
const char *rig_finish_reason_name(int32_t reason);
int32_t rig_finish_reason_parse(const char *name);
/* "prefill", "decode", "mixed"; and the reverse (-1 unknown). */
const char *rig_step_phase_name(int32_t phase);
int32_t rig_step_phase_parse(const char *name);

#endif /* RIG_RESULTS_H */
