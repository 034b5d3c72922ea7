/* engine.h — the serving engine: requests in, tokens out, one scheduler over TP ranks.
 *
 * The engine owns everything a model needs to serve (docs/architecture.md §2, §4): the devices of
 * the TP group and one model rank on each, the KV cache manager (pages + radix prefix cache), the
 * table manager (page table and token pool rows), the request pool, the prefill and decode managers
 * and the scheduler loop — normal or overlapped (batch N−1's results processed while batch N runs).
 * It runs unchanged on the simulator and on CUDA.
 *
 * Use: rig_engine_config_default → set model, backend, limits → rig_engine_create; then
 * rig_engine_submit / rig_engine_abort between steps and rig_engine_step (one scheduling
 * iteration) — normally through the driver (core/engine/driver.h), the one loop that feeds
 * arrivals, steps and waits on the clock, with an inbox (core/engine/inbox.h) for requests
 * posted by other threads. Results are pushed to an observer: every token
 * (streaming), every finished / aborted / rejected request with its metrics, and a record of
 * every forward step (the HDF5 writer and `rig run` consume these).
 *
 * Sizing: every buffer — host and device — is allocated in rig_engine_create from the
 * limits in the config; nothing is allocated in the step loop, every queue is bounded.
 * Determinism: the same config, seed and call sequence give the same tokens, records and
 * (on the simulator) virtual times. A sampled token depends only on (request seed, request,
 * output position), so outputs do not change with batching, overlap, chunking, cache type,
 * policy or TP degree.
 *
 * Threads: all calls from one thread (the scheduler thread). With tp_size > 1 the engine
 * runs ranks 1.. on persistent worker threads of its own, or (RIG_RANKS_MPI) one rank per
 * process of an MPI job, process 0 scheduling (see docs/engine.md); observer
 * callbacks are made on the calling thread, inside rig_engine_step, rig_engine_submit (a
 * rejection) and rig_engine_abort. Callbacks must not call back into the engine.
 */
#ifndef RIG_ENGINE_H
#define RIG_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine/batch.h"
#include "core/engine/cache/cache.h"
#include "core/model/model.h"
#include "core/engine/request.h"
#include "hal/hal.h"

enum rig_policy {
    RIG_POLICY_PREFILL_FIRST = 0, /* Mini-SGLang's: a prefill batch whenever one fits */
    RIG_POLICY_DECODE_FIRST = 1,  /* decode while anything runs; prefill when nothing does */
    RIG_POLICY_MIXED = 2,         /* one batch: every decode token plus a prefill chunk */
};

/* The order of a batch's decode rows (docs/engine.md, "Decode order"). Rows are independent
 * (every op of the forward computes a row from that row alone), so the order changes no
 * request's tokens; it changes the order in which the GPU's decode attention dispatches the
 * rows' blocks, and with ragged lengths, how long its last blocks run alone. */
enum rig_decode_order {
    RIG_DECODE_ORDER_ADMISSION = 0,     /* admission order (Mini-SGLang's) */
    RIG_DECODE_ORDER_LONGEST_FIRST = 1, /* most KV positions first, ties in admission order
                                           (the default: on an H200 the offline workload
                                           1.0-1.2 % faster for all three models measured) */
};

/* "admission" / "longest_first"; RIG_E_NOT_FOUND otherwise. */
enum rig_status rig_decode_order_parse(const char *name, enum rig_decode_order *out);
const char *rig_decode_order_name(enum rig_decode_order order);

/* "prefill_first" / "decode_first" / "mixed"; RIG_E_NOT_FOUND otherwise. */
enum rig_status rig_policy_parse(const char *name, enum rig_policy *out);
const char *rig_policy_name(enum rig_policy policy);

/* Modelled host CPU costs (simulator only; real hardware takes its own time): the engine's
 * host time model (hal/host_model.h). `given` false (the default) takes the device's: the
 * simulator profile's host_* keys (rig_device_info), zero on real hardware. */
struct rig_host_costs {
    bool given;
    struct rig_host_model model;
};

/* Where the TP ranks run (docs/engine.md, "Ranks across processes"). */
enum rig_ranks_kind {
    RIG_RANKS_THREADS = 0, /* every rank in this process: rank 0 on the caller's thread */
    RIG_RANKS_MPI = 1,     /* process p of an MPI job of tp_size processes holds rank p only;
                              process 0 schedules (MPI initialised by the caller) */
};

