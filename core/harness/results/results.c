/* results.c — the run records (see results.h). */
#include "core/harness/results/results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const rig__finish_names[RIG_FINISH_COUNT] = {"none", "length", "stop",
                                                                "abort", "rejected"};
static const char *const rig__phase_names[] = {"prefill", "decode", "mixed"};

const char *rig_finish_reason_name(int32_t reason)
{
    return reason >= 0 && reason < RIG_FINISH_COUNT ? rig__finish_names[reason] : "?";
}

int32_t rig_finish_reason_parse(const char *name)
{
    for (int32_t i = 0; i < RIG_FINISH_COUNT; i++)
        if (strcmp(rig__finish_names[i], name) == 0) return i;
    return -1;
}

const char *rig_step_phase_name(int32_t phase)
{
    return phase >= 0 && phase <= RIG_STEP_MIXED ? rig__phase_names[phase] : "?";
}

int32_t rig_step_phase_parse(const char *name)
{
    for (int32_t i = 0; i <= RIG_STEP_MIXED; i++)
        if (strcmp(rig__phase_names[i], name) == 0) return i;
    return -1;
}

enum rig_status rig_results_init(struct rig_results *results, int64_t requests, int64_t tokens,
                                 int64_t steps, int64_t step_uids)
{
    RIG_ASSERT(requests >= 0 && tokens >= 0);
    RIG_ASSERT(steps >= 0 && step_uids >= 0);
    memset(results, 0, sizeof *results);
    /* calloc of the worst case: the kernel backs only the pages a run touches. */
    results->requests = calloc((size_t)requests + 1, sizeof *results->requests);
    results->steps = calloc((size_t)steps + 1, sizeof *results->steps);
    results->token_time_ns = calloc((size_t)tokens + 1, sizeof *results->token_time_ns);
    results->token_ids = calloc((size_t)tokens + 1, sizeof *results->token_ids);
    results->step_uids = calloc((size_t)step_uids + 1, sizeof *results->step_uids);
    if (results->requests == NULL || results->steps == NULL || results->token_ids == NULL ||
        results->token_time_ns == NULL || results->step_uids == NULL) {
        rig_results_free(results);
        return RIG_E_NO_MEMORY;
    }
    results->request_count = requests;
    results->step_capacity = steps;
    results->token_capacity = tokens;
    results->step_uid_capacity = step_uids;
    for (int64_t i = 0; i < tokens; i++) results->token_time_ns[i] = -1; /* never: NaN */
    for (int64_t i = 0; i < requests; i++) {
        struct rig_results_request *r = &results->requests[i];
        r->uid = i;
        r->arrival_ns = r->first_scheduled_ns = r->first_token_ns = r->finish_ns = -1;
        r->first_step = r->finish_step = -1;
    }
    return RIG_OK;
}

void rig_results_free(struct rig_results *results)
{
    if (results == NULL) return;
    free(results->requests);
    free(results->steps);
    free(results->token_time_ns);
    free(results->token_ids);
    free(results->step_uids);
    if (results->fleet != NULL) free(results->fleet->routes);
    free(results->fleet);
    free(results->host);
    memset(results, 0, sizeof *results);
}

enum rig_status rig_results_init_host(struct rig_results *results)
{
    RIG_ASSERT(results != NULL && results->host == NULL);
    RIG_ASSERT(results->step_count == 0);
    size_t n = results->step_capacity > 0 ? (size_t)results->step_capacity : 1;
    results->host = calloc(n, sizeof *results->host);
    return results->host != NULL ? RIG_OK : RIG_E_NO_MEMORY;
}

enum rig_status rig_results_init_fleet(struct rig_results *results)
{
    RIG_ASSERT(results != NULL && results->fleet == NULL);
    struct rig_results_fleet *fleet = calloc(1, sizeof *fleet);
    if (fleet != NULL)
        fleet->routes = calloc((size_t)results->request_count + 1, sizeof *fleet->routes);
    if (fleet == NULL || fleet->routes == NULL) {
        free(fleet);
        return RIG_E_NO_MEMORY;
    }
    for (int64_t i = 0; i < results->request_count; i++)
        fleet->routes[i] = (struct rig_results_route){.replica = -1};
    results->fleet = fleet;
    return RIG_OK;
}

