/* test_driver.c — the driver loop (core/engine/driver.h) over scripted arrival sources.
 *
 * Checks: requests are submitted at their arrival times — the virtual clock jumps to an
 * arrival when the engine is idle, and each request's arrival time is the scripted one — and
 * an abort scripted between them ends its request once; after_step sees every step and
 * stops the run when it returns false (RIG_OK, work left); a source's error stops the run
 * with its status and message; max_iterations bounds the run (RIG_E_STATE); no source runs
 * what was submitted to the end; the stop flag aborts every live request and drains; with an
 * inbox and no source, the driver blocks until a message comes and returns once the inbox is
 * closed; REALTIME pace keeps the simulator's virtual clock no further ahead of the wall
 * clock than one step, while FAST runs ahead.
 */
#include <pthread.h>

#include "core/engine/driver.h"
#include "core/engine/inbox.h"
#include "tests/support/engine_harness.h"

static struct harness h;

#define RIG__SCRIPT_MAX 8

struct rig__script {
    int32_t count;
    int64_t at_ns[RIG__SCRIPT_MAX]; /* from the run's start, ascending */
    int32_t abort[RIG__SCRIPT_MAX]; /* 1: abort uid `uid` instead of submitting it */
    uint64_t uid[RIG__SCRIPT_MAX];
    int32_t next;
    int64_t origin_ns;
    int32_t prompt[16];
    int64_t fed_at[RIG__SCRIPT_MAX]; /* engine time the entry was applied */
    int64_t steps;
    int64_t stop_after; /* after_step returns false after this many; 0 never */
    bool fail;          /* feed fails */
};

static enum rig_status rig__feed(void *ctx, struct rig_engine *engine, int64_t now_ns, char *error,
                                 size_t error_len)
{
    struct rig__script *s = ctx;
    if (s->fail) {
        snprintf(error, error_len, "scripted failure");
        return RIG_E_IO;
    }
    for (; s->next < s->count && s->origin_ns + s->at_ns[s->next] <= now_ns; s->next++) {
        s->fed_at[s->next] = now_ns - s->origin_ns;
        if (s->abort[s->next]) {
            rig_engine_abort(engine, s->uid[s->next]);
            continue;
        }
        struct rig_submit r = {.uid = s->uid[s->next],
                               .prompt = s->prompt,
                               .prompt_len = 16,
                               .arrival_ns = s->origin_ns + s->at_ns[s->next]};
        r.sampling = rig_sampling_default();
        r.sampling.max_tokens = 6;
        r.sampling.ignore_eos = true;
        char reason[256] = "";
        if (rig_engine_submit(engine, &r, reason, sizeof reason) != RIG_OK) return RIG_E_STATE;
    }
    return RIG_OK;
}

static int64_t rig__next(void *ctx)
{
    const struct rig__script *s = ctx;
    return s->next < s->count ? s->origin_ns + s->at_ns[s->next] : -1;
}

static bool rig__after(void *ctx, struct rig_engine *engine, bool progress)
{
    struct rig__script *s = ctx;
    (void)engine;
    (void)progress;
    s->steps++;
    return s->stop_after == 0 || s->steps < s->stop_after;
}

static struct rig__script script;

static void rig__setup(void)
{
    struct rig_engine_config c;
    harness_config(&c, "tiny", true);
    harness_open(&h, &c);
    memset(&script, 0, sizeof script);
    harness_prompt(script.prompt, 16, 4, 1024);
    script.origin_ns = rig_engine_now_ns(h.engine);
    /* uid 1 at 0, uid 2 at 1 s (the engine is idle long before), uid 3 at 1 s, abort of
     * uid 3 just after it arrived, uid 4 at 2 s. */
    int64_t at[5] = {0, 1000000000, 1000000000, 1000000001, 2000000000};
    uint64_t uid[5] = {1, 2, 3, 3, 4};
    for (int32_t i = 0; i < 5; i++) {
        script.at_ns[i] = at[i];
        script.uid[i] = uid[i];
    }
    script.abort[3] = 1;
    script.count = 5;
}