struct rig_engine_config {
    const char *backend;              /* "sim" | "cuda" */
    struct rig_device_config device;  /* how the devices are opened (group_* are the
                                         engine's: set from `ranks`) */
    int32_t tp_size;                  /* devices, one model rank each */
    enum rig_ranks_kind ranks;        /* threads (default) or one process per rank */
    bool follow_unbounded;            /* RIG_RANKS_MPI: a following process waits for process
                                         0's next job without bound (a server idles between
                                         requests; mpirun ends the job if process 0 dies);
                                         false: at most the collective timeout */
    struct rig_model_config model;    /* from rig_model_config_preset / _load */
    struct rig_weights_source weights;
    int32_t num_pages;                /* KV pages in the pool */
    int32_t page_size;                /* token slots per page (1 as in the seeds) */
    int32_t max_running_req;          /* page-table rows = concurrent admitted requests */
    int32_t max_seq_len;              /* context limit; 0 = the model's max_position */
    int32_t prefill_budget;           /* tokens per prefill batch (default 8192) */
    int32_t max_requests;             /* requests known at once (queued + running) */
    enum rig_cache_type cache_type;
    enum rig_policy policy;
    enum rig_decode_order decode_order;
    bool overlap;                     /* overlap scheduling (default on) */
    bool cuda_graphs;                 /* capture decode graphs when the backend can */
    int32_t cuda_graph_max_bs;        /* largest captured decode batch */
    bool check_invariants;            /* run the checker after every step */
    uint64_t seed;                    /* engine seed: per-request seeds derive from it */
    struct rig_host_costs host_costs;
    uint32_t debug_plant;             /* the debug hook: planted bugs (core/engine/debug.h),
                                         0 in every normal run */
};

/* The host memory rig_engine_create may take for the tables it sizes from the limits
 * (request pool, page table and token pool, the KV cache's tables): limits whose products
 * need more are refused before anything is allocated, with what would fit. A fixed budget,
 * not the machine's memory, so a configuration starts or fails alike on every machine. */
#define RIG_ENGINE_HOST_BYTES_MAX ((int64_t)8 << 30)

/* Defaults: sim backend, tp 1 (ranks as threads), page size 1, 1024 pages, 16 rows, budget
 * 8192, radix cache, prefill_first, decode rows longest first (RIG_DECODE_ORDER, a measuring
 * switch, names another), overlap on, graphs on (max bs 32), checker on in verify
 * builds, seed 0. The model must still be set. Can't fail. */
void rig_engine_config_default(struct rig_engine_config *config);

/* One forward step, as the results writer stores it. Device times are on the device
 * timeline of rank 0, from the engine's start. */
struct rig_step_record {
    int64_t step;               /* 0, 1, ... in launch order */
    enum rig_batch_phase phase;
    int32_t batch_size;         /* real requests */
    int32_t prefill_requests;   /* of which prefill (chunks) */
    int32_t tokens;             /* real tokens */
    int32_t padded_size;        /* requests after CUDA-graph padding */
    bool graph_used;
    int64_t host_schedule_ns;   /* host clock when the batch was scheduled */
    int64_t host_launch_ns;     /* host time spent scheduling, preparing and launching it */
    int64_t host_schedule_work_ns; /* of host_launch_ns: choosing the batch */
    int64_t host_prepare_work_ns;  /* of host_launch_ns: writing its metadata */
    int64_t host_issue_work_ns;    /* of host_launch_ns: issuing it (uploads, ops, graph); the
                                      rest of host_launch_ns is waiting for the slot's
                                      staging block */
    int64_t host_process_ns;    /* host time spent processing its results (waits excluded) */
    int64_t host_loop_ns;       /* host time from the end of the latest processing before its
                                   launch to that launch: the engine's and the harness's own
                                   work between steps (the step record, releases, arrivals),
                                   and any wait for an arrival; 0 before the first */
    /* What each host term of this step was charged for on the simulator, and what its
     * measured column is a function of (hal/host_model.h): [term][factor] counts. SCHEDULE,
     * PREPARE: {1, requests, tokens, new, 0}; PROCESS: {1, requests, tokens, new, ended};
     * LOOP: {batches processed, their requests, their tokens, requests submitted, requests
     * released} in the window host_loop_ns covers (all 0 where it is 0 by definition). */
    int64_t host_counts[RIG_HOST_TERMS][RIG_HOST_FACTORS];
    bool host_loop_idle;        /* the window held more than the loop's work: a wait for an
                                   arrival, a schedule that found nothing, or an earlier
                                   launch (overlap, after a launch with nothing to process) */
    int64_t device_start_ns;
    int64_t device_end_ns;
    int64_t pages_free;         /* after the batch's allocation */
    int64_t pages_evictable;
    int64_t pages_locked;       /* protected: cached and locked */
    int64_t pages_owned;        /* held by requests outside the tree */
    const uint64_t *uids;       /* (batch_size) the requests in batch order (decode first,
                                   then prefill); valid only during the observer call */
};

