/* comm.c — TP collectives over NCCL for the GPUs of one process (docs/gpu.md), with a watchdog.
 *
 * One ncclComm_t per rank, made by ncclCommInitRankConfig inside one group call, blocking
 * (RIG_CUDA_NCCL_BLOCKING=0: NCCL's non-blocking mode, whose eager calls cost the host 10-20 x
 * more). Each rank's thread issues its collective on its own stream; NCCL blocks the stream
 * (not the host) until every rank has joined.
 * Reduction order is NCCL's (ring or tree), fixed for a given group and size, so results
 * repeat run to run, but it is not the simulator's rank order: TP results match the simulator
 * to rounding, not bit for bit.
 *
 * Watchdog (why: a rank that never joins a collective leaves NCCL's kernels spinning on the
 * other GPUs, and every host wait on their streams — a synchronize, the token download — then
 * blocks for ever, which is how a TP run hangs): a host wait on a rank's stream or event
 * polls the CUDA query and NCCL's asynchronous error (rig_cuda_group_wait); with
 * non-blocking comms an NCCL call may also return ncclInProgress, and the rank then polls
 * ncclCommGetAsyncError until the call is enqueued. Either poll is bounded by the collective
 * timeout; past it, or on an NCCL error, the group fails once: ncclCommAbort on every comm
 * at once, one thread each, bounded (NCCL's kernels then stop)
 * and a message naming the rank and the collective (hal/watchdog.h's diagnosis from the
 * collectives each rank's host issued). Every later wait and collective of the group returns
 * that failure at once, and rig_hal_comm_error gives the message.
 * Threads: each comm is used by its rank's thread; the group's failure state is shared under
 * its mutex and an atomic flag; the issued counters are atomics.
 *
 * Across processes (`--ranks mpi`, one rank per process, hal.h's group_size > count): the
 * group is `size` ranks of which this process holds ranks [first, first + local); process 0
 * makes the NCCL unique id and MPI broadcasts it (MPI_COMM_WORLD, whose process p holds rank
 * p), then each process joins with its rank; NCCL's transports (NVLink, or the network
 * between nodes) carry the collectives. The watchdog sees only this process's ranks: a
 * collective stuck past the timeout names the rank waiting here and says the others are in
 * other processes. Run on 4 H200s (docs/gpu.md): logits bit-identical to the same group as
 * threads.
 *
 * Faults (rig_hal_set_faults; docs/gpu.md, "Tensor parallelism on 4 GPUs"), so the watchdog
 * can be proved on GPUs: a rank's n-th collective from when the plan was set — an eager
 * NCCL call, or a graph replay holding it — is `late` (the host sleeps the delay first),
 * `stall` (the rank never arrives: that call or replay and every later collective of the
 * rank is not issued, so the others wait in NCCL until the watchdog ends the run) or `fail`
 * (the op returns RIG_E_FAULT before it arrives). The plan is set between steps and read by
 * the rank's own thread, which the engine's rank pool orders after it.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/cuda_internal.h"
#include "hal/watchdog.h"
#ifdef RIG_HAVE_MPI
#include <mpi.h>
#endif

#define RIG__FAILURE_MAX   384

/* A rank's planned collective fault. */
struct rig__fault {
    enum rig_hal_collective_fault kind; /* RIG_HAL_COLLECTIVE_NONE: none */
    int64_t at;                         /* the collective it hits, counted from the plan */
    int64_t delay_ns;                   /* late: how long */
    int64_t seen;                       /* collectives the rank met since the plan */
    bool stalled;                       /* stall: hit; nothing more is issued */
};
#define RIG__POLL_PAUSE_NS 20000  /* between polls of a stuck wait: 20 us (slept) */
#define RIG__POLL_SPIN_NS  2000000 /* polls in the first 2 ms of a wait only yield: a sleep
                                      of 20 us takes 60-80 us on Linux (timer slack), and the
                                      waits that end soon — an NCCL call in progress, a
                                      step's download — would pay it every time */

