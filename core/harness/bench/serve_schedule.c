/* serve_schedule.c — options, backend names and the sending schedule of `rig bench serve`
 * (serve.h).
 *
 * The schedule is bench_serving's: the first request at 0, then gaps drawn from
 * gamma(shape = burstiness, scale = 1 / (rate x burstiness)) — mean 1/rate whatever the
 * shape; burstiness 1 is an exponential gap (a Poisson process), below 1 burstier, above 1
 * more even. bench_serving draws from numpy's global generator; here every gap is a pure
 * function of (seed, request index) through Philox, so a seed names one schedule on every
 * machine, and a longer run shares its first gaps with a shorter one.
 *
 * Gamma by Marsaglia and Tsang ("A simple method for generating gamma variables", 2000):
 * shape >= 1 by squeeze-and-reject on a cubed normal (acceptance above 95 %); shape < 1 as
 * gamma(shape + 1) x u^(1/shape). Each attempt takes fresh Philox counters; the attempts are
 * bounded (a rejection run of 64 has probability below 1e-80).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/bench/serve.h"
#include "hal/philox.h"

#define RIG__STREAM_GAPS  0x47415053u /* "GAPS" */
#define RIG__ATTEMPTS_MAX 64
#define RIG__TWO_PI       6.283185307179586

struct rig__backend_name {
    const char *name;
    enum rig_serve_api api;
};

static const struct rig__backend_name rig__backends[] = {
    {"rig", RIG_SERVE_API_GENERATE},           {"sglang", RIG_SERVE_API_GENERATE},
    {"sglang-native", RIG_SERVE_API_GENERATE}, {"openai", RIG_SERVE_API_COMPLETIONS},
    {"sglang-oai", RIG_SERVE_API_COMPLETIONS}, {"vllm", RIG_SERVE_API_COMPLETIONS},
    {"lmdeploy", RIG_SERVE_API_COMPLETIONS},   {"openai-chat", RIG_SERVE_API_CHAT},
    {"sglang-oai-chat", RIG_SERVE_API_CHAT},   {"vllm-chat", RIG_SERVE_API_CHAT},
    {"lmdeploy-chat", RIG_SERVE_API_CHAT},
};

int32_t rig_serve_api_parse(const char *backend)
{
    for (size_t i = 0; i < RIG_ARRAY_LEN(rig__backends); i++)
        if (strcmp(rig__backends[i].name, backend) == 0) return (int32_t)rig__backends[i].api;
    return -1;
}

const char *rig_serve_api_path(enum rig_serve_api api)
{
    switch (api) {
    case RIG_SERVE_API_GENERATE: return "/generate";
    case RIG_SERVE_API_COMPLETIONS: return "/v1/completions";
    case RIG_SERVE_API_CHAT: return "/v1/chat/completions";
    }
    RIG_UNREACHABLE();
}

void rig_serve_options_default(struct rig_serve_options *o)
{
    memset(o, 0, sizeof *o);
    o->base_url = "http://127.0.0.1:1919";
    o->backend = "rig";
    o->dataset_name = "random";
    o->random_input_len = 1024;
    o->random_output_len = 1024;
    o->random_range_ratio = 0.0;
    o->random_vocab_size = 10000;
    o->request_rate = INFINITY;
    o->burstiness = 1.0;
    o->seed = 1;
    o->ignore_eos = true;
    o->stream = true;
    o->stream_usage = true;
    o->warmup_requests = 1;
    o->request_timeout_s = 600.0;
    o->goodput_ttft_ms = o->goodput_tpot_ms = o->goodput_e2e_ms = -1.0;
}

enum rig_status rig_serve_goodput_parse(struct rig_serve_options *o, const char *text, char *error,
                                        size_t error_len)
{
    const char *colon = strchr(text, ':');
    char *end = NULL;
    double ms = colon != NULL ? strtod(colon + 1, &end) : -1.0;
    if (colon == NULL || end == colon + 1 || *end != '\0' || !(ms >= 0.0) || isinf(ms)) {
        snprintf(error, error_len, "--goodput takes NAME:MS with a non-negative MS, not '%s'",
                 text);
        return RIG_E_INVALID;
    }
    size_t name_len = (size_t)(colon - text);
    if (name_len == 4 && strncmp(text, "ttft", 4) == 0)
        o->goodput_ttft_ms = ms;
    else if (name_len == 4 && strncmp(text, "tpot", 4) == 0)
        o->goodput_tpot_ms = ms;
    else if ((name_len == 3 && strncmp(text, "e2e", 3) == 0) ||
             (name_len == 4 && strncmp(text, "e2el", 4) == 0))
        o->goodput_e2e_ms = ms;
    else {
        snprintf(error, error_len, "--goodput: unknown objective '%.*s' (ttft, tpot, e2e)",
                 (int)name_len, text);
        return RIG_E_INVALID;
    }
    return RIG_OK;
}

/* A double uniform in (0, 1) from two Philox words (53 bits). */
static double rig__unit(uint32_t high, uint32_t low)
{
    uint64_t bits = ((uint64_t)(high >> 5) << 26) | (uint64_t)(low >> 6);
    return ((double)bits + 0.5) / 9007199254740992.0; /* 2^53 */
}

/* gamma(shape, 1) for shape >= 1, attempts keyed by (index, attempt). */
static double rig__gamma_unit(double shape, uint64_t seed, uint32_t index)
{
    RIG_ASSERT(shape >= 1.0);
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (uint32_t attempt = 0; attempt < RIG__ATTEMPTS_MAX; attempt++) {
        struct rig_philox_out r = rig_philox4x32(seed, index, attempt, RIG__STREAM_GAPS, 1);
        double u1 = rig__unit(r.v[0], r.v[1]), u2 = rig__unit(r.v[2], r.v[3]);
        double x = sqrt(-2.0 * log(u1)) * cos(RIG__TWO_PI * u2); /* Box-Muller */
        double v = 1.0 + c * x;
        if (v <= 0.0) continue;
        v = v * v * v;
        r = rig_philox4x32(seed, index, attempt, RIG__STREAM_GAPS, 2);
        double u = rig__unit(r.v[0], r.v[1]);
        if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
        if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
    }
    return d; /* unreachable in practice: the mode, never a hang */
}

double rig_serve_gap_s(double rate, double burstiness, uint64_t seed, uint32_t index)
{
    RIG_ASSERT(rate > 0.0);
    RIG_ASSERT(burstiness > 0.0);
    if (isinf(rate)) return 0.0;
    double scale = 1.0 / (rate * burstiness);
    struct rig_philox_out r = rig_philox4x32(seed, index, 0, RIG__STREAM_GAPS, 0);
    double u = rig__unit(r.v[0], r.v[1]);
    if (burstiness == 1.0) return -log(u) * scale; /* exponential: exactly Poisson */
    if (burstiness >= 1.0) return rig__gamma_unit(burstiness, seed, index) * scale;
    /* shape < 1: gamma(shape + 1) x u^(1 / shape) */
    return rig__gamma_unit(burstiness + 1.0, seed, index) * pow(u, 1.0 / burstiness) * scale;
}

void rig_serve_schedule(int32_t count, double rate, double burstiness, uint64_t seed,
                        int64_t *arrival_ns)
{
    RIG_ASSERT(count >= 0);
    double t = 0.0;
    for (int32_t i = 0; i < count; i++) {
        arrival_ns[i] = (int64_t)llround(t * 1e9);
        t += rig_serve_gap_s(rate, burstiness, seed, (uint32_t)i);
    }
}
