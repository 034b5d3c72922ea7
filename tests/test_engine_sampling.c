/* test_engine_sampling.c — the sampling extensions (min_p, presence / frequency / repetition
 * penalties, logprobs) through the engine on the simulator's tiny model, invariant checker
 * on after every step.
 *
 * - Validation at submit: each out-of-range field (NaN included) is RIG_E_INVALID with a
 *   message naming the field, and nothing is queued; the edges of each range are accepted.
 */
#include <math.h>

#include "tests/support/engine_harness.h"

static struct harness h;

struct extensions {
    const char *field; /* the one out of range, for the invalid cases */
    float min_p, presence, frequency, repetition;
    int32_t logprobs;
};

static struct rig_submit submit_with(uint64_t uid, const int32_t *prompt, int32_t len,
                                     const struct extensions *x)
{
    struct rig_submit s = harness_request_of(uid, prompt, len);
    s.sampling.min_p = x->min_p;
    s.sampling.presence_penalty = x->presence;
    s.sampling.frequency_penalty = x->frequency;
    s.sampling.repetition_penalty = x->repetition;
    s.sampling.logprobs = x->logprobs;
    return s;
}

static void test_validation(void **state)
{
    (void)state;
    struct rig_engine_config c;
    harness_config(&c, "tiny", true);
    harness_open(&h, &c);
    int32_t prompt[4] = {1, 2, 3, 4};
    const struct extensions bad[] = {
        {"min_p", -0.01f, 0, 0, 1, -1},
        {"min_p", 1.01f, 0, 0, 1, -1},
        {"min_p", NAN, 0, 0, 1, -1},
        {"presence_penalty", 0, -2.5f, 0, 1, -1},
        {"presence_penalty", 0, 2.01f, 0, 1, -1},
        {"presence_penalty", 0, NAN, 0, 1, -1},
        {"frequency_penalty", 0, 0, -2.01f, 1, -1},
        {"frequency_penalty", 0, 0, 3.0f, 1, -1},
        {"frequency_penalty", 0, 0, INFINITY, 1, -1},
        {"repetition_penalty", 0, 0, 0, 0.0f, -1},
        {"repetition_penalty", 0, 0, 0, -1.0f, -1},
        {"repetition_penalty", 0, 0, 0, 2.5f, -1},
        {"repetition_penalty", 0, 0, 0, NAN, -1},
        {"logprobs", 0, 0, 0, 1, -2},
        {"logprobs", 0, 0, 0, 1, 21},
    };
    for (size_t i = 0; i < RIG_ARRAY_LEN(bad); i++) {
        struct rig_submit s = submit_with(100 + i, prompt, 4, &bad[i]);
        char reason[256] = "";
        assert_int_equal(rig_engine_submit(h.engine, &s, reason, sizeof reason), RIG_E_INVALID);
        if (strstr(reason, bad[i].field) == NULL)
            fail_msg("case %zu: \"%s\" does not name %s", i, reason, bad[i].field);
        assert_null(rig_engine_find(h.engine, s.uid));
    }
    const struct extensions edges[] = {
        {"", 0, -2, -2, 2, 20},
        {"", 1, 2, 2, 0.01f, 0},
        {"", 0.5f, 0, 0, 1, -1},
    };
    for (size_t i = 0; i < RIG_ARRAY_LEN(edges); i++) {
        struct rig_submit s = submit_with(200 + i, prompt, 4, &edges[i]);
        assert_int_equal(rig_engine_submit(h.engine, &s, NULL, 0), RIG_OK);
    }
    harness_run(&h);
    for (size_t i = 0; i < RIG_ARRAY_LEN(edges); i++)
        assert_int_equal(harness_get(&h, 200 + i)->reason, RIG_END_LENGTH);
    harness_close(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
