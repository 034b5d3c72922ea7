/* watchdog.h — the collective watchdog's host side: a bounded wait and the diagnosis.
 *
 * A GPU collective that a rank never joins does not fail: NCCL's kernel spins on the other
 * GPUs, and any host wait on their streams (synchronize, a download) blocks for ever. The
 * CUDA backend therefore waits on a TP rank's stream by polling (rig_watchdog_wait) — the
 * stream's query, NCCL's asynchronous error — until it is done or the collective timeout
 * passes, then aborts the group and reports rig_watchdog_diagnose's sentence, which names the
 * rank and the collective from what each rank's host has issued: the rank that issued the
 * fewest collectives is the one the others wait for.
 * When the group is aborted, rig_watchdog_run_all runs the comms' aborts at once, one thread
 * each, and gives up on those still running after a bound (NCCL's abort synchronises the ranks
 * of a node, and on GPUs one of them did not return: docs/gpu.md).
 * Nothing here touches CUDA, so all of it is unit-tested on the CPU (tests/test_watchdog.c).
 * Threads: rig_watchdog_wait and rig_watchdog_diagnose are pure functions of their arguments
 * plus the probe's callbacks; rig_watchdog_run_all starts threads (below).
 */
#ifndef RIG_HAL_WATCHDOG_H
#define RIG_HAL_WATCHDOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/status.h"

/* What a wait polls. */
struct rig_watchdog_probe {
    void *ctx;
    /* RIG_OK: done; RIG_E_STATE: not yet; another status: failed (returned as is). */
    enum rig_status (*poll)(void *ctx);
    int64_t (*now_ns)(void *ctx); /* a monotonic clock */
    void (*pause)(void *ctx);     /* between polls (sleep a little); may be NULL */
};

/* Polls until done, failed, or `timeout_ns` has passed since the call: RIG_OK, the poll's
 * error, or RIG_E_TIMEOUT. At least one poll is made. The number of polls is bounded by the
 * timeout over the pause. */
enum rig_status rig_watchdog_wait(const struct rig_watchdog_probe *probe, int64_t timeout_ns);

/* One rank's view of its collectives, as its host issued them. */
struct rig_watchdog_rank {
    int64_t issued;        /* collectives issued so far */
    const char *last_kind; /* the last one's kind ("all_reduce"), "" when none */
};

/* Writes who the group waits for: "rank 2 has issued 129 collectives, rank 0 130 (its last:
 * all_reduce): the group waits for rank 2 at collective #129; rank 0 gave up after 10000 ms"
 * — or, when every rank issued as many, that the collective #n-1 issued by all did not
 * complete (a device or network fault, not a missing rank). `waiting` is the rank whose
 * wait timed out. Can't fail (truncates to out_len). */
void rig_watchdog_diagnose(const struct rig_watchdog_rank *ranks, int32_t count, int32_t waiting,
                           int64_t timeout_ms, char *out, size_t out_len);

/* Runs fn(args[i]) for every i in [0, count) at once, one thread each, and waits until all
 * have returned or `timeout_ns` has passed (checked every millisecond). done[i] (count of
 * them) says which returned in time; the others are left running on detached threads — the
 * bookkeeping they share with this call is freed by whichever finishes last, so nothing
 * waits for them and nothing is freed under them, but what args[i] points to must stay valid
 * while they run. A thread that cannot be started runs its call on the caller's thread
 * first (unbounded: the one case where this call can wait past timeout_ns). Returns how many
 * returned in time. count <= 64. */
int32_t rig_watchdog_run_all(void (*fn)(void *arg), void *const *args, int32_t count,
                             int64_t timeout_ns, bool *done);

#endif /* RIG_HAL_WATCHDOG_H */
