/* test_inbox.c — the engine's thread-safe inbox (core/engine/inbox.h).
 *
 * Checks: limits below 1 are refused; capacity is back-pressure (RIG_E_CAPACITY for the
 * message past `capacity` and for a prompt that does not fit the token ring; prompts over
 * prompt_tokens_max and empty ones are RIG_E_INVALID); the prompt ring wraps around and
 * every prompt reaches the engine intact; a drain applies submits and aborts in arrival
 * order, an abort of an unknown or ended uid is harmless, and every submit the engine refuses
 * (token outside the vocabulary, uid in use, beyond the context) ends exactly once as
 * REJECTED through on_finish; a submit that finds the engine full waits in the inbox, with
 * what follows it, until a step makes room; after close, submits are refused with RIG_E_STATE
 * and queued ones end as ABORT; a cache flush empties the prefix cache once the engine is
 * idle; rig_inbox_wait returns at once with a message queued, at its deadline, or when
 * another thread posts; and four threads submitting 200 requests of random lengths through
 * a small inbox (retrying on RIG_E_CAPACITY) while the driver runs them: every uid ends
 * exactly once, with all its tokens.
 */
#include <pthread.h>

#include "core/engine/driver.h"
#include "core/engine/inbox.h"
#include "tests/support/engine_harness.h"

static struct harness h;

static struct rig_submit rig__request(uint64_t uid, const int32_t *prompt, int32_t len,
                                      int32_t max_tokens)
{
    struct rig_submit s = {.uid = uid, .prompt = prompt, .prompt_len = len, .arrival_ns = -1};
    s.sampling = rig_sampling_default();
    s.sampling.max_tokens = max_tokens;
    s.sampling.ignore_eos = true;
    return s;
}

static void rig__open(int32_t max_requests)
{
    struct rig_engine_config c;
    harness_config(&c, "tiny", true);
    c.max_requests = max_requests;
    harness_open(&h, &c);
}

static void rig__drive(void)
{
    char error[256] = "";
    struct rig_driver_options o = {.max_iterations = 100000};
    assert_int_equal(rig_driver_run(h.engine, NULL, &o, error, sizeof error), RIG_OK);
}

