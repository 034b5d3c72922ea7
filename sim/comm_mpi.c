/* comm_mpi.c — TP collectives between processes over OpenMPI, completed on process 0 by the
 * in-process world's code (comm_mpi.h). */
#include "sim/comm_mpi.h"

#include <mpi.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/comm.h"

enum { RIG__TAG_ARRIVAL = 2101, RIG__TAG_INPUT, RIG__TAG_REPLY, RIG__TAG_RESULT };

#define RIG__REASON_MAX 128

/* A rank's arrival (to process 0) or process 0's reply (status, end_ns, has_data). */
struct rig__wire {
    int32_t kind, dtype;
    int32_t phantom; /* arrival: the rank's tensors are phantom; reply: no data comes back */
    int32_t status;  /* reply: enum rig_status; arrival: < 0 when the rank aborted instead */
    int64_t numel;   /* all-reduce: data; all-gather: input */
    int64_t earliest_ns, end_ns;
    char reason[RIG__REASON_MAX]; /* an aborted arrival: why */
};

struct rig_sim_mpi {
    MPI_Comm comm;
    int32_t size, rank;
    int64_t bytes_max, timeout_ms;
    uint64_t index;              /* collectives done: what a message names */
    struct rig_sim_world *world; /* process 0: the arrivals of every rank */
    uint8_t *inputs;             /* process 0: rank r's input at r * bytes_max */
    uint8_t *gathered;           /* process 0: the other ranks' all-gather output */
    struct rig__wire wires[RIG_DEVICES_MAX];
    MPI_Request requests[RIG_DEVICES_MAX];
    enum rig_status failed;
    char failure[RIG_SIM_FAILURE_MAX];
};

static enum rig_status rig__fail(struct rig_sim_mpi *p, enum rig_status status, const char *format,
                                 ...)
{
    if (p->failed != RIG_OK) return p->failed;
    va_list args;
    va_start(args, format);
    vsnprintf(p->failure, sizeof p->failure, format, args);
    va_end(args);
    p->failed = status;
    return status;
}

static int64_t rig__now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Polls requests[0, n) until all are done (0), one fails (-1), or the collective timeout
 * passes (the number still pending). Yields for the first 2000 polls, then naps 100 us. */