struct rig_cuda_group {
    pthread_mutex_t mutex;
    int32_t size;
    int32_t first, local; /* this process's ranks: [first, first + local) (all: 0, size) */
    int32_t refs; /* comms not yet destroyed */
    int64_t timeout_ms;
    ncclComm_t comms[RIG_DEVICES_MAX];       /* (size) */
    _Atomic int64_t issued[RIG_DEVICES_MAX]; /* (size) collectives each rank's host issued */
    _Atomic int last_kind[RIG_DEVICES_MAX];  /* (size) enum rig_op_kind of the last one */
    struct rig__fault faults[RIG_DEVICES_MAX]; /* (size) each used by its rank's thread */
    _Atomic int failed;                      /* enum rig_status; RIG_OK while healthy */
    bool aborted;                            /* ncclCommAbort done: no ncclCommDestroy */
    _Atomic bool abandoned;                  /* an abort left behind (rig__abort_all) */
    char failure[RIG__FAILURE_MAX];          /* set once, under mutex, before `failed` */
};

static int64_t rig__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void rig__abort_one(void *comm)
{
    (void)ncclCommAbort((ncclComm_t)comm);
}

#define RIG__ABORT_WAIT_NS 10000000000LL /* what an abort may take before it is left behind */

/* ncclCommAbort on every comm of this process at once, one thread each
 * (rig_watchdog_run_all): NCCL's abort synchronises the ranks of a node (each waits for the
 * others' abort before freeing what they share), so aborting them one after another from one
 * thread can wait for ever in the first — on 4 H200s the watchdog named the stalled rank
 * after 5 s and the process then hung in ncclCommAbort. Aborted at once, one of the two still
 * waited inside NCCL (why is open: docs/gpu.md). So bounded: an abort still running after
 * RIG__ABORT_WAIT_NS is left on its thread with a line on stderr, the group is abandoned
 * (the backend then leaks its devices' memory rather than wait to free it), and nothing
 * waits for it. The comms are never destroyed after an abort, so a left-behind thread's
 * comm stays valid. */
static void rig__abort_all(struct rig_cuda_group *g)
{
    void *comms[RIG_DEVICES_MAX];
    int32_t ranks[RIG_DEVICES_MAX], n = 0;
    for (int32_t r = g->first; r < g->first + g->local; r++) {
        if (g->comms[r] == NULL) continue;
        ranks[n] = r;
        comms[n++] = g->comms[r];
    }
    bool done[RIG_DEVICES_MAX];
    if (rig_watchdog_run_all(rig__abort_one, comms, n, RIG__ABORT_WAIT_NS, done) == n) return;
    for (int32_t i = 0; i < n; i++)
        if (!done[i])
            fprintf(stderr, "rig: cuda: rank %d: NCCL's abort did not return within %lld ms; "
                    "left behind, and the devices' memory with it\n", (int)ranks[i],
                    RIG__ABORT_WAIT_NS / 1000000);
    atomic_store(&g->abandoned, true);
}

/* Fails the group once: the message, then ncclCommAbort on every comm. Any rank's thread. */
static enum rig_status rig__group_fail(struct rig_cuda_group *g, enum rig_status status,
                                       const char *message)
{
    RIG_ASSERT(status < 0);
    pthread_mutex_lock(&g->mutex);
    if (atomic_load(&g->failed) == RIG_OK) {
        snprintf(g->failure, sizeof g->failure, "%s", message);
        atomic_store(&g->failed, status);
        fprintf(stderr, "rig: cuda: TP group failed: %s\n", message);
        rig__abort_all(g);
        g->aborted = true;
    }
    enum rig_status first = (enum rig_status)atomic_load(&g->failed);
    pthread_mutex_unlock(&g->mutex);
    return first;
}

