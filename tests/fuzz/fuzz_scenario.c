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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = rig_fuzz_cstring(data, size);
    rig_fuzz_load_scenario(text, INT32_MAX);
    free(text);
    return 0;
}
