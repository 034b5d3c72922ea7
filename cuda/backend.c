/* backend.c — the CUDA backend table: devices, buffers, copies, streams, events, graphs,
 * clock. Ops are dispatched in ops.c, collectives in comm.c (cuda_backend.h says how each
 * HAL object maps onto CUDA).
 *
 * Every entry point first selects its device (rig__select): TP ranks drive different GPUs
 * from different host threads, and the CUDA runtime's current device is per thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_internal.h"
#include "cuda/ops/fill.cuh"
#include "cuda/ops/fill_dummy.cuh"
#include "cuda/ops/gemm_plan.cuh"
#include "cuda/preload.h"
#include "hal/startup.h"

enum rig_status rig_cuda_report(enum rig_status status, const char *file, int line,
                                const char *call, const char *message)
{
    fprintf(stderr, "rig: cuda: %s:%d: %s: %s\n", file, line, call, message);
    return status;
}

int32_t rig_cuda_device_count(void)
{
    /* The module loading mode is CUDA's default (lazy); rig's own kernels are loaded when a
     * device opens (cuda/preload.h says why not CUDA_MODULE_LOADING=EAGER). */
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear: "no driver" must not poison later calls */
        return 0;
    }
    return count < 0 ? 0 : (int32_t)count;
}

static struct rig_cuda_device *rig__device(const struct rig_device *device)
{
    RIG_ASSERT(device != NULL && device->context != NULL);
    return (struct rig_cuda_device *)device->context;
}

static enum rig_status rig__select(const struct rig_device *device)
{
    int current = -1;
    int32_t ordinal = rig__device(device)->ordinal;
    RIG_CUDA_TRY(cudaGetDevice(&current));
    if (current != ordinal) RIG_CUDA_TRY(cudaSetDevice(ordinal));
    return RIG_OK;
}

static struct rig_cuda_stream *rig__stream(const struct rig_stream *stream)
{
    RIG_ASSERT(stream != NULL && stream->context != NULL);
    return (struct rig_cuda_stream *)stream->context;
}

static struct rig_cuda_event *rig__event(const struct rig_event *event)
{
    RIG_ASSERT(event != NULL && event->context != NULL);
    return (struct rig_cuda_event *)event->context;
}

/* --- devices -------------------------------------------------------------------------- */

static enum rig_status rig__open_one(int32_t ordinal, int64_t timeout_ms,
                                     struct rig_device *device)
{
    struct cudaDeviceProp prop;
    RIG_CUDA_TRY(cudaSetDevice(ordinal));
    RIG_CUDA_TRY(cudaFree(NULL)); /* creates the primary context now, not in the step loop */
    int64_t functions = 0;
    RIG_TRY(rig_cuda_preload(&functions));
    rig_startup_mark("device %d: context, %lld kernels loaded", ordinal, (long long)functions);
    RIG_CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal));
    struct rig_cuda_device *context = calloc(1, sizeof *context);
    if (context == NULL) return RIG_E_NO_MEMORY;
    context->ordinal = ordinal;
    context->collective_timeout_ms =
        timeout_ms > 0 ? timeout_ms : RIG_CUDA_COLLECTIVE_TIMEOUT_MS_DEFAULT;
    context->sm_count = prop.multiProcessorCount;
    context->compute_capability = prop.major * 10 + prop.minor;
    context->shared_optin_bytes = prop.sharedMemPerBlockOptin;
    const char *pdl = getenv("RIG_CUDA_PDL"); /* a measuring switch: 0 = plain launches */
    context->pdl = prop.major >= 9 && !(pdl != NULL && strcmp(pdl, "0") == 0);
    device->context = context;
    size_t name_length = strnlen(prop.name, sizeof prop.name);
    if (name_length >= sizeof device->info.name) name_length = sizeof device->info.name - 1;
    memcpy(device->info.name, prop.name, name_length); /* the struct was zeroed: terminated */
    device->info.memory_bytes = (int64_t)prop.totalGlobalMem;
    device->info.timing_only = false;
    device->info.virtual_clock = false;
    return RIG_OK;
}

