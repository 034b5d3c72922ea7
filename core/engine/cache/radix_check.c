/* radix_check.c — the O(nodes + slots) consistency check of the radix tree (radix.h lists
 * the invariants). Used by tests and by the engine's invariant checker. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/engine/cache/radix.h"

struct rig__radix_report {
    void (*report)(void *ctx, const char *msg);
    void *ctx;
    int32_t violations;
};

static void rig__radix_violation(struct rig__radix_report *r, const char *fmt, ...)
{
    r->violations++;
    if (!r->report) return;
    char msg[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg, sizeof msg, fmt, args);
    va_end(args);
    r->report(r->ctx, msg);
}

/* Checks one live non-root node's link to its parent, its run of slots and its size. */
static void rig__radix_check_node(struct rig_radix *tree, int32_t i,
                                  struct rig__radix_report *r)
{
    const struct rig_radix_node *n = &tree->nodes[i];
    if (n->parent < 0 || n->parent >= tree->nodes_max || !tree->nodes[n->parent].live) {
        rig__radix_violation(r, "radix node %d has no live parent", i);
        return;
    }
    if (n->length <= 0 || n->length % tree->page_size != 0)
        rig__radix_violation(r, "radix node %d has length %d", i, n->length);
    if (n->ref_count < 0) rig__radix_violation(r, "radix node %d ref_count %d", i, n->ref_count);
    if (n->parent != RIG_RADIX_ROOT && tree->nodes[n->parent].ref_count < n->ref_count)
        rig__radix_violation(r, "radix node %d locked more than its parent", i);
    int64_t cursor = -1;
    bool listed = false;
    for (int32_t k = 0; k < tree->nodes_max && !listed; k++) {
        int32_t v = rig_keymap_next(&tree->children, n->child_key, &cursor);
        if (v < 0) break;
        listed = v == i;
    }
    if (!listed) rig__radix_violation(r, "radix node %d missing from the child map", i);
    int32_t slot = n->first_slot;
    int32_t count = 0;
    while (slot >= 0 && slot < tree->slots_total && count <= n->length) {
        if (tree->slot_mark[slot]) rig__radix_violation(r, "slot %d in two radix nodes", slot);
        tree->slot_mark[slot] = 1;
        slot = tree->slot_next[slot];
        count++;
    }
    if (count != n->length || slot != -1)
        rig__radix_violation(r, "radix node %d holds %d slots, length %d", i, count, n->length);
}

int32_t rig_radix_check(struct rig_radix *tree, void (*report)(void *ctx, const char *msg),
                        void *ctx)
{
    struct rig__radix_report r = {report, ctx, 0};
    memset(tree->slot_mark, 0, (size_t)tree->slots_total);
    int64_t evictable = 0, protect = 0;
    int32_t live = 0;
    /* The heap scratch counts each node's children in one pass. */
    int32_t *children = tree->heap;
    memset(children, 0, (size_t)tree->nodes_max * sizeof *children);
    for (int32_t i = 0; i < tree->nodes_max; i++) {
        int32_t parent = tree->nodes[i].parent;
        if (tree->nodes[i].live && parent >= 0 && parent < tree->nodes_max) children[parent]++;
    }
    for (int32_t i = 0; i < tree->nodes_max; i++) {
        const struct rig_radix_node *n = &tree->nodes[i];
        if (!n->live) continue;
        live++;
        if (children[i] != n->child_count)
            rig__radix_violation(&r, "radix node %d counts %d children, has %d", i,
                                 n->child_count, children[i]);
        if (i == RIG_RADIX_ROOT) continue;
        rig__radix_check_node(tree, i, &r);
        if (n->ref_count == 0) evictable += n->length;
        else protect += n->length;
    }
    if (tree->nodes[RIG_RADIX_ROOT].ref_count != 1)
        rig__radix_violation(&r, "radix root ref_count %d", tree->nodes[0].ref_count);
    if (live != tree->live_nodes || live + tree->free_node_count != tree->nodes_max)
        rig__radix_violation(&r, "radix node pool: %d live, %d counted, %d free", live,
                             tree->live_nodes, tree->free_node_count);
    if (evictable != tree->evictable_tokens || protect != tree->protected_tokens)
        rig__radix_violation(&r, "radix sizes: evictable %lld (counted %lld), protected %lld "
                             "(counted %lld)", (long long)tree->evictable_tokens,
                             (long long)evictable, (long long)tree->protected_tokens,
                             (long long)protect);
    return r.violations;
}
