/* fuzz_support.c — see fuzz_support.h. */
#include "tests/fuzz/fuzz_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/harness/scenario/scenario.h"
#include "hal/status.h"

static char rig__fuzz_dir[64];
static char rig__fuzz_path[128];

static void rig__fuzz_cleanup(void)
{
    if (rig__fuzz_path[0] != '\0') unlink(rig__fuzz_path);
    if (rig__fuzz_dir[0] != '\0') rmdir(rig__fuzz_dir);
}

char *rig_fuzz_cstring(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    RIG_ASSERT(text != NULL);
    if (size > 0) memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

const char *rig_fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    if (rig__fuzz_dir[0] == '\0') {
        snprintf(rig__fuzz_dir, sizeof rig__fuzz_dir, "/tmp/rig-fuzz-XXXXXX");
        char *made = mkdtemp(rig__fuzz_dir);
        RIG_ASSERT(made != NULL);
        atexit(rig__fuzz_cleanup);
    }
    int n = snprintf(rig__fuzz_path, sizeof rig__fuzz_path, "%s/%s", rig__fuzz_dir, name);
    RIG_ASSERT(n > 0 && (size_t)n < sizeof rig__fuzz_path);
    FILE *file = fopen(rig__fuzz_path, "wb");
    RIG_ASSERT(file != NULL);
    size_t written = size == 0 ? 0 : fwrite(data, 1, size, file);
    int closed = fclose(file);
    RIG_ASSERT(written == size);
    RIG_ASSERT(closed == 0);
    return rig__fuzz_path;
}

void rig_fuzz_check_scenario(const struct rig_scenario *s)
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

void rig_fuzz_load_scenario(const char *text, int32_t max_requests)
{
    struct rig_scenario scenario;
    char error[RIG_SCENARIO_ERROR_MAX];
    enum rig_status status =
        rig_scenario_load_string(text, "fuzz.yaml", NULL, 0, &scenario, error, sizeof error);
    if (status != RIG_OK) {
        RIG_ASSERT(error[0] != '\0');
        RIG_ASSERT(scenario.requests == NULL && scenario.tokens == NULL);
        return;
    }
    RIG_ASSERT(scenario.request_count <= max_requests);
    rig_fuzz_check_scenario(&scenario);
    rig_scenario_free(&scenario);
}
