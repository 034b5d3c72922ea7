/* fuzz_support.h — helpers shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c).
 *
 * libFuzzer hands a harness bytes that are not NUL-terminated; parsers that want a C string
 * or a file (mmap) get one here. The temporary file is created once per process and rewritten
 * for every input (no allocation per input beyond the parser's own), and removed at exit.
 * Threads: libFuzzer calls a harness from one thread.
 */
#ifndef RIG_FUZZ_SUPPORT_H
#define RIG_FUZZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* A NUL-terminated heap copy of `data` (`size` bytes); aborts when out of memory. */
char *rig_fuzz_cstring(const uint8_t *data, size_t size);

/* Writes `data` to this process's scratch file, named `name` inside a private temporary
 * directory (created on the first call), and returns its path (valid until exit). */
const char *rig_fuzz_file(const char *name, const uint8_t *data, size_t size);

struct rig_scenario;

/* Asserts the loader's documented invariants of a loaded scenario (core/harness/scenario/
 * scenario.h): requests sorted by arrival with uid = index, prompts inside the token array
 * with ids in [0, token_id_max], input_len and max_tokens >= 1, expectation uids valid. */
void rig_fuzz_check_scenario(const struct rig_scenario *scenario);

/* Loads scenario YAML `text` (as "fuzz.yaml"): either it fails with a message and a zeroed
 * result, or the scenario keeps the invariants above with at most `max_requests` requests;
 * then it is freed. */
void rig_fuzz_load_scenario(const char *text, int32_t max_requests);

#endif /* RIG_FUZZ_SUPPORT_H */