/* The watchdog's sentence for a wait of `rank` that ran out of time. */
static enum rig_status rig__group_timeout(struct rig_cuda_group *g, int32_t rank)
{
    if (g->local < g->size) { /* the other ranks' counts are in other processes */
        char message[RIG__FAILURE_MAX];
        int64_t issued = atomic_load(&g->issued[rank]);
        snprintf(message, sizeof message,
                 "rank %d: collective #%lld (%s) did not complete within %lld ms; the other %d "
                 "ranks are in other processes (one may have failed, stalled or died)",
                 (int)rank, (long long)issued - 1,
                 issued == 0 ? "" : rig_op_name((enum rig_op_kind)atomic_load(&g->last_kind[rank])),
                 (long long)g->timeout_ms, (int)(g->size - 1));
        return rig__group_fail(g, RIG_E_TIMEOUT, message);
    }
    struct rig_watchdog_rank ranks[RIG_DEVICES_MAX];
    for (int32_t r = 0; r < g->size; r++) {
        ranks[r].issued = atomic_load(&g->issued[r]);
        ranks[r].last_kind = ranks[r].issued == 0
                                 ? ""
                                 : rig_op_name((enum rig_op_kind)atomic_load(&g->last_kind[r]));
    }
    char message[RIG__FAILURE_MAX];
    rig_watchdog_diagnose(ranks, g->size, rank, g->timeout_ms, message, sizeof message);
    return rig__group_fail(g, RIG_E_TIMEOUT, message);
}

/* NCCL's asynchronous state of `rank`'s comm: RIG_OK, RIG_E_STATE (in progress), or the
 * group's failure after failing it. */
static enum rig_status rig__nccl_state(struct rig_cuda_group *g, int32_t rank)
{
    if (atomic_load(&g->failed) != RIG_OK) return (enum rig_status)atomic_load(&g->failed);
    ncclResult_t state = ncclSuccess;
    ncclResult_t result = ncclCommGetAsyncError(g->comms[rank], &state);
    if (result == ncclSuccess && state == ncclSuccess) return RIG_OK;
    if (result == ncclSuccess && state == ncclInProgress) return RIG_E_STATE;
    char message[RIG__FAILURE_MAX];
    snprintf(message, sizeof message, "rank %d: NCCL: %s", rank,
             ncclGetErrorString(result != ncclSuccess ? result : state));
    return rig__group_fail(g, RIG_E_DEVICE, message);
}

struct rig__wait {
    struct rig_cuda_group *group;
    int32_t rank;
    cudaStream_t stream; /* or */
    cudaEvent_t event;
    bool nccl_only;     /* waiting for an NCCL call to be enqueued */
    int64_t spin_until; /* 0 until the first pause; then when pauses start to sleep */
};

static enum rig_status rig__poll(void *ctx)
{
    struct rig__wait *w = ctx;
    enum rig_status status = rig__nccl_state(w->group, w->rank);
    if (w->nccl_only || status != RIG_OK) return status;
    cudaError_t error = w->stream != NULL ? cudaStreamQuery(w->stream) : cudaEventQuery(w->event);
    if (error == cudaSuccess) return RIG_OK;
    if (error == cudaErrorNotReady) return RIG_E_STATE;
    (void)cudaGetLastError();
    char message[RIG__FAILURE_MAX];
    snprintf(message, sizeof message, "rank %d: CUDA: %s", w->rank, cudaGetErrorString(error));
    return rig__group_fail(w->group, RIG_E_DEVICE, message);
}

static int64_t rig__probe_now(void *ctx)
{
    (void)ctx;
    return rig__now_ns();
}

static void rig__probe_pause(void *ctx)
{
    struct rig__wait *w = ctx;
    int64_t now = rig__now_ns();
    if (w->spin_until == 0) w->spin_until = now + RIG__POLL_SPIN_NS;
    if (now < w->spin_until) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, RIG__POLL_PAUSE_NS};
    nanosleep(&ts, NULL);
}

static enum rig_status rig__watch(struct rig__wait *w)
{
    struct rig_watchdog_probe probe = {w, rig__poll, rig__probe_now, rig__probe_pause};
    enum rig_status status = rig_watchdog_wait(&probe, w->group->timeout_ms * 1000000);
    if (status == RIG_E_TIMEOUT) return rig__group_timeout(w->group, w->rank);
    return status;
}

bool rig_cuda_group_abandoned(const struct rig_cuda_device *device)
{
    return device->group != NULL && atomic_load(&device->group->abandoned);
}

