/* test_engine_equiv.c — a sampled token depends only on (seed, request, position): the same
 * workload run under different scheduling gives every request the same tokens.
 *
 * The real tiny model (seeded dummy weights, full math on the simulator), eight requests
 * with shared prefixes (so the radix cache hits and splits), prompts longer than the budget
 * (chunked prefill), more requests than rows (queueing), a mix of greedy, temperature, top-k
 * and top-p sampling. Compared against the base run (prefill_first, overlap on, radix,
 * budget 64, decode graphs): overlap off; mixed and decode_first policies; the naive cache;
 * a budget of 16 (more chunks); decode graphs off; page size 4; and under TP 2, overlap on
 * vs off and radix vs naive (TP changes the floating-point sums, so TP 2 is compared with
 * itself); decode rows in admission order against longest first (the default), whose steps
 * must list their decode rows by KV length (the admission-order run's must not, or the check
 * would be empty). The invariant checker runs after every step. The virtual clock must also
 * show overlap and prefix caching paying off (later end times without them). */
#include "tests/support/engine_harness.h"

#define N_REQ 8

static struct harness base, other;

/* Request i's prompt length (uid 100 + i). */
static int32_t prompt_len(int32_t i)
{
    return 20 + 7 * i;
}

static void submit_all(struct harness *h)
{
    static int32_t prompts[N_REQ][120];
    for (int32_t i = 0; i < N_REQ; i++) {
        harness_prompt(prompts[i], 120, i % 2, 1024); /* two families of shared prefixes */
        for (int32_t j = 24 + 8 * i; j < 120; j++) prompts[i][j] = 3 + (j * 31 + i * 17) % 1000;
    }
    for (int32_t i = 0; i < N_REQ; i++) {
        struct rig_submit s;
        memset(&s, 0, sizeof s);
        s.uid = 100 + (uint64_t)i;
        s.prompt = prompts[i];
        s.prompt_len = prompt_len(i);
        s.sampling = rig_sampling_default();
        s.sampling.max_tokens = 3 + 2 * i;
        s.sampling.ignore_eos = true;
        s.sampling.temperature = i % 4 == 0 ? 0.0f : 0.9f;
        s.sampling.top_k = i % 4 == 2 ? 20 : -1;
        s.sampling.top_p = i % 4 == 3 ? 0.8f : 1.0f;
        s.arrival_ns = -1;
        assert_int_equal(rig_engine_submit(h->engine, &s, NULL, 0), RIG_OK);
    }
}

static void run(struct harness *h, const struct rig_engine_config *c)
{
    harness_open(h, c);
    submit_all(h);
    harness_run(h);
    assert_int_equal(h->request_count, N_REQ);
}

static void base_config(struct rig_engine_config *c)
{
    harness_config(c, "tiny", false);
    c->device.profile = "h100:analytic:pinned"; /* asynchronous copies: overlap hides host work */
    c->prefill_budget = 64;
    c->max_running_req = 4;
    c->num_pages = 1024;
}

static void assert_same_tokens(const struct harness *a, const struct harness *b, const char *what)
{
    for (int32_t i = 0; i < N_REQ; i++) {
        const struct harness_request *x = &a->requests[i];
        const struct harness_request *y = NULL;
        for (int32_t j = 0; j < b->request_count; j++)
            if (b->requests[j].uid == x->uid) y = &b->requests[j];
        assert_non_null(y);
        assert_int_equal(x->output_len, y->output_len);
        if (memcmp(x->tokens, y->tokens, (size_t)x->output_len * sizeof(int32_t)) != 0) {
            fprintf(stderr, "%s: request %llu differs\n", what, (unsigned long long)x->uid);
            fail();
        }
    }
}

/* Runs a variant, compares its tokens; returns its end time on the virtual host clock. */
static int64_t variant(const struct rig_engine_config *c, const char *what)
{
    run(&other, c);
    assert_same_tokens(&base, &other, what);
    int64_t end = rig_engine_now_ns(other.engine);
    harness_close(&other);
    return end;
}

static void test_same_tokens_under_every_schedule(void **state)
{
    (void)state;
    struct rig_engine_config c;
    base_config(&c);
    run(&base, &c);
    struct rig_engine_stats st;
    rig_engine_stats(base.engine, &st);
    assert_true(st.cached_tokens > 0);  /* the cache was used */
    assert_true(st.graph_replays > 0);  /* graphs were replayed */
    int64_t base_end = rig_engine_now_ns(base.engine);
    /* The virtual clock models what the options buy: overlap hides host work, the prefix
     * cache saves prefill; both runs end later without them. */
    base_config(&c), c.overlap = false;
    assert_true(variant(&c, "overlap off") > base_end);
    base_config(&c), c.cache_type = RIG_CACHE_NAIVE;
    assert_true(variant(&c, "naive cache") > base_end);
    base_config(&c), c.policy = RIG_POLICY_MIXED, variant(&c, "mixed");
    base_config(&c), c.policy = RIG_POLICY_DECODE_FIRST, variant(&c, "decode_first");
    base_config(&c), c.prefill_budget = 16, variant(&c, "budget 16");
    base_config(&c), c.cuda_graphs = false, variant(&c, "no graphs");
    base_config(&c), c.page_size = 4, c.num_pages = 256, variant(&c, "page size 4");
    base_config(&c), c.max_running_req = 8, variant(&c, "8 rows");
    harness_close(&base);
}

