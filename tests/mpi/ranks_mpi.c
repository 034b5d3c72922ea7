/* ranks_mpi.c — core/engine/ranks/mpi.c under `mpirun -n N` (tests/mpi/ranks_mpi.sh runs it).
 *
 *   ok     process 0 sends 300 jobs of varied descriptors and metadata sizes; every process
 *          hashes (rank, descriptor, metadata) as its executor sees them, and process 0
 *          checks each process's hash against the one it computes from what it sent; a job
 *          failing on the last rank comes back as that rank's status; a pool whose size is
 *          not the job's is refused with a message.
 *   stall  process 1's executor sleeps at step 5: process 0 gets RIG_E_TIMEOUT naming
 *          process 1 and the step, within the timeout; destroy then ends the job.
 *   kill   process 1 kills itself (SIGKILL) at step 5: mpirun ends the job.
 *   late   process 1 comes to create its pool 20 s late: process 0's create (a 1 s bound)
 *          ends the job, saying that not every process joined.
 * Prints "PASS <mode>" on process 0 when its checks hold; exits non-zero otherwise. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/engine/ranks/mpi.h"
#include "hal/hal.h"

#define STEPS        300
#define METADATA_MAX 4096
#define FAIL_STEP    50 /* the last rank's executor fails this step (mode ok) */
#define FAULT_STEP   5  /* process 1 stalls or dies here (modes stall, kill) */

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

struct ctx {
    const char *mode;
    int32_t size;
    uint64_t hash; /* this process's rank's view of every job */
};

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const uint8_t *b = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t job_hash(uint64_t h, int32_t rank, const struct rig_batch_desc *d,
                         const uint8_t *metadata)
{
    h = fnv(h, &rank, sizeof rank);
    h = fnv(h, d, sizeof *d);
    return fnv(h, metadata, (size_t)d->metadata_bytes);
}

static enum rig_status execute(void *opaque, int32_t rank, const struct rig_batch_desc *d,
                               const uint8_t *metadata)
{
    struct ctx *c = opaque;
    c->hash = job_hash(c->hash, rank, d, metadata);
    if (strcmp(c->mode, "ok") == 0 && d->step == FAIL_STEP && rank == c->size - 1)
        return RIG_E_FAULT;
    if (rank == 1 && d->step == FAULT_STEP && strcmp(c->mode, "stall") == 0) sleep(30);
    if (rank == 1 && d->step == FAULT_STEP && strcmp(c->mode, "kill") == 0) raise(SIGKILL);
    return RIG_OK;
}

/* Job `step`: fields and metadata that vary with the step. */
static struct rig_batch_desc make_job(int64_t step, uint8_t *metadata)
{
    struct rig_batch_desc d = {.job = step == 0 ? RIG_RANK_JOB_CAPTURE : RIG_RANK_JOB_LAUNCH,
                               .slot = (int32_t)(step % 2),
                               .step = step,
                               .phase = 1,
                               .count = (int32_t)(step % 7),
                               .tokens = (int32_t)(step * 3),
                               .graph = step % 3 == 0 ? -1 : 1,
                               .top_logprobs = -1,
                               .metadata_bytes = (step * 977) % (METADATA_MAX + 1)};
    for (int64_t i = 0; i < d.metadata_bytes; i++)
        metadata[i] = (uint8_t)((step * 31 + i * 7) ^ (i >> 8));
    return d;
}

static int lead(struct rig_ranks_mpi **pool_out, struct ctx *c)
{
    struct rig_ranks_mpi *pool = *pool_out;
    static uint8_t metadata[METADATA_MAX];
    uint64_t expected[RIG_DEVICES_MAX];
    for (int32_t r = 0; r < c->size; r++)
        expected[r] = 14695981039346656037ull;
    for (int64_t step = 0; step < STEPS; step++) {
        struct rig_batch_desc d = make_job(step, metadata);
        for (int32_t r = 0; r < c->size; r++)
            expected[r] = job_hash(expected[r], r, &d, metadata);
        enum rig_status status = rig_ranks_mpi_run(pool, &d, metadata);
        if (strcmp(c->mode, "stall") == 0 && step == FAULT_STEP) {
            CHECK(status == RIG_E_TIMEOUT);
            const char *error = rig_ranks_mpi_error(pool);
            CHECK(strstr(error, "no status of step 5 from process 1 within") != NULL);
            printf("PASS stall: %s\n", error);
            fflush(stdout);
            return 0;
        }
        CHECK(status == ((strcmp(c->mode, "ok") == 0 && step == FAIL_STEP && c->size > 1)
                             ? RIG_E_FAULT
                             : RIG_OK));
    }
    CHECK(strcmp(c->mode, "ok") == 0);
    rig_ranks_mpi_destroy(pool);
    *pool_out = NULL;
    uint64_t hashes[RIG_DEVICES_MAX];
    CHECK(MPI_Gather(&c->hash, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD) ==
          MPI_SUCCESS);
    for (int32_t r = 0; r < c->size; r++)
        CHECK(hashes[r] == expected[r]);
    printf("PASS ok: %d processes, %d jobs\n", (int)c->size, STEPS);
    return 0;
}

int main(int argc, char **argv)
{
    int provided = 0, size = 0, rank = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct ctx c = {
        .mode = argc > 1 ? argv[1] : "ok", .size = size, .hash = 14695981039346656037ull};
    char error[RIG_RANKS_MPI_ERROR_MAX];
    struct rig_ranks_mpi *pool = NULL;
    if (strcmp(c.mode, "late") == 0 && rank == 1) sleep(20); /* never joins in time */
    /* A pool whose size is not the job's is refused (every process, before any job). */
    CHECK(rig_ranks_mpi_create(size + 1, METADATA_MAX, 1000, execute, &c, error, sizeof error,
                               &pool) == RIG_E_INVALID);
    CHECK(pool == NULL && strstr(error, "needs") != NULL);
    CHECK(rig_ranks_mpi_create(size, METADATA_MAX, 2000, execute, &c, error, sizeof error, &pool) ==
          RIG_OK);
    int rc = 0;
    if (rank == 0) {
        rc = lead(&pool, &c);
        if (rc != 0) MPI_Abort(MPI_COMM_WORLD, 1);
        rig_ranks_mpi_destroy(pool); /* stall: the failed pool ends the job */
    } else {
        enum rig_status status = rig_ranks_mpi_follow(pool, false);
        if (status != RIG_OK) fprintf(stderr, "%s\n", rig_ranks_mpi_error(pool));
        rig_ranks_mpi_destroy(pool);
        CHECK(status == RIG_OK);
        CHECK(MPI_Gather(&c.hash, 1, MPI_UINT64_T, NULL, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD) ==
              MPI_SUCCESS);
    }
    MPI_Finalize();
    return rc;
}
