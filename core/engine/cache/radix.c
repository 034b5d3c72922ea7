/* radix.c — the radix prefix cache over a fixed node pool and per-slot key/value links. */
#include "core/engine/cache/radix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/philox.h"

enum rig_status rig_radix_init(struct rig_radix *tree, int32_t num_pages, int32_t page_size)
{
    if (num_pages <= 0 || page_size <= 0) return RIG_E_INVALID;
    memset(tree, 0, sizeof *tree);
    tree->page_size = page_size;
    tree->slots_total = num_pages * page_size;
    tree->nodes_max = num_pages + 1;
    tree->nodes = calloc((size_t)tree->nodes_max, sizeof *tree->nodes);
    tree->free_nodes = malloc((size_t)tree->nodes_max * sizeof *tree->free_nodes);
    tree->heap = malloc((size_t)tree->nodes_max * sizeof *tree->heap);
    tree->slot_token = malloc((size_t)tree->slots_total * sizeof *tree->slot_token);
    tree->slot_next = malloc((size_t)tree->slots_total * sizeof *tree->slot_next);
    tree->slot_mark = malloc((size_t)tree->slots_total);
    bool ok = tree->nodes && tree->free_nodes && tree->heap && tree->slot_token &&
              tree->slot_next && tree->slot_mark;
    if (!ok || rig_keymap_init(&tree->children, tree->nodes_max) != RIG_OK) {
        rig_radix_free(tree);
        return RIG_E_NO_MEMORY;
    }
    /* Free nodes popped in increasing index order: 1, 2, 3, ... */
    for (int32_t i = 0; i < tree->nodes_max - 1; i++)
        tree->free_nodes[i] = tree->nodes_max - 1 - i;
    tree->free_node_count = tree->nodes_max - 1;
    for (int32_t i = 0; i < tree->nodes_max; i++) tree->nodes[i].parent = -1;
    struct rig_radix_node *root = &tree->nodes[RIG_RADIX_ROOT];
    root->first_slot = -1;
    root->ref_count = 1; /* the root is always protected, never evicted */
    root->live = true;
    tree->live_nodes = 1;
    return RIG_OK;
}

void rig_radix_free(struct rig_radix *tree)
{
    free(tree->nodes);
    free(tree->free_nodes);
    free(tree->heap);
    free(tree->slot_token);
    free(tree->slot_next);
    free(tree->slot_mark);
    if (tree->children.slots) rig_keymap_free(&tree->children);
    memset(tree, 0, sizeof *tree);
}

/* The child-map key of the run starting at tokens[0] (one page) under `parent`. With one
 * token per page the key is exact; with larger pages it is a hash and callers compare. */
static uint64_t rig__radix_key(const struct rig_radix *tree, int32_t parent,
                               const int32_t *tokens)
{
    if (tree->page_size == 1) return ((uint64_t)(uint32_t)parent << 32) | (uint32_t)tokens[0];
    uint64_t h = (uint64_t)(uint32_t)parent;
    for (int32_t i = 0; i < tree->page_size; i++) h = rig_mix64(h, (uint32_t)tokens[i]);
    return h;
}

/* Tokens of `node` matching tokens[0..len) from its start (not rounded to pages). */
static int32_t rig__radix_common(const struct rig_radix *tree, int32_t node,
                                 const int32_t *tokens, int32_t len)
{
    const struct rig_radix_node *n = &tree->nodes[node];
    int32_t limit = n->length < len ? n->length : len;
    int32_t slot = n->first_slot;
    int32_t i = 0;
    while (i < limit && tree->slot_token[slot] == tokens[i]) {
        slot = tree->slot_next[slot];
        i++;
    }
    return i;
}

/* The child of `parent` whose first page equals tokens[0..page_size), or -1. */
static int32_t rig__radix_child(const struct rig_radix *tree, int32_t parent,
                                const int32_t *tokens)
{
    uint64_t key = rig__radix_key(tree, parent, tokens);
    int64_t cursor = -1;
    for (int32_t n = 0; n < tree->nodes_max; n++) {
        int32_t child = rig_keymap_next(&tree->children, key, &cursor);
        if (child < 0) return -1;
        if (rig__radix_common(tree, child, tokens, tree->page_size) == tree->page_size)
            return child;
    }
    return -1;
}

static int32_t rig__radix_node_new(struct rig_radix *tree)
{
    RIG_ASSERT_MSG(tree->free_node_count > 0, "radix node pool exhausted");
    int32_t index = tree->free_nodes[--tree->free_node_count];
    struct rig_radix_node *n = &tree->nodes[index];
    RIG_ASSERT(!n->live);
    memset(n, 0, sizeof *n);
    n->parent = -1;
    n->first_slot = -1;
    n->live = true;
    tree->live_nodes++;
    return index;
}