static const struct rig_arrival_source source = {&script, rig__feed, rig__next, rig__after};

static void test_arrivals_at_their_times(void **state)
{
    (void)state;
    rig__setup();
    char error[256] = "";
    assert_int_equal(rig_driver_run(h.engine, &source, NULL, error, sizeof error), RIG_OK);
    assert_true(rig_engine_idle(h.engine));
    assert_int_equal(script.next, 5);
    /* The clock jumped exactly to each idle arrival; uid 3 was busy-waited at most a step. */
    assert_int_equal(script.fed_at[0], 0);
    assert_int_equal(script.fed_at[1], 1000000000);
    assert_int_equal(script.fed_at[2], 1000000000);
    assert_true(script.fed_at[3] >= 1000000001 && script.fed_at[3] < 1100000000);
    assert_int_equal(script.fed_at[4], 2000000000);
    uint64_t uids[4] = {1, 2, 3, 4};
    for (int32_t i = 0; i < 4; i++) {
        struct harness_request *r = harness_get(&h, uids[i]);
        assert_int_equal(r->finish_calls, 1);
        assert_int_equal(r->reason, uids[i] == 3 ? RIG_END_ABORT : RIG_END_LENGTH);
        if (uids[i] != 3) assert_true(r->first_scheduled_ns >= script.origin_ns);
    }
    assert_true(harness_get(&h, 4)->first_scheduled_ns >= script.origin_ns + 2000000000);
    struct rig_engine_stats stats;
    rig_engine_stats(h.engine, &stats);
    assert_int_equal(script.steps, stats.steps);
    harness_close(&h);
}

static void test_after_step_stops(void **state)
{
    (void)state;
    rig__setup();
    script.stop_after = 2;
    char error[256] = "";
    assert_int_equal(rig_driver_run(h.engine, &source, NULL, error, sizeof error), RIG_OK);
    assert_int_equal(script.steps, 2);
    assert_false(rig_engine_idle(h.engine));
    rig_engine_abort_all(h.engine);
    harness_run(&h);
    harness_close(&h);
}

static void test_feed_error_and_bound(void **state)
{
    (void)state;
    rig__setup();
    script.fail = true;
    char error[256] = "";
    assert_int_equal(rig_driver_run(h.engine, &source, NULL, error, sizeof error), RIG_E_IO);
    assert_string_equal(error, "scripted failure");
    script.fail = false;
    struct rig_driver_options o = {.max_iterations = 3};
    assert_int_equal(rig_driver_run(h.engine, &source, &o, error, sizeof error), RIG_E_STATE);
    assert_string_equal(error, "the run did not finish within 3 iterations");
    harness_run(&h); /* no source: what was submitted runs to the end */
    assert_true(rig_engine_idle(h.engine));
    assert_int_equal(harness_get(&h, 1)->reason, RIG_END_LENGTH);
    harness_close(&h);
}

static void test_stop_flag_aborts_all(void **state)
{
    (void)state;
    rig__setup();
    script.count = 1;
    script.stop_after = 1; /* uid 1 submitted and one step run */
    char error[256] = "";
    assert_int_equal(rig_driver_run(h.engine, &source, NULL, error, sizeof error), RIG_OK);
    assert_false(rig_engine_idle(h.engine));
    volatile int stop = 1;
    struct rig_driver_options o = {.stop = &stop};
    assert_int_equal(rig_driver_run(h.engine, NULL, &o, error, sizeof error), RIG_OK);
    assert_true(rig_engine_idle(h.engine));
    struct harness_request *r = harness_get(&h, 1);
    assert_int_equal(r->finish_calls, 1);
    assert_int_equal(r->reason, RIG_END_ABORT);
    harness_close(&h);
}

struct rig__client {
    struct rig_inbox *inbox;
    int32_t prompt[16];
    enum rig_status status;
};

/* Submits one request after a pause (the driver is blocked on the inbox by then), waits,
 * then closes the inbox. */