static void test_limits_and_backpressure(void **state)
{
    (void)state;
    struct rig_inbox *inbox = NULL;
    struct rig_inbox_limits bad = {0, 8};
    assert_int_equal(rig_inbox_create(&bad, &inbox), RIG_E_INVALID);
    assert_null(inbox);
    bad = (struct rig_inbox_limits){4, 0};
    assert_int_equal(rig_inbox_create(&bad, &inbox), RIG_E_INVALID);
    struct rig_inbox_limits limits = {3, 8};
    assert_int_equal(rig_inbox_create(&limits, &inbox), RIG_OK);
    int32_t prompt[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    struct rig_submit s = rig__request(1, prompt, 9, 2);
    assert_int_equal(rig_inbox_submit(inbox, &s), RIG_E_INVALID); /* over prompt_tokens_max */
    s.prompt_len = 0;
    assert_int_equal(rig_inbox_submit(inbox, &s), RIG_E_INVALID);
    s.prompt_len = 8;
    assert_int_equal(rig_inbox_submit(inbox, &s), RIG_OK);
    assert_int_equal(rig_inbox_abort(inbox, 7), RIG_OK);
    assert_int_equal(rig_inbox_flush_cache(inbox), RIG_OK);
    assert_int_equal(rig_inbox_submit(inbox, &s), RIG_E_CAPACITY);
    assert_int_equal(rig_inbox_abort(inbox, 8), RIG_E_CAPACITY);
    assert_int_equal(rig_inbox_flush_cache(inbox), RIG_E_CAPACITY);
    rig_inbox_destroy(inbox);
    /* The token ring (capacity × prompt_tokens_max = 16 tokens) fills before the messages. */
    limits = (struct rig_inbox_limits){2, 8};
    assert_int_equal(rig_inbox_create(&limits, &inbox), RIG_OK);
    s.prompt_len = 8;
    assert_int_equal(rig_inbox_submit(inbox, &s), RIG_OK);
    assert_int_equal(rig_inbox_submit(inbox, &s), RIG_OK);
    assert_int_equal(rig_inbox_submit(inbox, &s), RIG_E_CAPACITY);
    rig_inbox_destroy(inbox);
    rig_inbox_destroy(NULL);
}

/* The engine holds one request at a time, so prompts leave the 18-token ring one by one:
 * prompts of 6, 6, 6 fill it; once the first left, one of 5 wraps to the start and one of 6
 * follows it. Each reaches the engine with its own tokens. */
static void test_ring_wraps_prompts_intact(void **state)
{
    (void)state;
    rig__open(1);
    struct rig_inbox *inbox = NULL;
    struct rig_inbox_limits limits = {3, 6};
    assert_int_equal(rig_inbox_create(&limits, &inbox), RIG_OK);
    int32_t prompts[5][6], lengths[5] = {6, 6, 6, 5, 6};
    bool seen[5] = {false};
    for (int32_t i = 0; i < 5; i++)
        harness_prompt(prompts[i], 6, 10 + i, 1024);
    for (int32_t i = 0; i < 3; i++) {
        struct rig_submit s = rig__request(100 + (uint64_t)i, prompts[i], lengths[i], 2);
        assert_int_equal(rig_inbox_submit(inbox, &s), RIG_OK);
    }
    struct rig_submit s3 = rig__request(103, prompts[3], lengths[3], 2);
    assert_int_equal(rig_inbox_submit(inbox, &s3), RIG_E_CAPACITY); /* ring and slots full */
    for (int32_t n = 0; n < 1000 && !seen[4]; n++) {
        assert_int_equal(rig_inbox_drain(inbox, h.engine), RIG_OK);
        for (int32_t i = 0; i < 5; i++) {
            const struct rig_request *r = rig_engine_find(h.engine, 100 + (uint64_t)i);
            if (r == NULL || seen[i]) continue;
            seen[i] = true;
            assert_int_equal(r->input_len, lengths[i]);
            assert_memory_equal(r->tokens, prompts[i], sizeof(int32_t) * (size_t)lengths[i]);
            if (i != 1) continue;
            for (int32_t k = 3; k < 5; k++) { /* the first prompt's tokens are free now */
                struct rig_submit s = rig__request(100 + (uint64_t)k, prompts[k], lengths[k], 2);
                assert_int_equal(rig_inbox_submit(inbox, &s), RIG_OK);
            }
        }
        if (!rig_engine_idle(h.engine)) assert_int_equal(rig_engine_step(h.engine, NULL), RIG_OK);
    }
    rig__drive();
    for (int32_t i = 0; i < 5; i++) {
        struct harness_request *r = harness_get(&h, 100 + (uint64_t)i);
        assert_true(seen[i]);
        assert_int_equal(r->finish_calls, 1);
        assert_int_equal(r->output_len, 2);
    }
    rig_inbox_destroy(inbox);
    harness_close(&h);
}

/* Submits, aborts (of a live, an unknown and an ended uid) and refusals in one drain. */
static void test_drain_order_and_refusals(void **state)
{
    (void)state;
    rig__open(32);
    struct rig_inbox *inbox = NULL;
    struct rig_inbox_limits limits = {16, 64};
    assert_int_equal(rig_inbox_create(&limits, &inbox), RIG_OK);
    int32_t p[8], bad[2] = {1, 5000};
    harness_prompt(p, 8, 1, 1024);
    struct rig_submit s1 = rig__request(1, p, 8, 4), s2 = rig__request(2, p, 8, 4);
    struct rig_submit s3 = rig__request(3, bad, 2, 4), dup = rig__request(1, p, 8, 4);
    struct rig_submit longer = rig__request(4, p, 8, 5000);
    assert_int_equal(rig_inbox_submit(inbox, &s1), RIG_OK);
    assert_int_equal(rig_inbox_submit(inbox, &s2), RIG_OK);
    assert_int_equal(rig_inbox_abort(inbox, 2), RIG_OK);
    assert_int_equal(rig_inbox_abort(inbox, 2), RIG_OK);  /* already ended: harmless */
    assert_int_equal(rig_inbox_abort(inbox, 99), RIG_OK); /* unknown: harmless */
    assert_int_equal(rig_inbox_submit(inbox, &s3), RIG_OK);
    assert_int_equal(rig_inbox_submit(inbox, &dup), RIG_OK);
    assert_int_equal(rig_inbox_submit(inbox, &longer), RIG_OK);
    assert_int_equal(rig_inbox_drain(inbox, h.engine), RIG_OK);
    assert_non_null(rig_engine_find(h.engine, 1));
    struct harness_request *r2 = harness_get(&h, 2), *r3 = harness_get(&h, 3);
    struct harness_request *r4 = harness_get(&h, 4);
    assert_int_equal(r2->finish_calls, 1);
    assert_int_equal(r2->reason, RIG_END_ABORT);
    assert_int_equal(r3->finish_calls, 1);
    assert_int_equal(r3->reason, RIG_END_REJECTED);
    assert_non_null(strstr(r3->message, "outside the vocabulary"));
    assert_int_equal(r4->finish_calls, 1);
    assert_int_equal(r4->reason, RIG_END_REJECTED);
    assert_non_null(strstr(r4->message, "context limit"));
    rig__drive();
    struct harness_request *r1 = harness_get(&h, 1);
    /* The duplicate ended as REJECTED through uid 1's on_finish, then uid 1 itself. */
    assert_int_equal(r1->finish_calls, 2);
    assert_int_equal(r1->reason, RIG_END_LENGTH);
    assert_int_equal(r1->output_len, 4);
    struct rig_engine_stats stats;
    rig_engine_stats(h.engine, &stats);
    assert_int_equal(stats.submitted, stats.finished + stats.aborted + stats.rejected);
    rig_inbox_destroy(inbox);
    harness_close(&h);
}

/* An engine of `max_requests` and an inbox with `count` requests of 8 tokens queued (uids
 * 10.., 3 tokens each). */
static struct rig_inbox *rig__open_queued(int32_t max_requests, int32_t count)
{
    rig__open(max_requests);
    struct rig_inbox *inbox = NULL;
    struct rig_inbox_limits limits = {8, 64};
    assert_int_equal(rig_inbox_create(&limits, &inbox), RIG_OK);
    for (int32_t i = 0; i < count; i++) {
        int32_t p[8];
        harness_prompt(p, 8, i, 1024);
        struct rig_submit s = rig__request(10 + (uint64_t)i, p, 8, 3);
        assert_int_equal(rig_inbox_submit(inbox, &s), RIG_OK);
    }
    return inbox;
}

/* The engine holds 2 requests: the third waits in the inbox, the abort behind it too. */
static void test_engine_full_waits_in_inbox(void **state)
{
    (void)state;
    struct rig_inbox *inbox = rig__open_queued(2, 4);
    assert_int_equal(rig_inbox_abort(inbox, 13), RIG_OK);
    assert_int_equal(rig_inbox_drain(inbox, h.engine), RIG_OK);
    assert_non_null(rig_engine_find(h.engine, 11));
    assert_null(rig_engine_find(h.engine, 12));
    assert_int_equal(harness_get(&h, 12)->finish_calls, 0);
    struct rig_driver_options o = {.inbox = inbox, .max_iterations = 100000};
    char error[256] = "";
    rig_inbox_close(inbox); /* the driver ends what is queued as ABORT and aborts the live */
    assert_int_equal(rig_driver_run(h.engine, NULL, &o, error, sizeof error), RIG_OK);
    for (int32_t i = 0; i < 4; i++) {
        struct harness_request *r = harness_get(&h, 10 + (uint64_t)i);
        assert_int_equal(r->finish_calls, 1);
        assert_int_equal(r->reason, RIG_END_ABORT);
    }
    int32_t p[8];
    harness_prompt(p, 8, 0, 1024);
    struct rig_submit late = rig__request(20, p, 8, 3);
    assert_int_equal(rig_inbox_submit(inbox, &late), RIG_E_STATE);
    assert_int_equal(rig_inbox_abort(inbox, 20), RIG_E_STATE);
    assert_true(rig_engine_idle(h.engine));
    rig_inbox_destroy(inbox);
    harness_close(&h);
}

/* Without close: the waiting submit gets in once a step makes room; all finish. */
static void test_engine_full_then_room(void **state)
{
    (void)state;
    struct rig_inbox *inbox = rig__open_queued(2, 5);
    for (int32_t n = 0; n < 1000 && harness_get(&h, 14)->finish_calls == 0; n++) {
        assert_int_equal(rig_inbox_drain(inbox, h.engine), RIG_OK);
        if (!rig_engine_idle(h.engine)) assert_int_equal(rig_engine_step(h.engine, NULL), RIG_OK);
    }
    rig__drive();
    for (int32_t i = 0; i < 5; i++) {
        struct harness_request *r = harness_get(&h, 10 + (uint64_t)i);
        assert_int_equal(r->finish_calls, 1);
        assert_int_equal(r->reason, RIG_END_LENGTH);
    }
    rig_inbox_destroy(inbox);
    harness_close(&h);
}

static void test_flush_cache_when_idle(void **state)
{
    (void)state;
    rig__open(32);
    struct rig_inbox *inbox = NULL;
    struct rig_inbox_limits limits = {8, 64};
    assert_int_equal(rig_inbox_create(&limits, &inbox), RIG_OK);
    int32_t p[32];
    harness_prompt(p, 32, 3, 1024);
    struct rig_submit s = rig__request(1, p, 32, 4);
    assert_int_equal(rig_inbox_submit(inbox, &s), RIG_OK);
    assert_int_equal(rig_inbox_flush_cache(inbox), RIG_OK);
    assert_int_equal(rig_inbox_drain(inbox, h.engine), RIG_OK); /* busy: the flush waits */
    rig__drive();
    struct rig_engine_stats stats;
    rig_engine_stats(h.engine, &stats);
    assert_true(stats.kv.evictable >= 32);
    assert_int_equal(rig_inbox_drain(inbox, h.engine), RIG_OK); /* idle: flushed */
    rig_engine_stats(h.engine, &stats);
    assert_int_equal(stats.kv.evictable, 0);
    assert_int_equal(stats.kv.free, stats.kv.total);
    rig_inbox_destroy(inbox);
    harness_close(&h);
}

static void *rig__post_later(void *arg)
{
    struct timespec pause = {0, 20000000};
    nanosleep(&pause, NULL);
    rig_inbox_abort(arg, 5);
    return NULL;
}

static void test_wait(void **state)
{
    (void)state;
    struct rig_inbox *inbox = NULL;
    struct rig_inbox_limits limits = {4, 8};
    assert_int_equal(rig_inbox_create(&limits, &inbox), RIG_OK);
    int64_t t0 = rig_inbox_clock_ns();
    rig_inbox_wait(inbox, t0 + 30000000);
    int64_t waited = rig_inbox_clock_ns() - t0;
    assert_true(waited >= 30000000 && waited < 2000000000);
    pthread_t poster;
    assert_int_equal(pthread_create(&poster, NULL, rig__post_later, inbox), 0);
    t0 = rig_inbox_clock_ns();
    rig_inbox_wait(inbox, -1); /* woken by the other thread's abort */
    assert_true(rig_inbox_clock_ns() - t0 < 2000000000);
    pthread_join(poster, NULL);
    t0 = rig_inbox_clock_ns();
    rig_inbox_wait(inbox, t0 + 1000000000); /* a message is queued: at once */
    assert_true(rig_inbox_clock_ns() - t0 < 500000000);
    rig_inbox_destroy(inbox);
}

#define RIG__THREADS    4
#define RIG__PER_THREAD 50
#define RIG__ALL        (RIG__THREADS * RIG__PER_THREAD)

struct rig__producer {
    struct rig_inbox *inbox;
    int32_t index;
    int64_t refused;  /* RIG_E_CAPACITY answers, retried */
    int32_t failures; /* anything else */
};

static void *rig__produce(void *arg)
{
    struct rig__producer *p = arg;
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 77 + (uint64_t)p->index);
    int32_t prompt[40];
    for (int32_t i = 0; i < RIG__PER_THREAD; i++) {
        int32_t len = (int32_t)rig_test_rng_int(&rng, 1, 40);
        harness_prompt(prompt, len, p->index * 1000 + i, 1024);
        uint64_t uid = (uint64_t)(p->index * RIG__PER_THREAD + i);
        struct rig_submit s = rig__request(uid, prompt, len, 1 + (int32_t)(uid % 5));
        enum rig_status status = RIG_E_CAPACITY;
        for (int32_t tries = 0; tries < 1000000 && status == RIG_E_CAPACITY; tries++) {
            status = rig_inbox_submit(p->inbox, &s);
            if (status == RIG_E_CAPACITY) p->refused++;
            if (status == RIG_E_CAPACITY) sched_yield();
        }
        if (status != RIG_OK) p->failures++;
    }
    return NULL;
}

