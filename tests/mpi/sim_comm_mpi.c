/* sim_comm_mpi.c — sim/comm_mpi.c under `mpirun -n N` (tests/mpi/sim_comm_mpi.sh runs it).
 *
 * Each process is one TP rank; every case is a collective (all-reduce of bf16 and f32,
 * all-gather of bf16, sizes 1 to 5120, one all-phantom) with inputs and arrival times that
 * differ per rank. Process 0 runs the same cases on an in-process world of N threads (the
 * single-process simulator, sim/comm.c) from the same inputs, and checks that every
 * process's result bytes and end time equal the threads' bit for bit. The last case has rank
 * 1 arrive past the collective timeout on the virtual clock: every process fails with
 * RIG_E_TIMEOUT and process 0's message equals the in-process world's.
 * Prints "PASS ..." on process 0; exits non-zero otherwise. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal.h"
#include "sim/comm.h"
#include "sim/comm_mpi.h"

#define NUMEL_MAX  5120
#define TIMEOUT_MS 5000
#define CASES      9

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

struct shape {
    enum rig_op_kind kind;
    enum rig_dtype dtype;
    int64_t numel; /* all-reduce: data; all-gather: input */
    bool phantom;
    bool late; /* rank 1 arrives past the timeout */
};

static const struct shape cases[CASES] = {
    {RIG_OP_ALL_REDUCE, RIG_DTYPE_BF16, 5120, false, false},
    {RIG_OP_ALL_REDUCE, RIG_DTYPE_F32, 4096, false, false},
    {RIG_OP_ALL_GATHER, RIG_DTYPE_BF16, 1000, false, false},
    {RIG_OP_ALL_REDUCE, RIG_DTYPE_BF16, 1, false, false},
    {RIG_OP_ALL_GATHER, RIG_DTYPE_F32, 7, false, false},
    {RIG_OP_ALL_REDUCE, RIG_DTYPE_BF16, 5120, true, false},
    {RIG_OP_ALL_REDUCE, RIG_DTYPE_BF16, 3333, false, false},
    {RIG_OP_ALL_GATHER, RIG_DTYPE_BF16, 5120, false, false},
    {RIG_OP_ALL_REDUCE, RIG_DTYPE_BF16, 64, false, true},
};

/* Rank `rank`'s buffers for case `c`: input values and arrival time. */
struct rank_case {
    uint8_t in[NUMEL_MAX * 4];
    uint8_t out[RIG_DEVICES_MAX * NUMEL_MAX * 4]; /* all-gather output */
    struct rig_op op;
    int64_t earliest_ns;
};

static void make_case(int32_t c, int32_t rank, int32_t size, struct rank_case *rc)
{
    const struct shape *s = &cases[c];
    uint32_t x = 2166136261u ^ (uint32_t)(c * 131 + rank * 7919);
    for (int64_t i = 0; i < s->numel; i++) {
        x = x * 1664525u + 1013904223u;
        float v = (float)((int32_t)(x >> 8) % 20000) / 997.0f;
        if (s->dtype == RIG_DTYPE_BF16)
            ((uint16_t *)rc->in)[i] = rig_f32_to_bf16(v);
        else
            ((float *)rc->in)[i] = v;
    }
    memset(rc->out, 0, sizeof rc->out);
    memset(&rc->op, 0, sizeof rc->op);
    rc->op.kind = s->kind;
    if (s->kind == RIG_OP_ALL_REDUCE) {
        rc->op.u.all_reduce.data = rig_tensor_1d(rc->in, s->dtype, s->numel);
    } else {
        rc->op.u.all_gather.in = rig_tensor_1d(rc->in, s->dtype, s->numel);
        rc->op.u.all_gather.out = rig_tensor_1d(rc->out, s->dtype, s->numel * size);
    }
    rc->earliest_ns = 1000000 * c + 12345 * rank + (rank % 2) * 777;
    if (s->late && rank == 1) rc->earliest_ns += 2LL * TIMEOUT_MS * 1000000;
}

/* The bytes a case leaves in a rank's result tensor. */
static size_t result_bytes(int32_t c, int32_t size)
{
    const struct shape *s = &cases[c];
    size_t n = (size_t)s->numel * rig_dtype_size(s->dtype);
    return s->kind == RIG_OP_ALL_GATHER ? n * (size_t)size : n;
}

static const uint8_t *result(int32_t c, const struct rank_case *rc)
{
    return cases[c].kind == RIG_OP_ALL_GATHER ? rc->out : rc->in;
}

