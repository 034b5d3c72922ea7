/* backend.c — the simulator's backend table, device open/close, buffers, faults, stats.
 *
 * Opening `count` devices loads the profile once (config->profile), sets up each device's
 * memory (phantom reservation in timing-only mode) and creates the world the ranks share
 * for collectives. See sim/sim.h for the whole picture.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/comm.h"
#include "sim/comm_mpi.h"
#include "sim/device.h"
#include "sim/graph.h"
#include "sim/stream.h"

static const struct rig_backend_iface rig__sim_iface;

static void rig__device_free(struct rig_sim_device *device)
{
    if (device == NULL) return;
    rig_sim_memory_deinit(&device->memory);
    free(device);
}

/* rig_sim_set_open_faults: the plan new devices start with. */
static struct rig_sim_faults rig__open_faults = {.fail_alloc_at = -1, .stall_op_at = -1};

void rig_sim_set_open_faults(const struct rig_sim_faults *faults)
{
    struct rig_sim_faults none = {.fail_alloc_at = -1, .stall_op_at = -1};
    rig__open_faults = faults != NULL ? *faults : none;
}

static enum rig_status rig__device_init(const struct rig_sim_profile *profile,
                                        const struct rig_device_config *config, int32_t rank,
                                        struct rig_sim_world *world, struct rig_device *out)
{
    struct rig_sim_device *device = calloc(1, sizeof *device);
    if (device == NULL) return RIG_E_NO_MEMORY;
    device->profile = *profile;
    device->timing_only = config->timing_only;
    device->rank = rank;
    device->world = world;
    device->faults = rig__open_faults;
    enum rig_status status =
        rig_sim_memory_init(&device->memory, profile->memory_bytes, config->timing_only);
    if (status != RIG_OK) {
        free(device);
        return status;
    }
    out->context = device;
    snprintf(out->info.name, sizeof out->info.name, "sim:%.59s", profile->name);
    out->info.memory_bytes = profile->memory_bytes;
    out->info.timing_only = config->timing_only;
    out->info.virtual_clock = true;
    out->info.host_model = profile->host;
    return RIG_OK;
}

/* One rank of a group across processes (hal.h): its collectives go to the other processes
 * over MPI (sim/comm_mpi.h), whose job must have process `group_rank` of group_size. */
static enum rig_status rig__open_across(const struct rig_sim_profile *profile,
                                        const struct rig_device_config *config,
                                        int64_t timeout_ms, struct rig_device *device)
{
#ifdef RIG_HAVE_MPI
    struct rig_sim_mpi *pool = NULL;
    enum rig_status status = rig_sim_mpi_create(config->collective_bytes_max, timeout_ms, &pool);
    if (status != RIG_OK) {
        fprintf(stderr, "rig: sim: cannot join the MPI job for collectives: %s%s\n",
                rig_status_message(status),
                status == RIG_E_STATE ? " (MPI is not initialised: run under mpirun)" : "");
        return status;
    }
    if (rig_sim_mpi_rank(pool) != config->group_rank ||
        rig_sim_mpi_size(pool) != config->group_size) {
        fprintf(stderr, "rig: sim: rank %d of %d, but this is process %d of an MPI job of %d\n",
                config->group_rank, config->group_size, rig_sim_mpi_rank(pool),
                rig_sim_mpi_size(pool));
        rig_sim_mpi_destroy(pool);
        return RIG_E_INVALID;
    }
    status = rig__device_init(profile, config, config->group_rank, NULL, device);
    if (status != RIG_OK) {
        rig_sim_mpi_destroy(pool);
        return status;
    }
    rig_sim_device_of(device)->mpi = pool;
    return RIG_OK;
#else
    (void)profile, (void)timeout_ms, (void)device;
    fprintf(stderr, "rig: sim: rank %d of a group across processes needs OpenMPI, and this "
            "build has none (install libopenmpi-dev and rebuild)\n", config->group_rank);
    return RIG_E_UNSUPPORTED;
#endif
}

