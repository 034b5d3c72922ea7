/* comm.c — the TP world: barrier, rank-ordered reduction, all-gather, see comm.h. */
#include "sim/comm.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/comm_mpi.h"
#include "sim/cost.h"
#include "sim/device.h"

/* The condition variable waits on CLOCK_MONOTONIC, so a wall-clock step cannot stretch the
 * bounded wait. */
static bool rig__cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) return false;
    bool ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(cond, &attr) == 0;
    pthread_condattr_destroy(&attr);
    return ok;
}

struct rig_sim_world *rig_sim_world_create(int32_t size, int64_t timeout_ms)
{
    RIG_ASSERT(size >= 1 && size <= RIG_DEVICES_MAX);
    RIG_ASSERT(timeout_ms > 0);
    struct rig_sim_world *world = calloc(1, sizeof *world);
    if (world == NULL) return NULL;
    if (pthread_mutex_init(&world->mutex, NULL) != 0) {
        free(world);
        return NULL;
    }
    if (!rig__cond_init(&world->cond)) {
        pthread_mutex_destroy(&world->mutex);
        free(world);
        return NULL;
    }
    atomic_init(&world->generation, 0);
    atomic_init(&world->failed, RIG_OK);
    world->size = size;
    world->refs = size;
    world->timeout_ns = timeout_ms > INT64_MAX / 1000000 ? INT64_MAX : timeout_ms * 1000000;
    world->wait_ms = timeout_ms;
    return world;
}

void rig_sim_world_release(struct rig_sim_world *world)
{
    if (world == NULL) return;
    RIG_ASSERT(pthread_mutex_lock(&world->mutex) == 0);
    RIG_ASSERT(world->refs > 0);
    bool last = --world->refs == 0;
    RIG_ASSERT_MSG(!last || world->arrived == 0 || atomic_load(&world->failed) != RIG_OK,
                   "device closed inside a collective");
    RIG_ASSERT(pthread_mutex_unlock(&world->mutex) == 0);
    if (!last) return;
    pthread_cond_destroy(&world->cond);
    pthread_mutex_destroy(&world->mutex);
    free(world);
}

static float rig__load(const struct rig_tensor *t, int64_t i)
{
    if (t->dtype == RIG_DTYPE_BF16) return rig_bf16_to_f32(((const uint16_t *)t->data)[i]);
    return ((const float *)t->data)[i];
}

static void rig__store(const struct rig_tensor *t, int64_t i, float value)
{
    if (t->dtype == RIG_DTYPE_BF16)
        ((uint16_t *)t->data)[i] = rig_f32_to_bf16(value);
    else
        ((float *)t->data)[i] = value;
}

/* Element by element: sum ranks 0..n-1 in fp32, then write the sum to every rank. Reading
 * every rank before writing any makes the in-place update safe. */
static void rig__all_reduce(const struct rig_sim_world *world)
{
    const struct rig_tensor *first = &world->arrivals[0].op.u.all_reduce.data;
    int64_t numel = rig_tensor_numel(first);
    for (int64_t i = 0; i < numel; i++) {
        float sum = 0.0f;
        for (int32_t r = 0; r < world->size; r++)
            sum += rig__load(&world->arrivals[r].op.u.all_reduce.data, i);
        for (int32_t r = 0; r < world->size; r++)
            rig__store(&world->arrivals[r].op.u.all_reduce.data, i, sum);
    }
}

/* Slot r of every output gets rank r's input. memmove: a rank's input may be its own slot
 * of its output (in-place all-gather, as NCCL allows). */
static void rig__all_gather(const struct rig_sim_world *world)
{
    const struct rig_op_all_gather *first = &world->arrivals[0].op.u.all_gather;
    size_t slot_bytes = (size_t)rig_tensor_numel(&first->in) * rig_dtype_size(first->in.dtype);
    for (int32_t r = 0; r < world->size; r++) {
        const void *in = world->arrivals[r].op.u.all_gather.in.data;
        for (int32_t q = 0; q < world->size; q++) {
            char *out = world->arrivals[q].op.u.all_gather.out.data;
            memmove(out + (size_t)r * slot_bytes, in, slot_bytes);
        }
    }
}

