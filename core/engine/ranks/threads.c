/* threads.c — the in-process implementation of ranks.h: rank 0 on the caller's thread,
 * ranks 1.. on persistent workers that wait for a job sequence number to move. */
#include <pthread.h>
#include <stdlib.h>

#include "core/engine/ranks/ranks.h"
#include "hal/hal.h"

struct rig__worker {
    struct rig_ranks *pool;
    int32_t rank;
    pthread_t thread;
    bool started;
    enum rig_status status; /* of the last job */
};

struct rig_ranks {
    int32_t size;
    rig_rank_execute_fn execute;
    void *ctx;
    pthread_mutex_t lock;
    pthread_cond_t wake;         /* a job was posted */
    pthread_cond_t idle;         /* the last worker finished the job */
    int64_t job_seq;             /* bumped for each job */
    int32_t job_pending;         /* workers still running the current job */
    struct rig_batch_desc job;   /* the current job */
    const uint8_t *job_metadata; /* (job.metadata_bytes) the caller's, valid while it runs */
    struct rig__worker workers[RIG_DEVICES_MAX]; /* [1, size) used */
};

static void *rig__work(void *arg)
{
    struct rig__worker *w = arg;
    struct rig_ranks *p = w->pool;
    int64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (p->job_seq == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        seen = p->job_seq;
        struct rig_batch_desc job = p->job;
        const uint8_t *metadata = p->job_metadata;
        pthread_mutex_unlock(&p->lock);
        enum rig_status status =
            job.job == RIG_RANK_JOB_EXIT ? RIG_OK : p->execute(p->ctx, w->rank, &job, metadata);
        pthread_mutex_lock(&p->lock);
        w->status = status;
        if (--p->job_pending == 0) pthread_cond_signal(&p->idle);
        pthread_mutex_unlock(&p->lock);
        if (job.job == RIG_RANK_JOB_EXIT) return NULL;
    }
}

static void rig__post(struct rig_ranks *p, const struct rig_batch_desc *desc,
                      const uint8_t *metadata, int32_t workers)
{
    pthread_mutex_lock(&p->lock);
    p->job = *desc;
    p->job_metadata = metadata;
    p->job_pending = workers;
    p->job_seq++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
}

static void rig__wait(struct rig_ranks *p)
{
    pthread_mutex_lock(&p->lock);
    while (p->job_pending > 0)
        pthread_cond_wait(&p->idle, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

enum rig_status rig_ranks_create(int32_t size, rig_rank_execute_fn execute, void *ctx,
                                 struct rig_ranks **out)
{
    RIG_ASSERT(execute != NULL && out != NULL);
    *out = NULL;
    if (size < 1 || size > RIG_DEVICES_MAX) return RIG_E_INVALID;
    struct rig_ranks *p = calloc(1, sizeof *p);
    if (p == NULL) return RIG_E_NO_MEMORY;
    p->size = size;
    p->execute = execute;
    p->ctx = ctx;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return RIG_E_NO_MEMORY;
    }
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    for (int32_t r = 1; r < size; r++) {
        p->workers[r] = (struct rig__worker){.pool = p, .rank = r};
        if (pthread_create(&p->workers[r].thread, NULL, rig__work, &p->workers[r]) != 0) {
            rig_ranks_destroy(p);
            return RIG_E_NO_MEMORY;
        }
        p->workers[r].started = true;
    }
    *out = p;
    return RIG_OK;
}

enum rig_status rig_ranks_run(struct rig_ranks *p, const struct rig_batch_desc *desc,
                              const uint8_t *metadata)
{
    RIG_ASSERT(p != NULL && desc != NULL);
    RIG_ASSERT(desc->job == RIG_RANK_JOB_LAUNCH || desc->job == RIG_RANK_JOB_CAPTURE);
    if (p->size == 1) return p->execute(p->ctx, 0, desc, metadata);
    rig__post(p, desc, metadata, p->size - 1);
    enum rig_status status = p->execute(p->ctx, 0, desc, metadata);
    rig__wait(p);
    for (int32_t r = 1; r < p->size; r++)
        if (status == RIG_OK) status = p->workers[r].status;
    return status;
}

void rig_ranks_destroy(struct rig_ranks *p)
{
    if (p == NULL) return;
    int32_t started = 0;
    for (int32_t r = 1; r < p->size; r++)
        started += p->workers[r].started;
    if (started > 0) {
        struct rig_batch_desc exit_job = {.job = RIG_RANK_JOB_EXIT, .graph = -1};
        rig__post(p, &exit_job, NULL, started);
        rig__wait(p);
    }
    for (int32_t r = 1; r < p->size; r++)
        if (p->workers[r].started) pthread_join(p->workers[r].thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