static enum rig_status rig__open(const struct rig_device_config *config, int32_t count,
                                 struct rig_device **devices)
{
    RIG_ASSERT(config != NULL && devices != NULL);
    RIG_ASSERT(count >= 1 && count <= RIG_DEVICES_MAX);
    struct rig_sim_profile profile;
    char error[RIG_SIM_PROFILE_ERROR_MAX];
    enum rig_status status = rig_sim_profile_load(config->profile, &profile, error, sizeof error);
    if (status != RIG_OK) {
        fprintf(stderr, "rig: sim: %s\n", error);
        return status;
    }
    int64_t timeout_ms = config->collective_timeout_ms > 0 ? config->collective_timeout_ms
                                                            : RIG_SIM_COLLECTIVE_TIMEOUT_MS_DEFAULT;
    if (config->group_size > count)
        return rig__open_across(&profile, config, timeout_ms, devices[0]);
    struct rig_sim_world *world = rig_sim_world_create(count, timeout_ms);
    if (world == NULL) return RIG_E_NO_MEMORY;
    for (int32_t i = 0; i < count && status == RIG_OK; i++)
        status = rig__device_init(&profile, config, i, world, devices[i]);
    if (status == RIG_OK) return RIG_OK;
    fprintf(stderr, "rig: sim: cannot open %d devices: %s\n", count, rig_status_message(status));
    for (int32_t i = 0; i < count; i++) {
        rig__device_free(devices[i]->context);
        devices[i]->context = NULL;
    }
    for (int32_t i = 0; i < count; i++)
        rig_sim_world_release(world);
    return status;
}

/* RIG_SIM_STATS=1: a device prints on closing how many ops it ran and how many its profile's
 * op table did not reach (stderr only; results are untouched). For checks that a profile's
 * table is in use (tests/CMakeLists.txt, sim_op_table_profiles). */
static void rig__print_stats(const struct rig_sim_device *sim_device)
{
    const char *flag = getenv("RIG_SIM_STATS");
    if (flag == NULL || strcmp(flag, "1") != 0) return;
    const struct rig_sim_stats *s = &sim_device->stats;
    fprintf(stderr,
            "rig sim: rank %d, profile %s, op table %s: %lld ops, %lld outside the table\n",
            (int)sim_device->rank, sim_device->profile.name,
            sim_device->profile.table != NULL ? sim_device->profile.op_table : "none",
            (long long)s->ops_issued, (long long)s->table_misses);
}

static void rig__close(struct rig_device *device)
{
    struct rig_sim_device *sim_device = rig_sim_device_of(device);
    rig__print_stats(sim_device);
    rig_sim_world_release(sim_device->world);
#ifdef RIG_HAVE_MPI
    rig_sim_mpi_destroy(sim_device->mpi);
#endif
    rig__device_free(sim_device);
    device->context = NULL;
}

static enum rig_status rig__buffer_alloc(struct rig_device *device, size_t bytes,
                                         enum rig_memory_use use, void **data, void **context)
{
    struct rig_sim_device *sim_device = rig_sim_device_of(device);
    int64_t index = sim_device->allocs_since_faults++;
    if (sim_device->faults.fail_alloc_at >= 0 && index == sim_device->faults.fail_alloc_at)
        return RIG_E_DEVICE_MEMORY;
    return rig_sim_memory_alloc(&sim_device->memory, bytes, use, data, context);
}

static void rig__buffer_free(struct rig_device *device, void *data, void *context)
{
    rig_sim_memory_free(&rig_sim_device_of(device)->memory, data, context);
}

static struct rig_sim_faults rig__faults_of(const struct rig_hal_faults *faults)
{
    return (struct rig_sim_faults){faults->fail_alloc_at,         faults->stall_op_at,
                                   faults->stall_ns,              faults->collective_fault,
                                   faults->collective_at,         faults->collective_delay_ns};
}

