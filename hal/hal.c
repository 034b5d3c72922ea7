/* hal.c — the dispatch layer: handle management, argument checks, defaults, registry.
 *
 * Every public rig_hal_* call lands here first. Handles are checked (non-NULL, same device),
 * copies are bounds-checked, ops are validated by rig_hal_op_check (op_check.c); only then is
 * the backend called. On an error nothing is issued and no state changes.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "hal/hal_impl.h"

static const struct rig_backend_iface *rig__backends[RIG_BACKENDS_MAX];
static int32_t rig__backend_count;
static char rig__backend_names[RIG_BACKENDS_MAX * 16];

void rig_hal_register(const struct rig_backend_iface *iface)
{
    RIG_ASSERT(iface != NULL && iface->name != NULL);
    RIG_ASSERT(iface->open && iface->close && iface->buffer_alloc && iface->buffer_free);
    RIG_ASSERT(iface->memcpy_async && iface->fill_u32 && iface->fill_dummy_bf16);
    RIG_ASSERT(iface->op && iface->now_ns);
    RIG_ASSERT(iface->stream_create && iface->stream_destroy && iface->stream_synchronize);
    RIG_ASSERT(iface->event_create && iface->event_destroy && iface->event_record);
    RIG_ASSERT(iface->stream_wait_event && iface->event_synchronize);
    for (int32_t i = 0; i < rig__backend_count; i++) {
        if (rig__backends[i] == iface) return; /* registering the same table again is fine */
        RIG_ASSERT_MSG(strcmp(rig__backends[i]->name, iface->name) != 0, "duplicate backend");
    }
    RIG_ASSERT(rig__backend_count < RIG_BACKENDS_MAX);
    rig__backends[rig__backend_count++] = iface;
    size_t used = strlen(rig__backend_names);
    snprintf(rig__backend_names + used, sizeof rig__backend_names - used, "%s%s",
             used ? " " : "", iface->name);
}

const char *rig_hal_backends(void)
{
    return rig__backend_names;
}

/* A group across processes (config->group_size > count): one rank, in range, on a backend
 * that can. */
static enum rig_status rig__check_group(const struct rig_backend_iface *iface,
                                        const struct rig_device_config *config, int32_t count)
{
    if (config->group_size <= count) return RIG_OK;
    if (count != 1 || config->group_size > RIG_DEVICES_MAX || config->group_rank < 0 ||
        config->group_rank >= config->group_size) {
        fprintf(stderr, "rig: rank %d of a group of %d across processes, %d opened here: out of "
                "range (one rank per process, at most %d)\n", config->group_rank,
                config->group_size, count, RIG_DEVICES_MAX);
        return RIG_E_RANGE;
    }
    if (iface->groups_across_processes) return RIG_OK;
    fprintf(stderr, "rig: the %s backend runs no group across processes\n", iface->name);
    return RIG_E_UNSUPPORTED;
}

enum rig_status rig_hal_open(const char *backend, const struct rig_device_config *config,
                             int32_t count, struct rig_device **devices)
{
    if (backend == NULL || config == NULL || devices == NULL) return RIG_E_INVALID;
    if (count < 1 || count > RIG_DEVICES_MAX) {
        fprintf(stderr, "rig: device count %d out of range 1..%d\n", count, RIG_DEVICES_MAX);
        return RIG_E_RANGE;
    }
    const struct rig_backend_iface *iface = NULL;
    for (int32_t i = 0; i < rig__backend_count; i++) {
        if (strcmp(rig__backends[i]->name, backend) == 0) iface = rig__backends[i];
    }
    if (iface == NULL) {
        fprintf(stderr, "rig: backend '%s' is not compiled in (have: %s)\n", backend,
                rig__backend_names[0] ? rig__backend_names : "none");
        return RIG_E_NOT_FOUND;
    }
    enum rig_status group = rig__check_group(iface, config, count);
    if (group != RIG_OK) return group;
    bool across = config->group_size > count;
    for (int32_t i = 0; i < count; i++) {
        devices[i] = calloc(1, sizeof *devices[i]);
        if (devices[i] == NULL) {
            for (int32_t j = 0; j < i; j++) free(devices[j]);
            return RIG_E_NO_MEMORY;
        }
        devices[i]->iface = iface;
        devices[i]->info.backend = iface->name;
        devices[i]->info.ordinal = across ? config->group_rank : i;
        devices[i]->info.group_size = across ? config->group_size : count;
    }
    enum rig_status status = iface->open(config, count, devices);
    if (status != RIG_OK) {
        for (int32_t i = 0; i < count; i++) {
            free(devices[i]);
            devices[i] = NULL;
        }
    }
    /* A trace that cannot be allocated is left off: it changes nothing else. */
    for (int32_t i = 0; status == RIG_OK && i < count && rig_issue_trace_wanted(); i++)
        devices[i]->issue_trace = calloc(1, sizeof *devices[i]->issue_trace);
    return status;
}

