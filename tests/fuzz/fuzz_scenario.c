/* fuzz_scenario.c — libFuzzer harness for the scenario YAML loader
 * (rig_scenario_load_string, core/harness/scenario/).
 *
 * Any text must either load into a scenario that keeps the loader's documented invariants
 * (requests sorted by arrival with uid = index, prompts inside the token array with ids in
 * [0, token_id_max], input_len and max_tokens >= 1, expectation uids valid) or fail with a
 * "file:line:column: message" and a zeroed result; never crash, leak or overflow (ASan/UBSan).
 * Corpus: tests/fuzz/corpus/scenario/, seeded from the scenario tests' YAML and
 * docs/scenarios.md's examples.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/scenario/scenario.h"
#include "hal/status.h"
#include "tests/fuzz/fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void rig__check(const struct rig_scenario *s)
{
    RIG_ASSERT(s->request_count >= 0);
    for (int32_t i = 0; i < s->request_count; i++) {
        const struct rig_scenario_request *r = &s->requests[i];
        RIG_ASSERT(r->input_len >= 1 && r->max_tokens >= 1);
        RIG_ASSERT(r->token_offset >= 0 && r->token_offset + r->input_len <= s->token_count);
        if (i > 0) RIG_ASSERT(s->requests[i - 1].arrival_ns <= r->arrival_ns);
        const int32_t *prompt = rig_scenario_prompt(s, i);
        for (int32_t t = 0; t < r->input_len; t++)
            RIG_ASSERT(prompt[t] >= 0 && prompt[t] <= s->token_id_max);
        RIG_ASSERT(rig_scenario_find(s, r->id) == i);
    }
    for (int32_t e = 0; e < s->expect_count; e++) {
        const struct rig_scenario_expect *x = &s->expects[e];
        RIG_ASSERT(x->request >= -1 && x->request < s->request_count);
        RIG_ASSERT(x->other >= -1 && x->other < s->request_count);
        RIG_ASSERT(x->ids_offset >= 0 && x->ids_offset + x->ids_count <= s->expect_uid_count);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = rig_fuzz_cstring(data, size);
    struct rig_scenario scenario;
    char error[RIG_SCENARIO_ERROR_MAX];
    enum rig_status status =
        rig_scenario_load_string(text, "fuzz.yaml", NULL, 0, &scenario, error, sizeof error);
    if (status != RIG_OK) {
        RIG_ASSERT(error[0] != '\0');
        RIG_ASSERT(scenario.requests == NULL && scenario.tokens == NULL);
    } else {
        rig__check(&scenario);
        rig_scenario_free(&scenario);
    }
    free(text);
    return 0;
}