static void rig__close(struct rig_device *device)
{
    free(device->context);
    device->context = NULL;
}

static enum rig_status rig__open(const struct rig_device_config *config, int32_t count,
                                 struct rig_device **devices)
{
    int32_t available = rig_cuda_device_count();
    int32_t first = config->first_ordinal;
    if (config->timing_only) {
        fprintf(stderr, "rig: cuda: timing-only mode exists only on the simulator\n");
        return RIG_E_UNSUPPORTED;
    }
    if (config->group_size > count) { /* one rank of a group across processes (hal.h) */
        /* The GPU of this process among the node's: mpirun's local rank when it gives one
         * (OpenMPI: OMPI_COMM_WORLD_LOCAL_RANK), else the rank. */
        const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
        char *end = NULL;
        long index = local != NULL ? strtol(local, &end, 10) : config->group_rank;
        if (local != NULL && (end == local || *end != '\0' || index < 0 || index > 4096)) {
            fprintf(stderr, "rig: cuda: OMPI_COMM_WORLD_LOCAL_RANK '%s' is not a rank\n", local);
            return RIG_E_INVALID;
        }
        first += (int32_t)index;
    }
    if (first < 0 || count > available - first) {
        fprintf(stderr, "rig: cuda: asked for GPUs %d..%d, %d present\n", first, first + count - 1,
                available);
        return RIG_E_NOT_FOUND;
    }
    for (int32_t i = 0; i < count; i++) {
        enum rig_status status =
            rig__open_one(first + i, config->collective_timeout_ms, devices[i]);
        if (status != RIG_OK) {
            for (int32_t j = 0; j < i; j++)
                rig__close(devices[j]);
            return status;
        }
    }
    return RIG_OK;
}

/* --- buffers and copies ----------------------------------------------------------------- */

static enum rig_status rig__buffer_alloc(struct rig_device *device, size_t bytes,
                                         enum rig_memory_use use, void **data, void **context)
{
    (void)use;
    enum rig_status status = rig__select(device);
    if (status != RIG_OK) return status;
    void *pointer = NULL;
    cudaError_t error = cudaMalloc(&pointer, bytes);
    if (error == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); /* not sticky: the device stays usable */
        fprintf(stderr, "rig: cuda: cudaMalloc of %zu bytes: out of device memory\n", bytes);
        return RIG_E_DEVICE_MEMORY;
    }
    RIG_CUDA_TRY(error);
    *data = pointer;
    *context = NULL;
    return RIG_OK;
}

static void rig__buffer_free(struct rig_device *device, void *data, void *context)
{
    (void)context;
    if (rig__select(device) != RIG_OK || rig_cuda_group_abandoned(rig__device(device))) return;
    cudaError_t error = cudaFree(data);
    if (error != cudaSuccess)
        rig_cuda_report(RIG_E_DEVICE, __FILE__, __LINE__, "cudaFree", cudaGetErrorString(error));
}

/* Pinned host memory, portable (pinned for every device of the process, as TP ranks share
 * the engine's staging). RIG_CUDA_PAGEABLE_HOST=1 (read at each call; start-up only) hands
 * out pageable memory instead: a measuring switch, to time the serialised loop against the
 * overlapped one with the same binary. */
static enum rig_status rig__host_alloc(struct rig_device *device, size_t bytes, void **out)
{
    const char *pageable = getenv("RIG_CUDA_PAGEABLE_HOST");
    void *host = NULL;
    if (pageable != NULL && strcmp(pageable, "1") == 0) {
        if (posix_memalign(&host, 256, bytes) != 0) return RIG_E_NO_MEMORY;
    } else {
        enum rig_status status = rig__select(device);
        if (status != RIG_OK) return status;
        RIG_CUDA_TRY(cudaHostAlloc(&host, bytes, cudaHostAllocPortable));
    }
    memset(host, 0, bytes);
    *out = host;
    return RIG_OK;
}