/* The HAL's fault slots: the same plans as rig_sim_set_faults / rig_sim_set_open_faults. */
static enum rig_status rig__set_faults(struct rig_device *device,
                                       const struct rig_hal_faults *faults)
{
    struct rig_sim_faults plan = rig__faults_of(faults);
    return rig_sim_set_faults(device, &plan);
}

static void rig__set_open_faults(const struct rig_hal_faults *faults)
{
    struct rig_sim_faults plan = faults != NULL ? rig__faults_of(faults)
                                                : (struct rig_sim_faults){.fail_alloc_at = -1, .stall_op_at = -1};
    rig_sim_set_open_faults(&plan);
}

static const struct rig_backend_iface rig__sim_iface = {
    .name = "sim",
    .open = rig__open,
    .close = rig__close,
    .buffer_alloc = rig__buffer_alloc,
    .buffer_free = rig__buffer_free,
    .memcpy_async = rig_sim_memcpy_async,
    .fill_u32 = rig_sim_fill_u32,
    .fill_dummy_bf16 = rig_sim_fill_dummy_bf16,
    .stream_create = rig_sim_stream_create,
    .stream_destroy = rig_sim_stream_destroy,
    .stream_synchronize = rig_sim_stream_synchronize,
    .event_create = rig_sim_event_create,
    .event_destroy = rig_sim_event_destroy,
    .event_record = rig_sim_event_record,
    .stream_wait_event = rig_sim_stream_wait_event,
    .event_synchronize = rig_sim_event_synchronize,
    .event_query = rig_sim_event_query,
    .event_elapsed_ns = rig_sim_event_elapsed_ns,
    .graph_capture_begin = rig_sim_graph_capture_begin,
    .graph_capture_end = rig_sim_graph_capture_end,
    .graph_launch = rig_sim_graph_launch,
    .graph_destroy = rig_sim_graph_destroy,
    .groups_across_processes = true,
    .comm_create = rig_sim_comm_create,
    .comm_destroy = rig_sim_comm_destroy,
    .comm_abort = rig_sim_comm_abort,
    .comm_error = rig_sim_comm_error,
    .op = rig_sim_exec_op,
    .now_ns = rig_sim_now_ns,
    .host_work_ns = rig_sim_host_work_ns,
    .host_wait_until_ns = rig_sim_host_wait_until_ns,
    .set_faults = rig__set_faults,
    .set_open_faults = rig__set_open_faults,
};

const struct rig_backend_iface *rig_sim_backend(void)
{
    return &rig__sim_iface;
}

static bool rig__is_sim(const struct rig_device *device)
{
    return device != NULL && device->iface == &rig__sim_iface && device->context != NULL;
}

enum rig_status rig_sim_set_faults(struct rig_device *device, const struct rig_sim_faults *faults)
{
    if (!rig__is_sim(device)) return RIG_E_HANDLE;
    if (faults == NULL || faults->stall_ns < 0 || faults->collective_delay_ns < 0 ||
        faults->collective_at < 0 || faults->collective_fault < RIG_HAL_COLLECTIVE_NONE ||
        faults->collective_fault > RIG_HAL_COLLECTIVE_FAIL)
        return RIG_E_INVALID;
    struct rig_sim_device *sim_device = rig_sim_device_of(device);
    sim_device->faults = *faults;
    sim_device->allocs_since_faults = 0;
    sim_device->ops_since_faults = 0;
    sim_device->collectives_since_faults = 0;
    return RIG_OK;
}



enum rig_status rig_sim_get_stats(struct rig_device *device, struct rig_sim_stats *out)
{
    if (!rig__is_sim(device)) return RIG_E_HANDLE;
    if (out == NULL) return RIG_E_INVALID;
    const struct rig_sim_device *sim_device = rig_sim_device_of(device);
    *out = sim_device->stats;
    out->bytes_allocated = sim_device->memory.allocated_bytes;
    out->bytes_resident = sim_device->memory.resident_bytes;
    return RIG_OK;
}
