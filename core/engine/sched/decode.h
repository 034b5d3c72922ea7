/* decode.h — the decode manager: running requests in admission order (docs/engine.md).
 *
 * Order matters for determinism: Mini-SGLang kept running requests in a Python set, whose
 * iteration order differed between processes (and so between TP ranks). Here they sit in an
 * array sorted by admission sequence; removal keeps the order.
 *
 * Ownership: pointers into the request pool. Threads: the scheduler thread only.
 */
#ifndef RIG_DECODE_H
#define RIG_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/request.h"

struct rig_decode {
    struct rig_request **running; /* (capacity) ordered by admit_seq */
    int32_t count;
    int32_t capacity;
};

enum rig_status rig_decode_init(struct rig_decode *decode, int32_t capacity);
void rig_decode_free(struct rig_decode *decode);

/* Inserts a request at its place in admission order; more than capacity is a bug (the
 * capacity is the number of table rows, which bounds running requests). */
void rig_decode_add(struct rig_decode *decode, struct rig_request *request);
/* Removes a request; false when it is not running. */
bool rig_decode_remove(struct rig_decode *decode, struct rig_request *request);
bool rig_decode_contains(const struct rig_decode *decode, const struct rig_request *request);
/* Slots the running requests may still add to the KV cache (Σ remain_len). */
int64_t rig_decode_inflight_tokens(const struct rig_decode *decode);

#endif /* RIG_DECODE_H */