/* A request that ended (finished, aborted or rejected). Pointers are valid only during the
 * observer call. Times are host-clock nanoseconds; -1 when the event never happened. */
struct rig_request_result {
    uint64_t uid;
    enum rig_request_end reason;
    const char *message;        /* why, for rejections; "" otherwise */
    int32_t input_len;
    int32_t cached_len;         /* prompt tokens found in the prefix cache */
    int32_t output_len;
    const int32_t *output_ids;      /* (output_len) */
    const int64_t *token_times_ns;  /* (output_len) */
    int64_t arrival_ns;
    int64_t first_scheduled_ns;
    int64_t first_token_ns;
    int64_t finish_ns;
    int64_t first_step;         /* step that first computed any of its tokens; -1 never */
    int64_t finish_step;        /* step that produced its last token; -1 none */
};

/* Callbacks, all optional (NULL), made on the engine's thread.
 * on_logprobs follows on_token for the same token when the request asked for logprobs
 * (sampling.logprobs >= 0): `logprob` is the sampled token's, then the `top_count` (=
 * sampling.logprobs) most likely tokens, most likely first, ties to the lower id. Logprobs
 * are of the processed distribution, as SGLang returns them by default: log-softmax over the
 * whole vocabulary of the penalised logits divided by the temperature (1 for greedy
 * requests), before the top-k / top-p / min-p cuts (in timing-only simulation, which has
 * no logits, they are zeros). The arrays are valid only during the call. Initialise
 * observers with designated initialisers (fields may be added). */
struct rig_engine_observer {
    void *ctx;
    void (*on_token)(void *ctx, uint64_t uid, int32_t index, int32_t token, int64_t t_ns);
    void (*on_finish)(void *ctx, const struct rig_request_result *result);
    void (*on_step)(void *ctx, const struct rig_step_record *record);
    void (*on_logprobs)(void *ctx, uint64_t uid, int32_t index, int32_t token, float logprob,
                        int32_t top_count, const int32_t *top_ids, const float *top_logprobs);
};

struct rig_submit {
    uint64_t uid;               /* unique among live requests */
    const int32_t *prompt;      /* (prompt_len) token ids, copied */
    int32_t prompt_len;
    struct rig_sampling_params sampling;
    int64_t arrival_ns;         /* host clock; -1 = now */
};

struct rig_engine;

/* Opens the devices, creates the model ranks and every buffer, captures decode graphs.
 * On error returns a negative status with a message in `error` and leaves nothing open. */
enum rig_status rig_engine_create(const struct rig_engine_config *config,
                                  const struct rig_engine_observer *observer,
                                  struct rig_engine **out, char *error, size_t error_len);
void rig_engine_destroy(struct rig_engine *engine);

/* With ranks across processes (RIG_RANKS_MPI): true in process 0, which schedules; false in
 * the others, which only follow (rig_engine_follow) and must not submit or step. True for
 * an engine whose ranks are threads. */
bool rig_engine_leads(const struct rig_engine *engine);
/* A following process (rig_engine_leads false): runs its rank's share of every job process 0
 * sends — graph capture, each step's batch — until process 0's engine is destroyed (RIG_OK).
 * On a failure (a job of its rank, or process 0 silent beyond the collective timeout unless
 * follow_unbounded)
 * returns its status, rig_engine_error saying why; destroying the engine then ends the MPI
 * job (docs/engine.md). */
enum rig_status rig_engine_follow(struct rig_engine *engine);

/* Queues a request. A request that can never run — prompt at or over the context limit,
 * prompt + max_tokens over it, or more KV than the whole cache — is rejected: returns
 * RIG_E_RANGE with the reason in `reason`, and the observer sees it end as REJECTED with
 * the same message. RIG_E_INVALID for a bad argument (uid in use, empty prompt, token out
 * of the vocabulary, negative max_tokens, a sampling parameter out of range — min_p outside
 * [0, 1], presence or frequency penalty outside [-2, 2], repetition penalty outside (0, 2],
 * logprobs outside [-1, 20], the message names the field); RIG_E_CAPACITY when max_requests
 * are live (back-pressure: retry later). Nothing is queued on error. */
enum rig_status rig_engine_submit(struct rig_engine *engine, const struct rig_submit *request,
                                  char *reason, size_t reason_len);
/* Aborts a live request at any point (queued, chunked, running, or with its last token in
 * flight); it ends exactly once, as ABORT. RIG_E_NOT_FOUND when no live request has it. */
enum rig_status rig_engine_abort(struct rig_engine *engine, uint64_t uid);

