/* comm.h — tensor parallelism on the simulator: the ranks of one process meet in a world.
 *
 * rig_hal_open(count) creates one world shared by its `count` devices; comms link to it.
 * A collective is a barrier (mutex + condition variable + atomic generation counter; a waiting
 * rank first polls the counter, yielding the CPU, and only then sleeps — a decode step has
 * ~130 collectives, so wake-up latency would dominate a timing-only run): each rank's
 * thread arrives with its op and the earliest time its stream could start it; the last to
 * arrive does the whole collective for everyone —
 *   all-reduce: element by element, sum the ranks in order 0..n-1 in fp32, round once (bf16)
 *               and write the sum into every rank's tensor;
 *   all-gather: copy rank r's input into slot r of every rank's output;
 * and sets the end time: max over ranks of their earliest start + the collective's cost.
 * Every rank's stream then becomes ready at that end. Data and times are the same whatever
 * the thread interleaving (determinism). In timing-only mode only the time is modelled.
 * Ranks must issue the same collectives in the same order with the same shapes (as NCCL
 * requires); a mismatch is a bug and aborts.
 *
 * Failure (nothing hangs): the world fails — once, for good, as an aborted NCCL communicator
 * — with a message naming the rank and the collective (its index, kind and size) when
 *  - a rank arrives more than timeout_ns (the collective timeout) after the first one on the
 *    virtual clock, or never arrives there (a stalled rank, RIG_SIM_NEVER): RIG_E_TIMEOUT,
 *    decided by the last arrival from the virtual times alone, so deterministic;
 *  - a rank thread has not arrived after wait_ms of wall-clock time (a rank that failed before
 *    the collective and nobody aborted the group): RIG_E_TIMEOUT, naming the missing ranks;
 *  - rig_sim_world_abort is called (a rank's job failed): the status given.
 * Every collective of every rank returns the failure from then on, at once.
 * Ownership: the world is ref-counted by its devices; the last device closed frees it.
 * Threads: rig_sim_world_collective is called concurrently by the rank threads.
 */
#ifndef RIG_SIM_COMM_H
#define RIG_SIM_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "hal/hal_impl.h"
#include "sim/profile.h"

#define RIG_SIM_WORLD_POLLS 2000 /* yields before a waiting rank sleeps */
#define RIG_SIM_NEVER INT64_MAX    /* earliest_ns of a rank that never arrives (stalled) */
#define RIG_SIM_FAILURE_MAX 256
/* Collective timeout when the device config gives none: NCCL has none, PyTorch's watchdog
 * waits 10 minutes; the same here, on the virtual clock and on the wall clock. */
#define RIG_SIM_COLLECTIVE_TIMEOUT_MS_DEFAULT 600000

struct rig_sim_arrival {
    struct rig_op op;    /* the rank's collective */
    int64_t earliest_ns; /* when the rank's stream could start it */
    bool phantom;        /* the rank's tensors are phantom: model time only */
};

struct rig_sim_world {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int32_t size;                                     /* ranks */
    int32_t refs;                                     /* devices still open */
    _Atomic uint64_t generation;                      /* completed collectives */
    int32_t sleepers;                                 /* ranks blocked on `cond` */
    int32_t arrived;                                  /* ranks waiting in this generation */
    struct rig_sim_arrival arrivals[RIG_DEVICES_MAX]; /* (size) this generation's ops */
    int64_t end_ns;                                   /* end time of the last completed one */
    uint32_t present;                                 /* bit r: rank r arrived in this one */
    int64_t timeout_ns;                               /* collective timeout, virtual clock */
    int64_t wait_ms;                                  /* a rank thread's wall-clock bound */
    _Atomic int failed;                               /* enum rig_status; RIG_OK while healthy */
    char failure[RIG_SIM_FAILURE_MAX];                /* why it failed; set once, under mutex */
};

/* A world of `size` ranks, referenced `size` times, with the collective timeout
 * `timeout_ms` (> 0) on both clocks. NULL when out of memory. */
struct rig_sim_world *rig_sim_world_create(int32_t size, int64_t timeout_ms);
/* Drops one reference; the last one frees the world. */
void rig_sim_world_release(struct rig_sim_world *world);

/* Runs one collective for `rank` (see above); blocks until every rank has arrived or the
 * world fails. RIG_OK with *end_ns the time it ends on every rank; or the world's failure
 * status (RIG_E_TIMEOUT, or what rig_sim_world_abort gave) with *end_ns the time this rank
 * gave up (its arrival + the timeout, on the virtual clock). */
enum rig_status rig_sim_world_collective(struct rig_sim_world *world,
                                         const struct rig_sim_profile *profile, int32_t rank,
                                         const struct rig_op *op, int64_t earliest_ns,
                                         bool phantom, int64_t *end_ns);
/* The last arrival's work over world->arrivals[0, size) (every rank's op filled in): checks
 * that they agree and the lateness, then the data (unless a rank is phantom) and end_ns —
 * or fails the world. Called under the mutex by rig_sim_world_collective; also by
 * comm_mpi.c, whose process 0 fills the arrivals from the other processes' messages. */
void rig_sim_world_complete(struct rig_sim_world *world, const struct rig_sim_profile *profile);
/* Fails the world with `status` (< 0) and "rank R: reason", unless it has failed already;
 * wakes every waiting rank. Any thread. */
void rig_sim_world_abort(struct rig_sim_world *world, int32_t rank, enum rig_status status,
                         const char *reason);
/* Why the world failed ("" while it has not). The text is stable once set. */
const char *rig_sim_world_failure(struct rig_sim_world *world);

/* The backend's comm slots: links each comm to the world of its devices. RIG_E_INVALID
 * when the devices were not opened together or count is not the world's size. */
enum rig_status rig_sim_comm_create(struct rig_device **devices, int32_t count,
                                    struct rig_comm **comms);
void rig_sim_comm_destroy(struct rig_comm *comm);
/* The backend's comm_abort and comm_error slots (hal_impl.h). */
void rig_sim_comm_abort(struct rig_comm *comm, const char *reason);
const char *rig_sim_comm_error(const struct rig_comm *comm);

#endif /* RIG_SIM_COMM_H */
