/* main.c — the `rig` command: dispatches to a subcommand (tools/rig/cmd_*.c). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/version.h"
#include "hal/hal.h"
#include "hal/startup.h"
#include "tools/rig/commands.h"

static const struct rig_command rig__commands[] = {
    {"selftest", rig_cmd_selftest, "run every op once on the simulator (TP=2) and check it"},
    {"generate", rig_cmd_generate, "token ids in, generated ids out, through the scheduler"},
    {"run", rig_cmd_run, "replay a scenario (YAML), print metrics, write HDF5 results"},
    {"fleet", rig_cmd_fleet, "a scenario on N engine replicas behind a router (simulator)"},
    {"bench", rig_cmd_bench, "performance against measured hardware floors (HDF5 + table)"},
    {"tokenize", rig_cmd_tokenize, "text (or a chat) to token ids with a tokenizer.json"},
    {"detokenize", rig_cmd_detokenize, "token ids to text, whole or streamed"},
    {"profile", rig_cmd_profile, "sweep every op over the models' shapes: the simulator's op table"},
    {"compare", rig_cmd_compare, "a prediction against a measured run: step and latency errors"},
    {"serve", rig_cmd_serve, "the OpenAI-compatible HTTP server (chat, completions, /generate)"},
    {"shell", rig_cmd_shell, "interactive chat: text in, text streamed out (/reset, /exit)"},
    {"fuzz", rig_cmd_fuzz, "swarm-test the engine: random configs, traces and faults per seed"},
};

static void rig__usage(FILE *out)
{
    fprintf(out, "usage: rig <command> [options]\n       rig --version\n\ncommands:\n");
    for (size_t i = 0; i < RIG_ARRAY_LEN(rig__commands); i++)
        fprintf(out, "  %-12s %s\n", rig__commands[i].name, rig__commands[i].summary);
    fprintf(out, "\n'rig <command> --help' describes a command.\n");
}

int main(int argc, char **argv)
{
    /* A write past the file size limit (ulimit -f) then fails with EFBIG, which the writers
     * report and clean up after, instead of the signal killing rig mid-file. */
    signal(SIGXFSZ, SIG_IGN);
    rig_startup_mark("main (%s)", argc > 1 ? argv[1] : "");
    rig_backends_register();
    if (argc < 2) {
        rig__usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("rig %s (commit %s)\nbackends: %s\n", rig_version_string, rig_git_commit,
               rig_hal_backends());
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        rig__usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < RIG_ARRAY_LEN(rig__commands); i++) {
        if (strcmp(argv[1], rig__commands[i].name) == 0)
            return rig__commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "rig: unknown command '%s'\n\n", argv[1]);
    rig__usage(stderr);
    return 2;
}