static void rig__host_free(struct rig_device *device, void *host)
{
    if (rig_cuda_group_abandoned(rig__device(device))) return; /* leaked: see comm.c */
    struct cudaPointerAttributes attributes;
    cudaError_t error = cudaPointerGetAttributes(&attributes, host);
    if (error == cudaSuccess && attributes.type == cudaMemoryTypeHost) {
        error = cudaFreeHost(host);
        if (error != cudaSuccess)
            rig_cuda_report(RIG_E_DEVICE, __FILE__, __LINE__, "cudaFreeHost",
                            cudaGetErrorString(error));
        return;
    }
    (void)cudaGetLastError(); /* pageable (RIG_CUDA_PAGEABLE_HOST): not the runtime's */
    free(host);
}

static enum rig_status rig__memcpy_async(struct rig_stream *stream, void *dst, const void *src,
                                         size_t bytes, enum rig_copy_kind kind)
{
    static const enum cudaMemcpyKind kinds[] = {
        [RIG_COPY_HOST_TO_DEVICE] = cudaMemcpyHostToDevice,
        [RIG_COPY_DEVICE_TO_HOST] = cudaMemcpyDeviceToHost,
        [RIG_COPY_DEVICE_TO_DEVICE] = cudaMemcpyDeviceToDevice,
    };
    RIG_ASSERT(kind >= RIG_COPY_HOST_TO_DEVICE && kind <= RIG_COPY_DEVICE_TO_DEVICE);
    enum rig_status status = rig__select(stream->device);
    if (status != RIG_OK) return status;
    /* A download into pageable memory blocks the host until the stream gets there: in a TP
     * group, wait under the watchdog first, so a stuck collective becomes an error. A download
     * into pinned memory is asynchronous and must stay so (overlap scheduling issues batch
     * N+1 while N runs); its later event wait is the one the watchdog bounds. */
    if (kind == RIG_COPY_DEVICE_TO_HOST && !stream->capturing &&
        rig__device(stream->device)->group != NULL && !rig_hal_host_is_pinned(dst, bytes)) {
        status = rig_cuda_group_wait(rig__device(stream->device), rig__stream(stream)->stream,
                                     NULL);
        if (status != RIG_OK) return status;
    }
    RIG_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kinds[kind], rig__stream(stream)->stream));
    return RIG_OK;
}

static enum rig_status rig__fill_u32(struct rig_stream *stream, void *dst, uint32_t value,
                                     size_t count)
{
    enum rig_status status = rig__select(stream->device);
    if (status != RIG_OK) return status;
    return rig_cuda_fill_u32(rig__stream(stream)->stream, dst, value, count);
}

static enum rig_status rig__fill_dummy_bf16(struct rig_stream *stream, void *dst,
                                            const struct rig_dummy_piece *piece)
{
    enum rig_status status = rig__select(stream->device);
    if (status != RIG_OK) return status;
    return rig_cuda_fill_dummy_bf16(rig__stream(stream)->stream, dst, piece);
}

/* --- streams and events ----------------------------------------------------------------- */

static void rig__stream_release(struct rig_cuda_stream *s)
{
    rig_cuda_gemm_plans_destroy(s->plans);
    if (s->blas != NULL) (void)cublasDestroy(s->blas);
    if (s->blas_workspace != NULL) (void)cudaFree(s->blas_workspace);
    if (s->scratch != NULL) (void)cudaFree(s->scratch);
    if (s->stream != NULL) (void)cudaStreamDestroy(s->stream);
    free(s);
}

