/* comm.c — the TP world: barrier, rank-ordered reduction, all-gather, see comm.h. */
#include "sim/comm.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cost.h"
#include "sim/device.h"

struct rig_sim_world *rig_sim_world_create(int32_t size)
{
    RIG_ASSERT(size >= 1 && size <= RIG_DEVICES_MAX);
    struct rig_sim_world *world = calloc(1, sizeof *world);
    if (world == NULL) return NULL;
    if (pthread_mutex_init(&world->mutex, NULL) != 0) {
        free(world);
        return NULL;
    }
    if (pthread_cond_init(&world->cond, NULL) != 0) {
        pthread_mutex_destroy(&world->mutex);
        free(world);
        return NULL;
    }
    atomic_init(&world->generation, 0);
    world->size = size;
    world->refs = size;
    return world;
}

void rig_sim_world_release(struct rig_sim_world *world)
{
    if (world == NULL) return;
    RIG_ASSERT(pthread_mutex_lock(&world->mutex) == 0);
    RIG_ASSERT(world->refs > 0);
    bool last = --world->refs == 0;
    RIG_ASSERT_MSG(!last || world->arrived == 0, "device closed inside a collective");
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

/* The last arrival's work: data (unless phantom), then the common end time. */
static void rig__complete(struct rig_sim_world *world, const struct rig_sim_profile *profile)
{
    rig__check_agree(world);
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

/* Waits until the world's generation moves past `generation`: polls (yielding the CPU to the
 * ranks still on their way) before sleeping on the condition variable. */
static void rig__wait_generation(struct rig_sim_world *world, uint64_t generation)
{
    for (int32_t i = 0; i < RIG_SIM_WORLD_POLLS; i++) {
        if (atomic_load_explicit(&world->generation, memory_order_acquire) != generation) return;
        sched_yield();
    }
    RIG_ASSERT(pthread_mutex_lock(&world->mutex) == 0);
    world->sleepers++;
    while (atomic_load_explicit(&world->generation, memory_order_acquire) == generation)
        RIG_ASSERT(pthread_cond_wait(&world->cond, &world->mutex) == 0);
    world->sleepers--;
    RIG_ASSERT(pthread_mutex_unlock(&world->mutex) == 0);
}

int64_t rig_sim_world_collective(struct rig_sim_world *world, const struct rig_sim_profile *profile,
                                 int32_t rank, const struct rig_op *op, int64_t earliest_ns,
                                 bool phantom)
{
    RIG_ASSERT(world != NULL && profile != NULL && op != NULL);
    RIG_ASSERT(rank >= 0 && rank < world->size);
    RIG_ASSERT(pthread_mutex_lock(&world->mutex) == 0);
    world->arrivals[rank] = (struct rig_sim_arrival){*op, earliest_ns, phantom};
    world->arrived++;
    RIG_ASSERT(world->arrived <= world->size);
    uint64_t generation = atomic_load_explicit(&world->generation, memory_order_relaxed);
    if (world->arrived == world->size) {
        rig__complete(world, profile);
        world->arrived = 0;
        /* release: end_ns and the results are visible to whoever sees the new generation */
        atomic_store_explicit(&world->generation, generation + 1, memory_order_release);
        if (world->sleepers > 0) RIG_ASSERT(pthread_cond_broadcast(&world->cond) == 0);
        int64_t end = world->end_ns;
        RIG_ASSERT(pthread_mutex_unlock(&world->mutex) == 0);
        return end;
    }
    RIG_ASSERT(pthread_mutex_unlock(&world->mutex) == 0);
    rig__wait_generation(world, generation);
    /* end_ns of this generation stays put until every rank (this one included) has arrived at
     * the next collective, so it is still ours. */
    return world->end_ns;
}

enum rig_status rig_sim_comm_create(struct rig_device **devices, int32_t count,
                                    struct rig_comm **comms)
{
    RIG_ASSERT(devices != NULL && comms != NULL);
    struct rig_sim_world *world = rig_sim_device_of(devices[0])->world;
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
    comm->context = NULL; /* the world belongs to the devices */
}
