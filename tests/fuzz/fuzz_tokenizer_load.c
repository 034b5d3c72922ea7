/* fuzz_tokenizer_load.c — libFuzzer harness for loading a Hugging Face tokenizer.json
 * (rig_tokenizer_load_files, core/text/load.c) and encoding with what loaded.
 *
 * The input is written to a file and loaded. A load either fails with a message or gives a
 * tokenizer that must encode a fixed mixed-script text (and decode its ids) without crashing,
 * every id inside the vocabulary. Corpus: tests/fuzz/corpus/tokenizer_load/, the small variant
 * tokenizers of tests/data/tokenizer/variants/ cut down to a few hundred tokens.
 */
#include <stdint.h>
#include <string.h>

#include "core/text/tokenizer.h"
#include "hal/status.h"
#include "tests/fuzz/fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char rig__text[] = "Hello, world! It's 2024 \xe2\x80\x94 caf\xc3\xa9 "
                                "\xe4\xbd\xa0\xe5\xa5\xbd <|endoftext|>  \n\t x";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = rig_fuzz_file("tokenizer.json", data, size);
    struct rig_tokenizer *tok = NULL;
    char error[512] = "";
    enum rig_status status = rig_tokenizer_load_files(path, NULL, &tok, error, sizeof error);
    if (status != RIG_OK) {
        RIG_ASSERT(tok == NULL);
        RIG_ASSERT(error[0] != '\0');
        return 0;
    }
    struct rig_tokenizer_ids ids = {0};
    status = rig_tokenizer_encode(tok, NULL, rig__text, sizeof rig__text - 1, true, &ids, error,
                                  sizeof error);
    RIG_ASSERT_MSG(status == RIG_OK, error);
    int32_t vocab = rig_tokenizer_vocab_size(tok);
    for (size_t i = 0; i < ids.count; i++) RIG_ASSERT(ids.ids[i] >= 0 && ids.ids[i] < vocab);
    struct rig_tokenizer_text text = {0};
    status = rig_tokenizer_decode(tok, ids.ids, ids.count, false, &text, NULL, 0);
    RIG_ASSERT(status == RIG_OK);
    rig_tokenizer_text_free(&text);
    rig_tokenizer_ids_free(&ids);
    rig_tokenizer_free(tok);
    return 0;
}