static void rig__radix_attach(struct rig_radix *tree, int32_t node, int32_t parent)
{
    struct rig_radix_node *n = &tree->nodes[node];
    int32_t first_page[64];
    int32_t count = tree->page_size < 64 ? tree->page_size : 64;
    RIG_ASSERT(tree->page_size <= 64);
    int32_t slot = n->first_slot;
    for (int32_t i = 0; i < count; i++) {
        first_page[i] = tree->slot_token[slot];
        slot = tree->slot_next[slot];
    }
    n->parent = parent;
    n->child_key = rig__radix_key(tree, parent, first_page);
    rig_keymap_put(&tree->children, n->child_key, node);
    tree->nodes[parent].child_count++;
}

static void rig__radix_detach(struct rig_radix *tree, int32_t node)
{
    struct rig_radix_node *n = &tree->nodes[node];
    bool removed = rig_keymap_remove(&tree->children, n->child_key, node);
    RIG_ASSERT(removed);
    tree->nodes[n->parent].child_count--;
    RIG_ASSERT(tree->nodes[n->parent].child_count >= 0);
    n->parent = -1;
}

/* Splits `node` after `pos` tokens (0 < pos < length, a page multiple). The first part
 * becomes a new node in its place, with the same ref count and tick; returns it. */
static int32_t rig__radix_split(struct rig_radix *tree, int32_t node, int32_t pos)
{
    struct rig_radix_node *old = &tree->nodes[node];
    RIG_ASSERT(pos > 0 && pos < old->length);
    RIG_ASSERT(pos % tree->page_size == 0);
    int32_t parent = old->parent;
    int32_t head = rig__radix_node_new(tree);
    old = &tree->nodes[node];
    struct rig_radix_node *h = &tree->nodes[head];
    rig__radix_detach(tree, node);
    h->first_slot = old->first_slot;
    h->length = pos;
    h->ref_count = old->ref_count;
    h->tick = old->tick;
    int32_t last = old->first_slot;
    for (int32_t i = 1; i < pos; i++) last = tree->slot_next[last];
    old->first_slot = tree->slot_next[last];
    tree->slot_next[last] = -1;
    old->length -= pos;
    rig__radix_attach(tree, head, parent);
    rig__radix_attach(tree, node, head);
    return head;
}

/* Walks down along tokens[0..len) in whole pages, splitting where a match ends inside a
 * node. Returns the deepest node reached and its prefix length in *matched. */
static int32_t rig__radix_walk(struct rig_radix *tree, const int32_t *tokens, int32_t len,
                               int32_t *matched)
{
    uint64_t tick = ++tree->clock;
    int32_t node = RIG_RADIX_ROOT;
    int32_t prefix = 0;
    int32_t ps = tree->page_size;
    for (int32_t depth = 0; depth < tree->nodes_max && prefix + ps <= len; depth++) {
        int32_t child = rig__radix_child(tree, node, tokens + prefix);
        if (child < 0) break;
        int32_t common = rig__radix_common(tree, child, tokens + prefix, len - prefix);
        common -= common % ps;
        RIG_ASSERT(common >= ps);
        prefix += common;
        if (common < tree->nodes[child].length) {
            node = rig__radix_split(tree, child, common);
            tree->nodes[node].tick = tick;
            break;
        }
        node = child;
        tree->nodes[node].tick = tick;
    }
    *matched = prefix;
    return node;
}

int32_t rig_radix_node_slots(const struct rig_radix *tree, int32_t node, int32_t *out)
{
    const struct rig_radix_node *n = &tree->nodes[node];
    int32_t slot = n->first_slot;
    for (int32_t i = 0; i < n->length; i++) {
        RIG_ASSERT(slot >= 0);
        out[i] = slot;
        slot = tree->slot_next[slot];
    }
    RIG_ASSERT(slot == -1);
    return n->length;
}

struct rig_radix_handle rig_radix_match(struct rig_radix *tree, const int32_t *tokens,
                                        int32_t len, int32_t *slots_out)
{
    RIG_ASSERT(len >= 0);
    int32_t matched = 0;
    int32_t node = rig__radix_walk(tree, tokens, len, &matched);
    struct rig_radix_handle handle = {node, matched};
    if (!slots_out) return handle;
    /* Fill the slots from the end, walking up; the path length bounds the loop. */
    int32_t end = matched;
    for (int32_t depth = 0; depth < tree->nodes_max && node != RIG_RADIX_ROOT; depth++) {
        end -= tree->nodes[node].length;
        rig_radix_node_slots(tree, node, slots_out + end);
        node = tree->nodes[node].parent;
    }
    RIG_ASSERT(end == 0);
    return handle;
}

int32_t rig_radix_insert(struct rig_radix *tree, const int32_t *tokens, const int32_t *slots,
                         int32_t len, struct rig_radix_handle *handle_out)
{
    RIG_ASSERT(len >= 0 && len % tree->page_size == 0);
    int32_t prefix = 0;
    int32_t node = rig__radix_walk(tree, tokens, len, &prefix);
    if (prefix < len) {
        int32_t fresh = rig__radix_node_new(tree);
        struct rig_radix_node *n = &tree->nodes[fresh];
        for (int32_t i = prefix; i < len; i++) {
            int32_t slot = slots[i];
            RIG_ASSERT(slot >= 0 && slot < tree->slots_total);
            tree->slot_token[slot] = tokens[i];
            tree->slot_next[slot] = i + 1 < len ? slots[i + 1] : -1;
        }
        n->first_slot = slots[prefix];
        n->length = len - prefix;
        n->tick = tree->clock;
        rig__radix_attach(tree, fresh, node);
        tree->evictable_tokens += n->length;
        node = fresh;
    }
    handle_out->node = node;
    handle_out->cached_len = len;
    return prefix;
}

