/* expect.c — evaluating expectations (see expect.h). */
#include "core/harness/scenario/expect.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const rig_expect_request_fields[] = {"cached_len", "output_len", "input_len",
                                                 "finish_reason", "ttft", "e2e", NULL};
const char *const rig_expect_step_fields[] = {"phase", "batch_size", "tokens", "padded_size",
                                              "graph_used", NULL};
const char *const rig_expect_total_fields[] = {
    "pages_leaked",     "invariant_violations", "cache_hit_tokens", "requests_finished",
    "requests_aborted", "requests_rejected",    "steps",            "prefill_steps",
    "decode_steps",     "mixed_steps",          "computed_tokens",  "output_tokens",
    "max_batch_size",   NULL};
_Static_assert(sizeof rig_expect_total_fields / sizeof *rig_expect_total_fields ==
                   RIG_FIELD_TOTAL_COUNT_ + 1, "a name per total field");

static int64_t rig__count_requests(const struct rig_results *results, int32_t reason)
{
    int64_t count = 0;
    for (int64_t i = 0; i < results->request_count; i++) {
        int32_t r = results->requests[i].finish_reason;
        bool finished = r == RIG_FINISH_LENGTH || r == RIG_FINISH_STOP;
        count += reason < 0 ? finished : r == reason;
    }
    return count;
}

int64_t rig_expect_total(const struct rig_results *results, int32_t field)
{
    int64_t sum = 0;
    switch (field) {
    case RIG_FIELD_PAGES_LEAKED: return results->pages_leaked;
    case RIG_FIELD_INVARIANT_VIOLATIONS: return results->invariant_violations;
    case RIG_FIELD_CACHE_HIT_TOKENS: return results->cache_hit_tokens;
    case RIG_FIELD_REQUESTS_FINISHED: return rig__count_requests(results, -1);
    case RIG_FIELD_REQUESTS_ABORTED: return rig__count_requests(results, RIG_FINISH_ABORT);
    case RIG_FIELD_REQUESTS_REJECTED: return rig__count_requests(results, RIG_FINISH_REJECTED);
    case RIG_FIELD_STEPS: return results->step_count;
    case RIG_FIELD_PREFILL_STEPS:
    case RIG_FIELD_DECODE_STEPS:
    case RIG_FIELD_MIXED_STEPS:
        for (int64_t i = 0; i < results->step_count; i++)
            sum += results->steps[i].phase == field - RIG_FIELD_PREFILL_STEPS;
        return sum;
    case RIG_FIELD_COMPUTED_TOKENS:
        for (int64_t i = 0; i < results->step_count; i++) sum += results->steps[i].tokens;
        return sum;
    case RIG_FIELD_OUTPUT_TOKENS:
        for (int64_t i = 0; i < results->request_count; i++)
            sum += results->requests[i].output_len;
        return sum;
    case RIG_FIELD_MAX_BATCH_SIZE:
        for (int64_t i = 0; i < results->step_count; i++)
            if (results->steps[i].batch_size > sum) sum = results->steps[i].batch_size;
        return sum;
    default: RIG_UNREACHABLE();
    }
}

/* "15", "in [3, 9]", ">= 2", "<= 0.05 s" */
static void rig__format_bounds(char *out, size_t len, double lo, double hi, bool is_time)
{
    const char *unit = is_time ? " s" : "";
    if (lo == hi) snprintf(out, len, "%.9g%s", lo, unit);
    else if (isinf(lo)) snprintf(out, len, "<= %.9g%s", hi, unit);
    else if (isinf(hi)) snprintf(out, len, ">= %.9g%s", lo, unit);
    else snprintf(out, len, "in [%.9g, %.9g]%s", lo, hi, unit);
}

struct rig__checker {
    const struct rig_scenario *scenario;
    const struct rig_results *results;
    const struct rig_metrics *metrics;
    rig_expect_report_fn report;
    void *user;
    int32_t failures;
};

static void rig__fail(struct rig__checker *c, const struct rig_scenario_expect *e,
                      const char *format, const char *a, const char *b)
{
    char what[320], message[1024];
    snprintf(what, sizeof what, format, a, b);
    snprintf(message, sizeof message, "%s:%d:%d: %s", c->scenario->path, e->line, e->column,
             what);
    c->failures++;
    if (c->report != NULL) c->report(c->user, message);
}

static void rig__check_value(struct rig__checker *c, const struct rig_scenario_expect *e,
                             const char *subject, double value, bool is_time,
                             const char *const *names)
{
    if (value >= e->lo && value <= e->hi) return;
    char actual[64], expected[64];
    if (names != NULL) {
        snprintf(actual, sizeof actual, "%s", names[(int32_t)value]);
        snprintf(expected, sizeof expected, "%s", names[(int32_t)e->lo]);
    } else {
        snprintf(actual, sizeof actual, "%.9g%s", value, is_time ? " s" : "");
        rig__format_bounds(expected, sizeof expected, e->lo, e->hi, is_time);
    }
    char text[192];
    snprintf(text, sizeof text, "%s is %s", subject, actual);
    rig__fail(c, e, "%s, expected %s", text, expected);
}

static const char *const rig__reason_names[] = {"none", "length", "stop", "abort", "rejected"};
static const char *const rig__phase_names[] = {"prefill", "decode", "mixed"};