void rig_hal_close(struct rig_device *device)
{
    if (device == NULL) return;
    RIG_ASSERT_MSG(device->live_objects == 0, "closing a device with live objects");
    if (device->issue_trace != NULL) {
        rig_issue_trace_print(device->issue_trace, device->info.name, stderr);
        free(device->issue_trace);
    }
    device->iface->close(device);
    free(device);
}

const struct rig_device_info *rig_hal_device_info(const struct rig_device *device)
{
    RIG_ASSERT(device != NULL);
    return &device->info;
}

const struct rig_issue_trace *rig_hal_issue_trace(const struct rig_device *device)
{
    RIG_ASSERT(device != NULL);
    return device->issue_trace;
}

static int64_t rig__wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The issue trace's clock at the start of an issue on `stream`: -1 when its device traces
 * nothing or the stream is capturing (a recorded op is not an issue). */
static int64_t rig__trace_start(const struct rig_stream *stream)
{
    if (stream->device->issue_trace == NULL || stream->capturing) return -1;
    int64_t now = rig__wall_ns();
    rig_issue_trace_start(stream->device->issue_trace, now);
    return now;
}

static void rig__trace_end(const struct rig_stream *stream, int32_t kind, int64_t start,
                           enum rig_status status)
{
    if (start < 0) return;
    int64_t now = rig__wall_ns();
    if (status == RIG_OK) rig_issue_trace_add(stream->device->issue_trace, kind, now - start);
    rig_issue_trace_end(stream->device->issue_trace, now);
}

/* --- buffers -------------------------------------------------------------------------- */

enum rig_status rig_hal_buffer_alloc(struct rig_device *device, size_t bytes,
                                     enum rig_memory_use use, struct rig_buffer **out)
{
    if (device == NULL || out == NULL) return RIG_E_HANDLE;
    if (bytes == 0 || use < RIG_MEMORY_WEIGHTS || use > RIG_MEMORY_METADATA)
        return RIG_E_INVALID;
    struct rig_buffer *buffer = calloc(1, sizeof *buffer);
    if (buffer == NULL) return RIG_E_NO_MEMORY;
    enum rig_status status =
        device->iface->buffer_alloc(device, bytes, use, &buffer->data, &buffer->context);
    if (status != RIG_OK) {
        free(buffer);
        return status;
    }
    RIG_ASSERT(buffer->data != NULL);
    buffer->device = device;
    buffer->bytes = bytes;
    buffer->use = use;
    device->live_objects++;
    *out = buffer;
    return RIG_OK;
}

void rig_hal_buffer_free(struct rig_buffer *buffer)
{
    if (buffer == NULL) return;
    buffer->device->iface->buffer_free(buffer->device, buffer->data, buffer->context);
    buffer->device->live_objects--;
    free(buffer);
}

void *rig_hal_buffer_ptr(const struct rig_buffer *buffer)
{
    RIG_ASSERT(buffer != NULL);
    return buffer->data;
}

size_t rig_hal_buffer_size(const struct rig_buffer *buffer)
{
    RIG_ASSERT(buffer != NULL);
    return buffer->bytes;
}

