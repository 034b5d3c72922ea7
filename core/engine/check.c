/* check.c — the engine's invariant checker (docs/engine.md "Invariant checker", issue 3 item 7).
 * O(pages + nodes + live rows); scratch arrays come from start-up, so it may run after every step.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/engine/engine_impl.h"

struct rig__check {
    void (*report)(void *ctx, const char *msg);
    void *ctx;
    int32_t violations;
};

static void rig__bad(struct rig__check *c, const char *fmt, ...)
{
    c->violations++;
    if (!c->report) return;
    char msg[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg, sizeof msg, fmt, args);
    va_end(args);
    c->report(c->ctx, msg);
}

enum { RIG__OWNER_NONE = -1, RIG__OWNER_FREE = -2, RIG__OWNER_TREE = -3 };

/* Marks free pages and the pages the tree holds. */
static void rig__mark_pool(struct rig_engine *e, struct rig__check *c)
{
    const struct rig_pages *pages = &e->cache.pages;
    const struct rig_radix *tree = &e->cache.tree;
    int32_t ps = e->cache.page_size;
    for (int32_t p = 0; p < pages->num_pages; p++) e->check_page_owner[p] = RIG__OWNER_NONE;
    for (int32_t i = 0; i < pages->free_count; i++) {
        int32_t p = pages->free_stack[i];
        if (e->check_page_owner[p] != RIG__OWNER_NONE) rig__bad(c, "page %d free twice", p);
        e->check_page_owner[p] = RIG__OWNER_FREE;
    }
    for (int32_t n = 1; n < tree->nodes_max; n++) {
        if (!tree->nodes[n].live) continue;
        int32_t slot = tree->nodes[n].first_slot;
        for (int32_t k = 0; k < tree->nodes[n].length && slot >= 0; k++) {
            if (slot % ps == 0) {
                int32_t p = slot / ps;
                if (e->check_page_owner[p] != RIG__OWNER_NONE)
                    rig__bad(c, "page %d cached in the tree and %s", p,
                             e->check_page_owner[p] == RIG__OWNER_FREE ? "free" : "cached again");
                e->check_page_owner[p] = RIG__OWNER_TREE;
            }
            slot = tree->slot_next[slot];
        }
    }
}

/* A live request's row: [0, handle) must be the tree's slots on its locked path; pages from
 * there to the end of its allocation must be its own, and nobody else's. */
static int64_t rig__check_row(struct rig_engine *e, struct rig_request *r,
                              struct rig__check *c)
{
    int32_t ps = e->cache.page_size;
    const int32_t *row = rig_table_page_row(&e->table, r->table_idx);
    int32_t locked = r->has_handle ? r->handle.cached_len : 0;
    if (!e->table.row_used[r->table_idx])
        rig__bad(c, "request %llu holds free row %d", (unsigned long long)r->uid, r->table_idx);
    if (r->has_handle && locked > 0) {
        const struct rig_radix *tree = &e->cache.tree;
        int32_t node = r->handle.node, end = locked;
        for (int32_t d = 0; d < tree->nodes_max && node > 0 && tree->nodes[node].live; d++) {
            end -= tree->nodes[node].length;
            if (end < 0) break;
            rig_radix_node_slots(tree, node, e->check_slots + end);
            node = tree->nodes[node].parent;
        }
        if (end != 0 || node != RIG_RADIX_ROOT)
            rig__bad(c, "request %llu: locked path broken (evicted?)", (unsigned long long)r->uid);
        else if (memcmp(row, e->check_slots, (size_t)locked * sizeof *row) != 0)
            rig__bad(c, "request %llu: row differs from its locked prefix",
                     (unsigned long long)r->uid);
    }
    int32_t alloc_end = (r->alloc_len + ps - 1) / ps * ps;
    int64_t owned = 0;
    for (int32_t pos = locked; pos < alloc_end; pos += ps) {
        int32_t p = row[pos] / ps;
        if (row[pos] < 0 || row[pos] >= e->dummy_slot) {
            rig__bad(c, "request %llu: row[%d] = %d", (unsigned long long)r->uid, pos, row[pos]);
            continue;
        }
        if (e->check_page_owner[p] != RIG__OWNER_NONE)
            rig__bad(c, "request %llu: page %d at %d is also %s", (unsigned long long)r->uid, p,
                     pos, e->check_page_owner[p] == RIG__OWNER_FREE   ? "free"
                          : e->check_page_owner[p] == RIG__OWNER_TREE ? "in the tree"
                                                                      : "another request's");
        e->check_page_owner[p] = r->slot;
        owned += ps;
    }
    return owned;
}

