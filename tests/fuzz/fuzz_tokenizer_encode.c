/* fuzz_tokenizer_encode.c — libFuzzer harness for encoding and decoding with the tokenizers
 * rig ships test data for (core/text/encode.c, decode.c): Qwen3's real tokenizer.json
 * and the GPT-2, Llama-3, legacy, inverted and splits variants of tests/data/tokenizer/.
 *
 * Input: byte 0 picks the tokenizer and whether the post-processor adds special tokens; the
 * rest is the text. Checked: invalid UTF-8 fails with RIG_E_INVALID and leaves the ids as
 * they were; valid text encodes to ids inside the vocabulary; the incremental detokenizer's
 * pieces concatenate to exactly the full decode (its documented contract). Corpus:
 * tests/fuzz/corpus/tokenizer_encode/, lines of tests/data/tokenizer/corpus.jsonl.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/text/tokenizer.h"
#include "hal/status.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RIG__DATA RIG_SOURCE_DIR "/tests/data/tokenizer"

static const char *const rig__dirs[] = {
    RIG__DATA "/qwen3",           RIG__DATA "/variants/gpt2",     RIG__DATA "/variants/llama3",
    RIG__DATA "/variants/legacy", RIG__DATA "/variants/inverted", RIG__DATA "/variants/splits",
};
#define RIG__TOKENIZERS (sizeof rig__dirs / sizeof rig__dirs[0])

static struct rig_tokenizer *rig__tokenizers[RIG__TOKENIZERS];
static struct rig_tokenizer_work *rig__works[RIG__TOKENIZERS];

static const struct rig_tokenizer *rig__get(size_t index, struct rig_tokenizer_work **work)
{
    if (rig__tokenizers[index] == NULL) {
        char error[512] = "";
        enum rig_status status =
            rig_tokenizer_load(rig__dirs[index], &rig__tokenizers[index], error, sizeof error);
        RIG_ASSERT_MSG(status == RIG_OK, error);
        status = rig_tokenizer_work_create(rig__tokenizers[index], &rig__works[index], error,
                                           sizeof error);
        RIG_ASSERT(status == RIG_OK);
    }
    *work = rig__works[index];
    return rig__tokenizers[index];
}

/* The streamed pieces of `ids` must concatenate to `full`. */
static void rig__check_stream(const struct rig_tokenizer *tok, const int32_t *ids, size_t count,
                              bool skip, const struct rig_tokenizer_text *full)
{
    size_t capacity = rig_tokenizer_stream_piece_max(tok) + 1;
    char *piece = malloc(capacity);
    RIG_ASSERT(piece != NULL);
    struct rig_tokenizer_stream stream;
    rig_tokenizer_stream_init(&stream, tok, skip);
    size_t at = 0;
    for (size_t i = 0; i <= count; i++) {
        size_t len = 0;
        enum rig_status status =
            i < count ? rig_tokenizer_stream_step(&stream, ids[i], piece, capacity, &len, NULL, 0)
                      : rig_tokenizer_stream_finish(&stream, piece, capacity, &len, NULL, 0);
        RIG_ASSERT(status == RIG_OK);
        RIG_ASSERT(at + len <= full->len);
        RIG_ASSERT(len == 0 || memcmp(full->data + at, piece, len) == 0);
        at += len;
    }
    RIG_ASSERT(at == full->len);
    free(piece);
}

/* Loads every tokenizer up front: Qwen3's 11 MB tokenizer.json takes seconds under ASan,
 * which would otherwise count against the -timeout of the first input that picks it. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct rig_tokenizer_work *work = NULL;
    for (size_t i = 0; i < RIG__TOKENIZERS; i++) (void)rig__get(i, &work);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    struct rig_tokenizer_work *work = NULL;
    const struct rig_tokenizer *tok = rig__get(data[0] % RIG__TOKENIZERS, &work);
    bool add_special = (data[0] / RIG__TOKENIZERS) % 2 == 1;
    bool skip_special = (data[0] / RIG__TOKENIZERS / 2) % 2 == 1;
    const char *text = (const char *)data + 1;
    /* One id already there: encoding appends, and on error must leave it alone. */
    const int32_t sentinel = 7;
    struct rig_tokenizer_ids ids = {malloc(4 * sizeof(int32_t)), 1, 4};
    RIG_ASSERT(ids.ids != NULL);
    ids.ids[0] = sentinel;
    char error[512] = "";
    enum rig_status status =
        rig_tokenizer_encode(tok, work, text, size - 1, add_special, &ids, error, sizeof error);
    if (status != RIG_OK) {
        RIG_ASSERT(status == RIG_E_INVALID);
        RIG_ASSERT(error[0] != '\0');
        RIG_ASSERT(ids.count == 1 && ids.ids[0] == sentinel);
        rig_tokenizer_ids_free(&ids);
        return 0;
    }
    int32_t vocab = rig_tokenizer_vocab_size(tok);
    for (size_t i = 0; i < ids.count; i++) RIG_ASSERT(ids.ids[i] >= 0 && ids.ids[i] < vocab);
    struct rig_tokenizer_text full = {0};
    status = rig_tokenizer_decode(tok, ids.ids + 1, ids.count - 1, skip_special, &full, NULL, 0);
    RIG_ASSERT(status == RIG_OK);
    rig__check_stream(tok, ids.ids + 1, ids.count - 1, skip_special, &full);
    rig_tokenizer_text_free(&full);
    rig_tokenizer_ids_free(&ids);
    return 0;
}