/* Whether `uid` has ended, read from the client thread without creating a harness entry. */
static bool rig__ended(uint64_t uid)
{
    int32_t n = __atomic_load_n(&h.request_count, __ATOMIC_ACQUIRE);
    for (int32_t i = 0; i < n; i++)
        if (h.requests[i].uid == uid &&
            __atomic_load_n(&h.requests[i].finish_calls, __ATOMIC_ACQUIRE) > 0)
            return true;
    return false;
}

static void *rig__client(void *arg)
{
    struct rig__client *c = arg;
    struct timespec pause = {0, 30000000};
    nanosleep(&pause, NULL);
    struct rig_submit r = {.uid = 9, .prompt = c->prompt, .prompt_len = 16, .arrival_ns = -1};
    r.sampling = rig_sampling_default();
    r.sampling.max_tokens = 3;
    r.sampling.ignore_eos = true;
    c->status = rig_inbox_submit(c->inbox, &r);
    /* Close only once the request has ended (closing aborts what still runs): a fixed pause
     * raced the driver on a loaded machine. Bounded: 10 s at most. */
    for (int i = 0; i < 1000; i++) {
        if (rig__ended(9)) break;
        struct timespec tick = {0, 10000000};
        nanosleep(&tick, NULL);
    }
    rig_inbox_close(c->inbox);
    return NULL;
}

static void test_inbox_blocks_until_closed(void **state)
{
    (void)state;
    struct rig_engine_config c;
    harness_config(&c, "tiny", true);
    harness_open(&h, &c);
    struct rig__client client = {0};
    harness_prompt(client.prompt, 16, 5, 1024);
    struct rig_inbox_limits limits = {4, 16};
    assert_int_equal(rig_inbox_create(&limits, &client.inbox), RIG_OK);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, rig__client, &client), 0);
    struct rig_driver_options o = {.inbox = client.inbox};
    char error[256] = "";
    assert_int_equal(rig_driver_run(h.engine, NULL, &o, error, sizeof error), RIG_OK);
    pthread_join(thread, NULL);
    assert_int_equal(client.status, RIG_OK);
    struct harness_request *r = harness_get(&h, 9);
    assert_int_equal(r->finish_calls, 1);
    assert_int_equal(r->reason, RIG_END_LENGTH);
    assert_int_equal(r->output_len, 3);
    rig_inbox_destroy(client.inbox);
    harness_close(&h);
}

/* The wall time a run of three requests takes at `pace`, and its virtual time. */
static void rig__paced(enum rig_driver_pace pace, int64_t *wall_ns, int64_t *virtual_ns)
{
    rig__setup();
    script.count = 3;
    script.at_ns[1] = 20000000; /* 20 ms */
    script.at_ns[2] = 40000000;
    int64_t wall = rig_inbox_clock_ns();
    struct rig_driver_options o = {.pace = pace};
    char error[256] = "";
    assert_int_equal(rig_driver_run(h.engine, &source, &o, error, sizeof error), RIG_OK);
    *wall_ns = rig_inbox_clock_ns() - wall;
    *virtual_ns = rig_engine_now_ns(h.engine) - script.origin_ns;
    harness_close(&h);
}

static void test_realtime_pace(void **state)
{
    (void)state;
    int64_t wall = 0, virtual_ns = 0;
    rig__paced(RIG_DRIVER_PACE_REALTIME, &wall, &virtual_ns);
    print_message("realtime: virtual %.1f ms, wall %.1f ms\n", virtual_ns / 1e6, wall / 1e6);
    assert_true(virtual_ns > 40000000);
    assert_true(wall >= virtual_ns - 5000000);
    rig__paced(RIG_DRIVER_PACE_FAST, &wall, &virtual_ns);
    print_message("fast: virtual %.1f ms, wall %.1f ms\n", virtual_ns / 1e6, wall / 1e6);
    assert_true(virtual_ns > 40000000);
    assert_true(wall < virtual_ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arrivals_at_their_times),
        cmocka_unit_test(test_after_step_stops),
        cmocka_unit_test(test_feed_error_and_bound),
        cmocka_unit_test(test_stop_flag_aborts_all),
        cmocka_unit_test(test_inbox_blocks_until_closed),
        cmocka_unit_test(test_realtime_pace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