/* --- pinned host memory ------------------------------------------------------------------ */

/* The live pinned allocations of the process, whichever device made them: copies ask
 * rig_hal_host_is_pinned from any rank's thread, so the table has a lock. */
struct rig__pinned {
    uintptr_t start;
    size_t bytes;
};
static struct rig__pinned rig__pinned_table[RIG_HAL_PINNED_MAX];
static int32_t rig__pinned_count;
static pthread_mutex_t rig__pinned_lock = PTHREAD_MUTEX_INITIALIZER;

enum rig_status rig_hal_host_alloc(struct rig_device *device, size_t bytes, void **out)
{
    if (device == NULL || out == NULL) return RIG_E_HANDLE;
    if (bytes == 0) return RIG_E_INVALID;
    void *host = NULL;
    enum rig_status status = RIG_OK;
    /* Allocated under the lock (start-up only): the table and the memory change together. */
    pthread_mutex_lock(&rig__pinned_lock);
    if (rig__pinned_count == RIG_HAL_PINNED_MAX) {
        status = RIG_E_CAPACITY;
    } else if (device->iface->host_alloc != NULL) {
        status = device->iface->host_alloc(device, bytes, &host);
    } else if (posix_memalign(&host, 256, bytes) == 0) {
        memset(host, 0, bytes);
    } else {
        status = RIG_E_NO_MEMORY;
    }
    if (status == RIG_OK) {
        RIG_ASSERT(host != NULL);
        rig__pinned_table[rig__pinned_count++] = (struct rig__pinned){(uintptr_t)host, bytes};
    }
    pthread_mutex_unlock(&rig__pinned_lock);
    if (status != RIG_OK) return status;
    device->live_objects++;
    *out = host;
    return RIG_OK;
}

void rig_hal_host_free(struct rig_device *device, void *host)
{
    if (host == NULL) return;
    RIG_ASSERT(device != NULL);
    pthread_mutex_lock(&rig__pinned_lock);
    int32_t found = -1;
    for (int32_t i = 0; i < rig__pinned_count; i++)
        if (rig__pinned_table[i].start == (uintptr_t)host) found = i;
    RIG_ASSERT_MSG(found >= 0, "rig_hal_host_free of memory rig_hal_host_alloc did not return");
    rig__pinned_table[found] = rig__pinned_table[--rig__pinned_count];
    pthread_mutex_unlock(&rig__pinned_lock);
    if (device->iface->host_free != NULL) device->iface->host_free(device, host);
    else free(host);
    device->live_objects--;
}

bool rig_hal_host_is_pinned(const void *host, size_t bytes)
{
    uintptr_t at = (uintptr_t)host;
    bool pinned = false;
    pthread_mutex_lock(&rig__pinned_lock);
    for (int32_t i = 0; i < rig__pinned_count && !pinned; i++) {
        const struct rig__pinned *p = &rig__pinned_table[i];
        pinned = at >= p->start && at - p->start <= p->bytes && bytes <= p->bytes - (at - p->start);
    }
    pthread_mutex_unlock(&rig__pinned_lock);
    return pinned;
}

static void *rig__offset(void *base, size_t offset)
{
    return (void *)((uintptr_t)base + offset);
}

static enum rig_status rig__check_range(const struct rig_stream *stream,
                                        const struct rig_buffer *buffer, size_t offset,
                                        size_t bytes)
{
    if (stream == NULL || buffer == NULL) return RIG_E_HANDLE;
    if (buffer->device != stream->device) return RIG_E_HANDLE;
    if (stream->capturing) return RIG_E_STATE;
    if (offset > buffer->bytes || bytes > buffer->bytes - offset) return RIG_E_RANGE;
    return RIG_OK;
}

