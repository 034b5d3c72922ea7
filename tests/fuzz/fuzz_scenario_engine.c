/* fuzz_scenario_engine.c — libFuzzer harness that fuzzes the scenario parser and the engine
 * together: YAML text → rig_scenario_load_string → rig_scenario_run on the simulator with
 * the invariant checker after every step.
 *
 * A scenario that loads is run only when it is small (bounded work per input): the tiny
 * preset, the simulator with a built-in profile, one engine (no cluster), at most 8 requests
 * of at most 256 prompt and 64 output tokens, at most 4096 KV slots and positions. Every
 * run must either finish — no invariant violation, no leaked page, every request ended — or
 * fail with a message; never crash, assert, hang, leak or overflow (ASan/UBSan). Inputs that
 * do not load are the parser's (fuzz_scenario.c) and only checked for a message here.
 * Corpus: tests/fuzz/corpus/scenario_engine/, small scenarios over every workload kind, policy,
 * cache and fault.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/results/results.h"
#include "core/harness/scenario/run.h"
#include "core/harness/scenario/scenario.h"
#include "hal/backends.h"
#include "hal/status.h"
#include "tests/fuzz/fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether a loaded scenario is small enough to run for every input. */
static bool rig__small(const struct rig_scenario *s)
{
    if (strcmp(s->model.preset, "tiny") != 0 || s->backend != RIG_SCENARIO_BACKEND_SIM ||
        s->cluster.replicas != 0 || strchr(s->sim.profile, '/') != NULL ||
        strchr(s->sim.profile, '.') != NULL || s->request_count > 8)
        return false;
    for (int32_t i = 0; i < s->request_count; i++)
        if (s->requests[i].input_len > 256 || s->requests[i].max_tokens > 64) return false;
    struct rig_engine_config config;
    char error[256];
    if (rig_scenario_engine_config(s, &config, error, sizeof error) != RIG_OK) return false;
    int32_t context = config.max_seq_len > 0 ? config.max_seq_len : config.model.max_position;
    return config.tp_size == 1 && config.num_pages >= 1 && config.page_size >= 1 &&
           (int64_t)config.num_pages * config.page_size <= 4096 && context <= 4096;
}

static void rig__violation(void *user, const char *message)
{
    (void)user;
    RIG_ASSERT_MSG(false, message);
}

static void rig__run(const struct rig_scenario *s)
{
    struct rig_run_options options = {.check = RIG_RUN_CHECK_STEP, .violation = rig__violation};
    struct rig_results results;
    char error[RIG_SCENARIO_ERROR_MAX];
    error[0] = '\0';
    enum rig_status status = rig_scenario_run(s, &options, &results, error, sizeof error);
    if (status != RIG_OK) {
        RIG_ASSERT(error[0] != '\0');
    } else {
        RIG_ASSERT(results.invariant_violations == 0 && results.pages_leaked == 0);
        RIG_ASSERT(results.request_count == s->request_count);
    }
    rig_results_free(&results);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rig_backends_register(); /* idempotent */
    char *text = rig_fuzz_cstring(data, size);
    struct rig_scenario scenario;
    char error[RIG_SCENARIO_ERROR_MAX];
    enum rig_status status =
        rig_scenario_load_string(text, "fuzz.yaml", NULL, 0, &scenario, error, sizeof error);
    free(text);
    if (status != RIG_OK) {
        RIG_ASSERT(error[0] != '\0');
        return 0;
    }
    rig_fuzz_check_scenario(&scenario);
    if (rig__small(&scenario)) rig__run(&scenario);
    rig_scenario_free(&scenario);
    return 0;
}
