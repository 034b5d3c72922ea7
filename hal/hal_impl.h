/* hal_impl.h — what a backend implements: the interface table and the handle structs.
 *
 * A backend is a `static const struct rig_backend_iface` plus per-object context pointers,
 * as ggml-backend's. The dispatch layer (hal.c) owns the handle structs: it allocates them,
 * checks every argument, fills in defaults for optional slots, and calls the backend with
 * arguments already validated. A backend never sees a NULL handle, a bad shape or an
 * out-of-bounds copy. Only backends include this header.
 */
#ifndef RIG_HAL_IMPL_H
#define RIG_HAL_IMPL_H

#include "hal/dummy.h"
#include "hal/hal.h"
#include "hal/issue_trace.h"

enum rig_copy_kind {
    RIG_COPY_HOST_TO_DEVICE = 0,
    RIG_COPY_DEVICE_TO_HOST = 1,
    RIG_COPY_DEVICE_TO_DEVICE = 2,
};

struct rig_backend_iface {
    const char *name;

    /* Opens `count` devices as one group; fills devices[i]->context and ->info (the
     * dispatch layer allocated the structs and set iface). Required. */
    enum rig_status (*open)(const struct rig_device_config *config, int32_t count,
                            struct rig_device **devices);
    void (*close)(struct rig_device *device); /* required */

    /* Buffers. `data` is the device address; `context` is the backend's own. Required. */
    enum rig_status (*buffer_alloc)(struct rig_device *device, size_t bytes,
                                    enum rig_memory_use use, void **data, void **context);
    void (*buffer_free)(struct rig_device *device, void *data, void *context);

    /* Pinned host memory for copies. (optional) both NULL: zeroed heap memory aligned to 256
     * bytes. host_alloc returns zeroed memory. */
    enum rig_status (*host_alloc)(struct rig_device *device, size_t bytes, void **out);
    void (*host_free)(struct rig_device *device, void *host);

    /* Copies and fills on a stream, asynchronous. Required. */
    enum rig_status (*memcpy_async)(struct rig_stream *stream, void *dst, const void *src,
                                    size_t bytes, enum rig_copy_kind kind);
    enum rig_status (*fill_u32)(struct rig_stream *stream, void *dst, uint32_t value,
                                size_t count);
    /* The block of `piece` (checked: non-empty, inside its tensor and the buffer) at `dst`,
     * hal/dummy.h's values bit for bit. Required. */
    enum rig_status (*fill_dummy_bf16)(struct rig_stream *stream, void *dst,
                                       const struct rig_dummy_piece *piece);

    /* Streams and events. Required. */
    enum rig_status (*stream_create)(struct rig_device *device, void **context);
    void (*stream_destroy)(struct rig_stream *stream);
    enum rig_status (*stream_synchronize)(struct rig_stream *stream);
    enum rig_status (*event_create)(struct rig_device *device, void **context);
    void (*event_destroy)(struct rig_event *event);
    enum rig_status (*event_record)(struct rig_event *event, struct rig_stream *stream);
    enum rig_status (*stream_wait_event)(struct rig_stream *stream, struct rig_event *event);
    enum rig_status (*event_synchronize)(struct rig_event *event);
    /* (optional) when NULL, rig_hal_event_query returns RIG_E_UNSUPPORTED. */
    enum rig_status (*event_query)(struct rig_event *event, bool *complete);
    enum rig_status (*event_elapsed_ns)(const struct rig_event *start,
                                        const struct rig_event *end, int64_t *ns);

    /* Graphs. (optional) when NULL, rig_hal_graph_* return RIG_E_UNSUPPORTED. */
    enum rig_status (*graph_capture_begin)(struct rig_stream *stream);
    enum rig_status (*graph_capture_end)(struct rig_stream *stream, void **context);
    enum rig_status (*graph_launch)(struct rig_graph *graph, struct rig_stream *stream);
    void (*graph_destroy)(struct rig_graph *graph);

    /* (optional) defaults to false: open() takes config->group_size > count (one rank of a
     * group across processes, hal.h); when false rig_hal_open refuses it. */
    bool groups_across_processes;

    /* Communication over devices of one group. (optional) when NULL, a group of one device
     * still works: all-reduce and all-gather over one rank are copies done by dispatch. */
    enum rig_status (*comm_create)(struct rig_device **devices, int32_t count,
                                   struct rig_comm **comms);
    void (*comm_destroy)(struct rig_comm *comm);
    /* (optional) defaults to a no-op: fail every rank's collectives from now on. */
    void (*comm_abort)(struct rig_comm *comm, const char *reason);
    /* (optional) defaults to "": why the group failed. */
    const char *(*comm_error)(const struct rig_comm *comm);

    /* Runs one validated op on `stream` (or records it while the stream captures; the
     * dispatch layer handles recording when the backend's graph slots record themselves,
     * see sim/). Required. */
    enum rig_status (*op)(struct rig_stream *stream, const struct rig_op *op);

    /* Clock. now_ns is required; (optional) host_work_ns defaults to a no-op;
     * (optional) host_wait_until_ns defaults to rig_hal_wall_wait_until_ns (the wall clock,
     * slept to within 100 us, then spun). */
    int64_t (*now_ns)(struct rig_device *device);
    void (*host_work_ns)(struct rig_device *device, int64_t ns);
    void (*host_wait_until_ns)(struct rig_device *device, int64_t t_ns);

    /* Faults. (optional) when NULL, rig_hal_set_faults / rig_hal_set_open_faults return
     * RIG_E_UNSUPPORTED. `faults` is never NULL in set_faults; NULL in set_open_faults
     * clears the plan. */
    enum rig_status (*set_faults)(struct rig_device *device, const struct rig_hal_faults *faults);
    void (*set_open_faults)(const struct rig_hal_faults *faults);
};

struct rig_device {
    const struct rig_backend_iface *iface;
    void *context;
    struct rig_device_info info;
    int32_t live_objects; /* buffers, streams, events, graphs, comms not yet destroyed */
    struct rig_issue_trace *issue_trace; /* NULL unless RIG_ISSUE_TRACE (hal/issue_trace.h) */
};

struct rig_buffer {
    struct rig_device *device;
    void *data;
    size_t bytes;
    enum rig_memory_use use;
    void *context;
};

struct rig_stream {
    struct rig_device *device;
    void *context;
    bool capturing;
    int32_t captured_ops; /* ops issued since capture began */
    char error[256];      /* the last op's failed check (rig_hal_stream_error); "" */
};

struct rig_event {
    struct rig_device *device;
    void *context;
    bool recorded;
};

struct rig_graph {
    struct rig_device *device;
    void *context;
    int32_t op_count;
};

struct rig_comm {
    struct rig_device *device;
    int32_t rank;
    int32_t size;
    void *context;
};

/* Registration: the executable registers the backends it was built with before any open.
 * At most RIG_BACKENDS_MAX; registering a name twice is a bug. */
#define RIG_BACKENDS_MAX 4
void rig_hal_register(const struct rig_backend_iface *iface);

#endif /* RIG_HAL_IMPL_H */