enum rig_status rig_hal_buffer_upload(struct rig_stream *stream, struct rig_buffer *buffer,
                                      size_t offset, const void *src, size_t bytes)
{
    enum rig_status status = rig__check_range(stream, buffer, offset, bytes);
    if (status != RIG_OK) return status;
    if (src == NULL && bytes > 0) return RIG_E_INVALID;
    if (bytes == 0) return RIG_OK;
    int64_t start = rig__trace_start(stream);
    status = stream->device->iface->memcpy_async(stream, rig__offset(buffer->data, offset), src,
                                                 bytes, RIG_COPY_HOST_TO_DEVICE);
    rig__trace_end(stream, RIG_ISSUE_UPLOAD, start, status);
    return status;
}

enum rig_status rig_hal_buffer_download(struct rig_stream *stream,
                                        const struct rig_buffer *buffer, size_t offset,
                                        void *dst, size_t bytes)
{
    enum rig_status status = rig__check_range(stream, buffer, offset, bytes);
    if (status != RIG_OK) return status;
    if (dst == NULL && bytes > 0) return RIG_E_INVALID;
    if (bytes == 0) return RIG_OK;
    int64_t start = rig__trace_start(stream);
    status = stream->device->iface->memcpy_async(stream, dst, rig__offset(buffer->data, offset),
                                                 bytes, RIG_COPY_DEVICE_TO_HOST);
    rig__trace_end(stream, RIG_ISSUE_DOWNLOAD, start, status);
    return status;
}

enum rig_status rig_hal_buffer_fill(struct rig_stream *stream, struct rig_buffer *buffer,
                                    size_t offset, uint32_t value, size_t count)
{
    if (count > SIZE_MAX / 4) return RIG_E_RANGE;
    enum rig_status status = rig__check_range(stream, buffer, offset, count * 4);
    if (status != RIG_OK) return status;
    if (offset % 4 != 0) return RIG_E_INVALID;
    if (count == 0) return RIG_OK;
    return stream->device->iface->fill_u32(stream, rig__offset(buffer->data, offset), value,
                                           count);
}

/* A dummy block inside its tensor, every element index within int64_t. */
static bool rig__dummy_piece_valid(const struct rig_dummy_piece *piece)
{
    if (piece->width < 1 || piece->row0 < 0 || piece->col0 < 0) return false;
    if (piece->rows < 0 || piece->cols < 0 || piece->col0 > piece->width - piece->cols)
        return false;
    return piece->row0 <= INT64_MAX / piece->width - piece->rows;
}

enum rig_status rig_hal_buffer_fill_dummy(struct rig_stream *stream, struct rig_buffer *buffer,
                                          size_t offset, const struct rig_dummy_piece *piece)
{
    if (piece == NULL || !rig__dummy_piece_valid(piece) || offset % 2 != 0)
        return RIG_E_INVALID;
    if (piece->cols > 0 && (uint64_t)piece->rows > SIZE_MAX / 2 / (uint64_t)piece->cols)
        return RIG_E_RANGE;
    size_t bytes = (size_t)piece->rows * (size_t)piece->cols * 2;
    enum rig_status status = rig__check_range(stream, buffer, offset, bytes);
    if (status != RIG_OK) return status;
    if (bytes == 0) return RIG_OK;
    return stream->device->iface->fill_dummy_bf16(stream, rig__offset(buffer->data, offset),
                                                  piece);
}

enum rig_status rig_hal_buffer_copy(struct rig_stream *stream, struct rig_buffer *dst,
                                    size_t dst_offset, const struct rig_buffer *src,
                                    size_t src_offset, size_t bytes)
{
    enum rig_status status = rig__check_range(stream, dst, dst_offset, bytes);
    if (status == RIG_OK) status = rig__check_range(stream, src, src_offset, bytes);
    if (status != RIG_OK) return status;
    if (bytes == 0) return RIG_OK;
    int64_t start = rig__trace_start(stream);
    status = stream->device->iface->memcpy_async(stream, rig__offset(dst->data, dst_offset),
                                                 rig__offset(src->data, src_offset), bytes,
                                                 RIG_COPY_DEVICE_TO_DEVICE);
    rig__trace_end(stream, RIG_ISSUE_COPY, start, status);
    return status;
}