struct thread_job {
    struct rig_sim_world *world;
    const struct rig_sim_profile *profile;
    int32_t rank;
    bool phantom;
    struct rank_case *rc;
    int64_t end_ns;
    enum rig_status status;
};

static void *run_rank(void *arg)
{
    struct thread_job *j = arg;
    j->status = rig_sim_world_collective(j->world, j->profile, j->rank, &j->rc->op,
                                         j->rc->earliest_ns, j->phantom, &j->end_ns);
    return NULL;
}

/* Process 0: case c on the in-process world; checks the processes' outcomes against it. */
static void expect(struct rig_sim_world *world, const struct rig_sim_profile *profile, int32_t c,
                   int32_t size, struct rank_case *local, const int32_t *statuses,
                   const int64_t *ends, const uint8_t *results, const char *mpi_failure)
{
    pthread_t threads[RIG_DEVICES_MAX];
    struct thread_job jobs[RIG_DEVICES_MAX];
    for (int32_t r = 0; r < size; r++) {
        make_case(c, r, size, &local[r]);
        jobs[r] = (struct thread_job){world, profile, r, cases[c].phantom, &local[r], 0, RIG_OK};
        CHECK(pthread_create(&threads[r], NULL, run_rank, &jobs[r]) == 0);
    }
    for (int32_t r = 0; r < size; r++)
        pthread_join(threads[r], NULL);
    size_t bytes = result_bytes(c, size);
    for (int32_t r = 0; r < size; r++) {
        CHECK(statuses[r] == (int32_t)jobs[r].status);
        CHECK(ends[r] == jobs[r].end_ns);
        CHECK(memcmp(results + (size_t)r * bytes, result(c, &local[r]), bytes) == 0);
    }
    CHECK((jobs[0].status == RIG_OK) == !cases[c].late);
    if (cases[c].late) {
        printf("in-process: %s\nprocesses:  %s\n", rig_sim_world_failure(world), mpi_failure);
        CHECK(strcmp(rig_sim_world_failure(world), mpi_failure) == 0);
    }
}

int main(int argc, char **argv)
{
    int provided = 0, size = 0, rank = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct rig_sim_profile profile;
    char error[256];
    CHECK(rig_sim_profile_load("h100", &profile, error, sizeof error) == RIG_OK);
    struct rig_sim_mpi *pool = NULL;
    CHECK(rig_sim_mpi_create(NUMEL_MAX * 4, TIMEOUT_MS, &pool) == RIG_OK);
    CHECK(rig_sim_mpi_rank(pool) == rank && rig_sim_mpi_size(pool) == size);
    struct rank_case *mine = calloc(1, sizeof *mine);
    struct rank_case *local = rank == 0 ? calloc((size_t)size, sizeof *local) : NULL;
    uint8_t *results = rank == 0 ? malloc((size_t)size * sizeof mine->out) : NULL;
    struct rig_sim_world *world = rank == 0 ? rig_sim_world_create(size, TIMEOUT_MS) : NULL;
    CHECK(mine != NULL && (rank != 0 || (local && results && world)));
    for (int32_t c = 0; c < CASES; c++) {
        make_case(c, rank, size, mine);
        int64_t end = -1;
        int32_t status = (int32_t)rig_sim_mpi_collective(pool, &profile, &mine->op,
                                                         mine->earliest_ns, cases[c].phantom, &end);
        int32_t statuses[RIG_DEVICES_MAX];
        int64_t ends[RIG_DEVICES_MAX];
        int bytes = (int)result_bytes(c, size);
        CHECK(MPI_Gather(&status, 1, MPI_INT32_T, statuses, 1, MPI_INT32_T, 0, MPI_COMM_WORLD) ==
              MPI_SUCCESS);
        CHECK(MPI_Gather(&end, 1, MPI_INT64_T, ends, 1, MPI_INT64_T, 0, MPI_COMM_WORLD) ==
              MPI_SUCCESS);
        CHECK(MPI_Gather(result(c, mine), bytes, MPI_BYTE, results, bytes, MPI_BYTE, 0,
                         MPI_COMM_WORLD) == MPI_SUCCESS);
        if (rank == 0)
            expect(world, &profile, c, size, local, statuses, ends, results,
                   rig_sim_mpi_failure(pool));
    }
    if (rank == 0)
        printf("PASS: %d processes, %d collectives equal the in-process world's\n", size, CASES);
    for (int32_t r = 0; world != NULL && r < size; r++)
        rig_sim_world_release(world);
    rig_sim_mpi_destroy(pool);
    free(mine), free(local), free(results);
    MPI_Finalize();
    return 0;
}
