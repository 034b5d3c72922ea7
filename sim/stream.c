/* stream.c — streams, events, copies and fills on the virtual clock (rules in clock.h).
 *
 * Copies and fills move real bytes at issue time; one that touches a phantom buffer moves
 * nothing but still takes its modelled time (timing-only mode).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cost.h"
#include "sim/device.h"
#include "sim/graph.h"
#include "sim/stream.h"

enum rig_status rig_sim_stream_create(struct rig_device *device, void **context)
{
    RIG_ASSERT(device != NULL && context != NULL);
    struct rig_sim_stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL) return RIG_E_NO_MEMORY;
    /* A new stream has no work: it is ready as soon as the host can launch anything. */
    stream->ready_ns = rig_sim_device_of(device)->clock.host_ns;
    *context = stream;
    return RIG_OK;
}

void rig_sim_stream_destroy(struct rig_stream *stream)
{
    struct rig_sim_stream *sim_stream = rig_sim_stream_of(stream);
    if (sim_stream->recording != NULL) {
        rig_sim_graph_recording_free(sim_stream->recording);
        free(sim_stream->recording);
    }
    free(sim_stream);
}

enum rig_status rig_sim_stream_synchronize(struct rig_stream *stream)
{
    struct rig_sim_device *device = rig_sim_device_of(stream->device);
    rig_sim_clock_host_wait_until(&device->clock, rig_sim_stream_of(stream)->ready_ns);
    return RIG_OK;
}

enum rig_status rig_sim_event_create(struct rig_device *device, void **context)
{
    RIG_ASSERT(device != NULL && context != NULL);
    struct rig_sim_event *event = calloc(1, sizeof *event);
    if (event == NULL) return RIG_E_NO_MEMORY;
    *context = event;
    return RIG_OK;
}

void rig_sim_event_destroy(struct rig_event *event)
{
    RIG_ASSERT(event != NULL);
    free(event->context);
}

enum rig_status rig_sim_event_record(struct rig_event *event, struct rig_stream *stream)
{
    RIG_ASSERT(event != NULL && event->context != NULL);
    struct rig_sim_device *device = rig_sim_device_of(stream->device);
    rig_sim_clock_host_work(&device->clock, device->profile.event_record_host_ns);
    ((struct rig_sim_event *)event->context)->time_ns = rig_sim_stream_of(stream)->ready_ns;
    return RIG_OK;
}

enum rig_status rig_sim_stream_wait_event(struct rig_stream *stream, struct rig_event *event)
{
    RIG_ASSERT(event != NULL && event->context != NULL);
    struct rig_sim_stream *sim_stream = rig_sim_stream_of(stream);
    struct rig_sim_device *device = rig_sim_device_of(stream->device);
    rig_sim_clock_host_work(&device->clock, device->profile.stream_wait_host_ns);
    int64_t t = ((const struct rig_sim_event *)event->context)->time_ns;
    if (t > sim_stream->ready_ns) sim_stream->ready_ns = t;
    return RIG_OK;
}

enum rig_status rig_sim_event_synchronize(struct rig_event *event)
{
    RIG_ASSERT(event != NULL && event->context != NULL);
    struct rig_sim_device *device = rig_sim_device_of(event->device);
    rig_sim_clock_host_wait_until(&device->clock,
                                  ((const struct rig_sim_event *)event->context)->time_ns);
    return RIG_OK;
}

enum rig_status rig_sim_event_query(struct rig_event *event, bool *complete)
{
    RIG_ASSERT(event != NULL && event->context != NULL && complete != NULL);
    const struct rig_sim_device *device = rig_sim_device_of(event->device);
    *complete = ((const struct rig_sim_event *)event->context)->time_ns <= device->clock.host_ns;
    return RIG_OK;
}

enum rig_status rig_sim_event_elapsed_ns(const struct rig_event *start, const struct rig_event *end,
                                         int64_t *ns)
{
    RIG_ASSERT(start != NULL && end != NULL && ns != NULL);
    *ns = ((const struct rig_sim_event *)end->context)->time_ns -
          ((const struct rig_sim_event *)start->context)->time_ns;
    return RIG_OK;
}

enum rig_status rig_sim_memcpy_async(struct rig_stream *stream, void *dst, const void *src,
                                     size_t bytes, enum rig_copy_kind kind)
{
    RIG_ASSERT(dst != NULL && src != NULL && bytes > 0);
    struct rig_sim_device *device = rig_sim_device_of(stream->device);
    struct rig_sim_stream *sim_stream = rig_sim_stream_of(stream);
    const struct rig_sim_memory *memory = &device->memory;
    bool phantom = rig_sim_memory_is_phantom(memory, dst) || rig_sim_memory_is_phantom(memory, src);
    if (!phantom) memmove(dst, src, bytes);
    int64_t duration = rig_sim_cost_copy_ns(&device->profile, kind, bytes);
    /* CUDA stages a copy from or to pageable host memory through its own pinned buffer and
     * returns only when it is done: the host waits for the copy (and all before it). With
     * the profile's pageable_host_copies, an upload from pageable memory also waits for the
     * stream's earlier work first, as the H100 measurably does. */
    const void *host = kind == RIG_COPY_HOST_TO_DEVICE   ? src
                       : kind == RIG_COPY_DEVICE_TO_HOST ? dst
                                                         : NULL;
    bool pageable = host != NULL && !rig_hal_host_is_pinned(host, bytes);
    if (pageable && kind == RIG_COPY_HOST_TO_DEVICE && device->profile.pageable_host_copies)
        rig_sim_clock_host_wait_until(&device->clock, sim_stream->ready_ns);
    const struct rig_sim_profile *profile = &device->profile;
    int64_t issue = kind == RIG_COPY_HOST_TO_DEVICE   ? profile->upload_host_ns
                    : kind == RIG_COPY_DEVICE_TO_HOST ? profile->download_host_ns
                                                      : profile->device_copy_host_ns;
    sim_stream->ready_ns = rig_sim_clock_copy(&device->clock, issue, sim_stream->ready_ns, duration);
    if (pageable)
        rig_sim_clock_host_wait_until(&device->clock, sim_stream->ready_ns);
    return RIG_OK;
}