/* --- streams, events ------------------------------------------------------------------ */

enum rig_status rig_hal_stream_create(struct rig_device *device, struct rig_stream **out)
{
    if (device == NULL || out == NULL) return RIG_E_HANDLE;
    struct rig_stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL) return RIG_E_NO_MEMORY;
    stream->device = device;
    enum rig_status status = device->iface->stream_create(device, &stream->context);
    if (status != RIG_OK) {
        free(stream);
        return status;
    }
    device->live_objects++;
    *out = stream;
    return RIG_OK;
}

void rig_hal_stream_destroy(struct rig_stream *stream)
{
    if (stream == NULL) return;
    RIG_ASSERT_MSG(!stream->capturing, "destroying a stream during capture");
    stream->device->iface->stream_destroy(stream);
    stream->device->live_objects--;
    free(stream);
}

enum rig_status rig_hal_stream_synchronize(struct rig_stream *stream)
{
    if (stream == NULL) return RIG_E_HANDLE;
    if (stream->capturing) return RIG_E_STATE;
    return stream->device->iface->stream_synchronize(stream);
}

enum rig_status rig_hal_event_create(struct rig_device *device, struct rig_event **out)
{
    if (device == NULL || out == NULL) return RIG_E_HANDLE;
    struct rig_event *event = calloc(1, sizeof *event);
    if (event == NULL) return RIG_E_NO_MEMORY;
    event->device = device;
    enum rig_status status = device->iface->event_create(device, &event->context);
    if (status != RIG_OK) {
        free(event);
        return status;
    }
    device->live_objects++;
    *out = event;
    return RIG_OK;
}

void rig_hal_event_destroy(struct rig_event *event)
{
    if (event == NULL) return;
    event->device->iface->event_destroy(event);
    event->device->live_objects--;
    free(event);
}

enum rig_status rig_hal_event_record(struct rig_event *event, struct rig_stream *stream)
{
    if (event == NULL || stream == NULL) return RIG_E_HANDLE;
    if (event->device != stream->device) return RIG_E_HANDLE;
    if (stream->capturing) return RIG_E_STATE;
    int64_t start = rig__trace_start(stream);
    enum rig_status status = stream->device->iface->event_record(event, stream);
    rig__trace_end(stream, RIG_ISSUE_EVENT_RECORD, start, status);
    if (status == RIG_OK) event->recorded = true;
    return status;
}

enum rig_status rig_hal_stream_wait_event(struct rig_stream *stream, struct rig_event *event)
{
    if (event == NULL || stream == NULL) return RIG_E_HANDLE;
    if (event->device != stream->device) return RIG_E_HANDLE;
    if (stream->capturing) return RIG_E_STATE;
    if (!event->recorded) return RIG_OK; /* as CUDA: waiting on a never-recorded event */
    int64_t start = rig__trace_start(stream);
    enum rig_status status = stream->device->iface->stream_wait_event(stream, event);
    rig__trace_end(stream, RIG_ISSUE_STREAM_WAIT, start, status);
    return status;
}

enum rig_status rig_hal_event_synchronize(struct rig_event *event)
{
    if (event == NULL) return RIG_E_HANDLE;
    if (!event->recorded) return RIG_OK;
    return event->device->iface->event_synchronize(event);
}

enum rig_status rig_hal_event_query(struct rig_event *event, bool *complete)
{
    if (event == NULL || complete == NULL) return RIG_E_HANDLE;
    if (event->device->iface->event_query == NULL) return RIG_E_UNSUPPORTED;
    *complete = true;
    if (!event->recorded) return RIG_OK;
    return event->device->iface->event_query(event, complete);
}

enum rig_status rig_hal_event_elapsed_ns(const struct rig_event *start,
                                         const struct rig_event *end, int64_t *ns)
{
    if (start == NULL || end == NULL || ns == NULL) return RIG_E_HANDLE;
    if (start->device != end->device) return RIG_E_HANDLE;
    if (!start->recorded || !end->recorded) return RIG_E_STATE;
    if (start->device->iface->event_elapsed_ns == NULL) return RIG_E_UNSUPPORTED;
    return start->device->iface->event_elapsed_ns(start, end, ns);
}

