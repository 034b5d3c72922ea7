/* request.c — request names, defaults and the fixed request pool. */
#include "core/engine/request.h"

#include <stdlib.h>
#include <string.h>

const char *rig_request_end_name(enum rig_request_end reason)
{
    static const char *const names[] = {
#define RIG__END_NAME(name, text) text,
        RIG_REQUEST_END_MAP(RIG__END_NAME)
#undef RIG__END_NAME
    };
    if ((int)reason < 0 || reason >= RIG_END_COUNT) return "?";
    return names[reason];
}

const char *rig_request_state_name(enum rig_request_state state)
{
    static const char *const names[] = {"free",    "pending",  "chunked",
                                        "running", "finished", "aborted"};
    if ((int)state < 0 || (size_t)state >= RIG_ARRAY_LEN(names)) return "?";
    return names[state];
}

struct rig_sampling_params rig_sampling_default(void)
{
    struct rig_sampling_params p;
    memset(&p, 0, sizeof p);
    p.temperature = 0.0f;
    p.top_k = -1;
    p.top_p = 1.0f;
    p.max_tokens = 16;
    return p;
}

enum rig_status rig_request_pool_init(struct rig_request_pool *pool, int32_t requests_max,
                                      int32_t max_seq_len)
{
    memset(pool, 0, sizeof *pool);
    if (requests_max <= 0 || max_seq_len <= 0) return RIG_E_INVALID;
    size_t cells = (size_t)requests_max * (size_t)max_seq_len;
    pool->requests = calloc((size_t)requests_max, sizeof *pool->requests);
    pool->token_storage = malloc(cells * sizeof *pool->token_storage);
    pool->time_storage = malloc(cells * sizeof *pool->time_storage);
    pool->free_slots = malloc((size_t)requests_max * sizeof *pool->free_slots);
    bool ok = pool->requests && pool->token_storage && pool->time_storage && pool->free_slots;
    if (!ok || rig_keymap_init(&pool->by_uid, requests_max) != RIG_OK) {
        rig_request_pool_free(pool);
        return RIG_E_NO_MEMORY;
    }
    pool->requests_max = requests_max;
    pool->max_seq_len = max_seq_len;
    for (int32_t i = 0; i < requests_max; i++) {
        pool->free_slots[i] = requests_max - 1 - i;
        pool->requests[i].slot = i;
        pool->requests[i].table_idx = -1;
    }
    pool->free_count = requests_max;
    return RIG_OK;
}

void rig_request_pool_free(struct rig_request_pool *pool)
{
    free(pool->requests);
    free(pool->token_storage);
    free(pool->time_storage);
    free(pool->free_slots);
    if (pool->by_uid.slots) rig_keymap_free(&pool->by_uid);
    memset(pool, 0, sizeof *pool);
}

enum rig_status rig_request_pool_add(struct rig_request_pool *pool, uint64_t uid,
                                     const int32_t *prompt, int32_t prompt_len,
                                     struct rig_request **out)
{
    if (prompt_len <= 0 || prompt_len > pool->max_seq_len) return RIG_E_INVALID;
    if (rig_request_pool_find(pool, uid)) return RIG_E_INVALID;
    if (pool->free_count == 0) return RIG_E_CAPACITY;
    int32_t slot = pool->free_slots[--pool->free_count];
    struct rig_request *r = &pool->requests[slot];
    RIG_ASSERT(r->state == RIG_REQUEST_FREE);
    memset(r, 0, sizeof *r);
    r->slot = slot;
    r->uid = uid;
    r->state = RIG_REQUEST_PENDING;
    r->tokens = pool->token_storage + (size_t)slot * (size_t)pool->max_seq_len;
    r->token_times_ns = pool->time_storage + (size_t)slot * (size_t)pool->max_seq_len;
    memcpy(r->tokens, prompt, (size_t)prompt_len * sizeof *prompt);
    r->input_len = prompt_len;
    r->table_idx = -1;
    r->first_scheduled_ns = -1;
    r->first_token_ns = -1;
    r->finish_ns = -1;
    r->first_step = -1;
    r->last_step = -1;
    rig_keymap_put(&pool->by_uid, uid, slot);
    *out = r;
    return RIG_OK;
}

void rig_request_pool_remove(struct rig_request_pool *pool, struct rig_request *request)
{
    RIG_ASSERT(request->state != RIG_REQUEST_FREE);
    RIG_ASSERT(request->table_idx < 0 && !request->has_handle && request->inflight == 0);
    bool removed = rig_keymap_remove(&pool->by_uid, request->uid, request->slot);
    RIG_ASSERT(removed);
    request->state = RIG_REQUEST_FREE;
    RIG_ASSERT(pool->free_count < pool->requests_max);
    pool->free_slots[pool->free_count++] = request->slot;
}

struct rig_request *rig_request_pool_find(const struct rig_request_pool *pool, uint64_t uid)
{
    int32_t slot = rig_keymap_get(&pool->by_uid, uid);
    return slot < 0 ? NULL : &pool->requests[slot];
}
