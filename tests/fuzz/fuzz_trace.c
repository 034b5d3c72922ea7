/* fuzz_trace.c — libFuzzer harness for JSONL request traces (the `trace` workload of a
 * scenario, core/harness/scenario/).
 *
 * The input is the trace file; a fixed scenario replays it (tiny model, at most 16 requests).
 * Any bytes must either load into a scenario that keeps the loader's invariants
 * (rig_fuzz_check_scenario) or fail with a "file:line: message" naming the trace and a zeroed
 * result; never crash, hang, leak or overflow (ASan/UBSan).
 * Corpus: tests/fuzz/corpus/trace/, lines of scenarios/traces/bailian-sample.jsonl and their
 * edge cases (missing fields, bad types, huge or negative numbers, blank lines, no newline).
 */
#include <stdint.h>
#include <stdio.h>

#include "hal/status.h"
#include "tests/fuzz/fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = rig_fuzz_file("trace.jsonl", data, size);
    char text[512];
    int n = snprintf(text, sizeof text,
                     "name: fuzz-trace\nmodel: {preset: tiny}\n"
                     "workloads:\n  - {kind: trace, path: '%s', limit: 16, time_scale: 0.5}\n",
                     path);
    RIG_ASSERT(n > 0 && (size_t)n < sizeof text);
    rig_fuzz_load_scenario(text, 16);
    return 0;
}