/* --- graphs --------------------------------------------------------------------------- */

enum rig_status rig_hal_graph_capture_begin(struct rig_stream *stream)
{
    if (stream == NULL) return RIG_E_HANDLE;
    const struct rig_backend_iface *iface = stream->device->iface;
    if (iface->graph_capture_begin == NULL) return RIG_E_UNSUPPORTED;
    if (stream->capturing) return RIG_E_STATE;
    enum rig_status status = iface->graph_capture_begin(stream);
    if (status == RIG_OK) {
        stream->capturing = true;
        stream->captured_ops = 0;
    }
    return status;
}

enum rig_status rig_hal_graph_capture_end(struct rig_stream *stream, struct rig_graph **out)
{
    if (stream == NULL || out == NULL) return RIG_E_HANDLE;
    if (!stream->capturing) return RIG_E_STATE;
    struct rig_graph *graph = calloc(1, sizeof *graph);
    if (graph == NULL) return RIG_E_NO_MEMORY;
    graph->device = stream->device;
    stream->capturing = false;
    enum rig_status status = stream->device->iface->graph_capture_end(stream, &graph->context);
    if (status != RIG_OK) {
        free(graph);
        return status;
    }
    graph->op_count = stream->captured_ops;
    stream->device->live_objects++;
    *out = graph;
    return RIG_OK;
}

enum rig_status rig_hal_graph_launch(struct rig_graph *graph, struct rig_stream *stream)
{
    if (graph == NULL || stream == NULL) return RIG_E_HANDLE;
    if (graph->device != stream->device) return RIG_E_HANDLE;
    if (stream->capturing) return RIG_E_STATE;
    int64_t start = rig__trace_start(stream);
    enum rig_status status = stream->device->iface->graph_launch(graph, stream);
    rig__trace_end(stream, RIG_ISSUE_GRAPH_LAUNCH, start, status);
    return status;
}

void rig_hal_graph_destroy(struct rig_graph *graph)
{
    if (graph == NULL) return;
    graph->device->iface->graph_destroy(graph);
    graph->device->live_objects--;
    free(graph);
}

int32_t rig_hal_graph_op_count(const struct rig_graph *graph)
{
    RIG_ASSERT(graph != NULL);
    return graph->op_count;
}

/* --- communication -------------------------------------------------------------------- */

enum rig_status rig_hal_comm_create(struct rig_device **devices, int32_t count,
                                    struct rig_comm **comms)
{
    if (devices == NULL || comms == NULL) return RIG_E_HANDLE;
    if (count < 1 || count > RIG_DEVICES_MAX) return RIG_E_RANGE;
    for (int32_t i = 0; i < count; i++) {
        if (devices[i] == NULL) return RIG_E_HANDLE;
        if (devices[i]->iface != devices[0]->iface) return RIG_E_HANDLE;
        if (devices[i]->info.ordinal != devices[0]->info.ordinal + i) return RIG_E_INVALID;
    }
    /* The whole group, or (across processes) this process's rank of it. */
    int32_t size = devices[0]->info.group_size;
    if (size != count && (count != 1 || size < count)) return RIG_E_INVALID;
    if (size == count && devices[0]->info.ordinal != 0) return RIG_E_INVALID;
    const struct rig_backend_iface *iface = devices[0]->iface;
    if (size > 1 && iface->comm_create == NULL) return RIG_E_UNSUPPORTED;
    for (int32_t i = 0; i < count; i++) {
        comms[i] = calloc(1, sizeof *comms[i]);
        if (comms[i] == NULL) {
            for (int32_t j = 0; j < i; j++) free(comms[j]);
            return RIG_E_NO_MEMORY;
        }
        comms[i]->device = devices[i];
        comms[i]->rank = devices[i]->info.ordinal;
        comms[i]->size = size;
    }
    enum rig_status status = RIG_OK;
    if (iface->comm_create != NULL) status = iface->comm_create(devices, count, comms);
    if (status != RIG_OK) {
        for (int32_t i = 0; i < count; i++) free(comms[i]);
        return status;
    }
    for (int32_t i = 0; i < count; i++) devices[i]->live_objects++;
    return RIG_OK;
}

