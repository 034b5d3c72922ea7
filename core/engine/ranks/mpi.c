/* mpi.c — ranks.h's seam across processes over OpenMPI (mpi.h). Every transfer is
 * non-blocking and polled against the pool's wall-clock bound, on a communicator that returns
 * MPI errors. */
#include <mpi.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/engine/ranks/mpi.h"
#include "hal/hal.h"

#define RIG__POLLS      2000   /* yields before a waiting process sleeps between polls */
#define RIG__NAP_NS     100000 /* its sleep: 0.1 ms */
#define RIG__IDLE_MS    1000   /* an unbounded wait (a server's follower between requests)
                                  past this sleeps RIG__IDLE_NAP_NS between polls */
#define RIG__IDLE_NAP_NS 1000000
#define RIG__TAG_STATUS 1917   /* a follower's status of a job, to process 0 */

struct rig_ranks_mpi {
    MPI_Comm comm;
    int32_t size, rank;
    int64_t metadata_max, timeout_ms;
    rig_rank_execute_fn execute;
    void *ctx;
    bool initialized_mpi; /* create called MPI_Init_thread: destroy finalizes */
    bool released;        /* process 0 has sent the exit job */
    enum rig_status failed;
    char error[RIG_RANKS_MPI_ERROR_MAX];
    uint8_t *metadata; /* (metadata_max) a follower's receive buffer */
    int32_t statuses[RIG_DEVICES_MAX];
    MPI_Request requests[RIG_DEVICES_MAX];
};

static enum rig_status rig__fail(struct rig_ranks_mpi *p, enum rig_status status,
                                 const char *format, ...)
{
    if (p->failed != RIG_OK) return p->failed;
    va_list args;
    va_start(args, format);
    int n = snprintf(p->error, sizeof p->error, "process %d: ", (int)p->rank);
    vsnprintf(p->error + n, sizeof p->error - (size_t)n, format, args);
    va_end(args);
    p->failed = status;
    return status;
}

static enum rig_status rig__fail_mpi(struct rig_ranks_mpi *p, int rc, const char *what,
                                     int64_t step)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "?");
    return rig__fail(p, RIG_E_IO, "MPI error in %s of step %lld: %s", what, (long long)step, text);
}

static int64_t rig__now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Waits for requests[0, n) (peers[i]: the process each one waits on); bounded by the
 * pool's timeout when `bounded`. */
static enum rig_status rig__wait(struct rig_ranks_mpi *p, MPI_Request *requests,
                                 const int32_t *peers, int32_t n, bool bounded, const char *what,
                                 int64_t step)
{
    int64_t start = rig__now_ms(), deadline = start + p->timeout_ms;
    for (int64_t poll = 0;; poll++) {
        int32_t pending = 0;
        for (int32_t i = 0; i < n; i++) {
            if (requests[i] == MPI_REQUEST_NULL) continue;
            int done = 0;
            int rc = MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) return rig__fail_mpi(p, rc, what, step);
            pending += !done;
        }
        if (pending == 0) return RIG_OK;
        if (bounded && rig__now_ms() >= deadline) {
            char missing[96] = "";
            size_t used = 0;
            for (int32_t i = 0; i < n && used < sizeof missing - 8; i++)
                if (requests[i] != MPI_REQUEST_NULL)
                    used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%d",
                                             used ? ", " : "", (int)peers[i]);
            return rig__fail(p, RIG_E_TIMEOUT, "no %s of step %lld from process %s within %lld ms",
                             what, (long long)step, missing, (long long)p->timeout_ms);
        }
        if (poll < RIG__POLLS) {
            sched_yield();
        } else {
            bool idle = !bounded && rig__now_ms() - start > RIG__IDLE_MS;
            struct timespec nap = {0, idle ? RIG__IDLE_NAP_NS : RIG__NAP_NS};
            nanosleep(&nap, NULL);
        }
    }
}

/* One broadcast from process 0, waited on (the root's wait names no peer). */
static enum rig_status rig__bcast(struct rig_ranks_mpi *p, void *data, int64_t bytes, bool bounded,
                                  const char *what, int64_t step)
{
    if (bytes > INT32_MAX)
        return rig__fail(p, RIG_E_RANGE, "%s of %lld bytes", what, (long long)bytes);
    MPI_Request request;
    int rc = MPI_Ibcast(data, (int)bytes, MPI_BYTE, 0, p->comm, &request);
    if (rc != MPI_SUCCESS) return rig__fail_mpi(p, rc, what, step);
    int32_t root = 0;
    return rig__wait(p, &request, &root, 1, bounded, what, step);
}

static bool rig__initialized_here; /* rig_ranks_mpi_init called MPI_Init_thread */

/* Starts MPI unless it runs (*started: this call started it), at MPI_THREAD_SERIALIZED: a
 * server's engine thread, not the one that started MPI, makes the MPI calls. */
