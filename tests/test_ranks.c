/* test_ranks.c — rank execution behind one call (core/engine/ranks/ranks.h), in-process.
 *
 * Checks: sizes outside 1..RIG_DEVICES_MAX are refused; with 4 ranks, 200 jobs each reach
 * every rank exactly once, in order, with the caller's descriptor and metadata bytes (rank 0
 * on the calling thread, the others on workers), and the call returns only when all ranks
 * have run it; a failing rank's status is returned (rank 0's first); a descriptor copied
 * through a byte buffer (as a message to another process would be) runs the same; one rank
 * runs inline without threads.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine/ranks/ranks.h"
#include "hal/hal.h"

#define RIG__JOBS 200

struct rig__record {
    int64_t seen[RIG_DEVICES_MAX];      /* jobs run per rank */
    int64_t last_step[RIG_DEVICES_MAX]; /* step of the last job per rank */
    uint64_t sum[RIG_DEVICES_MAX];      /* metadata checksum per rank */
    int32_t fail_rank;                  /* this rank fails; -1 none */
    pthread_t caller;
    int32_t rank0_elsewhere; /* rank 0 ran off the calling thread */
};

static enum rig_status rig__execute(void *ctx, int32_t rank, const struct rig_batch_desc *desc,
                                    const uint8_t *metadata)
{
    struct rig__record *r = ctx;
    if (rank == 0 && !pthread_equal(pthread_self(), r->caller)) r->rank0_elsewhere++;
    r->seen[rank]++;
    r->last_step[rank] = desc->step;
    for (int64_t i = 0; i < desc->metadata_bytes; i++)
        r->sum[rank] += metadata[i];
    if (rank == r->fail_rank) return rank == 0 ? RIG_E_DEVICE : RIG_E_IO;
    return RIG_OK;
}

static void test_sizes(void **state)
{
    (void)state;
    struct rig__record r = {.fail_rank = -1};
    struct rig_ranks *ranks = NULL;
    assert_int_equal(rig_ranks_create(0, rig__execute, &r, &ranks), RIG_E_INVALID);
    assert_int_equal(rig_ranks_create(RIG_DEVICES_MAX + 1, rig__execute, &r, &ranks),
                     RIG_E_INVALID);
    assert_null(ranks);
    rig_ranks_destroy(NULL);
}

static void test_every_rank_every_job(void **state)
{
    (void)state;
    static struct rig__record r;
    memset(&r, 0, sizeof r);
    r.fail_rank = -1;
    r.caller = pthread_self();
    struct rig_ranks *ranks = NULL;
    assert_int_equal(rig_ranks_create(4, rig__execute, &r, &ranks), RIG_OK);
    uint8_t metadata[64];
    uint64_t expected = 0;
    for (int32_t job = 0; job < RIG__JOBS; job++) {
        for (int32_t i = 0; i < 64; i++)
            metadata[i] = (uint8_t)(job * 7 + i);
        for (int32_t i = 0; i < 64; i++)
            expected += metadata[i];
        struct rig_batch_desc desc = {.job = RIG_RANK_JOB_LAUNCH,
                                      .slot = job % 2,
                                      .step = job,
                                      .graph = -1,
                                      .metadata_bytes = 64};
        /* As a message: the bytes of the descriptor, copied. */
        uint8_t wire[sizeof desc];
        memcpy(wire, &desc, sizeof desc);
        struct rig_batch_desc received;
        memcpy(&received, wire, sizeof received);
        assert_int_equal(rig_ranks_run(ranks, &received, metadata), RIG_OK);
        for (int32_t k = 0; k < 4; k++) { /* all ranks have run it when the call returns */
            assert_int_equal(r.seen[k], job + 1);
            assert_int_equal(r.last_step[k], job);
        }
    }
    for (int32_t k = 0; k < 4; k++)
        assert_int_equal(r.sum[k], expected);
    assert_int_equal(r.rank0_elsewhere, 0);
    rig_ranks_destroy(ranks);
}

static void test_failures_returned(void **state)
{
    (void)state;
    static struct rig__record r;
    struct rig_batch_desc desc = {.job = RIG_RANK_JOB_LAUNCH, .graph = -1};
    for (int32_t fail = 0; fail < 3; fail++) {
        memset(&r, 0, sizeof r);
        r.fail_rank = fail;
        r.caller = pthread_self();
        struct rig_ranks *ranks = NULL;
        assert_int_equal(rig_ranks_create(3, rig__execute, &r, &ranks), RIG_OK);
        assert_int_equal(rig_ranks_run(ranks, &desc, NULL), fail == 0 ? RIG_E_DEVICE : RIG_E_IO);
        for (int32_t k = 0; k < 3; k++)
            assert_int_equal(r.seen[k], 1); /* all still ran */
        rig_ranks_destroy(ranks);
    }
    memset(&r, 0, sizeof r);
    r.fail_rank = -1;
    r.caller = pthread_self();
    struct rig_ranks *one = NULL;
    assert_int_equal(rig_ranks_create(1, rig__execute, &r, &one), RIG_OK);
    assert_int_equal(rig_ranks_run(one, &desc, NULL), RIG_OK);
    assert_int_equal(r.seen[0], 1);
    rig_ranks_destroy(one);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_every_rank_every_job),
        cmocka_unit_test(test_failures_returned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