void rig_hal_comm_destroy(struct rig_comm *comm)
{
    if (comm == NULL) return;
    if (comm->device->iface->comm_destroy != NULL) comm->device->iface->comm_destroy(comm);
    comm->device->live_objects--;
    free(comm);
}

void rig_hal_comm_abort(struct rig_comm *comm, const char *reason)
{
    RIG_ASSERT(comm != NULL);
    if (comm->size > 1 && comm->device->iface->comm_abort != NULL)
        comm->device->iface->comm_abort(comm, reason != NULL ? reason : "aborted");
}

const char *rig_hal_comm_error(const struct rig_comm *comm)
{
    RIG_ASSERT(comm != NULL);
    if (comm->size == 1 || comm->device->iface->comm_error == NULL) return "";
    return comm->device->iface->comm_error(comm);
}

int32_t rig_hal_comm_rank(const struct rig_comm *comm)
{
    RIG_ASSERT(comm != NULL);
    return comm->rank;
}

int32_t rig_hal_comm_size(const struct rig_comm *comm)
{
    RIG_ASSERT(comm != NULL);
    return comm->size;
}

/* --- ops ------------------------------------------------------------------------------ */

/* A collective over a group of one rank: all-reduce is the identity, all-gather a copy. */
static enum rig_status rig__single_rank_collective(struct rig_stream *stream,
                                                   const struct rig_op *op)
{
    if (op->kind == RIG_OP_ALL_REDUCE) return RIG_OK;
    struct rig_op copy = {.kind = RIG_OP_COPY};
    copy.u.copy.in = op->u.all_gather.in;
    copy.u.copy.out = op->u.all_gather.in;
    copy.u.copy.out.data = op->u.all_gather.out.data;
    return stream->device->iface->op(stream, &copy);
}

enum rig_status rig_hal_op(struct rig_stream *stream, const struct rig_op *op)
{
    if (stream == NULL || op == NULL) return RIG_E_HANDLE;
    int64_t start = rig__trace_start(stream); /* the checks are part of the issue */
    enum rig_status status = rig_hal_op_check(op, stream->error, sizeof stream->error);
    if (status != RIG_OK) return status;
    const struct rig_comm *comm = NULL;
    if (op->kind == RIG_OP_ALL_REDUCE) comm = op->u.all_reduce.comm;
    if (op->kind == RIG_OP_ALL_GATHER) comm = op->u.all_gather.comm;
    if (comm != NULL && comm->device != stream->device) return RIG_E_HANDLE;
    if (comm != NULL && comm->size == 1)
        status = rig__single_rank_collective(stream, op);
    else
        status = stream->device->iface->op(stream, op);
    if (status == RIG_OK && stream->capturing) stream->captured_ops++;
    rig__trace_end(stream, (int32_t)op->kind, start, status);
    return status;
}

const char *rig_hal_stream_error(const struct rig_stream *stream)
{
    RIG_ASSERT(stream != NULL);
    return stream->error;
}

