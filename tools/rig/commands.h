/* commands.h — the subcommands of the `rig` executable, one file each (tools/rig/cmd_*.c).
 * Each takes the arguments after its name (argv[0] is the subcommand) and returns the process
 * exit status: 0 success, 1 a failed run or expectation, 2 a usage error. */
#ifndef RIG_COMMANDS_H
#define RIG_COMMANDS_H

#include "hal/backends.h" /* rig_backends_register */

struct rig_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

int rig_cmd_selftest(int argc, char **argv);
int rig_cmd_run(int argc, char **argv);
int rig_cmd_fleet(int argc, char **argv);
int rig_cmd_bench(int argc, char **argv);
/* `rig bench serve` (tools/rig/cmd_bench_serve.c): argv[0] is "serve". */
int rig_cmd_bench_serve(int argc, char **argv);
int rig_cmd_generate(int argc, char **argv);
int rig_cmd_tokenize(int argc, char **argv);
int rig_cmd_detokenize(int argc, char **argv);
int rig_cmd_fuzz(int argc, char **argv);
int rig_cmd_compare(int argc, char **argv);
int rig_cmd_profile(int argc, char **argv);
int rig_cmd_serve(int argc, char **argv);
int rig_cmd_shell(int argc, char **argv);

#endif /* RIG_COMMANDS_H */