/* The ranks must have issued the same collective: same kind, dtype and element count. */
static void rig__check_agree(const struct rig_sim_world *world)
{
    const struct rig_op *first = &world->arrivals[0].op;
    const struct rig_tensor *t0 =
        first->kind == RIG_OP_ALL_REDUCE ? &first->u.all_reduce.data : &first->u.all_gather.out;
    for (int32_t r = 1; r < world->size; r++) {
        const struct rig_op *op = &world->arrivals[r].op;
        RIG_ASSERT_MSG(op->kind == first->kind, "ranks issued different collectives");
        const struct rig_tensor *t =
            op->kind == RIG_OP_ALL_REDUCE ? &op->u.all_reduce.data : &op->u.all_gather.out;
        RIG_ASSERT_MSG(t->dtype == t0->dtype, "ranks' collective dtypes differ");
        RIG_ASSERT_MSG(rig_tensor_numel(t) == rig_tensor_numel(t0),
                       "ranks' collective sizes differ");
    }
}

/* "collective #12 (all_reduce of 5120 x bf16)": what a failure message names. */
static void rig__describe(const struct rig_sim_world *world, const struct rig_op *op, char *out,
                          size_t len)
{
    bool reduce = op->kind == RIG_OP_ALL_REDUCE;
    const struct rig_tensor *t = reduce ? &op->u.all_reduce.data : &op->u.all_gather.in;
    snprintf(out, len, "collective #%llu (%s of %lld x %s)",
             (unsigned long long)atomic_load_explicit(&world->generation, memory_order_relaxed),
             reduce ? "all_reduce" : "all_gather", (long long)rig_tensor_numel(t),
             rig_dtype_name(t->dtype));
}

/* Fails the world (under its mutex; the first failure wins) and wakes every waiter. */
static void rig__fail_locked(struct rig_sim_world *world, enum rig_status status,
                             const char *message)
{
    RIG_ASSERT(status < 0);
    if (atomic_load_explicit(&world->failed, memory_order_relaxed) != RIG_OK) return;
    snprintf(world->failure, sizeof world->failure, "%s", message);
    atomic_store_explicit(&world->failed, status, memory_order_release);
    RIG_ASSERT(pthread_cond_broadcast(&world->cond) == 0);
}

/* The collective timeout on the virtual clock: the latest arrival (lowest rank on a tie) is
 * the late or stalled one. Returns true (world failed) when it is more than timeout_ns after
 * the earliest. */
static bool rig__check_lateness(struct rig_sim_world *world, int64_t *first_ns)
{
    int32_t late = 0;
    int64_t first = world->arrivals[0].earliest_ns;
    for (int32_t r = 1; r < world->size; r++) {
        int64_t t = world->arrivals[r].earliest_ns;
        if (t > world->arrivals[late].earliest_ns) late = r;
        if (t < first) first = t;
    }
    *first_ns = first;
    int64_t last = world->arrivals[late].earliest_ns;
    if (last != RIG_SIM_NEVER && last - first <= world->timeout_ns) return false;
    char what[96], message[RIG_SIM_FAILURE_MAX];
    rig__describe(world, &world->arrivals[late].op, what, sizeof what);
    double timeout_ms = (double)world->timeout_ns / 1e6;
    if (last == RIG_SIM_NEVER)
        snprintf(message, sizeof message,
                 "rank %d never arrived at %s: the other ranks gave up after the collective "
                 "timeout (%.3f ms)", late, what, timeout_ms);
    else
        snprintf(message, sizeof message,
                 "rank %d arrived at %s %.3f ms after the first rank: over the collective "
                 "timeout (%.3f ms)", late, what, (double)(last - first) / 1e6, timeout_ms);
    rig__fail_locked(world, RIG_E_TIMEOUT, message);
    return true;
}

void rig_sim_world_complete(struct rig_sim_world *world, const struct rig_sim_profile *profile)
{
    rig__check_agree(world);
    int64_t first = 0;
    if (rig__check_lateness(world, &first)) {
        world->end_ns = first > RIG_SIM_NEVER - world->timeout_ns ? RIG_SIM_NEVER
                                                                   : first + world->timeout_ns;
        return;
    }
    bool phantom = false;
    int64_t earliest = 0;
    for (int32_t r = 0; r < world->size; r++) {
        phantom = phantom || world->arrivals[r].phantom;
        if (world->arrivals[r].earliest_ns > earliest) earliest = world->arrivals[r].earliest_ns;
    }
    const struct rig_op *op = &world->arrivals[0].op;
    if (!phantom && op->kind == RIG_OP_ALL_REDUCE) rig__all_reduce(world);
    if (!phantom && op->kind == RIG_OP_ALL_GATHER) rig__all_gather(world);
    world->end_ns = earliest + rig_sim_cost_op_ns(profile, op, world->size);
}