#define RIG__OP_SHORTHAND(upper, lower)                                                    \
    enum rig_status rig_hal_##lower(struct rig_stream *s, const struct rig_op_##lower *p)  \
    {                                                                                      \
        if (p == NULL) return RIG_E_INVALID;                                               \
        struct rig_op op = {.kind = RIG_OP_##upper};                                       \
        op.u.lower = *p;                                                                   \
        return rig_hal_op(s, &op);                                                         \
    }
RIG_OP_MAP(RIG__OP_SHORTHAND)
#undef RIG__OP_SHORTHAND

/* --- time ----------------------------------------------------------------------------- */

int64_t rig_hal_now_ns(struct rig_device *device)
{
    RIG_ASSERT(device != NULL);
    return device->iface->now_ns(device);
}

void rig_hal_host_work_ns(struct rig_device *device, int64_t ns)
{
    RIG_ASSERT(device != NULL);
    RIG_ASSERT(ns >= 0);
    if (device->iface->host_work_ns != NULL) device->iface->host_work_ns(device, ns);
}

/* The wall-clock wait (the default of a real backend), for replayed arrivals: a request's
 * TTFT counts from its scripted arrival, so a late wake-up is charged to the engine. A plain
 * nanosleep overshoots by the thread's timer slack (50 us by default) plus the core's wake-up
 * from its idle state: 78 us at the median, 122 at p99 on the 2-core CI machine, about 100 us
 * on the H200's host (docs/simulator.md, "Waking for a replayed arrival"). So the thread's
 * slack is set to 1 ns and it sleeps until RIG__WAKE_SPIN_NS before the time, then spins on
 * the clock. */
#define RIG__WAKE_SPIN_NS 100000

static _Thread_local bool rig__slack_set;

void rig_hal_wall_wait_until_ns(int64_t t_ns)
{
#ifdef __linux__
    if (!rig__slack_set) {
        (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* best effort: else 50 us late */
        rig__slack_set = true;
    }
#endif
    int64_t now = rig__wall_ns();
    if (t_ns - now > RIG__WAKE_SPIN_NS) {
        int64_t wait = t_ns - RIG__WAKE_SPIN_NS - now;
        struct timespec ts = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
        nanosleep(&ts, NULL); /* EINTR: the spin below covers the rest */
    }
    while (rig__wall_ns() < t_ns) {
    }
}

void rig_hal_host_wait_until_ns(struct rig_device *device, int64_t t_ns)
{
    RIG_ASSERT(device != NULL);
    if (device->iface->host_wait_until_ns != NULL) {
        device->iface->host_wait_until_ns(device, t_ns);
        return;
    }
    rig_hal_wall_wait_until_ns(t_ns); /* a backend without its own wait runs on the wall clock */
}

enum rig_status rig_hal_set_faults(struct rig_device *device, const struct rig_hal_faults *faults)
{
    if (device == NULL) return RIG_E_HANDLE;
    if (faults == NULL || faults->stall_ns < 0) return RIG_E_INVALID;
    if (device->iface->set_faults == NULL) return RIG_E_UNSUPPORTED;
    return device->iface->set_faults(device, faults);
}

enum rig_status rig_hal_set_open_faults(const char *backend, const struct rig_hal_faults *faults)
{
    if (backend == NULL) return RIG_E_INVALID;
    if (faults != NULL && faults->stall_ns < 0) return RIG_E_INVALID;
    for (int32_t i = 0; i < rig__backend_count; i++) {
        if (strcmp(rig__backends[i]->name, backend) != 0) continue;
        if (rig__backends[i]->set_open_faults == NULL) return RIG_E_UNSUPPORTED;
        rig__backends[i]->set_open_faults(faults);
        return RIG_OK;
    }
    return RIG_E_NOT_FOUND;
}

static const char *const rig__collective_fault_names[] = {"none", "late", "stall", "fail"};

enum rig_status rig_hal_collective_fault_parse(const char *name,
                                               enum rig_hal_collective_fault *out)
{
    if (name == NULL || out == NULL) return RIG_E_INVALID;
    for (int32_t i = 0; i <= RIG_HAL_COLLECTIVE_FAIL; i++) {
        if (strcmp(name, rig__collective_fault_names[i]) != 0) continue;
        *out = (enum rig_hal_collective_fault)i;
        return RIG_OK;
    }
    return RIG_E_NOT_FOUND;
}

const char *rig_hal_collective_fault_name(enum rig_hal_collective_fault fault)
{
    RIG_ASSERT(fault >= RIG_HAL_COLLECTIVE_NONE && fault <= RIG_HAL_COLLECTIVE_FAIL);
    return rig__collective_fault_names[fault];
}