enum rig_status rig_cuda_group_wait(const struct rig_cuda_device *device, cudaStream_t stream,
                                    cudaEvent_t event)
{
    RIG_ASSERT((stream != NULL) != (event != NULL));
    if (device->group == NULL) {
        if (stream != NULL) RIG_CUDA_TRY(cudaStreamSynchronize(stream));
        if (event != NULL) RIG_CUDA_TRY(cudaEventSynchronize(event));
        return RIG_OK;
    }
    struct rig__wait w = {device->group, device->rank, stream, event, false, 0};
    return rig__watch(&w);
}

/* The group's end, once every rank let go of its comm: NCCL's finalize is a collective of
 * the group (it returns when the whole group is quiescent), so one thread destroying rank
 * after rank with ncclCommDestroy — which finalizes first — could wait on the ranks it has
 * not reached yet. Instead every comm is finalized in one group call, waited for under the
 * collective timeout (past it: ncclCommAbort, nothing hangs), then destroyed locally. */
static void rig__group_finish(struct rig_cuda_group *g)
{
    if (g->aborted) return;
    ncclResult_t result = ncclGroupStart();
    for (int32_t r = g->first; r < g->first + g->local && result == ncclSuccess; r++) {
        ncclResult_t one = ncclCommFinalize(g->comms[r]);
        if (one != ncclSuccess && one != ncclInProgress) result = one;
    }
    ncclResult_t end = ncclGroupEnd();
    if (result == ncclSuccess && end != ncclSuccess && end != ncclInProgress) result = end;
    enum rig_status status = RIG_OK;
    if (result != ncclSuccess) {
        char message[RIG__FAILURE_MAX];
        snprintf(message, sizeof message, "finalizing the group: NCCL: %s",
                 ncclGetErrorString(result));
        status = rig__group_fail(g, RIG_E_DEVICE, message);
    }
    for (int32_t r = g->first; r < g->first + g->local && status == RIG_OK; r++) {
        struct rig__wait w = {g, r, NULL, NULL, true, 0};
        status = rig__watch(&w);
    }
    if (g->aborted) return; /* a timeout or an error aborted every comm */
    for (int32_t r = g->first; r < g->first + g->local; r++) {
        result = ncclCommDestroy(g->comms[r]);
        if (result != ncclSuccess)
            rig_cuda_report(RIG_E_DEVICE, __FILE__, __LINE__, "ncclCommDestroy",
                            ncclGetErrorString(result));
    }
}

static void rig__group_release(struct rig_cuda_group *g)
{
    pthread_mutex_lock(&g->mutex);
    bool last = --g->refs == 0;
    pthread_mutex_unlock(&g->mutex);
    if (!last) return;
    rig__group_finish(g);
    pthread_mutex_destroy(&g->mutex);
    free(g);
}

/* The group's NCCL unique id: made here, or across processes made by process 0 and broadcast
 * over MPI (every process of the job calls this at the same point of its engine's start). */
static enum rig_status rig__unique_id(const struct rig_cuda_group *g, ncclUniqueId *id)
{
    if (g->local == g->size) {
        RIG_NCCL_TRY(ncclGetUniqueId(id));
        return RIG_OK;
    }
#ifdef RIG_HAVE_MPI
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        fprintf(stderr, "rig: cuda: a group across processes needs MPI started (mpirun and "
                        "--ranks mpi)\n");
        return RIG_E_STATE;
    }
    memset(id, 0, sizeof *id);
    if (g->first == 0) RIG_NCCL_TRY(ncclGetUniqueId(id));
    if (MPI_Bcast(id, (int)sizeof *id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
        fprintf(stderr, "rig: cuda: rank %d: MPI_Bcast of the NCCL id failed\n", (int)g->first);
        return RIG_E_IO;
    }
    return RIG_OK;
#else
    (void)id;
    fprintf(stderr, "rig: cuda: a group across processes needs OpenMPI in the build\n");
    return RIG_E_UNSUPPORTED;
#endif
}

/* Every comm of the group in one NCCL group call; then waits (bounded, for non-blocking
 * comms) until every one is ready. */
