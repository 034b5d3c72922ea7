/* engine_impl.h — the engine's private state, shared by core/engine/engine.c and the
 * core/engine/sched files.
 *
 * Layout of one batch's metadata (struct rig__meta_layout): fixed offsets into one block, the
 * same on the host (staging, one per in-flight slot) and on each rank's device (one region
 * per slot plus a static region that captured CUDA graphs read). Per request [R_max]:
 * table_idx, cu_q (+1), kv_len, last_idx, temperature, top_k, top_p, seed (i64),
 * sample_pos, write_idx; per token [T_max]: input_idx (token-pool index of each input),
 * positions, out_loc; page-table and token-pool writes [W_max]: flat index and value; then
 * the sampling extensions per request [R_max]: min_p, repetition, frequency, presence — staged
 * for every batch but uploaded only for a batch that uses them (an extended batch), so a
 * plain batch moves exactly the bytes it did before they existed.
 *
 * Graphs: each decode size has a plain graph (today's sampling ops) and an extended one that
 * always runs penalize (a no-op on rows without penalties), sample with min_p and logprobs
 * with top_logprobs_max alternatives; an extended decode batch replays the latter.
 *
 * Batch slots: RIG__SLOTS (2) batches may be prepared/in flight at once (overlap); batch n uses
 * slot n % 2. Stream use per rank (why two streams: docs/architecture.md §2): uploads of batch n go
 * on the `meta` stream, after the event of the batch that used the slot before; the compute stream
 * waits for them, applies the page-table / token-pool writes (INDEX_SCATTER), gathers input ids
 * from the token pool (INDEX_GATHER), runs the forward (graph replay or eager), scatters the
 * sampled tokens into the token pool and downloads them. All writes to shared device state are on
 * the compute stream, so they are ordered after every earlier batch.
 */
#ifndef RIG_ENGINE_IMPL_H
#define RIG_ENGINE_IMPL_H

#include "core/engine/engine.h"
#include "core/engine/ranks/ranks.h"
#include "core/engine/sched/decode.h"
#include "core/engine/sched/prefill.h"
#include "core/engine/table.h"

#define RIG__SLOTS 2
#define RIG__GRAPHS_MAX 40
/* The wall-clock bound of ranks across processes when the device config gives no collective
 * timeout: the same 10 minutes as the simulator's and PyTorch's watchdog. */
#define RIG_RANKS_TIMEOUT_MS_DEFAULT 600000

struct rig__meta_layout {
    size_t table_idx, cu_q, kv_len, last_idx, temperature, top_k, top_p, seed, sample_pos,
        write_idx;                    /* per request: byte offsets */
    size_t request_block_bytes;       /* bytes of the per-request block (from offset 0) */
    size_t input_idx, positions, out_loc;    /* per token */
    size_t pt_idx, pt_val, tp_idx, tp_val;   /* writes */
    size_t min_p, repetition, frequency, presence; /* extensions, per request */
    size_t extension_begin, extension_bytes; /* the extension block */
    size_t bytes;                     /* the whole block */
    int32_t requests_max;             /* R_max */
    int32_t tokens_max;               /* T_max */
    int32_t writes_max;               /* W_max */
};

/* One prepared batch on the host (one per slot). */
struct rig__batch {
    bool active;                 /* launched, results not processed yet */
    int64_t step;
    enum rig_batch_phase phase;
    int32_t count;               /* R */
    int32_t prefill_count;       /* the last prefill_count of reqs are prefill (chunks) */
    int32_t tokens;              /* T */
    int32_t padded;              /* R' */
    int32_t padded_tokens;       /* T' */
    int32_t max_q_len;
    int32_t max_kv_len;
    int32_t graph;               /* index into the rank's graphs, -1 = eager */
    bool sample;                 /* some request of the batch produces a token */
    bool min_p;                  /* some request has min_p > 0 */
    bool penalize;               /* some request has a presence/frequency/repetition penalty */
    int32_t top_logprobs;        /* most top logprobs a request wants; -1: none wants logprobs */
    int32_t page_writes;         /* entries in pt_idx / pt_val */
    int32_t token_writes;        /* entries in tp_idx / tp_val */
    int64_t host_schedule_ns;
    int64_t host_launch_ns;      /* host time to schedule, prepare and launch the batch */
    int64_t host_schedule_work_ns; /* of which choosing it (schedule + per-request prepare) */
    int64_t host_prepare_work_ns;  /* of which writing its metadata into the staging block */
    int64_t host_issue_work_ns;    /* of which the ranks' launch job (uploads, ops, graph) */
    int64_t host_process_ns;     /* host time to process its results (after the wait) */
    int64_t host_loop_ns;        /* rig_step_record's host_loop_ns */
    int64_t host_counts[RIG_HOST_TERMS][RIG_HOST_FACTORS]; /* rig_step_record's */
    bool host_loop_idle;         /* rig_step_record's */
    struct rig_cache_sizes kv;   /* cache sizes after the batch's allocation */
    struct rig_request **reqs;   /* (R_max) decode requests first, then prefill (mixed) */
    bool *produces;              /* (R_max) true when this batch samples the request's token */
    uint8_t *staging;            /* (layout.bytes) host metadata block, pinned */
    int32_t *tokens_out;         /* (R_max) sampled tokens, -1 where the logits were not
                                  * finite (rig_op_sample's `checked`), from rank 0, pinned */
    float *logprob_out;          /* (R_max) logprob of each sampled token (top_logprobs >= 0) */
    int32_t *top_ids_out;        /* (R_max, top_logprobs) from rank 0 */
    float *top_logprobs_out;     /* (R_max, top_logprobs) */
};

