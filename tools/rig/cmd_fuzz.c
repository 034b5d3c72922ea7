/* cmd_fuzz.c — `rig fuzz`: swarm testing of the engine on the simulator (core/harness/swarm/,
 * docs/testing.md).
 *
 * Each seed draws a configuration, a trace and a fault plan, runs them on the timing-only
 * simulator with the invariant checker after every step, drains, checks conservation, and
 * (every --equivalence-every seeds) compares tokens across configurations on the real tiny
 * model. Each seed runs in a forked child unless --isolate off, so an assertion is reported
 * as a failing seed. A failure prints the one command that replays it; --shrink minimises the
 * trace first and --scenario-out writes it as a scenario YAML. Exit status: 0 every seed
 * passed, 1 a seed failed, 2 a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/harness/swarm/plant.h"
#include "core/harness/swarm/swarm.h"
#include "tools/rig/args.h"
#include "tools/rig/commands.h"

struct rig__fuzz_args {
    uint64_t first;
    int64_t seeds;
    double minutes;           /* > 0: run until this much wall time has passed */
    bool faults;
    int64_t equivalence_every; /* 0: never */
    bool isolate;
    bool shrink;
    bool quiet;
    const char *scenario_out;
};

static void rig__fuzz_usage(FILE *out)
{
    fprintf(out,
            "usage: rig fuzz [--seeds N | --seed S] [--first S] [--minutes M] [--faults on|off]\n"
            "                [--equivalence-every K] [--isolate on|off] [--shrink]\n"
            "                [--scenario-out FILE] [--quiet]\n"
            "  --seeds N              seeds first .. first+N-1 (default 100)\n"
            "  --seed S               just seed S (a replay)\n"
            "  --minutes M            keep drawing seeds for M minutes (wall clock)\n"
            "  --faults on|off        fault plan and aborts (default on)\n"
            "  --equivalence-every K  token equivalence on the real model every K seeds\n"
            "                         (default 10; 1 with --seed; 0 = never)\n"
            "  --isolate on|off       run each seed in a child process (default on)\n"
            "  --shrink               minimise a failing trace before reporting it\n"
            "  --scenario-out FILE    write the (first) failing case, or --seed's case, as a\n"
            "                         scenario YAML for `rig run`\n"
            "  RIG_PLANT=MASK in the environment switches on planted bugs\n"
            "                         (core/engine/debug.h)\n");
}

static bool rig__on_off(const char *value, bool *out)
{
    if (value != NULL && strcmp(value, "on") == 0) *out = true;
    else if (value != NULL && strcmp(value, "off") == 0) *out = false;
    else return false;
    return true;
}

/* A flag without a value; false when `arg` is none. */
static bool rig__fuzz_flag(const char *arg, struct rig__fuzz_args *a)
{
    if (strcmp(arg, "--shrink") == 0) a->shrink = true;
    else if (strcmp(arg, "--quiet") == 0) a->quiet = true;
    else return false;
    return true;
}

/* A numeric option's value into `a`; false (with the reason in msg) when it is malformed. */
static bool rig__fuzz_number(const char *arg, const char *value, struct rig__fuzz_args *a,
                             bool *one_seed, char *msg, size_t msg_len)
{
    enum rig_status s = RIG_E_PARSE;
    if (value == NULL) {
        snprintf(msg, msg_len, "needs a value");
    } else if (strcmp(arg, "--seeds") == 0) {
        s = rig_args_i64(value, 1, INT64_MAX, &a->seeds, msg, msg_len);
    } else if (strcmp(arg, "--seed") == 0 || strcmp(arg, "--first") == 0) {
        s = rig_args_u64(value, 0, UINT64_MAX, &a->first, msg, msg_len);
        if (strcmp(arg, "--seed") == 0) *one_seed = true;
    } else if (strcmp(arg, "--equivalence-every") == 0) {
        s = rig_args_i64(value, 0, INT64_MAX, &a->equivalence_every, msg, msg_len);
    } else if (strcmp(arg, "--minutes") == 0) {
        s = rig_args_f64(value, 0.0, 1e7, &a->minutes, msg, msg_len);
    }
    return s == RIG_OK;
}

/* An option with its value at argv[*i + 1] (consumed); false (with the reason in msg) on a
 * usage error. */
static bool rig__fuzz_option(int argc, char **argv, int *i, struct rig__fuzz_args *a,
                             bool *one_seed, char *msg, size_t msg_len)
{
    static const char *const numeric[] = {"--seeds", "--seed", "--first",
                                          "--equivalence-every", "--minutes"};
    const char *arg = argv[*i];
    if (rig__fuzz_flag(arg, a)) return true;
    const char *value = *i + 1 < argc ? argv[++*i] : NULL;
    for (size_t k = 0; k < RIG_ARRAY_LEN(numeric); k++)
        if (strcmp(arg, numeric[k]) == 0)
            return rig__fuzz_number(arg, value, a, one_seed, msg, msg_len);
    if (strcmp(arg, "--faults") == 0) return rig__on_off(value, &a->faults);
    if (strcmp(arg, "--isolate") == 0) return rig__on_off(value, &a->isolate);
    if (strcmp(arg, "--scenario-out") == 0 && value != NULL) {
        a->scenario_out = value;
        return true;
    }
    return false;
}

