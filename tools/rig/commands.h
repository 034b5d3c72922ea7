/* commands.h — the subcommands of the `rig` executable, one file each (tools/rig/cmd_*.c).
 * Each takes the arguments after its name (argv[0] is the subcommand) and returns the process
 * exit status: 0 success, 1 a failed run or expectation, 2 a usage error. */
#ifndef RIG_COMMANDS_H
#define RIG_COMMANDS_H

#include <stddef.h>

#include "core/engine.h"
#include "core/scenario/scenario.h"

struct rig_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

int rig_cmd_selftest(int argc, char **argv);
int rig_cmd_run(int argc, char **argv);
int rig_cmd_bench(int argc, char **argv);
int rig_cmd_generate(int argc, char **argv);
int rig_cmd_tokenize(int argc, char **argv);
int rig_cmd_detokenize(int argc, char **argv);
int rig_cmd_fuzz(int argc, char **argv);

/* Registers every backend compiled into this binary with the HAL (tools/rig/backends.c).
 * Idempotent; call before rig_hal_open. */
void rig_backends_register(void);
/* Applies a scenario's `sim.fault` to the engine's rank (a no-op for kind "none" or "").
 * RIG_E_INVALID for a rank the engine lacks, RIG_E_HANDLE when the backend is not the
 * simulator; the message in `error`. */
enum rig_status rig_backends_apply_fault(const struct rig_scenario_fault *fault,
                                         struct rig_engine *engine, char *error,
                                         size_t error_len);

#endif /* RIG_COMMANDS_H */