struct rig__closer {
    struct rig_inbox *inbox;
    pthread_t producers[RIG__THREADS];
    pthread_mutex_t lock;
    int32_t ended;
};

static struct rig__closer closer;
static int32_t ends[RIG__ALL], outputs[RIG__ALL];
static enum rig_request_end reasons[RIG__ALL];

static void rig__count_finish(void *ctx, const struct rig_request_result *r)
{
    (void)ctx;
    if (r->uid >= RIG__ALL) return;
    ends[r->uid]++;
    reasons[r->uid] = r->reason;
    outputs[r->uid] = r->output_len;
    pthread_mutex_lock(&closer.lock);
    closer.ended++;
    pthread_mutex_unlock(&closer.lock);
}

/* Joins the producers, waits (bounded) until every request ended, then closes. */
static void *rig__close_when_done(void *arg)
{
    struct rig__closer *c = arg;
    for (int32_t t = 0; t < RIG__THREADS; t++)
        pthread_join(c->producers[t], NULL);
    for (int32_t n = 0; n < 20000; n++) {
        pthread_mutex_lock(&c->lock);
        bool done = c->ended == RIG__ALL;
        pthread_mutex_unlock(&c->lock);
        if (done) break;
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    rig_inbox_close(c->inbox);
    return NULL;
}

static void test_threads_submit_while_driving(void **state)
{
    (void)state;
    struct rig_engine_config c;
    harness_config(&c, "tiny", true);
    c.check_invariants = false; /* checked once at the end: the run is long */
    memset(&h, 0, sizeof h);
    rig_backends_register();
    struct rig_engine_observer obs = {.on_finish = rig__count_finish};
    char error[256] = "";
    assert_int_equal(rig_engine_create(&c, &obs, &h.engine, error, sizeof error), RIG_OK);
    struct rig_inbox_limits limits = {8, 40};
    assert_int_equal(rig_inbox_create(&limits, &closer.inbox), RIG_OK);
    pthread_mutex_init(&closer.lock, NULL);
    struct rig__producer producers[RIG__THREADS];
    for (int32_t t = 0; t < RIG__THREADS; t++) {
        producers[t] = (struct rig__producer){closer.inbox, t, 0, 0};
        assert_int_equal(pthread_create(&closer.producers[t], NULL, rig__produce, &producers[t]),
                         0);
    }
    pthread_t closing;
    assert_int_equal(pthread_create(&closing, NULL, rig__close_when_done, &closer), 0);
    struct rig_driver_options o = {.inbox = closer.inbox};
    assert_int_equal(rig_driver_run(h.engine, NULL, &o, error, sizeof error), RIG_OK);
    pthread_join(closing, NULL);
    int64_t refused = 0;
    for (int32_t t = 0; t < RIG__THREADS; t++) {
        assert_int_equal(producers[t].failures, 0);
        refused += producers[t].refused;
    }
    for (int32_t uid = 0; uid < RIG__ALL; uid++) {
        assert_int_equal(ends[uid], 1);
        assert_int_equal(reasons[uid], RIG_END_LENGTH);
        assert_int_equal(outputs[uid], 1 + uid % 5);
    }
    print_message("%d requests from %d threads, %lld submits refused for back-pressure\n", RIG__ALL,
                  RIG__THREADS, (long long)refused);
    harness_close(&h);
    rig_inbox_destroy(closer.inbox);
    pthread_mutex_destroy(&closer.lock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_and_backpressure),
        cmocka_unit_test(test_ring_wraps_prompts_intact),
        cmocka_unit_test(test_drain_order_and_refusals),
        cmocka_unit_test(test_engine_full_waits_in_inbox),
        cmocka_unit_test(test_engine_full_then_room),
        cmocka_unit_test(test_flush_cache_when_idle),
        cmocka_unit_test(test_wait),
        cmocka_unit_test(test_threads_submit_while_driving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
