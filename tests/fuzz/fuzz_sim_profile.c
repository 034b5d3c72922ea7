/* fuzz_sim_profile.c — libFuzzer harness for the simulator's device-profile YAML parser
 * (rig_sim_profile_parse, sim/profile.c).
 *
 * Any text must either parse into a profile whose numbers the cost model can divide by
 * (positive memory, peaks and bandwidths, efficiencies in (0, 1], no negative latency) or fail
 * with a "file:line:col:" message and `out` unchanged; never crash, hang or read out of
 * bounds. Corpus: tests/fuzz/corpus/sim_profile/, the built-in profiles.
 */
#include <stdint.h>
#include <string.h>

#include "hal/status.h"
#include "sim/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rig_sim_profile profile;
    memset(&profile, 0x5a, sizeof profile);
    struct rig_sim_profile before = profile;
    char error[RIG_SIM_PROFILE_ERROR_MAX];
    enum rig_status status = rig_sim_profile_parse("fuzz.yaml", (const char *)data, size,
                                                   &profile, error, sizeof error);
    if (status != RIG_OK) {
        RIG_ASSERT(memcmp(&profile, &before, sizeof profile) == 0);
        RIG_ASSERT(error[0] != '\0');
        return 0;
    }
    RIG_ASSERT(profile.memory_bytes > 0);
    RIG_ASSERT(profile.peak_bf16_flops > 0 && profile.hbm_bytes_per_s > 0);
    for (int32_t c = 0; c < RIG_SIM_OP_CLASS_COUNT; c++)
        RIG_ASSERT(profile.efficiency[c] > 0 && profile.efficiency[c] <= 1);
    RIG_ASSERT(profile.h2d_bytes_per_s > 0 && profile.d2h_bytes_per_s > 0);
    RIG_ASSERT(profile.kernel_launch_host_ns >= 0 && profile.min_kernel_ns >= 0);
    RIG_ASSERT(memchr(profile.name, '\0', sizeof profile.name) != NULL);
    return 0;
}
