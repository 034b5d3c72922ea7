/* watchdog.c — bounded polling and the stuck-collective diagnosis, see watchdog.h. */
#include "hal/watchdog.h"

#include <stdio.h>

enum rig_status rig_watchdog_wait(const struct rig_watchdog_probe *probe, int64_t timeout_ns)
{
    RIG_ASSERT(probe != NULL && probe->poll != NULL && probe->now_ns != NULL);
    RIG_ASSERT(timeout_ns >= 0);
    int64_t start = probe->now_ns(probe->ctx);
    for (;;) {
        enum rig_status status = probe->poll(probe->ctx);
        if (status != RIG_E_STATE) return status;
        if (probe->now_ns(probe->ctx) - start >= timeout_ns) return RIG_E_TIMEOUT;
        if (probe->pause != NULL) probe->pause(probe->ctx);
    }
}

void rig_watchdog_diagnose(const struct rig_watchdog_rank *ranks, int32_t count, int32_t waiting,
                           int64_t timeout_ms, char *out, size_t out_len)
{
    RIG_ASSERT(ranks != NULL && out != NULL && out_len > 0);
    RIG_ASSERT(count >= 1 && waiting >= 0 && waiting < count);
    int32_t low = 0, high = 0;
    for (int32_t r = 1; r < count; r++) {
        if (ranks[r].issued < ranks[low].issued) low = r;
        if (ranks[r].issued > ranks[high].issued) high = r;
    }
    const char *kind = ranks[high].last_kind != NULL ? ranks[high].last_kind : "";
    if (ranks[low].issued == ranks[high].issued) {
        snprintf(out, out_len,
                 "rank %d: collective #%lld (%s), issued by every rank, did not complete "
                 "within %lld ms (a device or link fault, not a missing rank)",
                 waiting, (long long)ranks[high].issued - 1, kind, (long long)timeout_ms);
        return;
    }
    snprintf(out, out_len,
             "rank %d has issued %lld collectives, rank %d %lld (its last: %s): the group waits "
             "for rank %d at collective #%lld; rank %d gave up after %lld ms",
             low, (long long)ranks[low].issued, high, (long long)ranks[high].issued, kind, low,
             (long long)ranks[low].issued, waiting, (long long)timeout_ms);
}
