/* test_watchdog.c — the collective watchdog's host side (hal/watchdog.h), without a GPU.
 *
 * Checks: a wait returns as soon as the probe is done, passes a probe's error through, and
 * gives up with RIG_E_TIMEOUT once the timeout has passed on the probe's clock (a fake clock
 * that advances 1 ms per pause, so the test is exact and instant); the diagnosis names the
 * rank that issued the fewest collectives and the collective the group waits at, or says
 * that every rank issued it when none lags; the bounded concurrent runner (the comms'
 * aborts) returns once every call has, or at its bound with the calls still running left
 * behind and reported — such as NCCL's abort that did not return on 4 H200s — and all of
 * its calls run at once, so calls that wait for each other (NCCL's aborts within a node)
 * finish.
 */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "hal/watchdog.h"
#include "tests/support/test_support.h"

struct rig__fake {
    int64_t now_ns;
    int32_t polls;
    int32_t done_after;    /* polls before done; -1 never */
    enum rig_status error; /* returned at done_after instead of RIG_OK when not RIG_OK */
};

static enum rig_status rig__poll(void *ctx)
{
    struct rig__fake *f = ctx;
    if (f->done_after >= 0 && f->polls++ >= f->done_after) return f->error;
    return RIG_E_STATE;
}

static int64_t rig__now(void *ctx)
{
    return ((struct rig__fake *)ctx)->now_ns;
}

static void rig__pause(void *ctx)
{
    ((struct rig__fake *)ctx)->now_ns += 1000000;
}

static void test_wait(void **state)
{
    (void)state;
    struct rig__fake f = {.done_after = 5, .error = RIG_OK};
    struct rig_watchdog_probe probe = {&f, rig__poll, rig__now, rig__pause};
    assert_int_equal(rig_watchdog_wait(&probe, 100000000), RIG_OK);
    assert_int_equal(f.now_ns, 5000000);
    f = (struct rig__fake){.done_after = 2, .error = RIG_E_DEVICE};
    assert_int_equal(rig_watchdog_wait(&probe, 100000000), RIG_E_DEVICE);
    f = (struct rig__fake){.done_after = -1};
    assert_int_equal(rig_watchdog_wait(&probe, 100000000), RIG_E_TIMEOUT);
    assert_int_equal(f.now_ns, 100000000); /* gave up exactly at the timeout */
    f = (struct rig__fake){.done_after = 0, .error = RIG_OK};
    assert_int_equal(rig_watchdog_wait(&probe, 0), RIG_OK); /* one poll even at timeout 0 */
}

static void test_diagnose(void **state)
{
    (void)state;
    char out[256];
    struct rig_watchdog_rank ranks[4] = {
        {130, "all_reduce"}, {130, "all_reduce"}, {129, "all_gather"}, {130, "all_reduce"}};
    rig_watchdog_diagnose(ranks, 4, 0, 10000, out, sizeof out);
    assert_string_equal(out, "rank 2 has issued 129 collectives, rank 0 130 (its last: "
                             "all_reduce): the group waits for rank 2 at collective #129; "
                             "rank 0 gave up after 10000 ms");
    ranks[2].issued = 130;
    rig_watchdog_diagnose(ranks, 4, 3, 500, out, sizeof out);
    assert_string_equal(out, "rank 3: collective #129 (all_reduce), issued by every rank, did "
                             "not complete within 500 ms (a device or link fault, not a "
                             "missing rank)");
    char tiny[8];
    rig_watchdog_diagnose(ranks, 4, 3, 500, tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), 7);
}

/* A call of the runner's tests: `wait_for` (when not NULL) must become true before it
 * returns — another call's flag (calls that need each other, as NCCL's aborts) or the
 * test's release; then it sets its own flag. */
struct rig__call {
    _Atomic bool *wait_for;
    _Atomic bool finished;
};

static void rig__call(void *arg)
{
    struct rig__call *c = arg;
    atomic_store(&c->finished, false);
    while (c->wait_for != NULL && !atomic_load(c->wait_for)) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&c->finished, true);
}

static int64_t rig__ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_run_all(void **state)
{
    (void)state;
    /* Call 1 returns only after call 0 has: run in turn from one thread in the other order
     * it would never end (as the first of two NCCL aborts of a node did); at once, both do. */
    static struct rig__call pair[2];
    pair[0] = (struct rig__call){.wait_for = NULL};
    pair[1] = (struct rig__call){.wait_for = &pair[0].finished}; /* needs call 0 done */
    void *args[2] = {&pair[0], &pair[1]};
    bool done[3] = {false, false, false};
    int64_t t0 = rig__ms();
    assert_int_equal(rig_watchdog_run_all(rig__call, args, 2, 5000000000LL, done), 2);
    assert_true(done[0] && done[1]);
    assert_true(rig__ms() - t0 < 4000); /* did not wait out the bound */

    /* One call that never returns by itself: left behind at the bound, the others done. */
    static _Atomic bool release;
    atomic_store(&release, false);
    static struct rig__call three[3];
    three[0] = (struct rig__call){.wait_for = NULL};
    three[1] = (struct rig__call){.wait_for = &release};
    three[2] = (struct rig__call){.wait_for = NULL};
    void *args3[3] = {&three[0], &three[1], &three[2]};
    t0 = rig__ms();
    assert_int_equal(rig_watchdog_run_all(rig__call, args3, 3, 50000000LL, done), 2);
    int64_t took = rig__ms() - t0;
    assert_true(took >= 50 && took < 3000);
    assert_true(done[0] && !done[1] && done[2]);
    /* Let it go, and give its thread time to free the runner's state before the leak check. */
    atomic_store(&release, true);
    for (int i = 0; i < 2000 && !atomic_load(&three[1].finished); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    assert_true(atomic_load(&three[1].finished));
    struct timespec settle = {0, 100000000};
    nanosleep(&settle, NULL);

    /* No calls: nothing to wait for. */
    assert_int_equal(rig_watchdog_run_all(rig__call, args, 0, 0, done), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait),
        cmocka_unit_test(test_diagnose),
        cmocka_unit_test(test_run_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