static bool rig__moved(struct rig_sim_world *world, uint64_t generation)
{
    return atomic_load_explicit(&world->generation, memory_order_acquire) != generation ||
           atomic_load_explicit(&world->failed, memory_order_acquire) != RIG_OK;
}

/* The wall-clock bound ran out with ranks missing: fail, naming them (under the mutex). */
static void rig__fail_missing_locked(struct rig_sim_world *world, const struct rig_op *op)
{
    char what[96], ranks[64] = "", message[RIG_SIM_FAILURE_MAX];
    rig__describe(world, op, what, sizeof what);
    size_t used = 0;
    for (int32_t r = 0; r < world->size && used < sizeof ranks; r++) {
        if (world->present & (1u << r)) continue;
        int n = snprintf(ranks + used, sizeof ranks - used, "%s%d", used ? ", " : "", r);
        if (n > 0) used += (size_t)n;
    }
    snprintf(message, sizeof message,
             "rank %s did not reach %s within the collective timeout (%lld ms of wall-clock "
             "time)", ranks, what, (long long)world->wait_ms);
    rig__fail_locked(world, RIG_E_TIMEOUT, message);
}

/* Waits until the world's generation moves past `generation` or the world fails: polls
 * (yielding the CPU to the ranks still on their way), then sleeps on the condition variable
 * for at most wait_ms in all before failing the world. */