static enum rig_status rig__init_comms(struct rig_cuda_group *g, struct rig_device **devices)
{
    /* Every connection at init (unless the user chose): by default NCCL connects a peer the
     * first time an algorithm needs it, and the engine's first collectives are recorded in
     * a decode-graph capture, where that setup cannot run — blocking comms failed there with
     * "internal error" on 4 H200s. Before NCCL's first call, which reads its settings. */
    setenv("NCCL_RUNTIME_CONNECT", "0", 0);
    ncclUniqueId id;
    RIG_TRY(rig__unique_id(g, &id));
    RIG_NCCL_TRY(ncclGroupStart());
    for (int32_t r = g->first; r < g->first + g->local; r++) {
        const struct rig_cuda_device *d = devices[r - g->first]->context;
        RIG_CUDA_TRY(cudaSetDevice(d->ordinal));
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        /* Blocking comms (the default, as torch's): in non-blocking mode every eager
         * collective came back ncclInProgress and was enqueued by NCCL in the background,
         * 150-320 us of host time per call on 4 H200s against 10-18 us blocking (docs/gpu.md).
         * RIG_CUDA_NCCL_BLOCKING=0 chooses non-blocking comms (a measuring switch). */
        const char *blocking = getenv("RIG_CUDA_NCCL_BLOCKING");
        config.blocking = blocking != NULL && strcmp(blocking, "0") == 0 ? 0 : 1;
        ncclResult_t result = ncclCommInitRankConfig(&g->comms[r], g->size, id, r, &config);
        if (result != ncclSuccess && result != ncclInProgress) {
            (void)ncclGroupEnd();
            RIG_NCCL_TRY(result);
        }
    }
    ncclResult_t result = ncclGroupEnd();
    if (result != ncclSuccess && result != ncclInProgress) RIG_NCCL_TRY(result);
    for (int32_t r = g->first; r < g->first + g->local; r++) {
        struct rig__wait w = {g, r, NULL, NULL, true, 0};
        enum rig_status status = rig__watch(&w);
        if (status != RIG_OK) return status;
    }
    return RIG_OK;
}

enum rig_status rig_cuda_comm_create(struct rig_device **devices, int32_t count,
                                     struct rig_comm **comms)
{
    RIG_ASSERT(count >= 1 && count <= RIG_DEVICES_MAX);
    struct rig_cuda_group *g = calloc(1, sizeof *g);
    struct rig_cuda_comm *contexts[RIG_DEVICES_MAX] = {0};
    bool ok = g != NULL && pthread_mutex_init(&g->mutex, NULL) == 0;
    for (int32_t i = 0; ok && i < count; i++)
        ok = (contexts[i] = calloc(1, sizeof **contexts));
    if (!ok) {
        for (int32_t i = 0; i < count; i++)
            free(contexts[i]);
        free(g);
        return RIG_E_NO_MEMORY;
    }
    /* The whole group, or (across processes) this process's rank of it: hal.c checked that
     * the devices are ranks ordinal.. of a group of info.group_size. */
    g->size = devices[0]->info.group_size;
    g->first = devices[0]->info.ordinal;
    g->local = count;
    g->refs = count;
    g->timeout_ms = ((const struct rig_cuda_device *)devices[0]->context)->collective_timeout_ms;
    atomic_init(&g->failed, RIG_OK);
    enum rig_status status = rig__init_comms(g, devices);
    if (status != RIG_OK) {
        for (int32_t i = 0; i < count; i++) {
            ncclComm_t c = g->comms[g->first + i];
            if (c != NULL && !g->aborted) (void)ncclCommAbort(c);
            free(contexts[i]);
        }
        pthread_mutex_destroy(&g->mutex);
        free(g);
        return status;
    }
    for (int32_t i = 0; i < count; i++) {
        int32_t rank = g->first + i;
        *contexts[i] = (struct rig_cuda_comm){g->comms[rank], g, rank};
        comms[i]->context = contexts[i];
        struct rig_cuda_device *d = devices[i]->context;
        d->group = g;
        d->rank = rank;
    }
    return RIG_OK;
}