enum rig_status rig_results_add_step(struct rig_results *results,
                                     const struct rig_results_step *step,
                                     const int32_t *uids, int32_t uid_count)
{
    RIG_ASSERT(uid_count >= 0 && (uids != NULL || uid_count == 0));
    if (results->step_count == results->step_capacity ||
        results->step_uid_count + uid_count > results->step_uid_capacity)
        return RIG_E_CAPACITY;
    struct rig_results_step *out = &results->steps[results->step_count++];
    *out = *step;
    out->request_offset = results->step_uid_count;
    out->request_count = uid_count;
    if (uid_count > 0)
        memcpy(results->step_uids + results->step_uid_count, uids,
               (size_t)uid_count * sizeof *uids);
    results->step_uid_count += uid_count;
    return RIG_OK;
}

int64_t rig_results_reserve_tokens(struct rig_results *results, int64_t count)
{
    RIG_ASSERT(count >= 0);
    if (results->token_count + count > results->token_capacity) return -1;
    int64_t first = results->token_count;
    results->token_count += count;
    return first;
}

static const char *rig__check_request(const struct rig_results *results, int64_t i)
{
    const struct rig_results_request *r = &results->requests[i];
    if (r->uid != i) return "uid differs from its row";
    if (r->output_len < 0 || r->token_offset < 0 ||
        r->token_offset + r->output_len > results->token_count)
        return "token rows outside the token arrays";
    for (int32_t k = 1; k < r->output_len; k++) {
        if (results->token_time_ns[r->token_offset + k] <
            results->token_time_ns[r->token_offset + k - 1])
            return "token times go backwards";
    }
    bool finished = r->finish_reason == RIG_FINISH_LENGTH || r->finish_reason == RIG_FINISH_STOP;
    if (finished && (r->first_scheduled_ns < r->arrival_ns ||
                     r->first_token_ns < r->first_scheduled_ns ||
                     r->finish_ns < r->first_token_ns))
        return "times out of order (arrival <= first scheduled <= first token <= finish)";
    if (finished && r->output_len < 1) return "finished without an output token";
    return NULL;
}

int64_t rig_results_check(const struct rig_results *results, char *message, size_t message_len)
{
    int64_t violations = 0;
    if (message != NULL && message_len > 0) message[0] = '\0';
    for (int64_t i = 0; i < results->request_count; i++) {
        const char *problem = rig__check_request(results, i);
        if (problem == NULL) continue;
        if (violations++ == 0 && message != NULL)
            snprintf(message, message_len, "request %lld (%s): %s", (long long)i,
                     results->requests[i].id, problem);
    }
    for (int64_t i = 0; i < results->step_count; i++) {
        const struct rig_results_step *s = &results->steps[i];
        bool bad = s->request_offset < 0 ||
                   s->request_offset + s->request_count > results->step_uid_count ||
                   s->end_ns < s->start_ns;
        for (int32_t k = 0; !bad && k < s->request_count; k++) {
            int32_t uid = results->step_uids[s->request_offset + k];
            bad = uid < 0 || uid >= results->request_count;
        }
        if (bad && violations++ == 0 && message != NULL)
            snprintf(message, message_len, "step %lld: request list or times invalid",
                     (long long)i);
    }
    return violations;
}

int32_t rig_results_finish_reason(enum rig_request_end end)
{
    switch (end) {
    case RIG_END_LENGTH:
    case RIG_END_CONTEXT: return RIG_FINISH_LENGTH;
    case RIG_END_EOS:
    case RIG_END_STOP_TOKEN: return RIG_FINISH_STOP;
    case RIG_END_ABORT: return RIG_FINISH_ABORT;
    case RIG_END_REJECTED: return RIG_FINISH_REJECTED;
    case RIG_END_NONE:
    case RIG_END_COUNT: break;
    }
    return RIG_FINISH_NONE;
}