/* A batch that uses a sampling extension: it uploads the extension block and runs eagerly or
 * replays an extended graph. */
static inline bool rig__batch_extended(const struct rig__batch *b)
{
    return b->min_p || b->penalize || b->top_logprobs >= 0;
}

struct rig__graph {
    int32_t batch_size;
    struct rig_graph *graph;    /* the plain sampling path */
    struct rig_graph *extended; /* with every sampling extension; NULL when not captured */
};

/* One TP rank: a device, its model rank, streams, events and buffers. */
struct rig__rank {
    int32_t index;
    struct rig_engine *engine;
    struct rig_device *device;
    struct rig_comm *comm;
    struct rig_model *model;
    struct rig_stream *compute;
    struct rig_stream *meta;
    struct rig_event *uploaded[RIG__SLOTS]; /* meta stream: slot uploads done */
    struct rig_event *start[RIG__SLOTS];    /* compute: forward begins */
    struct rig_event *end[RIG__SLOTS];      /* compute: forward ends */
    struct rig_event *done[RIG__SLOTS];     /* compute: the batch's last op */
    bool done_recorded[RIG__SLOTS];
    struct rig_event *origin;               /* compute: engine start, for step times */
    struct rig_buffer *page_table;          /* [rows, L] i32 */
    struct rig_buffer *token_pool;          /* [rows, L] i32 */
    struct rig_buffer *meta_slot[RIG__SLOTS]; /* (layout.bytes) */
    struct rig_buffer *meta_static;         /* (layout.bytes) what graphs read */
    struct rig_buffer *input_ids;           /* [T_max] i32 */
    struct rig_buffer *out_tokens;          /* [2 R_max] i32: tokens, then checked */
    struct rig_buffer *out_logprobs;        /* [R_max] f32 logprob, [R_max, 20] i32 top ids,
                                               [R_max, 20] f32 top logprobs */
    struct rig__graph graphs[RIG__GRAPHS_MAX];
    int32_t graph_count;
};

/* The scheduler's host time for ranks in other processes since the last job, composed as
 * rig_batch_desc's host_add_ns / host_until_ns (core/engine/ranks/ranks.h). */
struct rig__host_log {
    int64_t add_ns[2];
    int64_t until_ns[2]; /* -1: no floor */
    int32_t phase;       /* 1 once the job's upload wait has passed */
};

