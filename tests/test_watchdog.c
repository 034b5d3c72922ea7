/* test_watchdog.c — the collective watchdog's host side (hal/watchdog.h), without a GPU.
 *
 * Checks: a wait returns as soon as the probe is done, passes a probe's error through, and
 * gives up with RIG_E_TIMEOUT once the timeout has passed on the probe's clock (a fake clock
 * that advances 1 ms per pause, so the test is exact and instant); the diagnosis names the
 * rank that issued the fewest collectives and the collective the group waits at, or says
 * that every rank issued it when none lags.
 */
#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait),
        cmocka_unit_test(test_diagnose),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