void rig_cuda_comm_destroy(struct rig_comm *comm)
{
    struct rig_cuda_comm *context = comm->context;
    if (context == NULL) return;
    struct rig_cuda_device *device = comm->device->context;
    device->group = NULL;
    rig__group_release(context->group); /* the last rank's release ends the group */
    free(context);
    comm->context = NULL;
}

void rig_cuda_comm_abort(struct rig_comm *comm, const char *reason)
{
    const struct rig_cuda_comm *context = comm->context;
    RIG_ASSERT(context != NULL);
    char message[RIG__FAILURE_MAX];
    snprintf(message, sizeof message, "rank %d failed before collective #%lld: %s", context->rank,
             (long long)atomic_load(&context->group->issued[context->rank]), reason);
    (void)rig__group_fail(context->group, RIG_E_DEVICE, message);
}

const char *rig_cuda_comm_error(const struct rig_comm *comm)
{
    const struct rig_cuda_comm *context = comm->context;
    RIG_ASSERT(context != NULL);
    if (atomic_load(&context->group->failed) == RIG_OK) return "";
    return context->group->failure;
}

/* Collectives recorded by this thread's capture: a graph replay issues them again. */
static _Thread_local bool rig__capturing;
static _Thread_local int64_t rig__captured;
static _Thread_local enum rig_op_kind rig__captured_kind;

void rig_cuda_group_capture(bool begin, int64_t *collectives, int32_t *last_kind)
{
    rig__capturing = begin;
    if (begin) {
        rig__captured = 0;
        return;
    }
    *collectives = rig__captured;
    *last_kind = (int32_t)rig__captured_kind;
}

void rig_cuda_group_replayed(const struct rig_cuda_device *device, int64_t collectives,
                             int32_t last_kind)
{
    if (device->group == NULL || collectives == 0) return;
    atomic_store(&device->group->last_kind[device->rank], last_kind);
    atomic_fetch_add(&device->group->issued[device->rank], collectives);
}

enum rig_status rig_cuda_group_set_faults(struct rig_cuda_device *device,
                                          const struct rig_hal_faults *faults)
{
    bool collective = faults->collective_fault != RIG_HAL_COLLECTIVE_NONE;
    if (faults->fail_alloc_at >= 0 || faults->stall_op_at >= 0 ||
        (collective && device->group == NULL))
        return RIG_E_UNSUPPORTED;
    if (faults->collective_at < 0 || faults->collective_delay_ns < 0 ||
        faults->collective_fault > RIG_HAL_COLLECTIVE_FAIL)
        return RIG_E_INVALID;
    if (device->group != NULL)
        device->group->faults[device->rank] = (struct rig__fault){
            faults->collective_fault, faults->collective_at, faults->collective_delay_ns, 0, false};
    return RIG_OK;
}

/* Before `count` collectives of `rank` are issued (one eager call, or a graph replay's):
 * RIG_OK to go on (after a `late` fault's sleep), *skip for a stalled rank, RIG_E_FAULT for
 * a `fail` fault. */
static enum rig_status rig__fault(struct rig_cuda_group *g, int32_t rank, int64_t count,
                                  bool *skip)
{
    struct rig__fault *f = &g->faults[rank];
    *skip = f->stalled;
    if (f->kind == RIG_HAL_COLLECTIVE_NONE || f->stalled || count <= 0) return RIG_OK;
    int64_t first = f->seen;
    f->seen += count;
    if (f->at < first || f->at >= first + count) return RIG_OK;
    fprintf(stderr, "rig: cuda: fault: rank %d, collective #%lld of the plan: %s\n", (int)rank,
            (long long)f->at, rig_hal_collective_fault_name(f->kind));
    switch (f->kind) {
    case RIG_HAL_COLLECTIVE_LATE: {
        struct timespec ts = {f->delay_ns / 1000000000, f->delay_ns % 1000000000};
        nanosleep(&ts, NULL);
        return RIG_OK;
    }
    case RIG_HAL_COLLECTIVE_STALL:
        f->stalled = true;
        *skip = true;
        return RIG_OK;
    case RIG_HAL_COLLECTIVE_FAIL:
        return RIG_E_FAULT;
    case RIG_HAL_COLLECTIVE_NONE:
        break;
    }
    return RIG_OK;
}