/* One scheduler iteration: schedule and launch a batch, process the previous batch's
 * results (overlap) or this one's (normal), release finished requests, check invariants.
 * *progress (may be NULL) tells whether anything happened. Fails on a device error, or
 * RIG_E_RANGE when a request's logits were not finite (rig_engine_error says which); the
 * engine is then in an undefined state and must be destroyed. */
enum rig_status rig_engine_step(struct rig_engine *engine, bool *progress);
/* Nothing queued, running or in flight. */
bool rig_engine_idle(const struct rig_engine *engine);
/* Why the engine failed, beyond the status its call returned: a step whose logits were not
 * finite (RIG_E_RANGE from rig_engine_step, naming the step and the request); an op whose
 * check failed on a rank's stream, naming the op and the argument; with TP, the group's
 * failure naming the rank and the collective (a late, stalled or failed rank); "" otherwise.
 * Call it from the scheduler thread, between steps. */
const char *rig_engine_error(const struct rig_engine *engine);
/* Aborts every live request (rig_engine_abort on each, in pool order): for a shutdown.
 * Returns how many were aborted. Can't fail. */
int32_t rig_engine_abort_all(struct rig_engine *engine);
/* Ends a request that never entered the engine — one refused by rig_engine_submit for a
 * reason that ends no request (RIG_E_INVALID), or one still queued in front of the engine
 * when it shut down — through the observer's on_finish as `reason` (REJECTED or ABORT) with
 * `message`, counted as submitted and ended, so that every uid handed to the engine's
 * front end ends exactly once through one path. Can't fail. */
void rig_engine_end_unsubmitted(struct rig_engine *engine, const struct rig_submit *request,
                                enum rig_request_end reason, const char *message);
/* Empties the prefix cache: every cached, unlocked page goes back to the free list.
 * RIG_E_STATE (nothing changes) unless the engine is idle. */
enum rig_status rig_engine_flush_cache(struct rig_engine *engine);

/* The invariant checker (docs/engine.md): pages free / cached / owned by exactly one request,
 * size accounting, ref counts equal to live handles, no locked node evicted, rows pointing
 * only at owned or locked pages, requests ending exactly once, the radix tree's own
 * consistency. One line per violation to `report` (may be NULL); returns the count. */
int32_t rig_engine_check(struct rig_engine *engine,
                         void (*report)(void *ctx, const char *msg), void *ctx);

/* Counters for tests and reports. */
struct rig_engine_stats {
    int64_t steps;
    int64_t submitted, finished, aborted, rejected;
    int64_t prefill_tokens;     /* prompt tokens computed (cache hits excluded) */
    int64_t decode_tokens;
    int64_t cached_tokens;      /* prompt tokens served from the prefix cache */
    int64_t graph_replays;
    int64_t row_rewrites;       /* page-table entries pointed from duplicates to the tree */
    /* Overlap, seen from the host (rank 0): launches issued while an earlier batch was in
     * flight; of those, the ones whose issue returned before that batch's forward had ended
     * on the device (the host prepared batch N+1 while N ran); host time spent issuing. */
    int64_t launches_behind_inflight;
    int64_t launches_ahead;
    int64_t launch_host_ns;
    int32_t pending, running;   /* now */
    struct rig_cache_sizes kv;  /* now, in slots */
};
void rig_engine_stats(const struct rig_engine *engine, struct rig_engine_stats *out);
/* The host clock of rank 0 (virtual on the simulator). */
int64_t rig_engine_now_ns(const struct rig_engine *engine);
/* Waits (idles the host clock) until t_ns: for replaying arrival times. */
void rig_engine_wait_until_ns(struct rig_engine *engine, int64_t t_ns);
/* The live request with `uid` (read-only), or NULL: for tests and status pages. */
const struct rig_request *rig_engine_find(const struct rig_engine *engine, uint64_t uid);
const struct rig_cache *rig_engine_cache(const struct rig_engine *engine);
/* The device of TP rank `rank` (0 <= rank < tp_size): for fault injection in tests. NULL
 * when the rank runs in another process (RIG_RANKS_MPI). */
struct rig_device *rig_engine_device(const struct rig_engine *engine, int32_t rank);
const struct rig_engine_config *rig_engine_get_config(const struct rig_engine *engine);
/* Rank `rank`'s model (0 <= rank < tp_size), for debug access between steps such as
 * rig_model_keep_logits (`rig generate --logits-out`); NULL when the rank runs in another
 * process (RIG_RANKS_MPI). */
struct rig_model *rig_engine_model(struct rig_engine *engine, int32_t rank);

#endif /* RIG_ENGINE_H */
