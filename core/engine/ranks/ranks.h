/* ranks.h — rank execution behind one call: run this batch on every TP rank.
 *
 * The scheduler prepares a batch on the host: a descriptor (struct rig_batch_desc — plain
 * integers, no pointers, so it can be sent to a rank in another process as a message) and
 * the batch's metadata block (the staging bytes laid out as engine_impl.h describes, equally
 * plain). rig_ranks_run hands both to every rank's executor — the engine's function that
 * uploads the metadata, applies the table writes and runs the forward on that rank's device
 * (core/engine/ranks/launch.c) — and returns once every rank has issued the batch. The
 * scheduler never touches a rank's device, streams or model.
 *
 * This file's implementation runs the ranks in-process: rank 0 on the calling thread, ranks
 * 1.. on persistent worker threads, one job at a time. A multi-process implementation would
 * keep the same call and send (descriptor, metadata) to each process, whose executor is the
 * same function; the scheduler does not change.
 *
 * Ownership: the pool owns its threads and its handoff state (the engine holds only a
 * pointer). Threads: create, run and destroy from the scheduler thread only; the executor
 * runs on the worker threads concurrently, one call per rank per job.
 */
#ifndef RIG_RANKS_H
#define RIG_RANKS_H

#include <stdint.h>

#include "hal/status.h"

enum rig_rank_job {
    RIG_RANK_JOB_LAUNCH = 1,  /* issue one batch (upload, writes, forward, sampled tokens) */
    RIG_RANK_JOB_CAPTURE = 2, /* capture the decode graphs from an all-padding batch */
    RIG_RANK_JOB_EXIT = 3,    /* stop the rank's worker (used by rig_ranks_destroy) */
};

/* One batch, as every rank needs it. Plain data: copyable byte for byte. */
struct rig_batch_desc {
    int32_t job;           /* enum rig_rank_job */
    int32_t slot;          /* batch slot: which metadata region and events the rank uses */
    int64_t step;          /* launch index */
    int32_t phase;         /* enum rig_batch_phase */
    int32_t count;         /* R: real requests */
    int32_t tokens;        /* T: real tokens */
    int32_t padded;        /* R' after graph padding */
    int32_t padded_tokens; /* T' */
    int32_t max_q_len;
    int32_t max_kv_len;
    int32_t graph;          /* captured decode graph to replay; -1: eager */
    int32_t sample;         /* 1 when some request samples a token */
    int32_t min_p;          /* 1 when some request has min_p > 0 */
    int32_t penalize;       /* 1 when some request has a presence/frequency/repetition penalty */
    int32_t top_logprobs;   /* most top logprobs a request wants; -1: none wants logprobs */
    int32_t page_writes;    /* page-table writes in the metadata */
    int32_t token_writes;   /* token-pool writes in the metadata */
    int64_t metadata_bytes; /* size of the metadata block */
    /* Ranks in other processes only: the scheduler's host time on every rank's timeline
     * since the previous job (modelled work, waits for arrivals), which the rank's process
     * replays on its own virtual clock before the job, so that every clock runs as in one
     * process. Two steps, h -> max(h + host_add_ns[i], host_until_ns[i]) (-1: no floor),
     * before (0) and after (1) the wait for the slot's previous uploads. */
    int64_t host_add_ns[2];
    int64_t host_until_ns[2];
};

/* What a rank does with a job: rank `rank` (0 <= rank < size) runs `desc` over `metadata`
 * (desc->metadata_bytes). Returns the first failure; called once per rank per job. */
typedef enum rig_status (*rig_rank_execute_fn)(void *ctx, int32_t rank,
                                               const struct rig_batch_desc *desc,
                                               const uint8_t *metadata);

struct rig_ranks; /* opaque */

/* Starts the executor's ranks: `size` ranks (1..RIG_DEVICES_MAX), size − 1 worker threads.
 * RIG_E_INVALID for a bad size, RIG_E_NO_MEMORY when a thread cannot start (nothing is left
 * running). */
enum rig_status rig_ranks_create(int32_t size, rig_rank_execute_fn execute, void *ctx,
                                 struct rig_ranks **out);
/* Runs `desc` over `metadata` on every rank and waits until all have issued it; returns the
 * first failing rank's status (rank 0 first). */
enum rig_status rig_ranks_run(struct rig_ranks *ranks, const struct rig_batch_desc *desc,
                              const uint8_t *metadata);
/* Stops and joins the workers. NULL is a no-op. */
void rig_ranks_destroy(struct rig_ranks *ranks);

#endif /* RIG_RANKS_H */
