/* decode.c — running requests in admission order. */
#include "core/engine/sched/decode.h"

#include <stdlib.h>
#include <string.h>

enum rig_status rig_decode_init(struct rig_decode *decode, int32_t capacity)
{
    memset(decode, 0, sizeof *decode);
    if (capacity <= 0) return RIG_E_INVALID;
    decode->running = malloc((size_t)capacity * sizeof *decode->running);
    if (!decode->running) return RIG_E_NO_MEMORY;
    decode->capacity = capacity;
    return RIG_OK;
}

void rig_decode_free(struct rig_decode *decode)
{
    free(decode->running);
    memset(decode, 0, sizeof *decode);
}

void rig_decode_add(struct rig_decode *decode, struct rig_request *request)
{
    RIG_ASSERT(decode->count < decode->capacity);
    RIG_ASSERT(!rig_decode_contains(decode, request));
    int32_t at = decode->count;
    while (at > 0 && decode->running[at - 1]->admit_seq > request->admit_seq) at--;
    memmove(&decode->running[at + 1], &decode->running[at],
            (size_t)(decode->count - at) * sizeof *decode->running);
    decode->running[at] = request;
    decode->count++;
}

bool rig_decode_remove(struct rig_decode *decode, struct rig_request *request)
{
    for (int32_t i = 0; i < decode->count; i++) {
        if (decode->running[i] != request) continue;
        memmove(&decode->running[i], &decode->running[i + 1],
                (size_t)(decode->count - i - 1) * sizeof *decode->running);
        decode->count--;
        return true;
    }
    return false;
}

bool rig_decode_contains(const struct rig_decode *decode, const struct rig_request *request)
{
    for (int32_t i = 0; i < decode->count; i++)
        if (decode->running[i] == request) return true;
    return false;
}

int64_t rig_decode_inflight_tokens(const struct rig_decode *decode)
{
    int64_t total = 0;
    for (int32_t i = 0; i < decode->count; i++) total += rig_request_remain_len(decode->running[i]);
    return total;
}