/* Returns -1 to go on, else the exit status. */
static int rig__fuzz_parse(int argc, char **argv, struct rig__fuzz_args *a)
{
    *a = (struct rig__fuzz_args){.first = 1, .seeds = 100, .faults = true,
                                 .equivalence_every = -1, .isolate = true};
    bool one_seed = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            rig__fuzz_usage(stdout);
            return 0;
        }
        int at = i;
        char msg[160] = "";
        if (!rig__fuzz_option(argc, argv, &i, a, &one_seed, msg, sizeof msg)) {
            fprintf(stderr, "rig fuzz: bad option or value: %s%s%s%s%s\n", argv[at],
                    i > at ? " " : "", i > at ? argv[i] : "", msg[0] ? ": " : "", msg);
            rig__fuzz_usage(stderr);
            return 2;
        }
    }
    /* Seeds first .. first + seeds − 1 must not wrap around 2^64. */
    if (!one_seed && a->minutes <= 0 && (uint64_t)(a->seeds - 1) > UINT64_MAX - a->first) {
        fprintf(stderr, "rig fuzz: --first %llu with --seeds %lld runs past seed %llu\n",
                (unsigned long long)a->first, (long long)a->seeds,
                (unsigned long long)UINT64_MAX);
        return 2;
    }
    if (one_seed) a->seeds = 1;
    if (a->equivalence_every < 0) a->equivalence_every = one_seed ? 1 : 10;
    const char *plant = getenv("RIG_PLANT");
    if (plant != NULL) rig_debug_plant = (uint32_t)strtoul(plant, NULL, 0);
    return -1;
}

static double rig__wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Reports (and maybe shrinks and writes) a failing seed. */
static void rig__fuzz_failure(const struct rig__fuzz_args *a, struct rig_swarm_case *c,
                              bool equivalence, const struct rig_swarm_result *r,
                              bool *written)
{
    char line[256];
    rig_swarm_describe(c, line, sizeof line);
    printf("seed %llu: FAIL %s at step %lld: %s\n  config: %s\n",
           (unsigned long long)c->seed, rig_swarm_verdict_name(r->verdict),
           (long long)r->step_failed, r->message, line);
    printf("  replay: rig fuzz --seed %llu --faults %s%s\n", (unsigned long long)c->seed,
           c->faults ? "on" : "off", rig_debug_plant ? " (with RIG_PLANT set)" : "");
    int32_t stage = r->stage;
    if (a->shrink) {
        int32_t before = c->request_count;
        int32_t runs = rig_swarm_shrink(c, r->verdict, equivalence, a->isolate, 200);
        struct rig_swarm_result again; /* which run fails now */
        rig_swarm_check(c, equivalence, a->isolate, &again);
        stage = again.stage;
        printf("  shrunk: %d -> %d requests in %d runs\n", before, c->request_count, runs + 1);
    }
    if (a->scenario_out != NULL && !*written) {
        /* The run that failed: an equivalence run's variant is a case of its own. */
        struct rig_swarm_case *failing = malloc(sizeof *failing);
        enum rig_status s = RIG_E_NO_MEMORY;
        if (failing != NULL) {
            rig_swarm_stage_case(c, stage, failing);
            s = rig_swarm_write_scenario(failing, a->scenario_out);
            free(failing);
        }
        char where[96];
        rig_swarm_stage_name(stage, where, sizeof where);
        printf("  scenario: %s (%s)%s\n", a->scenario_out, where,
               s == RIG_OK ? "" : " (cannot write)");
        *written = true;
    }
    fflush(stdout);
}

int rig_cmd_fuzz(int argc, char **argv)
{
    struct rig__fuzz_args a;
    int status = rig__fuzz_parse(argc, argv, &a);
    if (status >= 0) return status;
    struct rig_swarm_case *c = malloc(sizeof *c);
    if (c == NULL) return 1;
    double start = rig__wall_s();
    int64_t ran = 0, failed = 0, compared = 0;
    int64_t verdicts[RIG_SWARM_VERDICT_COUNT] = {0};
    bool written = false;
    for (int64_t k = 0; a.minutes > 0 || k < a.seeds; k++) {
        if (a.minutes > 0 && rig__wall_s() - start >= a.minutes * 60.0) break;
        rig_swarm_draw(a.first + (uint64_t)k, a.faults, c);
        bool equivalence = a.equivalence_every > 0 && k % a.equivalence_every == 0;
        struct rig_swarm_result r;
        rig_swarm_check(c, equivalence, a.isolate, &r);
        ran++;
        compared += equivalence;
        verdicts[r.verdict]++;
        if (r.verdict != RIG_SWARM_PASS) {
            failed++;
            rig__fuzz_failure(&a, c, equivalence, &r, &written);
        } else if (!a.quiet && a.seeds == 1 && a.minutes <= 0) {
            char line[256];
            rig_swarm_describe(c, line, sizeof line);
            printf("seed %llu: pass (%lld steps; %d finished, %d aborted, %d rejected)\n"
                   "  config: %s\n", (unsigned long long)c->seed, (long long)r.steps,
                   r.finished, r.aborted, r.rejected, line);
        }
        if (!a.quiet && ran % 100 == 0)
            fprintf(stderr, "rig fuzz: %lld seeds, %lld failed\n", (long long)ran,
                    (long long)failed);
    }
    if (a.scenario_out != NULL && !written && ran == 1)
        printf("scenario: %s%s\n", a.scenario_out,
               rig_swarm_write_scenario(c, a.scenario_out) == RIG_OK ? "" : " (cannot write)");
    printf("rig fuzz: %lld seeds from %llu (faults %s), %lld with equivalence, %lld failed, "
           "%.1f s\n", (long long)ran, (unsigned long long)a.first, a.faults ? "on" : "off",
           (long long)compared, (long long)failed, rig__wall_s() - start);
    for (int32_t v = 1; v < RIG_SWARM_VERDICT_COUNT; v++)
        if (verdicts[v] > 0)
            printf("  %-13s %lld\n", rig_swarm_verdict_name(v), (long long)verdicts[v]);
    free(c);
    return failed > 0 ? 1 : 0;
}