static enum rig_status rig__stream_setup(struct rig_cuda_stream *s)
{
    RIG_CUDA_TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    RIG_CUDA_TRY(cudaMalloc(&s->blas_workspace, RIG_CUDA_BLAS_WORKSPACE_BYTES));
    RIG_CUDA_TRY(cudaMalloc(&s->scratch, RIG_CUDA_SCRATCH_BYTES));
    /* The counters start zeroed, once, before any op (and outside any capture) on the stream. */
    RIG_CUDA_TRY(cudaMemsetAsync((char *)s->scratch + RIG_CUDA_SCRATCH_BYTES -
                                     RIG_CUDA_COUNTER_BYTES,
                                 0, RIG_CUDA_COUNTER_BYTES, s->stream));
    RIG_CUBLAS_TRY(cublasCreate(&s->blas));
    RIG_CUBLAS_TRY(cublasSetStream(s->blas, s->stream));
    /* An explicit workspace: cuBLAS then never allocates, in capture or out of it. */
    RIG_CUBLAS_TRY(cublasSetWorkspace(s->blas, s->blas_workspace, RIG_CUDA_BLAS_WORKSPACE_BYTES));
    /* fp32 accumulation, no reduced-precision reductions: the simulator's semantics. */
    RIG_CUBLAS_TRY(cublasSetMathMode(
        s->blas, CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    return rig_cuda_gemm_plans_create(&s->plans);
}

static enum rig_status rig__stream_create(struct rig_device *device, void **context)
{
    enum rig_status status = rig__select(device);
    if (status != RIG_OK) return status;
    struct rig_cuda_stream *s = calloc(1, sizeof *s);
    if (s == NULL) return RIG_E_NO_MEMORY;
    status = rig__stream_setup(s);
    if (status != RIG_OK) {
        rig__stream_release(s);
        return status;
    }
    *context = s;
    return RIG_OK;
}

static void rig__stream_destroy(struct rig_stream *stream)
{
    if (rig__select(stream->device) != RIG_OK) return;
    if (rig_cuda_group_abandoned(rig__device(stream->device))) return; /* leaked */
    rig__stream_release(rig__stream(stream));
    stream->context = NULL;
}

static enum rig_status rig__stream_synchronize(struct rig_stream *stream)
{
    enum rig_status status = rig__select(stream->device);
    if (status != RIG_OK) return status;
    return rig_cuda_group_wait(rig__device(stream->device), rig__stream(stream)->stream, NULL);
}

static enum rig_status rig__event_create(struct rig_device *device, void **context)
{
    enum rig_status status = rig__select(device);
    if (status != RIG_OK) return status;
    struct rig_cuda_event *e = calloc(1, sizeof *e);
    if (e == NULL) return RIG_E_NO_MEMORY;
    cudaError_t error = cudaEventCreate(&e->event); /* timing on: elapsed_ns needs it */
    if (error != cudaSuccess) {
        free(e);
        RIG_CUDA_TRY(error);
    }
    *context = e;
    return RIG_OK;
}

static void rig__event_destroy(struct rig_event *event)
{
    if (rig__select(event->device) != RIG_OK) return;
    (void)cudaEventDestroy(rig__event(event)->event);
    free(event->context);
    event->context = NULL;
}

static enum rig_status rig__event_record(struct rig_event *event, struct rig_stream *stream)
{
    enum rig_status status = rig__select(stream->device);
    if (status != RIG_OK) return status;
    RIG_CUDA_TRY(cudaEventRecord(rig__event(event)->event, rig__stream(stream)->stream));
    return RIG_OK;
}

static enum rig_status rig__stream_wait_event(struct rig_stream *stream, struct rig_event *event)
{
    enum rig_status status = rig__select(stream->device);
    if (status != RIG_OK) return status;
    RIG_CUDA_TRY(cudaStreamWaitEvent(rig__stream(stream)->stream, rig__event(event)->event, 0));
    return RIG_OK;
}

static enum rig_status rig__event_synchronize(struct rig_event *event)
{
    enum rig_status status = rig__select(event->device);
    if (status != RIG_OK) return status;
    return rig_cuda_group_wait(rig__device(event->device), NULL, rig__event(event)->event);
}

static enum rig_status rig__event_query(struct rig_event *event, bool *complete)
{
    enum rig_status status = rig__select(event->device);
    if (status != RIG_OK) return status;
    cudaError_t error = cudaEventQuery(rig__event(event)->event);
    *complete = error == cudaSuccess;
    if (error == cudaErrorNotReady) return RIG_OK; /* not an error: nothing to clear */
    RIG_CUDA_TRY(error);
    return RIG_OK;
}

static enum rig_status rig__event_elapsed_ns(const struct rig_event *start,
                                             const struct rig_event *end, int64_t *ns)
{
    enum rig_status status = rig__select(start->device);
    if (status != RIG_OK) return status;
    float ms = 0.0f;
    RIG_CUDA_TRY(cudaEventElapsedTime(&ms, rig__event(start)->event, rig__event(end)->event));
    *ns = (int64_t)((double)ms * 1e6);
    return RIG_OK;
}

/* --- graphs ------------------------------------------------------------------------------ */

static enum rig_status rig__graph_capture_begin(struct rig_stream *stream)
{
    enum rig_status status = rig__select(stream->device);
    if (status != RIG_OK) return status;
    /* Thread-local: another rank's thread may allocate or synchronise meanwhile. */
    RIG_CUDA_TRY(
        cudaStreamBeginCapture(rig__stream(stream)->stream, cudaStreamCaptureModeThreadLocal));
    rig_cuda_group_capture(true, NULL, NULL);
    return RIG_OK;
}

static enum rig_status rig__graph_capture_end(struct rig_stream *stream, void **context)
{
    enum rig_status status = rig__select(stream->device);
    if (status != RIG_OK) return status;
    int64_t collectives = 0;
    int32_t last_kind = 0;
    rig_cuda_group_capture(false, &collectives, &last_kind);
    struct rig_cuda_graph *g = calloc(1, sizeof *g);
    if (g == NULL) {
        cudaGraph_t dropped = NULL;
        (void)cudaStreamEndCapture(rig__stream(stream)->stream, &dropped);
        if (dropped != NULL) (void)cudaGraphDestroy(dropped);
        return RIG_E_NO_MEMORY;
    }
    cudaError_t error = cudaStreamEndCapture(rig__stream(stream)->stream, &g->graph);
    if (error == cudaSuccess) error = cudaGraphInstantiate(&g->exec, g->graph, 0);
    if (error != cudaSuccess) {
        if (g->graph != NULL) (void)cudaGraphDestroy(g->graph);
        free(g);
        RIG_CUDA_TRY(error);
    }
    g->collectives = collectives;
    g->last_kind = last_kind;
    *context = g;
    return RIG_OK;
}

static enum rig_status rig__graph_launch(struct rig_graph *graph, struct rig_stream *stream)
{
    enum rig_status status = rig__select(stream->device);
    if (status != RIG_OK) return status;
    struct rig_cuda_graph *g = graph->context;
    bool skip = false;
    status = rig_cuda_group_replay_fault(rig__device(stream->device), g->collectives, &skip);
    if (status != RIG_OK || skip) return status;
    RIG_CUDA_TRY(cudaGraphLaunch(g->exec, rig__stream(stream)->stream));
    rig_cuda_group_replayed(rig__device(stream->device), g->collectives, g->last_kind);
    return RIG_OK;
}

static void rig__graph_destroy(struct rig_graph *graph)
{
    if (rig__select(graph->device) != RIG_OK) return;
    if (rig_cuda_group_abandoned(rig__device(graph->device))) return; /* leaked */
    struct rig_cuda_graph *g = graph->context;
    (void)cudaGraphExecDestroy(g->exec);
    (void)cudaGraphDestroy(g->graph);
    free(g);
    graph->context = NULL;
}

/* Collective faults only (comm.c); the simulator injects the others. */
static enum rig_status rig__set_faults(struct rig_device *device,
                                       const struct rig_hal_faults *faults)
{
    return rig_cuda_group_set_faults(rig__device(device), faults);
}

/* --- ops, clock ---------------------------------------------------------------------------- */

enum rig_status rig_cuda_op_dispatch(const struct rig_cuda_launch *launch, const struct rig_op *op);
enum rig_status rig_cuda_comm_create(struct rig_device **devices, int32_t count,
                                     struct rig_comm **comms);
void rig_cuda_comm_destroy(struct rig_comm *comm);
void rig_cuda_comm_abort(struct rig_comm *comm, const char *reason);
const char *rig_cuda_comm_error(const struct rig_comm *comm);

static enum rig_status rig__op(struct rig_stream *stream, const struct rig_op *op)
{
    enum rig_status status = rig__select(stream->device);
    if (status != RIG_OK) return status;
    const struct rig_cuda_stream *s = rig__stream(stream);
    const struct rig_cuda_device *d = rig__device(stream->device);
    struct rig_cuda_launch launch = {
        .stream = s->stream,
        .blas = s->blas,
        .plans = s->plans,
        .workspace = s->blas_workspace,
        .workspace_bytes = RIG_CUDA_BLAS_WORKSPACE_BYTES,
        .scratch = s->scratch,
        .scratch_bytes = RIG_CUDA_SCRATCH_BYTES - RIG_CUDA_COUNTER_BYTES,
        .counters = (uint32_t *)((char *)s->scratch + RIG_CUDA_SCRATCH_BYTES -
                                 RIG_CUDA_COUNTER_BYTES),
        .sm_count = d->sm_count,
        .compute_capability = d->compute_capability,
        .shared_optin_bytes = d->shared_optin_bytes,
        .pdl = d->pdl,
    };
    return rig_cuda_op_dispatch(&launch, op);
}

static int64_t rig__now_ns(struct rig_device *device)
{
    (void)device;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const struct rig_backend_iface rig__cuda_iface = {
    .name = "cuda",
    .open = rig__open,
    .close = rig__close,
    .buffer_alloc = rig__buffer_alloc,
    .buffer_free = rig__buffer_free,
    .host_alloc = rig__host_alloc,
    .host_free = rig__host_free,
    .memcpy_async = rig__memcpy_async,
    .fill_u32 = rig__fill_u32,
    .fill_dummy_bf16 = rig__fill_dummy_bf16,
    .stream_create = rig__stream_create,
    .stream_destroy = rig__stream_destroy,
    .stream_synchronize = rig__stream_synchronize,
    .event_create = rig__event_create,
    .event_destroy = rig__event_destroy,
    .event_record = rig__event_record,
    .stream_wait_event = rig__stream_wait_event,
    .event_synchronize = rig__event_synchronize,
    .event_query = rig__event_query,
    .event_elapsed_ns = rig__event_elapsed_ns,
    .graph_capture_begin = rig__graph_capture_begin,
    .graph_capture_end = rig__graph_capture_end,
    .graph_launch = rig__graph_launch,
    .set_faults = rig__set_faults,
    .graph_destroy = rig__graph_destroy,
#ifdef RIG_HAVE_MPI
    .groups_across_processes = true, /* the NCCL id travels over MPI (comm.c) */
#endif
    .comm_create = rig_cuda_comm_create,
    .comm_destroy = rig_cuda_comm_destroy,
    .comm_abort = rig_cuda_comm_abort,
    .comm_error = rig_cuda_comm_error,
    .op = rig__op,
    .now_ns = rig__now_ns,
    .host_work_ns = NULL,       /* real host work takes its own time */
    .host_wait_until_ns = NULL, /* the dispatch layer's default sleeps on the wall clock */
};

const struct rig_backend_iface *rig_cuda_backend(void)
{
    return &rig__cuda_iface;
}