void rig_radix_lock(struct rig_radix *tree, struct rig_radix_handle handle)
{
    int32_t node = handle.node;
    for (int32_t depth = 0; depth < tree->nodes_max && node != RIG_RADIX_ROOT; depth++) {
        struct rig_radix_node *n = &tree->nodes[node];
        RIG_ASSERT(n->live);
        if (n->ref_count == 0) {
            tree->evictable_tokens -= n->length;
            tree->protected_tokens += n->length;
        }
        n->ref_count++;
        node = n->parent;
    }
    RIG_ASSERT(node == RIG_RADIX_ROOT);
}

void rig_radix_unlock(struct rig_radix *tree, struct rig_radix_handle handle)
{
    int32_t node = handle.node;
    for (int32_t depth = 0; depth < tree->nodes_max && node != RIG_RADIX_ROOT; depth++) {
        struct rig_radix_node *n = &tree->nodes[node];
        RIG_ASSERT(n->live);
        RIG_ASSERT_MSG(n->ref_count > 0, "radix node unlocked below zero");
        n->ref_count--;
        if (n->ref_count == 0) {
            tree->evictable_tokens += n->length;
            tree->protected_tokens -= n->length;
        }
        node = n->parent;
    }
    RIG_ASSERT(node == RIG_RADIX_ROOT);
}

/* --- eviction ------------------------------------------------------------------ */

static void rig__radix_node_release(struct rig_radix *tree, int32_t node)
{
    struct rig_radix_node *n = &tree->nodes[node];
    RIG_ASSERT(n->live && n->child_count == 0 && n->ref_count == 0);
    memset(n, 0, sizeof *n);
    n->parent = -1;
    n->first_slot = -1;
    tree->free_nodes[tree->free_node_count++] = node;
    tree->live_nodes--;
}

/* Heap order: older tick first, then lower node index (deterministic ties). */
static bool rig__radix_before(const struct rig_radix *tree, int32_t a, int32_t b)
{
    uint64_t ta = tree->nodes[a].tick, tb = tree->nodes[b].tick;
    return ta != tb ? ta < tb : a < b;
}

static void rig__heap_push(struct rig_radix *tree, int32_t *size, int32_t node)
{
    RIG_ASSERT(*size < tree->nodes_max);
    int32_t i = (*size)++;
    tree->heap[i] = node;
    while (i > 0) {
        int32_t up = (i - 1) / 2;
        if (!rig__radix_before(tree, tree->heap[i], tree->heap[up])) break;
        int32_t t = tree->heap[i];
        tree->heap[i] = tree->heap[up];
        tree->heap[up] = t;
        i = up;
    }
}

static int32_t rig__heap_pop(struct rig_radix *tree, int32_t *size)
{
    RIG_ASSERT(*size > 0);
    int32_t top = tree->heap[0];
    tree->heap[0] = tree->heap[--(*size)];
    int32_t i = 0;
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < *size && rig__radix_before(tree, tree->heap[l], tree->heap[best])) best = l;
        if (r < *size && rig__radix_before(tree, tree->heap[r], tree->heap[best])) best = r;
        if (best == i) break;
        int32_t t = tree->heap[i];
        tree->heap[i] = tree->heap[best];
        tree->heap[best] = t;
        i = best;
    }
    return top;
}

static bool rig__radix_evictable_leaf(const struct rig_radix *tree, int32_t node)
{
    const struct rig_radix_node *n = &tree->nodes[node];
    return node != RIG_RADIX_ROOT && n->live && n->child_count == 0 && n->ref_count == 0;
}

int32_t rig_radix_evict(struct rig_radix *tree, int32_t tokens, int32_t *slots_out)
{
    int32_t size = 0;
    for (int32_t i = 0; i < tree->nodes_max; i++)
        if (rig__radix_evictable_leaf(tree, i)) rig__heap_push(tree, &size, i);
    int32_t freed = 0;
    while (freed < tokens && size > 0) {
        int32_t node = rig__heap_pop(tree, &size);
        struct rig_radix_node *n = &tree->nodes[node];
        int32_t parent = n->parent;
        freed += rig_radix_node_slots(tree, node, slots_out + freed);
        tree->evictable_tokens -= n->length;
        rig__radix_detach(tree, node);
        rig__radix_node_release(tree, node);
        if (rig__radix_evictable_leaf(tree, parent)) rig__heap_push(tree, &size, parent);
    }
    RIG_ASSERT(tree->evictable_tokens >= 0);
    return freed;
}
