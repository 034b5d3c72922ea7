/* cmd_fleet.c — `rig fleet SCENARIO`: the scenario's trace on N replicas behind a router
 * (core/harness/fleet/fleet.h), on the simulator: one line per replica (requests, cache hit
 * rate, load, busy time) and the fleet's TTFT p50/p99. Exit status: 0 the run finished with
 * every replica's invariants intact, 1 a run error or a broken invariant, 2 a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/harness/fleet/fleet.h"
#include "tools/rig/args.h"
#include "tools/rig/commands.h"

static int rig__fleet_usage(FILE *out, int status)
{
    fprintf(out,
            "usage: rig fleet SCENARIO.yaml [--replicas N] [--tp T] [--router R] [--set K=V]\n\n"
            "Runs the scenario's requests on N engine replicas (each of T ranks) behind a\n"
            "router on the simulator's clock (docs/scenarios.md, \"Fleets\").\n\n"
            "  --replicas N   1..%d (default: the scenario's cluster.replicas, else 1)\n"
            "  --tp T         ranks per replica (default: cluster.tp, else engine.tp_size)\n"
            "  --router R     round_robin | least_load | cache_aware (default: cluster.router,\n"
            "                 else round_robin)\n"
            "  --set KEY=VAL  override a scenario key (repeatable)\n",
            RIG_FLEET_REPLICAS_MAX);
    return status;
}

static void rig__fleet_print(const struct rig_fleet_results *r)
{
    printf("%-8s %9s %12s %12s %8s %8s %10s\n", "replica", "requests", "input tok",
           "cached tok", "hit %", "peak", "busy s");
    for (int32_t i = 0; i < r->config.replicas; i++) {
        const struct rig_results_replica *p = &r->replicas[i];
        double hit = p->input_tokens > 0 ? 100.0 * (double)p->cached_tokens / (double)p->input_tokens
                                         : 0.0;
        printf("%-8d %9lld %12lld %12lld %8.1f %8d %10.3f\n", i, (long long)p->requests,
               (long long)p->input_tokens, (long long)p->cached_tokens, hit, p->peak_load,
               (double)p->busy_ns * 1e-9);
    }
    printf("router %s, %d replicas: TTFT p50 %.2f ms, p99 %.2f ms; last finish %.3f s\n",
           rig_fleet_router_name(r->config.router), r->config.replicas,
           1e3 * rig_fleet_ttft_quantile(r, 0.5), 1e3 * rig_fleet_ttft_quantile(r, 0.99),
           (double)r->end_ns * 1e-9);
}

static int rig__fleet_main(const struct rig_scenario *s, const struct rig_fleet_config *c)
{
    struct rig_fleet_results results;
    char error[512] = "";
    enum rig_status status = rig_fleet_run(s, c, &results, error, sizeof error);
    int exit_status = 0;
    if (status != RIG_OK) {
        fprintf(stderr, "rig fleet: %s: %s\n", s->path, error);
        exit_status = 1;
    } else {
        rig__fleet_print(&results);
        for (int32_t i = 0; i < c->replicas; i++) {
            if (results.replicas[i].invariant_violations == 0 &&
                results.replicas[i].pages_leaked == 0)
                continue;
            printf("FAILED replica %d: %d invariant violations, %lld pages leaked\n", i,
                   results.replicas[i].invariant_violations,
                   (long long)results.replicas[i].pages_leaked);
            exit_status = 1;
        }
    }
    rig_fleet_results_free(&results);
    return exit_status;
}

/* The scenario's `cluster:` (or the defaults), then the flags that were given (>= 0). */
static void rig__fleet_merge(const struct rig_scenario *s, const struct rig_fleet_config *flags,
                             struct rig_fleet_config *config)
{
    rig_fleet_config_of_scenario(s, config);
    if (flags->replicas >= 0) config->replicas = flags->replicas;
    if (flags->tp >= 0) config->tp = flags->tp;
    if ((int)flags->router >= 0) config->router = flags->router;
}

int rig_cmd_fleet(int argc, char **argv)
{
    struct rig_fleet_config config;
    rig_fleet_config_default(&config);
    config.replicas = config.tp = -1;
    config.router = (enum rig_fleet_router)-1;
    const char *path = NULL, *sets[RIG_SCENARIO_SETS_MAX];
    int32_t set_count = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return rig__fleet_usage(stdout, 0);
        if (arg[0] != '-') {
            path = arg;
            continue;
        }
        if (v == NULL) return rig__fleet_usage(stderr, 2);
        i++;
        if (strcmp(arg, "--replicas") == 0) {
            if (!rig_args_flag_i32("fleet", arg, v, 1, RIG_FLEET_REPLICAS_MAX, &config.replicas))
                return 2;
        } else if (strcmp(arg, "--tp") == 0) {
            if (!rig_args_flag_i32("fleet", arg, v, 1, 8, &config.tp)) return 2;
        } else if (strcmp(arg, "--router") == 0) {
            if (rig_fleet_router_parse(v, &config.router) != RIG_OK) return rig__fleet_usage(stderr, 2);
        } else if (strcmp(arg, "--set") == 0 && set_count < RIG_SCENARIO_SETS_MAX) {
            sets[set_count++] = v;
        } else {
            return rig__fleet_usage(stderr, 2);
        }
    }
    if (path == NULL) return rig__fleet_usage(stderr, 2);
    struct rig_scenario scenario;
    char error[RIG_SCENARIO_ERROR_MAX];
    if (rig_scenario_load(path, sets, set_count, &scenario, error, sizeof error) != RIG_OK) {
        fprintf(stderr, "rig fleet: %s\n", error);
        return 2;
    }
    rig_backends_register();
    struct rig_fleet_config merged;
    rig__fleet_merge(&scenario, &config, &merged);
    int status = rig__fleet_main(&scenario, &merged);
    rig_scenario_free(&scenario);
    return status;
}
