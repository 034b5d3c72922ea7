/* fuzz_tokenizer_config.c — libFuzzer harness for tokenizer_config.json (special tokens and
 * the chat template: core/text/load.c, chat.c), loaded beside a fixed tokenizer.json
 * (the Qwen3-style variant of tests/data/tokenizer/variants/splits).
 *
 * A load either fails with a message or gives a tokenizer whose special ids lie in the
 * vocabulary (or are -1) and whose chat template, when recognised, renders a two-message
 * conversation (ChatML when unknown). Corpus: tests/fuzz/corpus/tokenizer_config/, the
 * Qwen3 and Llama-3 configs of the test data.
 */
#include <stdint.h>
#include <string.h>

#include "core/text/tokenizer.h"
#include "hal/status.h"
#include "tests/fuzz/fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RIG__TOKENIZER RIG_SOURCE_DIR "/tests/data/tokenizer/variants/splits/tokenizer.json"

static void rig__render(const struct rig_tokenizer *tok)
{
    enum rig_chat_template kind = rig_tokenizer_chat_template(tok);
    if (kind == RIG_CHAT_TEMPLATE_NONE || kind == RIG_CHAT_TEMPLATE_UNKNOWN)
        kind = RIG_CHAT_TEMPLATE_CHATML;
    const struct rig_chat_message messages[2] = {
        {.role = "system", .content = "be brief"},
        {.role = "user", .content = "hi \xc3\xa9"},
    };
    const struct rig_chat_options options = {.add_generation_prompt = true};
    struct rig_tokenizer_text text = {0};
    char error[512] = "";
    enum rig_status status =
        rig_tokenizer_chat_render(tok, kind, messages, 2, &options, &text, error, sizeof error);
    RIG_ASSERT_MSG(status == RIG_OK, error);
    RIG_ASSERT(text.len > 0 && strlen(text.data) == text.len);
    rig_tokenizer_text_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *config = rig_fuzz_file("tokenizer_config.json", data, size);
    struct rig_tokenizer *tok = NULL;
    char error[512] = "";
    enum rig_status status =
        rig_tokenizer_load_files(RIG__TOKENIZER, config, &tok, error, sizeof error);
    if (status != RIG_OK) {
        RIG_ASSERT(tok == NULL);
        RIG_ASSERT(error[0] != '\0');
        return 0;
    }
    struct rig_tokenizer_specials specials = rig_tokenizer_specials(tok);
    int32_t vocab = rig_tokenizer_vocab_size(tok);
    RIG_ASSERT(specials.bos_id >= -1 && specials.bos_id < vocab);
    RIG_ASSERT(specials.eos_id >= -1 && specials.eos_id < vocab);
    RIG_ASSERT(specials.pad_id >= -1 && specials.pad_id < vocab);
    rig__render(tok);
    rig_tokenizer_free(tok);
    return 0;
}