static enum rig_status rig__mpi_start(bool *started, char *error, size_t error_len)
{
    int initialized = 0, provided = 0;
    MPI_Initialized(&initialized);
    *started = false;
    if (initialized) return RIG_OK;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        snprintf(error, error_len, "MPI_Init_thread failed");
        return RIG_E_IO;
    }
    *started = true;
    if (provided >= MPI_THREAD_SERIALIZED) return RIG_OK;
    snprintf(error, error_len, "this MPI gives thread level %d; rig needs MPI_THREAD_SERIALIZED (%d)",
             provided, (int)MPI_THREAD_SERIALIZED);
    return RIG_E_UNSUPPORTED;
}

enum rig_status rig_ranks_mpi_init(int32_t *rank, int32_t *size, char *error, size_t error_len)
{
    RIG_ASSERT(rank != NULL && size != NULL && error != NULL);
    int r = 0, n = 0;
    bool started = false;
    enum rig_status status = rig__mpi_start(&started, error, error_len);
    rig__initialized_here = rig__initialized_here || started;
    if (status != RIG_OK) return status;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    *rank = r;
    *size = n;
    return RIG_OK;
}

void rig_ranks_mpi_finalize(bool failed)
{
    if (!rig__initialized_here) return;
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (failed && size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    rig__initialized_here = false;
    MPI_Finalize();
}

/* The pool's communicator, a duplicate of MPI_COMM_WORLD: collective, so it waits for every
 * process, at most timeout_ms. A process that has not come by then ends the job (the
 * duplication in flight cannot be cancelled). */
static enum rig_status rig__dup(struct rig_ranks_mpi *p, char *error, size_t error_len)
{
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Comm_idup(MPI_COMM_WORLD, &p->comm, &request) != MPI_SUCCESS) {
        snprintf(error, error_len, "MPI_Comm_idup failed");
        return RIG_E_IO;
    }
    int32_t everyone = -1;
    if (rig__wait(p, &request, &everyone, 1, true, "join", -1) == RIG_OK) return RIG_OK;
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    fprintf(stderr, "rig: ending the MPI job: process %d: not every process of %d joined "
            "within %lld ms\n", (int)p->rank, world, (long long)p->timeout_ms);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return RIG_E_TIMEOUT; /* not reached */
}

static enum rig_status rig__join(struct rig_ranks_mpi *p, int32_t size, char *error,
                                 size_t error_len)
{
    int world = 0, rank = 0;
    bool started = false;
    enum rig_status status = rig__mpi_start(&started, error, error_len);
    p->initialized_mpi = started;
    if (status != RIG_OK) return status;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    p->rank = rank;
    RIG_TRY(rig__dup(p, error, error_len));
    MPI_Comm_set_errhandler(p->comm, MPI_ERRORS_RETURN);
    MPI_Comm_size(p->comm, &world);
    if (world != size) {
        snprintf(error, error_len, "tensor parallelism %d needs %d MPI processes; the job has %d",
                 (int)size, (int)size, world);
        return RIG_E_INVALID;
    }
    return RIG_OK;
}

enum rig_status rig_ranks_mpi_create(int32_t size, int64_t metadata_max, int64_t timeout_ms,
                                     rig_rank_execute_fn execute, void *ctx, char *error,
                                     size_t error_len, struct rig_ranks_mpi **out)
{
    RIG_ASSERT(execute != NULL && out != NULL && error != NULL);
    *out = NULL;
    if (size < 1 || size > RIG_DEVICES_MAX || metadata_max < 0 || timeout_ms <= 0) {
        snprintf(error, error_len, "bad rank pool: size %d, metadata %lld, timeout %lld ms",
                 (int)size, (long long)metadata_max, (long long)timeout_ms);
        return RIG_E_INVALID;
    }
    struct rig_ranks_mpi *p = calloc(1, sizeof *p);
    uint8_t *metadata = malloc(metadata_max > 0 ? (size_t)metadata_max : 1);
    if (p == NULL || metadata == NULL) {
        free(p), free(metadata);
        snprintf(error, error_len, "out of memory");
        return RIG_E_NO_MEMORY;
    }
    *p = (struct rig_ranks_mpi){.comm = MPI_COMM_NULL,
                                .size = size,
                                .metadata_max = metadata_max,
                                .timeout_ms = timeout_ms,
                                .execute = execute,
                                .ctx = ctx,
                                .metadata = metadata};
    enum rig_status status = rig__join(p, size, error, error_len);
    if (status != RIG_OK) {
        if (p->comm != MPI_COMM_NULL) MPI_Comm_free(&p->comm);
        if (p->initialized_mpi) MPI_Finalize();
        free(p->metadata), free(p);
        return status;
    }
    *out = p;
    return RIG_OK;
}

int32_t rig_ranks_mpi_rank(const struct rig_ranks_mpi *p)
{
    return p->rank;
}

const char *rig_ranks_mpi_error(const struct rig_ranks_mpi *p)
{
    return p->error;
}

/* Process 0: sends the job to every follower (descriptor, then metadata). */
static enum rig_status rig__send_job(struct rig_ranks_mpi *p, const struct rig_batch_desc *desc,
                                     const uint8_t *metadata)
{
    struct rig_batch_desc copy = *desc;
    RIG_TRY(rig__bcast(p, &copy, (int64_t)sizeof copy, true, "descriptor", desc->step));
    if (desc->job == RIG_RANK_JOB_EXIT || desc->metadata_bytes == 0) return RIG_OK;
    return rig__bcast(p, (void *)metadata, desc->metadata_bytes, true, "metadata", desc->step);
}