/* Whether every step of `h` lists its decode rows by non-increasing KV length (counted as the
 * prompt plus the decode steps the row took before; `*steps_out_of_order` counts the steps
 * that do not). Rows are the first 8 uids a step recorded: all of them at 4 rows. */
static bool decode_rows_longest_first(const struct harness *h, int32_t *steps_out_of_order)
{
    int32_t decoded[N_REQ] = {0};
    *steps_out_of_order = 0;
    for (int32_t s = 0; s < h->step_count; s++) {
        const struct rig_step_record *rec = &h->steps[s];
        int32_t decodes = rec->batch_size - rec->prefill_requests;
        assert_true(decodes <= 8);
        int64_t last = INT64_MAX;
        bool ordered = true;
        for (int32_t i = 0; i < decodes; i++) {
            int32_t r = (int32_t)(h->step_uids[s][i] - 100);
            assert_true(r >= 0 && r < N_REQ);
            int64_t kv = prompt_len(r) + decoded[r];
            if (kv > last) ordered = false;
            last = kv;
        }
        for (int32_t i = 0; i < decodes; i++) decoded[h->step_uids[s][i] - 100]++;
        if (!ordered) (*steps_out_of_order)++;
    }
    return *steps_out_of_order == 0;
}

static void test_decode_rows_longest_first(void **state)
{
    (void)state;
    struct rig_engine_config c;
    base_config(&c), c.decode_order = RIG_DECODE_ORDER_ADMISSION;
    run(&base, &c);
    int32_t unordered = 0;
    assert_false(decode_rows_longest_first(&base, &unordered));
    assert_true(unordered > 0);
    base_config(&c), c.decode_order = RIG_DECODE_ORDER_LONGEST_FIRST;
    run(&other, &c);
    assert_same_tokens(&base, &other, "longest first");
    assert_true(decode_rows_longest_first(&other, &unordered));
    harness_close(&other);
    base_config(&c), c.decode_order = RIG_DECODE_ORDER_LONGEST_FIRST, c.policy = RIG_POLICY_MIXED;
    variant(&c, "longest first, mixed");
    harness_close(&base);
}

/* The order's names, and RIG_DECODE_ORDER (a measuring switch read by the defaults): a known
 * name sets it, an unknown one leaves the default. */
static void test_decode_order_names(void **state)
{
    (void)state;
    enum rig_decode_order order = RIG_DECODE_ORDER_ADMISSION;
    assert_int_equal(rig_decode_order_parse("longest_first", &order), RIG_OK);
    assert_int_equal(order, RIG_DECODE_ORDER_LONGEST_FIRST);
    assert_string_equal(rig_decode_order_name(order), "longest_first");
    assert_int_equal(rig_decode_order_parse("admission", &order), RIG_OK);
    assert_string_equal(rig_decode_order_name(order), "admission");
    assert_int_equal(rig_decode_order_parse("shortest_first", &order), RIG_E_NOT_FOUND);
    assert_int_equal(order, RIG_DECODE_ORDER_ADMISSION); /* untouched */
    struct rig_engine_config c;
    char was[32] = ""; /* the caller's setting, copied: setenv may move it */
    const char *env = getenv("RIG_DECODE_ORDER");
    if (env != NULL) snprintf(was, sizeof was, "%s", env);
    assert_int_equal(setenv("RIG_DECODE_ORDER", "admission", 1), 0);
    rig_engine_config_default(&c);
    assert_int_equal(c.decode_order, RIG_DECODE_ORDER_ADMISSION);
    assert_int_equal(setenv("RIG_DECODE_ORDER", "bogus", 1), 0);
    rig_engine_config_default(&c);
    assert_int_equal(c.decode_order, RIG_DECODE_ORDER_LONGEST_FIRST);
    if (env != NULL) setenv("RIG_DECODE_ORDER", was, 1);
    else unsetenv("RIG_DECODE_ORDER");
}

static void test_same_tokens_under_tp2(void **state)
{
    (void)state;
    struct rig_engine_config c;
    base_config(&c);
    c.tp_size = 2;
    run(&base, &c);
    base_config(&c), c.tp_size = 2, c.overlap = false, variant(&c, "tp2 overlap off");
    base_config(&c), c.tp_size = 2, c.cache_type = RIG_CACHE_NAIVE, variant(&c, "tp2 naive");
    base_config(&c), c.tp_size = 2, c.policy = RIG_POLICY_MIXED, variant(&c, "tp2 mixed");
    harness_close(&base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_tokens_under_every_schedule),
        cmocka_unit_test(test_decode_rows_longest_first),
        cmocka_unit_test(test_decode_order_names),
        cmocka_unit_test(test_same_tokens_under_tp2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