/* Ref counts must equal the live handles through each node. */
static void rig__check_refs(struct rig_engine *e, struct rig__check *c)
{
    const struct rig_radix *tree = &e->cache.tree;
    memset(e->check_refs, 0, (size_t)tree->nodes_max * sizeof *e->check_refs);
    for (int32_t i = 0; i < e->pool.requests_max; i++) {
        const struct rig_request *r = &e->pool.requests[i];
        if (r->state == RIG_REQUEST_FREE || !r->has_handle) continue;
        int32_t node = r->handle.node;
        for (int32_t d = 0; d < tree->nodes_max && node > 0; d++) {
            e->check_refs[node]++;
            node = tree->nodes[node].parent;
        }
    }
    for (int32_t n = 1; n < tree->nodes_max; n++) {
        if (!tree->nodes[n].live) continue;
        if (tree->nodes[n].ref_count != e->check_refs[n])
            rig__bad(c, "radix node %d: ref_count %d, live handles %d", n,
                     tree->nodes[n].ref_count, e->check_refs[n]);
    }
}

/* Requests: states, queues, ending exactly once. */
static void rig__check_requests(struct rig_engine *e, struct rig__check *c, int64_t *owned)
{
    int32_t live = 0, rows = 0;
    memset(e->check_running, 0, (size_t)e->pool.requests_max * sizeof *e->check_running);
    for (int32_t i = 0; i < e->decode.count; i++)
        e->check_running[e->decode.running[i]->slot] = true;
    for (int32_t i = 0; i < e->pool.requests_max; i++) {
        struct rig_request *r = &e->pool.requests[i];
        if (r->state == RIG_REQUEST_FREE) continue;
        live += rig_request_live(r);
        if (r->inflight < 0 || r->released)
            rig__bad(c, "request %llu: inflight %d, released %d", (unsigned long long)r->uid,
                     r->inflight, r->released);
        if (r->table_idx >= 0) {
            rows++;
            *owned += rig__check_row(e, r, c);
        }
        bool running = e->check_running[i];
        if (running && r->state != RIG_REQUEST_RUNNING)
            rig__bad(c, "request %llu decoding in state %s", (unsigned long long)r->uid,
                     rig_request_state_name(r->state));
        if (r->cached_len > r->alloc_len || r->device_len > r->max_device_len)
            rig__bad(c, "request %llu lengths: cached %d alloc %d device %d max %d",
                     (unsigned long long)r->uid, r->cached_len, r->alloc_len, r->device_len,
                     r->max_device_len);
    }
    if (rows != e->table.rows - 1 - e->table.free_count)
        rig__bad(c, "%d rows held by requests, %d not free", rows,
                 e->table.rows - 1 - e->table.free_count);
    if (e->stats.submitted != e->ended + live)
        rig__bad(c, "%lld submitted != %lld ended + %d live", (long long)e->stats.submitted,
                 (long long)e->ended, live);
    for (int32_t i = 1; i < e->decode.count; i++)
        if (e->decode.running[i - 1]->admit_seq >= e->decode.running[i]->admit_seq)
            rig__bad(c, "decode order is not admission order at %d", i);
}

int32_t rig_engine_check(struct rig_engine *e, void (*report)(void *ctx, const char *msg),
                         void *ctx)
{
    struct rig__check c = {report, ctx, 0};
    int32_t tree_bad = e->cache.type == RIG_CACHE_RADIX ? rig_radix_check(&e->cache.tree,
                                                                          report, ctx)
                                                        : 0;
    c.violations += tree_bad;
    rig__mark_pool(e, &c);
    int64_t owned = 0;
    rig__check_requests(e, &c, &owned);
    rig__check_refs(e, &c);
    struct rig_cache_sizes s = rig_cache_sizes(&e->cache);
    if (s.free + s.evictable + s.protected_ + owned != s.total)
        rig__bad(&c, "free %lld + evictable %lld + protected %lld + owned %lld != total %lld",
                 (long long)s.free, (long long)s.evictable, (long long)s.protected_,
                 (long long)owned, (long long)s.total);
    int32_t ps = e->cache.page_size;
    for (int32_t p = 0; p < e->cache.num_pages; p++)
        if (e->check_page_owner[p] == RIG__OWNER_NONE)
            rig__bad(&c, "page %d is neither free, cached nor owned (leaked)", p);
    (void)ps;
    return c.violations;
}
