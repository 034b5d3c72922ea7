/* prefill.c — the pending FIFO and admission (prefill.h). */
#include "core/engine/sched/prefill.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/debug.h"

enum rig_status rig_prefill_init(struct rig_prefill *prefill, int32_t capacity,
                                 int32_t max_seq_len)
{
    memset(prefill, 0, sizeof *prefill);
    if (capacity <= 0 || max_seq_len <= 0) return RIG_E_INVALID;
    prefill->queue = malloc((size_t)capacity * sizeof *prefill->queue);
    prefill->match_slots = malloc((size_t)max_seq_len * sizeof *prefill->match_slots);
    if (!prefill->queue || !prefill->match_slots) {
        rig_prefill_free(prefill);
        return RIG_E_NO_MEMORY;
    }
    prefill->capacity = capacity;
    prefill->writes_left = INT64_MAX;
    return RIG_OK;
}

void rig_prefill_free(struct rig_prefill *prefill)
{
    free(prefill->queue);
    free(prefill->match_slots);
    memset(prefill, 0, sizeof *prefill);
}

enum rig_status rig_prefill_push(struct rig_prefill *prefill, struct rig_request *request)
{
    RIG_ASSERT(request->state == RIG_REQUEST_PENDING);
    if (prefill->count == prefill->capacity) return RIG_E_CAPACITY;
    prefill->queue[prefill->count++] = request;
    return RIG_OK;
}

bool rig_prefill_remove(struct rig_prefill *prefill, struct rig_request *request)
{
    for (int32_t i = 0; i < prefill->count; i++) {
        if (prefill->queue[i] != request) continue;
        memmove(&prefill->queue[i], &prefill->queue[i + 1],
                (size_t)(prefill->count - i - 1) * sizeof *prefill->queue);
        prefill->count--;
        return true;
    }
    return false;
}

/* Slots admission may count on (free + evictable); the planted bug forgets evictable ones. */
static int64_t rig__admissible(const struct rig_cache *cache)
{
    if (rig_plant_on(cache->plant, RIG_PLANT_ADMIT_FREE_ONLY))
        return rig_cache_sizes(cache).free;
    return rig_cache_available(cache);
}

/* Tries to give a PENDING request a row and its locked cached prefix; false (and nothing
 * changed) when no row is free or its KV need does not fit next to `reserved`. */
static bool rig__prefill_admit(struct rig_prefill *prefill, struct rig_cache *cache,
                               struct rig_table *table, int64_t reserved, int32_t budget,
                               struct rig_request *r)
{
    if (rig_table_free_count(table) == 0) return false;
    struct rig_radix_handle handle =
        rig_cache_match(cache, r->tokens, r->input_len, prefill->match_slots);
    int32_t ps = cache->page_size;
    int32_t remain = r->input_len - handle.cached_len;
    int64_t writes = (int64_t)handle.cached_len + (remain < budget ? remain : budget) + ps;
    if (writes > prefill->writes_left) return false;
    int64_t end = ((int64_t)r->max_device_len + ps - 1) / ps * ps; /* whole pages */
    int64_t need = end - handle.cached_len;
    if (need + reserved > rig__admissible(cache)) return false;
    rig_cache_lock(cache, handle);
    /* Locking turned the matched nodes from evictable into protected: check again. */
    if (need + reserved > rig__admissible(cache)) {
        rig_cache_unlock(cache, handle);
        return false;
    }
    int32_t row = rig_table_alloc(table);
    RIG_ASSERT(row >= 0);
    memcpy(rig_table_page_row(table, row), prefill->match_slots,
           (size_t)handle.cached_len * sizeof(int32_t));
    memcpy(rig_table_token_row(table, row), r->tokens, (size_t)r->input_len * sizeof(int32_t));
    r->table_idx = row;
    r->handle = handle;
    r->has_handle = true;
    r->cached_len = handle.cached_len;
    r->device_len = handle.cached_len;
    r->alloc_len = handle.cached_len;
    r->prompt_cached = handle.cached_len;
    r->synced_len = 0;
    r->tokens_synced = 0;
    r->admit_seq = prefill->admitted++;
    return true;
}

int32_t rig_prefill_schedule(struct rig_prefill *prefill, struct rig_cache *cache,
                             struct rig_table *table, int32_t budget, int64_t reserved,
                             struct rig_request **out, int32_t out_max)
{
    int32_t selected = 0;
    int32_t finished_prompts = 0; /* selected requests whose prompt is now complete */
    for (int32_t i = 0; i < prefill->count && selected < out_max && budget > 0; i++) {
        struct rig_request *r = prefill->queue[i];
        if (r->state == RIG_REQUEST_PENDING) {
            if (!rig__prefill_admit(prefill, cache, table, reserved, budget, r)) break;
            r->state = RIG_REQUEST_CHUNKED;
        }
        RIG_ASSERT(r->state == RIG_REQUEST_CHUNKED && r->device_len == r->cached_len);
        int32_t remain = r->input_len - r->cached_len;
        int32_t chunk = remain < budget ? remain : budget;
        RIG_ASSERT(chunk > 0);
        budget -= chunk;
        /* In whole pages, as admission counts `need`: counting tokens let requests sharing
         * the last free page be admitted together (issue 15). */
        reserved += rig_request_unallocated(r, cache->page_size);
        r->device_len = r->cached_len + chunk;
        /* Entries from what the devices hold to the end of the chunk's last page. */
        int32_t ps = cache->page_size;
        prefill->writes_left -= (int64_t)(r->device_len + ps - 1) / ps * ps - r->synced_len;
        out[selected++] = r;
        if (chunk == remain) finished_prompts++;
    }
    /* Requests whose last chunk was selected leave the queue; a chunked one stays first. */
    int32_t kept = 0;
    for (int32_t i = 0; i < prefill->count; i++) {
        struct rig_request *r = prefill->queue[i];
        bool leaves = i < selected && r->device_len == r->input_len;
        if (!leaves) prefill->queue[kept++] = r;
    }
    RIG_ASSERT(kept == prefill->count - finished_prompts);
    prefill->count = kept;
    return selected;
}