static void rig__wait_generation(struct rig_sim_world *world, uint64_t generation,
                                 const struct rig_op *op)
{
    for (int32_t i = 0; i < RIG_SIM_WORLD_POLLS; i++) {
        if (rig__moved(world, generation)) return;
        sched_yield();
    }
    struct timespec deadline;
    RIG_ASSERT(clock_gettime(CLOCK_MONOTONIC, &deadline) == 0);
    deadline.tv_sec += (time_t)(world->wait_ms / 1000);
    deadline.tv_nsec += (long)(world->wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
    RIG_ASSERT(pthread_mutex_lock(&world->mutex) == 0);
    world->sleepers++;
    while (!rig__moved(world, generation)) {
        int rc = pthread_cond_timedwait(&world->cond, &world->mutex, &deadline);
        RIG_ASSERT(rc == 0 || rc == ETIMEDOUT);
        if (rc == ETIMEDOUT && !rig__moved(world, generation)) rig__fail_missing_locked(world, op);
    }
    world->sleepers--;
    RIG_ASSERT(pthread_mutex_unlock(&world->mutex) == 0);
}

/* This rank's end of a failed collective: its arrival + the timeout (virtual clock). */
static enum rig_status rig__failed(struct rig_sim_world *world, int64_t earliest_ns,
                                   int64_t *end_ns)
{
    int64_t room = RIG_SIM_NEVER - world->timeout_ns;
    *end_ns = earliest_ns > room ? RIG_SIM_NEVER : earliest_ns + world->timeout_ns;
    return (enum rig_status)atomic_load_explicit(&world->failed, memory_order_acquire);
}

enum rig_status rig_sim_world_collective(struct rig_sim_world *world,
                                         const struct rig_sim_profile *profile, int32_t rank,
                                         const struct rig_op *op, int64_t earliest_ns,
                                         bool phantom, int64_t *end_ns)
{
    RIG_ASSERT(world != NULL && profile != NULL && op != NULL && end_ns != NULL);
    RIG_ASSERT(rank >= 0 && rank < world->size);
    RIG_ASSERT(pthread_mutex_lock(&world->mutex) == 0);
    if (atomic_load_explicit(&world->failed, memory_order_relaxed) != RIG_OK) {
        RIG_ASSERT(pthread_mutex_unlock(&world->mutex) == 0);
        return rig__failed(world, earliest_ns, end_ns);
    }
    world->arrivals[rank] = (struct rig_sim_arrival){*op, earliest_ns, phantom};
    world->arrived++;
    world->present |= 1u << rank;
    RIG_ASSERT(world->arrived <= world->size);
    uint64_t generation = atomic_load_explicit(&world->generation, memory_order_relaxed);
    if (world->arrived == world->size) {
        rig_sim_world_complete(world, profile);
        world->arrived = 0;
        world->present = 0;
        /* release: end_ns and the results are visible to whoever sees the new generation */
        atomic_store_explicit(&world->generation, generation + 1, memory_order_release);
        if (world->sleepers > 0) RIG_ASSERT(pthread_cond_broadcast(&world->cond) == 0);
        *end_ns = world->end_ns;
        enum rig_status status = atomic_load_explicit(&world->failed, memory_order_relaxed);
        RIG_ASSERT(pthread_mutex_unlock(&world->mutex) == 0);
        return status == RIG_OK ? RIG_OK : rig__failed(world, earliest_ns, end_ns);
    }
    RIG_ASSERT(pthread_mutex_unlock(&world->mutex) == 0);
    rig__wait_generation(world, generation, op);
    if (atomic_load_explicit(&world->failed, memory_order_acquire) != RIG_OK)
        return rig__failed(world, earliest_ns, end_ns);
    /* end_ns of this generation stays put until every rank (this one included) has arrived at
     * the next collective, so it is still ours. */
    *end_ns = world->end_ns;
    return RIG_OK;
}

void rig_sim_world_abort(struct rig_sim_world *world, int32_t rank, enum rig_status status,
                         const char *reason)
{
    RIG_ASSERT(world != NULL && reason != NULL);
    RIG_ASSERT(status < 0);
    char message[RIG_SIM_FAILURE_MAX];
    RIG_ASSERT(pthread_mutex_lock(&world->mutex) == 0);
    snprintf(message, sizeof message, "rank %d failed before collective #%llu: %s", rank,
             (unsigned long long)atomic_load_explicit(&world->generation, memory_order_relaxed),
             reason);
    rig__fail_locked(world, status, message);
    RIG_ASSERT(pthread_mutex_unlock(&world->mutex) == 0);
}

const char *rig_sim_world_failure(struct rig_sim_world *world)
{
    RIG_ASSERT(world != NULL);
    if (atomic_load_explicit(&world->failed, memory_order_acquire) == RIG_OK) return "";
    return world->failure;
}

/* A rank of a group across processes: its device holds the pool of its collectives
 * (sim/comm_mpi.h) instead of a world. */
static struct rig_sim_mpi *rig__across(const struct rig_comm *comm)
{
    return rig_sim_device_of(comm->device)->mpi;
}

enum rig_status rig_sim_comm_create(struct rig_device **devices, int32_t count,
                                    struct rig_comm **comms)
{
    RIG_ASSERT(devices != NULL && comms != NULL);
    struct rig_sim_device *first = rig_sim_device_of(devices[0]);
    if (first->mpi != NULL) {
        if (count != 1) return RIG_E_INVALID;
        comms[0]->context = first->mpi;
        return RIG_OK;
    }
    struct rig_sim_world *world = first->world;
    if (count > 1 && count != world->size) return RIG_E_INVALID;
    for (int32_t i = 0; i < count; i++) {
        if (rig_sim_device_of(devices[i])->world != world) return RIG_E_INVALID;
    }
    for (int32_t i = 0; i < count; i++)
        comms[i]->context = world;
    return RIG_OK;
}

void rig_sim_comm_destroy(struct rig_comm *comm)
{
    RIG_ASSERT(comm != NULL);
    comm->context = NULL; /* the world (or the pool across processes) belongs to the devices */
}

void rig_sim_comm_abort(struct rig_comm *comm, const char *reason)
{
    RIG_ASSERT(comm != NULL && comm->context != NULL);
#ifdef RIG_HAVE_MPI
    if (rig__across(comm) != NULL) {
        rig_sim_mpi_abort(rig__across(comm), reason);
        return;
    }
#endif
    rig_sim_world_abort(comm->context, comm->rank, RIG_E_DEVICE, reason);
}

const char *rig_sim_comm_error(const struct rig_comm *comm)
{
    RIG_ASSERT(comm != NULL && comm->context != NULL);
#ifdef RIG_HAVE_MPI
    if (rig__across(comm) != NULL) return rig_sim_mpi_failure(rig__across(comm));
#endif
    return rig_sim_world_failure(comm->context);
}
