/* test_engine_seed.c — the seed walkthroughs as exact numbers (issue 3), on the simulator
 * with the invariant checker on after every step.
 *
 * 1. A 16-token prompt with max_tokens 16 computes K/V for 31 positions (16 in one prefill,
 *    then 15 decodes) and samples 16 tokens in 16 steps; the tree then holds 2 nodes (the
 *    16-token prompt inserted after prefill, the 15 decoded positions at finish), 31 pages.
 *    Same numbers with overlap on and off.
 * 2. The identical prompt again matches 15 tokens (input_ids[:15]) and prefills 1; its one
 *    duplicate page is freed and its row rewritten; the tree becomes 3 nodes / 31 pages
 *    (15 | 1 | 15). A prompt sharing its first 12 tokens matches 12 and prefills 4; its
 *    prompt is inserted after prefill ([4] under [12]) and its 15 decoded positions at
 *    finish, so the tree is 6 nodes / 50 pages: [12] → {[3] → [1] → [15], [4] → [15]} —
 *    the shape Mini-SGLang's radix manager produces for the same sequence of inserts.
 * 3. A 10,000-token prompt with a 2048-token budget runs as prefill chunks of 2048, 2048,
 *    2048, 2048, 1808 and its first token is sampled only with the last chunk.
 * Timing-only simulation (tokens from the counter-based RNG) keeps these fast; requests
 * that must generate the same tokens share an explicit seed. */
#include "tests/support/engine_harness.h"

static struct harness h;

static void submit_seeded(uint64_t uid, const int32_t *prompt, int32_t len, int32_t max_tokens,
                          uint64_t seed)
{
    struct rig_submit s;
    memset(&s, 0, sizeof s);
    s.uid = uid;
    s.prompt = prompt;
    s.prompt_len = len;
    s.sampling = rig_sampling_default();
    s.sampling.max_tokens = max_tokens;
    s.sampling.temperature = 1.0f;
    s.sampling.ignore_eos = true;
    s.sampling.has_seed = true;
    s.sampling.seed = seed;
    s.arrival_ns = -1;
    assert_int_equal(rig_engine_submit(h.engine, &s, NULL, 0), RIG_OK);
}

static void run_single(bool overlap)
{
    struct rig_engine_config c;
    harness_config(&c, "tiny", true);
    c.overlap = overlap;
    harness_open(&h, &c);
    int32_t prompt[16];
    harness_prompt(prompt, 16, 1, 1024);
    submit_seeded(1, prompt, 16, 16, 7);
    harness_run(&h);
    struct rig_engine_stats st;
    rig_engine_stats(h.engine, &st);
    assert_int_equal(st.prefill_tokens, 16);
    assert_int_equal(st.decode_tokens, 15);
    assert_int_equal(st.prefill_tokens + st.decode_tokens, 31); /* K/V positions */
    assert_int_equal(st.steps >= 16, true);
    assert_int_equal(h.step_count, 16);
    assert_int_equal(h.steps[0].phase, RIG_BATCH_PREFILL);
    assert_int_equal(h.steps[0].tokens, 16);
    for (int32_t i = 1; i < 16; i++) {
        assert_int_equal(h.steps[i].phase, RIG_BATCH_DECODE);
        assert_int_equal(h.steps[i].tokens, 1);
        assert_true(h.steps[i].graph_used); /* decode replays a captured graph */
        assert_int_equal(h.steps[i].padded_size, 1);
    }
    struct harness_request *a = harness_get(&h, 1);
    assert_int_equal(a->finish_calls, 1);
    assert_int_equal(a->reason, RIG_END_LENGTH);
    assert_int_equal(a->output_len, 16);
    assert_int_equal(a->first_step, 0);
    assert_int_equal(a->finish_step, 15);
    assert_int_equal(h.step_uids[0][0], 1);
    assert_int_equal(h.step_uids[15][0], 1);
    int32_t nodes;
    int64_t tokens;
    harness_tree(&h, &nodes, &tokens);
    assert_int_equal(nodes, 2);
    assert_int_equal(tokens, 31);
    assert_int_equal(st.kv.free, 512 - 31);
    harness_close(&h);
}

