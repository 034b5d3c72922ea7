/* bpe.c — byte-pair encoding of one pre-tokenised piece, exactly as HF's Word::merge_all: the
 * piece starts as one symbol per byte (its byte-level token); a binary min-heap holds every
 * adjacent pair that has a merge, ordered by (rank, position); the lowest is merged and the
 * two pairs it forms with its neighbours are pushed. A popped entry whose pair no longer
 * yields the same merged id is stale and skipped. O(n log n) in the piece length.
 */
#include <string.h>

#include "core/text/tokenizer_impl.h"

static bool rig__merge_before(const struct rig__bpe_merge *a, const struct rig__bpe_merge *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void rig__heap_push(struct rig__bpe_merge *heap, size_t *count, struct rig__bpe_merge item)
{
    size_t at = (*count)++;
    while (at > 0) {
        size_t parent = (at - 1) / 2;
        if (!rig__merge_before(&item, &heap[parent])) break;
        heap[at] = heap[parent];
        at = parent;
    }
    heap[at] = item;
}

static struct rig__bpe_merge rig__heap_pop(struct rig__bpe_merge *heap, size_t *count)
{
    RIG_ASSERT(*count > 0);
    struct rig__bpe_merge top = heap[0];
    struct rig__bpe_merge last = heap[--(*count)];
    size_t at = 0;
    for (;;) {
        size_t child = 2 * at + 1;
        if (child >= *count) break;
        if (child + 1 < *count && rig__merge_before(&heap[child + 1], &heap[child])) child++;
        if (!rig__merge_before(&heap[child], &last)) break;
        heap[at] = heap[child];
        at = child;
    }
    if (*count > 0) heap[at] = last;
    return top;
}

/* Pushes the merge of the pair starting at `pos`, when the vocabulary has one. */
static void rig__push_pair(const struct rig_tokenizer *tok, const struct rig__bpe_symbol *symbols,
                           int32_t pos, struct rig__bpe_merge *heap, size_t *count)
{
    if (pos < 0 || symbols[pos].next < 0) return;
    int32_t next = symbols[pos].next;
    const struct rig__merge_slot *merge =
        rig__tokenizer_merge(tok, symbols[pos].id, symbols[next].id);
    if (merge == NULL) return;
    rig__heap_push(heap, count,
                   (struct rig__bpe_merge){
                       .rank = merge->rank, .pos = (uint32_t)pos, .merged_id = merge->merged_id});
}

size_t rig__bpe_piece(const struct rig_tokenizer *tok, const uint8_t *bytes, size_t len,
                      struct rig__bpe_symbol *symbols, struct rig__bpe_merge *heap, int32_t *out)
{
    RIG_ASSERT(len > 0);
    RIG_ASSERT(len < INT32_MAX);
    for (size_t i = 0; i < len; i++) {
        symbols[i] = (struct rig__bpe_symbol){.id = tok->byte_token[bytes[i]],
                                              .prev = (int32_t)i - 1,
                                              .next = i + 1 < len ? (int32_t)i + 1 : -1,
                                              .len = 1};
    }
    size_t count = 0;
    for (size_t i = 0; i + 1 < len; i++)
        rig__push_pair(tok, symbols, (int32_t)i, heap, &count);
    /* Each merge removes a symbol and pushes at most two entries: the heap never holds more
     * than 2 * len entries, and the loop ends after at most 3 * len pops. */
    while (count > 0) {
        struct rig__bpe_merge top = rig__heap_pop(heap, &count);
        struct rig__bpe_symbol *left = &symbols[top.pos];
        if (left->len == 0 || left->next < 0) continue;
        struct rig__bpe_symbol *right = &symbols[left->next];
        const struct rig__merge_slot *merge = rig__tokenizer_merge(tok, left->id, right->id);
        if (merge == NULL || merge->merged_id != top.merged_id) continue; /* stale */
        left->id = top.merged_id;
        left->len += right->len;
        left->next = right->next;
        right->len = 0;
        if (right->next >= 0) symbols[right->next].prev = (int32_t)top.pos;
        rig__push_pair(tok, symbols, left->prev, heap, &count);
        rig__push_pair(tok, symbols, (int32_t)top.pos, heap, &count);
        RIG_ASSERT(count <= 2 * len);
    }
    size_t produced = 0;
    for (int32_t at = 0; at >= 0; at = symbols[at].next)
        out[produced++] = symbols[at].id;
    RIG_ASSERT(produced <= len);
    return produced;
}
