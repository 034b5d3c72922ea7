/* table.h — the table manager: page-table and token-pool rows (docs/architecture.md §2 step 5).
 *
 * The page table maps (row, position) to the KV slot of that token; the token pool holds
 * (row, position) → token id, from which the forward gathers its input ids and into which
 * sampled tokens are scattered. Both are [rows, max_seq_len] int32 with rows =
 * max_running_req + 1; the last row is the dummy row that padded requests of a CUDA-graph
 * batch point at (every page-table entry of it is the dummy KV slot).
 *
 * This module owns the host side: the free-row stack and host mirrors of both tables (the
 * scheduler edits the mirror, then ships the changed entries to every TP rank's device
 * copy through one upload and an INDEX_SCATTER per batch, see core/engine/sched/). Device copies
 * live per rank in the engine because each rank has its own device memory.
 *
 * Invariants: a row is either on the free stack once or held by exactly one live request;
 * the dummy row is never handed out. Threads: the scheduler thread only.
 */
#ifndef RIG_TABLE_H
#define RIG_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "hal/status.h"

struct rig_table {
    int32_t rows;        /* max_running_req + 1 */
    int32_t max_seq_len; /* L */
    int32_t dummy_slot;  /* KV slot the dummy row points at */
    int32_t *page_table; /* (rows, L) host mirror */
    int32_t *token_pool; /* (rows, L) host mirror */
    int32_t *free_rows;  /* (rows - 1) stack */
    int32_t free_count;
    bool *row_used;      /* (rows) */
};

/* Sizes the tables; every page-table entry starts at `dummy_slot`, every token at 0.
 * RIG_E_INVALID for non-positive sizes, RIG_E_NO_MEMORY. */
enum rig_status rig_table_init(struct rig_table *table, int32_t max_running_req,
                               int32_t max_seq_len, int32_t dummy_slot);
void rig_table_free(struct rig_table *table);

/* Takes a free row (lowest first on a fresh table); -1 when none is free. */
int32_t rig_table_alloc(struct rig_table *table);
/* Gives a row back and resets its page-table entries to the dummy slot (a stale entry can
 * then never name a live page). Releasing a free row or the dummy row is a bug. */
void rig_table_release(struct rig_table *table, int32_t row);

static inline int32_t rig_table_dummy_row(const struct rig_table *table)
{
    return table->rows - 1;
}
static inline int32_t rig_table_free_count(const struct rig_table *table)
{
    return table->free_count;
}
static inline int32_t *rig_table_page_row(struct rig_table *table, int32_t row)
{
    return table->page_table + (int64_t)row * table->max_seq_len;
}
static inline int32_t *rig_table_token_row(struct rig_table *table, int32_t row)
{
    return table->token_pool + (int64_t)row * table->max_seq_len;
}

#endif /* RIG_TABLE_H */