struct rig_engine {
    struct rig_engine_config config;
    struct rig_engine_observer observer;
    int32_t tp_size;
    int32_t max_seq_len;          /* L */
    int32_t tokens_max;           /* T_max of a batch */
    int32_t dummy_slot;           /* the KV slot padded requests write */
    int32_t top_logprobs_max;     /* alternatives an extended graph gives: min(20, V) */
    int32_t rank_first;           /* the ranks this process holds: [rank_first, + rank_count); */
    int32_t rank_count;           /* all of them, or one per process (RIG_RANKS_MPI) */
    struct rig_device *devices[RIG_DEVICES_MAX]; /* by rank; NULL outside this process */
    struct rig__rank ranks[RIG_DEVICES_MAX];     /* by rank; only this process's are set */
    struct rig_request_pool pool;
    struct rig_cache cache;
    struct rig_table table;
    struct rig_prefill prefill;
    struct rig_decode decode;
    struct rig__meta_layout layout;
    struct rig__batch batches[RIG__SLOTS];
    int64_t next_step;            /* step index of the next launched batch */
    int64_t processed_end_ns;     /* host clock when the latest processing ended; -1: none */
    /* The window since then, up to the next launch (rig_step_record's host_loop_ns): what
     * the host model's LOOP term counted in it, and whether the host idled in it. */
    int64_t loop_counts[RIG_HOST_FACTORS];
    bool loop_idle;
    int32_t *rewrites;            /* (W_max) flat page-table indices to resend */
    int32_t rewrite_count;
    int32_t *scratch_rewritten;   /* (L) row positions rewritten by one cache insert */
    uint64_t *scratch_uids;       /* (R_max) uids of a step record */
    struct rig_request **releasing; /* (max_requests) ended, waiting for in-flight batches */
    int32_t releasing_count;
    /* checker scratch, sized at start-up */
    int32_t *check_page_owner;    /* (num_pages) */
    int32_t *check_refs;          /* (radix nodes_max) */
    int32_t *check_slots;         /* (L) */
    bool *check_running;          /* (max_requests) by pool slot: in the decode set */
    int64_t ended;                /* requests that ended (finished + aborted + rejected) */
    struct rig_engine_stats stats;
    struct rig_ranks *rank_pool;  /* rank execution (core/engine/ranks/ranks.h) */
    struct rig_ranks_mpi *mpi_pool; /* ... or across processes (core/engine/ranks/mpi.h) */
    struct rig__host_log remote_host; /* process 0 with RIG_RANKS_MPI: for the next job */
    char error[256];              /* why a step failed, beyond its status; "" */
};

/* launch.c */
void rig__layout_init(struct rig__meta_layout *layout, int32_t requests_max,
                      int32_t tokens_max, int32_t writes_max);
enum rig_status rig__rank_init_tables(struct rig__rank *rank);
/* Runs `job` (enum rig_rank_job) for the batch prepared in `slot` on every rank through
 * rig_ranks_run (its descriptor and staging block) and waits until all have issued it.
 * Returns the first failing rank's status. */
enum rig_status rig__ranks_run(struct rig_engine *engine, int32_t job, int32_t slot);
/* Threads: this process holds every rank. RIG_RANKS_MPI: joins the MPI job (process p holds
 * rank p) before any device is opened. Sets rank_first / rank_count; error in `error`. */
enum rig_status rig__ranks_join(struct rig_engine *engine, char *error, size_t error_len);
enum rig_status rig__ranks_start(struct rig_engine *engine);
/* Across processes, process 0 sends the exit job (mpi.h: rig_ranks_mpi_release); first in
 * the engine's teardown, before any rank's comm is freed. No-op otherwise. */
void rig__ranks_release(struct rig_engine *engine);
void rig__ranks_stop(struct rig_engine *engine);
/* Why the rank pool across processes failed ("" when it has not, or without one). */
const char *rig__ranks_error(const struct rig_engine *engine);
/* A failed pool across processes: prints the engine's error (destroy ends the job). */
void rig__ranks_report(const struct rig_engine *engine);
/* The scheduler's host time on every rank's timeline: modelled work, a wait until t_ns, the
 * point where the job's upload wait happens (logged for ranks in other processes). */
void rig__host_work(struct rig_engine *engine, int64_t ns);
void rig__host_wait_until(struct rig_engine *engine, int64_t t_ns);
void rig__host_upload_wait_passed(struct rig_engine *engine);

/* prepare.c */
/* Allocates KV slots, advances lengths and fills the batch's staging block. */
void rig__prepare(struct rig_engine *engine, struct rig__batch *batch);
/* Fills requests [from, to) of the staging block as padding (dummy row, dummy slot, one
 * token each at token index `token_from` + i − from). */
void rig__stage_padding(struct rig_engine *engine, struct rig__batch *batch, int32_t from,
                        int32_t to, int32_t token_from);

/* scheduler.c */
void rig__request_end(struct rig_engine *engine, struct rig_request *r,
                      enum rig_request_end reason, const char *message);
/* Charges `term` of the host model (hal/host_model.h) for `counts` to the host clock. */
void rig__host_term(struct rig_engine *engine, enum rig_host_term term,
                    const int64_t counts[RIG_HOST_FACTORS]);
/* Charges one factor of the LOOP term (a request submitted or released) and counts it in the
 * window. */
void rig__host_loop_add(struct rig_engine *engine, enum rig_host_factor factor);

#endif /* RIG_ENGINE_IMPL_H */