static void test_seed_single_request(void **state)
{
    (void)state;
    run_single(false);
    run_single(true);
}

static void test_seed_prefix_reuse(void **state)
{
    (void)state;
    struct rig_engine_config c;
    harness_config(&c, "tiny", true);
    harness_open(&h, &c);
    int32_t prompt[16], shared[16];
    harness_prompt(prompt, 16, 1, 1024);
    memcpy(shared, prompt, sizeof shared);
    for (int32_t i = 12; i < 16; i++) shared[i] = 1000 + i; /* differs from token 12 on */
    submit_seeded(1, prompt, 16, 16, 7);
    harness_run(&h);
    struct rig_engine_stats before, after;
    rig_engine_stats(h.engine, &before);
    submit_seeded(2, prompt, 16, 16, 7); /* identical: same prompt, same seed */
    harness_run(&h);
    rig_engine_stats(h.engine, &after);
    struct harness_request *a = harness_get(&h, 1), *b = harness_get(&h, 2);
    assert_int_equal(b->cached_len, 15);
    assert_int_equal(after.prefill_tokens - before.prefill_tokens, 1);
    assert_int_equal(after.cached_tokens - before.cached_tokens, 15);
    assert_memory_equal(a->tokens, b->tokens, 16 * sizeof(int32_t));
    int32_t nodes;
    int64_t tokens;
    harness_tree(&h, &nodes, &tokens);
    assert_int_equal(nodes, 3);
    assert_int_equal(tokens, 31);
    assert_int_equal(after.kv.free, 512 - 31); /* B's duplicates all went back */
    submit_seeded(3, shared, 16, 16, 8);
    rig_engine_stats(h.engine, &before);
    harness_run(&h);
    rig_engine_stats(h.engine, &after);
    assert_int_equal(harness_get(&h, 3)->cached_len, 12);
    assert_int_equal(after.prefill_tokens - before.prefill_tokens, 4);
    harness_tree(&h, &nodes, &tokens);
    assert_int_equal(nodes, 6);
    assert_int_equal(tokens, 50);
    assert_int_equal(after.kv.free, 512 - 50);
    assert_int_equal(after.kv.evictable, 50);
    harness_close(&h);
}

static void test_seed_chunked_prefill(void **state)
{
    (void)state;
    struct rig_engine_config c;
    harness_config(&c, "qwen3-0.6b", true);
    c.max_seq_len = 10240;
    c.num_pages = 12000;
    c.prefill_budget = 2048;
    c.max_requests = 4;
    harness_open(&h, &c);
    static int32_t prompt[10000];
    harness_prompt(prompt, 10000, 3, 151936);
    submit_seeded(1, prompt, 10000, 4, 5);
    harness_run(&h);
    const int32_t chunks[5] = {2048, 2048, 2048, 2048, 1808};
    for (int32_t i = 0; i < 5; i++) {
        assert_int_equal(h.steps[i].phase, RIG_BATCH_PREFILL);
        assert_int_equal(h.steps[i].tokens, chunks[i]);
    }
    assert_int_equal(h.steps[5].phase, RIG_BATCH_DECODE);
    /* Nothing is sampled before the last chunk: the first token arrives with step 4. */
    assert_int_equal(strncmp(h.log, "SSSSTS", 6), 0);
    struct harness_request *r = harness_get(&h, 1);
    assert_int_equal(r->output_len, 4);
    struct rig_engine_stats st;
    rig_engine_stats(h.engine, &st);
    assert_int_equal(st.prefill_tokens, 10000);
    assert_int_equal(st.decode_tokens, 3);
    harness_close(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_single_request),
        cmocka_unit_test(test_seed_prefix_reuse),
        cmocka_unit_test(test_seed_chunked_prefill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
