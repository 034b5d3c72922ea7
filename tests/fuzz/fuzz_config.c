/* fuzz_config.c — libFuzzer harness for the Hugging Face config.json parser
 * (rig_model_config_parse, core/model/config.c).
 *
 * Any bytes must either parse into a config whose sizes are consistent (checked below: the
 * parser promises positive dimensions and a head split that divides) or fail with a message;
 * never crash, leak or read out of bounds (ASan/UBSan). Corpus: tests/fuzz/corpus/config/,
 * seeded from the built-in presets (core/model/presets/) and the golden models' configs.
 */
#include <stdint.h>
#include <string.h>

#include "core/model/model.h"
#include "hal/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rig_model_config config;
    memset(&config, 0x5a, sizeof config);
    struct rig_model_config before = config;
    char error[512];
    enum rig_status status =
        rig_model_config_parse((const char *)data, size, "fuzz", &config, error, sizeof error);
    if (status != RIG_OK) {
        /* The contract: `out` unchanged on error, and a message saying why. */
        RIG_ASSERT(memcmp(&config, &before, sizeof config) == 0);
        RIG_ASSERT(error[0] != '\0');
        return 0;
    }
    RIG_ASSERT(config.vocab_size > 0);
    RIG_ASSERT(config.hidden_size > 0);
    RIG_ASSERT(config.num_layers > 0);
    RIG_ASSERT(config.num_heads > 0);
    RIG_ASSERT(config.num_kv_heads > 0);
    RIG_ASSERT(config.head_dim > 0);
    RIG_ASSERT(config.num_heads % config.num_kv_heads == 0);
    RIG_ASSERT(config.eos_count >= 0 && config.eos_count <= RIG_MODEL_EOS_MAX);
    /* The sizing helpers the engine calls next must not overflow on what parsed. */
    (void)rig_model_kv_bytes_per_slot(&config, 1);
    (void)rig_model_weight_bytes(&config, 1);
    return 0;
}
