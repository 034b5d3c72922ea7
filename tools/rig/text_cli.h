/* text_cli.h — text in and text out for the command line (`rig generate --prompt`, `rig
 * shell`), over core/text: a prompt rendered with the model's chat template and encoded, and
 * the generated ids streamed to a terminal through the incremental detokenizer (never a split
 * UTF-8 character; the pieces concatenate to exactly rig_tokenizer_decode of the ids, the text
 * `rig detokenize` prints).
 *
 * Ownership: a struct rig_cli_stream owns its piece buffer (rig_cli_stream_begin allocates it,
 * rig_cli_stream_end frees it). Threads: the caller's (observer callbacks run on the driver's
 * thread, which is the command's). Errors print one line naming the command and return false.
 */
#ifndef RIG_TEXT_CLI_H
#define RIG_TEXT_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/text/tokenizer.h"

/* Loads the tokenizer of `dir`; NULL (after a message naming `who`) when it cannot. */
struct rig_tokenizer *rig_cli_tokenizer_load(const char *who, const char *dir);

/* Appends to `ids` the prompt of `messages` (`count` >= 1): with `chat`, the model's chat
 * template (ChatML when it has none it knows) with the assistant turn opened, as `rig tokenize
 * --chat` renders it; without, the one message's content encoded as `rig tokenize` does. */
bool rig_cli_prompt_encode(const char *who, const struct rig_tokenizer *tok,
                           const struct rig_chat_message *messages, size_t count, bool chat,
                           bool enable_thinking, struct rig_tokenizer_ids *ids);

/* Streams one request's ids as text to `out`, flushed after every piece. */
struct rig_cli_stream {
    struct rig_tokenizer_stream detok;
    FILE *out;
    char *piece;                   /* (capacity) */
    size_t capacity;
    struct rig_tokenizer_text all; /* everything written, when `keep` */
    bool keep;
};

bool rig_cli_stream_begin(struct rig_cli_stream *s, const struct rig_tokenizer *tok,
                          bool skip_special_tokens, bool keep, FILE *out);
void rig_cli_stream_token(struct rig_cli_stream *s, int32_t id);
/* Writes what is pending and frees the piece buffer (`all` stays for the caller to free). */
void rig_cli_stream_end(struct rig_cli_stream *s);

#endif /* RIG_TEXT_CLI_H */