static void rig__check_request(struct rig__checker *c, const struct rig_scenario_expect *e)
{
    const struct rig_results_request *r = &c->results->requests[e->request];
    double value = 0;
    bool is_time = false;
    switch (e->field) {
    case RIG_FIELD_CACHED_LEN: value = r->cached_len; break;
    case RIG_FIELD_OUTPUT_LEN: value = r->output_len; break;
    case RIG_FIELD_INPUT_LEN: value = r->input_len; break;
    case RIG_FIELD_FINISH_REASON: value = r->finish_reason; break;
    case RIG_FIELD_TTFT:
        value = r->first_token_ns < 0 ? INFINITY : (r->first_token_ns - r->arrival_ns) * 1e-9;
        is_time = true;
        break;
    case RIG_FIELD_E2E:
        value = r->finish_ns < 0 ? INFINITY : (r->finish_ns - r->arrival_ns) * 1e-9;
        is_time = true;
        break;
    default: RIG_UNREACHABLE();
    }
    char subject[128];
    snprintf(subject, sizeof subject, "request %s: %s", r->id,
             rig_expect_request_fields[e->field]);
    rig__check_value(c, e, subject, value, is_time,
                     e->field == RIG_FIELD_FINISH_REASON ? rig__reason_names : NULL);
}

static void rig__check_same_output(struct rig__checker *c, const struct rig_scenario_expect *e)
{
    const struct rig_results *res = c->results;
    const struct rig_results_request *a = &res->requests[e->request];
    const struct rig_results_request *b = &res->requests[e->other];
    if (a->output_len != b->output_len) {
        char lengths[96];
        snprintf(lengths, sizeof lengths, "%d and %d tokens", a->output_len, b->output_len);
        rig__fail(c, e, "requests %s: outputs differ in length (%s)", a->id, lengths);
        return;
    }
    for (int32_t k = 0; k < a->output_len; k++) {
        int32_t x = res->token_ids[a->token_offset + k], y = res->token_ids[b->token_offset + k];
        if (x == y) continue;
        char where[192];
        snprintf(where, sizeof where, "%s: output token %d is %d, in %s it is %d", a->id, k, x,
                 b->id, y);
        rig__fail(c, e, "request %s%s", where, "");
        return;
    }
}

static void rig__check_starts_after(struct rig__checker *c, const struct rig_scenario_expect *e)
{
    const struct rig_results_request *a = &c->results->requests[e->request];
    const struct rig_results_request *b = &c->results->requests[e->other];
    if (a->first_step > b->finish_step && b->finish_step >= 0) return;
    char text[192];
    snprintf(text, sizeof text, "request %s first ran in step %lld, %s finished in step %lld",
             a->id, (long long)a->first_step, b->id, (long long)b->finish_step);
    rig__fail(c, e, "%s%s (expected it to start after)", text, "");
}

static void rig__check_step(struct rig__checker *c, const struct rig_scenario_expect *e)
{
    char subject[64];
    snprintf(subject, sizeof subject, "step %lld", (long long)e->step);
    if (e->step >= c->results->step_count) {
        char count[32];
        snprintf(count, sizeof count, "%lld", (long long)c->results->step_count);
        rig__fail(c, e, "%s does not exist (the run had %s steps)", subject, count);
        return;
    }
    const struct rig_results_step *s = &c->results->steps[e->step];
    if (e->kind == RIG_EXPECT_STEP_REQUESTS) {
        bool same = s->request_count == e->ids_count;
        for (int32_t k = 0; same && k < e->ids_count; k++)
            same = c->results->step_uids[s->request_offset + k] ==
                   c->scenario->expect_uids[e->ids_offset + k];
        if (same) return;
        char ran[160] = "";
        size_t used = 0;
        for (int32_t k = 0; k < s->request_count && used < sizeof ran; k++) {
            int32_t uid = c->results->step_uids[s->request_offset + k];
            int n = snprintf(ran + used, sizeof ran - used, "%s%s", k ? ", " : "",
                             c->results->requests[uid].id);
            used += n > 0 ? (size_t)n : 0;
        }
        rig__fail(c, e, "%s ran requests [%s], expected the listed ones", subject, ran);
        return;
    }
    const int32_t values[] = {s->phase, s->batch_size, s->tokens, s->padded_size,
                              s->graph_used};
    char full[96];
    snprintf(full, sizeof full, "%s: %s", subject, rig_expect_step_fields[e->field]);
    rig__check_value(c, e, full, values[e->field], false,
                     e->field == RIG_FIELD_PHASE ? rig__phase_names : NULL);
}

int32_t rig_expect_check(const struct rig_scenario *scenario, const struct rig_results *results,
                         const struct rig_metrics *metrics, rig_expect_report_fn report,
                         void *user)
{
    RIG_ASSERT(results->request_count == scenario->request_count);
    struct rig__checker c = {scenario, results, metrics, report, user, 0};
    for (int32_t i = 0; i < scenario->expect_count; i++) {
        const struct rig_scenario_expect *e = &scenario->expects[i];
        switch (e->kind) {
        case RIG_EXPECT_REQUEST: rig__check_request(&c, e); break;
        case RIG_EXPECT_SAME_OUTPUT: rig__check_same_output(&c, e); break;
        case RIG_EXPECT_STARTS_AFTER: rig__check_starts_after(&c, e); break;
        case RIG_EXPECT_STEP:
        case RIG_EXPECT_STEP_REQUESTS: rig__check_step(&c, e); break;
        case RIG_EXPECT_TOTAL:
            rig__check_value(&c, e, rig_expect_total_fields[e->field],
                             (double)rig_expect_total(results, e->field), false, NULL);
            break;
        case RIG_EXPECT_METRIC:
            rig__check_value(&c, e, rig_metric_names[e->field].name,
                             rig_metrics_value(metrics, e->field),
                             rig_metric_names[e->field].is_time, NULL);
            break;
        default: RIG_UNREACHABLE();
        }
    }
    return c.failures;
}