static int32_t rig__progress(struct rig_sim_mpi *p, int32_t n)
{
    int64_t deadline = rig__now_ms() + p->timeout_ms;
    for (int64_t poll = 0;; poll++) {
        int32_t pending = 0;
        for (int32_t i = 0; i < n; i++) {
            int done = 0;
            if (p->requests[i] != MPI_REQUEST_NULL &&
                MPI_Test(&p->requests[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                return -1;
            pending += p->requests[i] != MPI_REQUEST_NULL;
        }
        if (pending == 0 || rig__now_ms() >= deadline) return pending;
        if (poll < 2000) {
            sched_yield();
        } else {
            struct timespec nap = {0, 100000};
            nanosleep(&nap, NULL);
        }
    }
}

/* Waits for requests[0, n), where request i is an exchange with process first + i; fails
 * the pool naming the processes missing after timeout_ms. */
static enum rig_status rig__wait(struct rig_sim_mpi *p, int32_t n, int32_t first, const char *what)
{
    int32_t pending = rig__progress(p, n);
    if (pending == 0) return RIG_OK;
    if (pending < 0)
        return rig__fail(p, RIG_E_IO, "rank %d: MPI error in the %s of collective #%llu",
                         (int)p->rank, what, (unsigned long long)p->index);
    char missing[64] = "";
    size_t used = 0;
    for (int32_t i = 0; i < n && used + 8 < sizeof missing; i++)
        if (p->requests[i] != MPI_REQUEST_NULL)
            used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%d",
                                     used ? ", " : "", (int)(first + i));
    return rig__fail(p, RIG_E_TIMEOUT,
                     "rank %d: no %s of collective #%llu from process %s within the collective "
                     "timeout (%lld ms)",
                     (int)p->rank, what, (unsigned long long)p->index, missing,
                     (long long)p->timeout_ms);
}

enum rig_status rig_sim_mpi_create(int64_t bytes_max, int64_t timeout_ms, struct rig_sim_mpi **out)
{
    RIG_ASSERT(out != NULL);
    *out = NULL;
    int size = 0, rank = 0, initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) return RIG_E_STATE; /* an MPI call now would abort the process */
    if (MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS) return RIG_E_IO;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (bytes_max < 0 || timeout_ms <= 0 || size > RIG_DEVICES_MAX) return RIG_E_INVALID;
    struct rig_sim_mpi *p = calloc(1, sizeof *p);
    if (p == NULL) return RIG_E_NO_MEMORY;
    *p = (struct rig_sim_mpi){.comm = MPI_COMM_NULL,
                              .size = size,
                              .rank = rank,
                              .bytes_max = bytes_max,
                              .timeout_ms = timeout_ms};
    size_t scratch = (size_t)size * (size_t)(bytes_max > 0 ? bytes_max : 1);
    if (rank == 0) {
        p->world = rig_sim_world_create(size, timeout_ms);
        p->inputs = malloc(scratch);
        p->gathered = malloc(scratch);
    }
    bool ok = rank != 0 || (p->world != NULL && p->inputs != NULL && p->gathered != NULL);
    if (!ok || MPI_Comm_dup(MPI_COMM_WORLD, &p->comm) != MPI_SUCCESS) {
        enum rig_status status = ok ? RIG_E_IO : RIG_E_NO_MEMORY;
        rig_sim_mpi_destroy(p);
        return status;
    }
    MPI_Comm_set_errhandler(p->comm, MPI_ERRORS_RETURN);
    *out = p;
    return RIG_OK;
}

int32_t rig_sim_mpi_rank(const struct rig_sim_mpi *p)
{
    return p->rank;
}

int32_t rig_sim_mpi_size(const struct rig_sim_mpi *p)
{
    return p->size;
}

const char *rig_sim_mpi_failure(const struct rig_sim_mpi *p)
{
    return p->failed == RIG_OK ? "" : p->failure;
}

/* The group's finalize, as NCCL's (ncclCommFinalize is a collective of every rank): a healthy
 * pool's destroy returns once every process has reached its own, or after the collective
 * timeout, saying so on stderr (a GPU's finalize is then aborted). So a teardown that frees
 * a comm before a process it still owes a message reaches its destroy waits here as it does
 * on GPUs, and the tests of ranks across processes see it. */
static void rig__finalize(struct rig_sim_mpi *p)
{
    if (p->failed != RIG_OK || p->comm == MPI_COMM_NULL || p->size < 2) return;
    p->requests[0] = MPI_REQUEST_NULL;
    if (MPI_Ibarrier(p->comm, &p->requests[0]) != MPI_SUCCESS) return;
    if (rig__progress(p, 1) > 0)
        fprintf(stderr, "rig: sim: rank %d: finalizing the group: not every process finalized "
                "within the collective timeout (%lld ms)\n", (int)p->rank,
                (long long)p->timeout_ms);
}

void rig_sim_mpi_destroy(struct rig_sim_mpi *p)
{
    if (p == NULL) return;
    rig__finalize(p);
    if (p->comm != MPI_COMM_NULL) MPI_Comm_free(&p->comm);
    for (int32_t r = 0; p->world != NULL && r < p->size; r++)
        rig_sim_world_release(p->world);
    free(p->inputs);
    free(p->gathered);
    free(p);
}

/* The op's tensor that goes to process 0 (all-reduce data, all-gather input) and the one the
 * result lands in (all-reduce data, all-gather output). */
static const struct rig_tensor *rig__input(const struct rig_op *op)
{
    return op->kind == RIG_OP_ALL_REDUCE ? &op->u.all_reduce.data : &op->u.all_gather.in;
}

static const struct rig_tensor *rig__output(const struct rig_op *op)
{
    return op->kind == RIG_OP_ALL_REDUCE ? &op->u.all_reduce.data : &op->u.all_gather.out;
}

static int64_t rig__bytes(const struct rig_tensor *t)
{
    return rig_tensor_numel(t) * (int64_t)rig_dtype_size(t->dtype);
}

/* Process 0: rank r's arrival must be rank 0's collective, within the buffers. */
static enum rig_status rig__check_arrival(struct rig_sim_mpi *p, const struct rig_op *op, int32_t r)
{
    const struct rig__wire *w = &p->wires[r];
    const struct rig_tensor *in = rig__input(op);
    if (w->kind == (int32_t)op->kind && w->dtype == (int32_t)in->dtype &&
        w->numel == rig_tensor_numel(in) && rig__bytes(in) <= p->bytes_max)
        return RIG_OK;
    return rig__fail(p, RIG_E_INVALID,
                     "rank %d issued collective #%llu as kind %d, dtype %d, "
                     "%lld elements; rank 0 as kind %d, dtype %d, %lld elements (at most %lld "
                     "bytes)",
                     (int)r, (unsigned long long)p->index, (int)w->kind, (int)w->dtype,
                     (long long)w->numel, (int)op->kind, (int)in->dtype,
                     (long long)rig_tensor_numel(in), (long long)p->bytes_max);
}

/* Process 0: receives every other rank's arrival and (unless phantom) its input. */
static enum rig_status rig__gather(struct rig_sim_mpi *p, const struct rig_op *op)
{
    int32_t n = p->size - 1;
    for (int32_t r = 1; r < p->size; r++)
        MPI_Irecv(&p->wires[r], (int)sizeof p->wires[r], MPI_BYTE, r, RIG__TAG_ARRIVAL, p->comm,
                  &p->requests[r - 1]);
    RIG_TRY(rig__wait(p, n, 1, "arrival"));
    enum rig_status status = RIG_OK;
    for (int32_t r = 1; r < p->size; r++) {
        const struct rig__wire *w = &p->wires[r];
        if (status == RIG_OK && w->status < 0)
            status = rig__fail(p, (enum rig_status)w->status,
                               "rank %d failed before collective #%llu: %.*s", (int)r,
                               (unsigned long long)p->index, RIG__REASON_MAX, w->reason);
    }
    for (int32_t r = 1; r < p->size; r++)
        if (status == RIG_OK) status = rig__check_arrival(p, op, r);
    int64_t bytes = rig__bytes(rig__input(op));
    for (int32_t r = 1; r < p->size; r++) {
        p->requests[r - 1] = MPI_REQUEST_NULL;
        if (p->wires[r].phantom || p->wires[r].status < 0 || bytes > p->bytes_max) continue;
        MPI_Irecv(p->inputs + (size_t)r * (size_t)p->bytes_max, (int)bytes, MPI_BYTE, r,
                  RIG__TAG_INPUT, p->comm, &p->requests[r - 1]);
    }
    RIG_TRY(rig__wait(p, n, 1, "input"));
    return status;
}

/* Process 0: the world's arrivals (rank 0's own op; the others' in the buffers), then the
 * in-process completion. */
static void rig__complete(struct rig_sim_mpi *p, const struct rig_sim_profile *profile,
                          const struct rig_op *op, int64_t earliest_ns, bool phantom)
{
    struct rig_sim_world *world = p->world;
    world->arrivals[0] = (struct rig_sim_arrival){*op, earliest_ns, phantom};
    const struct rig_tensor *in = rig__input(op);
    for (int32_t r = 1; r < p->size; r++) {
        struct rig_op remote = *op;
        void *data = p->inputs + (size_t)r * (size_t)p->bytes_max;
        struct rig_tensor t = rig_tensor_1d(data, in->dtype, rig_tensor_numel(in));
        if (op->kind == RIG_OP_ALL_REDUCE) {
            remote.u.all_reduce.data = t;
        } else {
            remote.u.all_gather.in = t;
            remote.u.all_gather.out =
                rig_tensor_1d(p->gathered, in->dtype, rig_tensor_numel(&op->u.all_gather.out));
        }
        world->arrivals[r] =
            (struct rig_sim_arrival){remote, p->wires[r].earliest_ns, p->wires[r].phantom != 0};
    }
    rig_sim_world_complete(world, profile);
    enum rig_status failed = (enum rig_status)atomic_load(&world->failed);
    if (failed != RIG_OK) rig__fail(p, failed, "%s", rig_sim_world_failure(world));
    atomic_fetch_add(&world->generation, 1);
}

/* Process 0's side: gather, complete, reply (status, end time and, with data, the result). */
static enum rig_status rig__lead(struct rig_sim_mpi *p, const struct rig_sim_profile *profile,
                                 const struct rig_op *op, int64_t earliest_ns, bool phantom,
                                 int64_t *end_ns)
{
    enum rig_status status = rig__gather(p, op);
    bool data = !phantom;
    for (int32_t r = 1; r < p->size; r++)
        data = data && !p->wires[r].phantom;
    if (status == RIG_OK) rig__complete(p, profile, op, earliest_ns, phantom);
    status = p->failed;
    *end_ns = p->world->end_ns;
    struct rig__wire reply = {
        .kind = (int32_t)op->kind, .phantom = !data, .status = (int32_t)status, .end_ns = *end_ns};
    const struct rig_tensor *out = rig__output(op);
    for (int32_t r = 1; r < p->size; r++)
        MPI_Isend(&reply, (int)sizeof reply, MPI_BYTE, r, RIG__TAG_REPLY, p->comm,
                  &p->requests[r - 1]);
    enum rig_status sent = rig__wait(p, p->size - 1, 1, "reply");
    for (int32_t r = 1; r < p->size && sent == RIG_OK; r++) {
        p->requests[r - 1] = MPI_REQUEST_NULL;
        if (status == RIG_OK && data)
            MPI_Isend(out->data, (int)rig__bytes(out), MPI_BYTE, r, RIG__TAG_RESULT, p->comm,
                      &p->requests[r - 1]);
    }
    if (sent == RIG_OK) sent = rig__wait(p, p->size - 1, 1, "result");
    return status != RIG_OK ? status : sent;
}

/* The other processes' side: send the arrival and input, take the reply and result. */
static enum rig_status rig__follow(struct rig_sim_mpi *p, const struct rig_op *op,
                                   int64_t earliest_ns, bool phantom, int64_t *end_ns)
{
    const struct rig_tensor *in = rig__input(op), *out = rig__output(op);
    struct rig__wire arrival = {.kind = (int32_t)op->kind,
                                .dtype = (int32_t)in->dtype,
                                .phantom = phantom,
                                .numel = rig_tensor_numel(in),
                                .earliest_ns = earliest_ns};
    p->requests[0] = p->requests[1] = MPI_REQUEST_NULL;
    MPI_Isend(&arrival, (int)sizeof arrival, MPI_BYTE, 0, RIG__TAG_ARRIVAL, p->comm,
              &p->requests[0]);
    if (!phantom)
        MPI_Isend(in->data, (int)rig__bytes(in), MPI_BYTE, 0, RIG__TAG_INPUT, p->comm,
                  &p->requests[1]);
    RIG_TRY(rig__wait(p, 2, 0, "arrival"));
    struct rig__wire reply;
    MPI_Irecv(&reply, (int)sizeof reply, MPI_BYTE, 0, RIG__TAG_REPLY, p->comm, &p->requests[0]);
    RIG_TRY(rig__wait(p, 1, 0, "reply"));
    if (reply.status != RIG_OK)
        return rig__fail(p, reply.status < 0 ? (enum rig_status)reply.status : RIG_E_IO,
                         "rank %d: collective #%llu failed on process 0 (%s)", (int)p->rank,
                         (unsigned long long)p->index,
                         rig_status_message((enum rig_status)reply.status));
    if (!reply.phantom) {
        MPI_Irecv(out->data, (int)rig__bytes(out), MPI_BYTE, 0, RIG__TAG_RESULT, p->comm,
                  &p->requests[0]);
        RIG_TRY(rig__wait(p, 1, 0, "result"));
    }
    *end_ns = reply.end_ns;
    return RIG_OK;
}

enum rig_status rig_sim_mpi_collective(struct rig_sim_mpi *p, const struct rig_sim_profile *profile,
                                       const struct rig_op *op, int64_t earliest_ns, bool phantom,
                                       int64_t *end_ns)
{
    RIG_ASSERT(p != NULL && profile != NULL && op != NULL && end_ns != NULL);
    RIG_ASSERT(op->kind == RIG_OP_ALL_REDUCE || op->kind == RIG_OP_ALL_GATHER);
    int64_t timeout_ns = p->timeout_ms * 1000000;
    enum rig_status status = p->failed;
    if (status == RIG_OK && rig__bytes(rig__input(op)) > p->bytes_max)
        status = rig__fail(p, RIG_E_RANGE,
                           "rank %d: collective #%llu of %lld bytes is over the "
                           "pool's %lld",
                           (int)p->rank, (unsigned long long)p->index,
                           (long long)rig__bytes(rig__input(op)), (long long)p->bytes_max);
    if (status == RIG_OK)
        status = p->rank == 0 ? rig__lead(p, profile, op, earliest_ns, phantom, end_ns)
                              : rig__follow(p, op, earliest_ns, phantom, end_ns);
    p->index++;
    if (status == RIG_OK) return RIG_OK;
    *end_ns = earliest_ns > RIG_SIM_NEVER - timeout_ns ? RIG_SIM_NEVER : earliest_ns + timeout_ns;
    return status;
}

void rig_sim_mpi_abort(struct rig_sim_mpi *p, const char *reason)
{
    RIG_ASSERT(p != NULL && reason != NULL);
    if (p->failed != RIG_OK) return; /* failed in a collective: process 0 knows */
    rig__fail(p, RIG_E_DEVICE, "rank %d failed before collective #%llu: %s", (int)p->rank,
              (unsigned long long)p->index, reason);
    if (p->rank == 0) return; /* the caller ends the MPI job */
    struct rig__wire aborted = {.status = RIG_E_DEVICE};
    snprintf(aborted.reason, sizeof aborted.reason, "%s", reason);
    p->requests[0] = MPI_REQUEST_NULL;
    int rc = MPI_Isend(&aborted, (int)sizeof aborted, MPI_BYTE, 0, RIG__TAG_ARRIVAL, p->comm,
                       &p->requests[0]);
    if (rc == MPI_SUCCESS) rig__wait(p, 1, 0, "abort notice");
}