enum rig_status rig_sim_fill_u32(struct rig_stream *stream, void *dst, uint32_t value, size_t count)
{
    RIG_ASSERT(dst != NULL && count > 0);
    struct rig_sim_device *device = rig_sim_device_of(stream->device);
    struct rig_sim_stream *sim_stream = rig_sim_stream_of(stream);
    if (!rig_sim_memory_is_phantom(&device->memory, dst)) {
        uint32_t *words = dst;
        for (size_t i = 0; i < count; i++)
            words[i] = value;
    }
    /* A fill is a kernel (cudaMemsetD32Async) on the compute engine. */
    int64_t start = rig_sim_clock_kernel_start(&device->clock, &device->profile,
                                               device->profile.kernel_launch_host_ns,
                                               sim_stream->ready_ns);
    int64_t duration = rig_sim_cost_fill_ns(&device->profile, count * sizeof(uint32_t));
    sim_stream->ready_ns = rig_sim_clock_kernel_run(&device->clock, start, duration);
    device->stats.device_busy_ns += duration;
    return RIG_OK;
}

#define RIG__FILL_THREADS_MAX 32

struct rig__fill_job {
    struct rig_dummy_piece piece; /* a band of the block's rows */
    uint16_t *out;
};

static void *rig__fill_job_run(void *arg)
{
    struct rig__fill_job *job = arg;
    rig_dummy_fill_host(&job->piece, job->out);
    return NULL;
}

/* rig_dummy_fill_host over bands of rows, one host thread each (up to the CPUs online): a
 * value is a pure function of its element's index, so the split never changes a bit. A band
 * whose thread cannot start is filled here. Small blocks stay on this thread. */
static void rig__fill_dummy_host(const struct rig_dummy_piece *piece, uint16_t *out)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t threads = cpus < 1 ? 1 : cpus > RIG__FILL_THREADS_MAX ? RIG__FILL_THREADS_MAX : cpus;
    if (piece->rows * piece->cols < (1 << 18) || threads > piece->rows) threads = 1;
    struct rig__fill_job jobs[RIG__FILL_THREADS_MAX];
    pthread_t ids[RIG__FILL_THREADS_MAX];
    bool started[RIG__FILL_THREADS_MAX] = {false};
    for (int64_t t = 0; t < threads; t++) {
        int64_t begin = piece->rows * t / threads, end = piece->rows * (t + 1) / threads;
        jobs[t].piece = *piece;
        jobs[t].piece.row0 = piece->row0 + begin;
        jobs[t].piece.rows = end - begin;
        jobs[t].out = out + begin * piece->cols;
        if (t > 0) started[t] = pthread_create(&ids[t], NULL, rig__fill_job_run, &jobs[t]) == 0;
    }
    for (int64_t t = 0; t < threads; t++)
        if (!started[t]) rig__fill_job_run(&jobs[t]);
    for (int64_t t = 1; t < threads; t++)
        if (started[t]) pthread_join(ids[t], NULL);
}

/* A dummy-weight fill computes hal/dummy.h's values on the host (in bands of rows over the
 * host's CPUs) and takes the modelled time of a fill of the same bytes, as rig_sim_fill_u32
 * does (the Philox arithmetic is not costed: it runs at start-up, before any scenario's clock
 * starts). */
enum rig_status rig_sim_fill_dummy_bf16(struct rig_stream *stream, void *dst,
                                        const struct rig_dummy_piece *piece)
{
    RIG_ASSERT(dst != NULL && piece != NULL);
    RIG_ASSERT(piece->rows > 0 && piece->cols > 0);
    struct rig_sim_device *device = rig_sim_device_of(stream->device);
    struct rig_sim_stream *sim_stream = rig_sim_stream_of(stream);
    if (!rig_sim_memory_is_phantom(&device->memory, dst)) rig__fill_dummy_host(piece, dst);
    int64_t start = rig_sim_clock_kernel_start(&device->clock, &device->profile,
                                               device->profile.kernel_launch_host_ns,
                                               sim_stream->ready_ns);
    size_t bytes = (size_t)piece->rows * (size_t)piece->cols * sizeof(uint16_t);
    int64_t duration = rig_sim_cost_fill_ns(&device->profile, bytes);
    sim_stream->ready_ns = rig_sim_clock_kernel_run(&device->clock, start, duration);
    device->stats.device_busy_ns += duration;
    return RIG_OK;
}

int64_t rig_sim_now_ns(struct rig_device *device)
{
    return rig_sim_device_of(device)->clock.host_ns;
}

void rig_sim_host_work_ns(struct rig_device *device, int64_t ns)
{
    rig_sim_clock_host_work(&rig_sim_device_of(device)->clock, ns);
}

void rig_sim_host_wait_until_ns(struct rig_device *device, int64_t t_ns)
{
    rig_sim_clock_host_wait_until(&rig_sim_device_of(device)->clock, t_ns);
}