enum rig_status rig_cuda_group_replay_fault(const struct rig_cuda_device *device,
                                            int64_t collectives, bool *skip)
{
    *skip = false;
    if (device->group == NULL) return RIG_OK;
    return rig__fault(device->group, device->rank, collectives, skip);
}

static ncclDataType_t rig__nccl_type(enum rig_dtype dtype)
{
    RIG_ASSERT(dtype == RIG_DTYPE_BF16 || dtype == RIG_DTYPE_F32); /* checked by op_check */
    return dtype == RIG_DTYPE_BF16 ? ncclBfloat16 : ncclFloat32;
}

/* After an NCCL call in non-blocking mode: counts it, then waits (bounded) until it is
 * enqueued when NCCL answered ncclInProgress. */
static enum rig_status rig__issued(const struct rig_cuda_comm *context, enum rig_op_kind kind,
                                   ncclResult_t result)
{
    struct rig_cuda_group *g = context->group;
    if (result != ncclSuccess && result != ncclInProgress) {
        char message[RIG__FAILURE_MAX];
        snprintf(message, sizeof message, "rank %d: collective #%lld (%s): NCCL: %s", context->rank,
                 (long long)atomic_load(&g->issued[context->rank]), rig_op_name(kind),
                 ncclGetErrorString(result));
        return rig__group_fail(g, RIG_E_DEVICE, message);
    }
    if (rig__capturing) {
        rig__captured++; /* counted when the graph is replayed */
        rig__captured_kind = kind;
    } else {
        atomic_store(&g->last_kind[context->rank], (int)kind);
        atomic_fetch_add(&g->issued[context->rank], 1);
    }
    if (result == ncclSuccess) return RIG_OK;
    struct rig__wait w = {g, context->rank, NULL, NULL, true, 0};
    return rig__watch(&w);
}

/* Before a collective of `context`'s rank: RIG_OK and *go to issue it; or the group's failure,
 * or a planned fault (a stalled rank: RIG_OK with *go false — it never arrives). A captured
 * call is counted by the fault plan when its graph is replayed, not here. */
static enum rig_status rig__enter(const struct rig_cuda_comm *context, bool *go)
{
    *go = false;
    enum rig_status failed = (enum rig_status)atomic_load(&context->group->failed);
    if (failed != RIG_OK) return failed;
    bool skip = false;
    if (!rig__capturing) RIG_TRY(rig__fault(context->group, context->rank, 1, &skip));
    *go = !skip;
    return RIG_OK;
}

enum rig_status rig_cuda_op_all_reduce(const struct rig_cuda_launch *launch,
                                       const struct rig_op_all_reduce *p)
{
    const struct rig_cuda_comm *context = p->comm->context;
    RIG_ASSERT(context != NULL);
    size_t count = (size_t)rig_tensor_numel(&p->data);
    bool go = false;
    if (count == 0) return RIG_OK;
    RIG_TRY(rig__enter(context, &go));
    if (!go) return RIG_OK;
    ncclResult_t result =
        ncclAllReduce(p->data.data, p->data.data, count, rig__nccl_type(p->data.dtype), ncclSum,
                      context->comm, launch->stream);
    return rig__issued(context, RIG_OP_ALL_REDUCE, result);
}

enum rig_status rig_cuda_op_all_gather(const struct rig_cuda_launch *launch,
                                       const struct rig_op_all_gather *p)
{
    const struct rig_cuda_comm *context = p->comm->context;
    RIG_ASSERT(context != NULL);
    size_t count = (size_t)rig_tensor_numel(&p->in);
    bool go = false;
    if (count == 0) return RIG_OK;
    RIG_TRY(rig__enter(context, &go));
    if (!go) return RIG_OK;
    ncclResult_t result = ncclAllGather(p->in.data, p->out.data, count, rig__nccl_type(p->in.dtype),
                                        context->comm, launch->stream);
    return rig__issued(context, RIG_OP_ALL_GATHER, result);
}