enum rig_status rig_ranks_mpi_run(struct rig_ranks_mpi *p, const struct rig_batch_desc *desc,
                                  const uint8_t *metadata)
{
    RIG_ASSERT(p != NULL && desc != NULL && p->rank == 0);
    RIG_ASSERT(desc->job == RIG_RANK_JOB_LAUNCH || desc->job == RIG_RANK_JOB_CAPTURE);
    RIG_ASSERT(desc->metadata_bytes >= 0 && desc->metadata_bytes <= p->metadata_max);
    if (p->failed != RIG_OK) return p->failed;
    if (p->size == 1) return p->execute(p->ctx, 0, desc, metadata);
    int32_t peers[RIG_DEVICES_MAX];
    for (int32_t r = 1; r < p->size; r++) {
        peers[r - 1] = r;
        int rc = MPI_Irecv(&p->statuses[r], 1, MPI_INT32_T, r, RIG__TAG_STATUS, p->comm,
                           &p->requests[r - 1]);
        if (rc != MPI_SUCCESS) return rig__fail_mpi(p, rc, "status receive", desc->step);
    }
    RIG_TRY(rig__send_job(p, desc, metadata));
    enum rig_status status = p->execute(p->ctx, 0, desc, metadata);
    /* The followers may wait in a collective rank 0 never joined: no status is coming. */
    if (status != RIG_OK)
        return rig__fail(p, status, "rank 0's share of step %lld failed: %s",
                         (long long)desc->step, rig_status_message(status));
    RIG_TRY(rig__wait(p, p->requests, peers, p->size - 1, true, "status", desc->step));
    for (int32_t r = 1; r < p->size; r++)
        if (status == RIG_OK && p->statuses[r] != RIG_OK)
            status = p->statuses[r] < 0 ? (enum rig_status)p->statuses[r] : RIG_E_IO;
    return status;
}

/* A follower's check of a descriptor from the wire. */
static enum rig_status rig__check(struct rig_ranks_mpi *p, const struct rig_batch_desc *d)
{
    if (d->job != RIG_RANK_JOB_LAUNCH && d->job != RIG_RANK_JOB_CAPTURE &&
        d->job != RIG_RANK_JOB_EXIT)
        return rig__fail(p, RIG_E_INVALID, "job kind %d of step %lld is unknown", (int)d->job,
                         (long long)d->step);
    if (d->metadata_bytes < 0 || d->metadata_bytes > p->metadata_max)
        return rig__fail(p, RIG_E_RANGE, "step %lld carries %lld metadata bytes, at most %lld",
                         (long long)d->step, (long long)d->metadata_bytes,
                         (long long)p->metadata_max);
    return RIG_OK;
}

enum rig_status rig_ranks_mpi_follow(struct rig_ranks_mpi *p, bool bounded)
{
    RIG_ASSERT(p != NULL && p->rank > 0);
    for (;;) { /* bounded by process 0's job count: it ends with the exit job */
        if (p->failed != RIG_OK) return p->failed;
        struct rig_batch_desc desc;
        memset(&desc, 0, sizeof desc);
        RIG_TRY(rig__bcast(p, &desc, (int64_t)sizeof desc, bounded, "descriptor", -1));
        RIG_TRY(rig__check(p, &desc));
        if (desc.job == RIG_RANK_JOB_EXIT) return RIG_OK;
        if (desc.metadata_bytes > 0)
            RIG_TRY(rig__bcast(p, p->metadata, desc.metadata_bytes, true, "metadata", desc.step));
        int32_t status = (int32_t)p->execute(p->ctx, p->rank, &desc, p->metadata);
        MPI_Request request;
        int rc = MPI_Isend(&status, 1, MPI_INT32_T, 0, RIG__TAG_STATUS, p->comm, &request);
        if (rc != MPI_SUCCESS) return rig__fail_mpi(p, rc, "status send", desc.step);
        int32_t root = 0;
        RIG_TRY(rig__wait(p, &request, &root, 1, true, "status send", desc.step));
    }
}

void rig_ranks_mpi_release(struct rig_ranks_mpi *p)
{
    if (p == NULL || p->released || p->failed != RIG_OK || p->rank != 0 || p->size < 2) return;
    p->released = true;
    struct rig_batch_desc exit_job = {.job = RIG_RANK_JOB_EXIT, .graph = -1};
    rig__send_job(p, &exit_job, NULL);
}

void rig_ranks_mpi_destroy(struct rig_ranks_mpi *p)
{
    if (p == NULL) return;
    rig_ranks_mpi_release(p);
    if (p->failed != RIG_OK) {
        fprintf(stderr, "rig: ending the MPI job: %s\n", p->error);
        MPI_Abort(p->comm, 1); /* transfers in flight cannot be cancelled */
    }
    MPI_Comm_free(&p->comm);
    if (p->initialized_mpi) MPI_Finalize();
    free(p->metadata);
    free(p);
}
