/* watchdog.c — bounded polling and the stuck-collective diagnosis, see watchdog.h. */
#include "hal/watchdog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

/* The state rig_watchdog_run_all shares with its threads: freed by the last of them, or by the
 * call itself, to let go (refs counts the call and every thread still running). */
#define RIG__RUN_MAX 64
struct rig__run {
    void (*fn)(void *arg);
    _Atomic int32_t refs;
    struct rig__run_slot {
        struct rig__run *run;
        void *arg;
        _Atomic bool done;
    } slots[RIG__RUN_MAX];
};

static void rig__run_release(struct rig__run *run)
{
    if (atomic_fetch_sub(&run->refs, 1) == 1) free(run);
}

static void *rig__run_thread(void *arg)
{
    struct rig__run_slot *slot = arg;
    struct rig__run *run = slot->run;
    run->fn(slot->arg);
    atomic_store(&slot->done, true);
    rig__run_release(run);
    return NULL;
}

static int64_t rig__monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int32_t rig_watchdog_run_all(void (*fn)(void *arg), void *const *args, int32_t count,
                             int64_t timeout_ns, bool *done)
{
    RIG_ASSERT(fn != NULL && args != NULL && done != NULL);
    RIG_ASSERT(count >= 0 && count <= RIG__RUN_MAX && timeout_ns >= 0);
    struct rig__run *run = calloc(1, sizeof *run);
    if (run == NULL) { /* no threads without memory: every call here, in turn */
        for (int32_t i = 0; i < count; i++) {
            fn(args[i]);
            done[i] = true;
        }
        return count;
    }
    run->fn = fn;
    atomic_init(&run->refs, 1);
    for (int32_t i = 0; i < count; i++) {
        struct rig__run_slot *slot = &run->slots[i];
        slot->run = run;
        slot->arg = args[i];
        atomic_init(&slot->done, false);
        atomic_fetch_add(&run->refs, 1);
        pthread_t thread;
        if (pthread_create(&thread, NULL, rig__run_thread, slot) == 0) {
            pthread_detach(thread);
        } else {
            atomic_fetch_sub(&run->refs, 1);
            fn(args[i]);
            atomic_store(&slot->done, true);
        }
    }
    int64_t deadline = rig__monotonic_ns() + timeout_ns;
    int32_t finished = 0;
    for (;;) {
        finished = 0;
        for (int32_t i = 0; i < count; i++) finished += atomic_load(&run->slots[i].done);
        if (finished == count || rig__monotonic_ns() >= deadline) break;
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    for (int32_t i = 0; i < count; i++) done[i] = atomic_load(&run->slots[i].done);
    finished = 0;
    for (int32_t i = 0; i < count; i++) finished += done[i];
    rig__run_release(run);
    return finished;
}
