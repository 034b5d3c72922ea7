/* prefill.h — the prefill manager: the FIFO of pending requests and admission under the prefill
 * token budget (docs/architecture.md §2 steps 2–6, Mini-SGLang's PrefillManager/PrefillAdder).
 *
 * Admission of the request at the head of the queue needs (a) a free page-table row and
 * (b) need + reserved ≤ free + evictable slots, where `need` is the slots of the whole pages
 * its row may still take (prompt and max_tokens, beyond the matched prefix), `reserved`
 * starts at the same for running requests and grows by it for each request selected before.
 * Everything is counted in whole pages: a request's last partial page costs a full one.
 * The check runs twice around locking the matched prefix: locking moves the matched nodes
 * from evictable to protected, which shrinks what is available, so a request that passes
 * before the lock can fail after it (then it is unlocked and not admitted).
 * Selection stops at the first request that does not fit (FIFO: no overtaking).
 *
 * Chunked prefill: a request whose remaining prompt exceeds the remaining budget gets a
 * budget-sized chunk and stays at the head of the queue (state CHUNKED) until its last
 * chunk is scheduled.
 *
 * Table writes: a newly admitted request's whole row up to its chunk's end (cached prefix
 * included) must be sent to the devices, so many requests sharing a long cached prefix can
 * cost far more page-table entries than they compute tokens. `writes_left` bounds that per
 * batch (the metadata buffers are sized for it); admission stops before exceeding it.
 *
 * Ownership: the queue holds pointers into the request pool; admission takes rows from the
 * table manager and locks handles in the cache manager. Threads: the scheduler thread.
 */
#ifndef RIG_PREFILL_H
#define RIG_PREFILL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/cache/cache.h"
#include "core/engine/request.h"
#include "core/engine/table.h"

struct rig_prefill {
    struct rig_request **queue; /* (capacity) FIFO, head at index 0 */
    int32_t count;
    int32_t capacity;
    int32_t *match_slots;       /* (max_seq_len) scratch for matched slots */
    int64_t admitted;           /* admissions so far: the admission sequence numbers */
    int64_t writes_left;        /* page-table entries the batch may still send to the
                                   devices (set by the caller; INT64_MAX = no limit) */
};

enum rig_status rig_prefill_init(struct rig_prefill *prefill, int32_t capacity,
                                 int32_t max_seq_len);
void rig_prefill_free(struct rig_prefill *prefill);

/* Appends a PENDING request. RIG_E_CAPACITY when the queue is full (nothing changes). */
enum rig_status rig_prefill_push(struct rig_prefill *prefill, struct rig_request *request);
/* Removes a request from the queue (abort); false when it is not queued. Order is kept. */
bool rig_prefill_remove(struct rig_prefill *prefill, struct rig_request *request);

/* Selects the requests of the next prefill batch into out[] (capacity out_max) within
 * `budget` tokens, given `reserved` slots promised to running requests. Admits new
 * requests (row, matched prefix locked and written to the page-table mirror, prompt tokens
 * written to the token-pool mirror) and sets every selected request's device_len to the end
 * of its chunk. Returns the number selected; the tokens they compute sum to ≤ budget. */
int32_t rig_prefill_schedule(struct rig_prefill *prefill, struct rig_cache *cache,
                             struct rig_table *table, int32_t budget, int64_t reserved,
                             struct rig_request **out, int32_t out_max);

#endif /* RIG_PREFILL_H */
