/* tokenizer.h — the Hugging Face `tokenizer.json` byte-level BPE tokenizer in C: loading,
 * encoding, decoding, incremental detokenization and chat templates, byte-for-byte equal to
 * HF `tokenizers` and `transformers` for the Qwen2/Qwen3, Llama-3 and GPT-2 families.
 *
 * Pipeline of one encode (as HF's TokenizerImpl::encode does it): added tokens split the text
 * first (leftmost-longest, honouring lstrip/rstrip/single_word); each remaining segment is
 * normalised (utf8proc: NFC/NFD/NFKC/NFKD), split by tokens flagged `normalized`, pre-tokenised
 * (PCRE2 with UTF + UCP, JIT compiled: Split and ByteLevel), and each piece's bytes go through
 * BPE by merge rank (a binary heap over a linked list of symbols: O(n log n) per piece). A
 * bounded cache of pieces already seen skips BPE for frequent words. The post-processor (ByteLevel
 * or a single-sequence TemplateProcessing, e.g. Llama-3's BOS) runs when asked.
 *
 * Decoding maps every id to the bytes of its token (ByteLevel decoder) and turns the
 * concatenation into text as Rust's String::from_utf8_lossy does. The incremental detokenizer
 * (struct rig_tokenizer_stream) emits pieces that never end inside a UTF-8 character and whose
 * concatenation is exactly the full decode.
 *
 * Ownership and threads: rig_tokenizer_load builds an immutable tokenizer; after load, every
 * function taking a `const struct rig_tokenizer *` may be called from any number of threads at
 * once (the word cache is sharded, each shard behind its own mutex). Scratch memory for encoding
 * lives in a struct rig_tokenizer_work that each thread owns. Output buffers (ids, text) are
 * caller-owned growable arrays. Errors: every call that can fail returns a negative enum
 * rig_status, writes one line saying why to the caller's `error` (`error_len` bytes with the
 * NUL; NULL or 0 for no message) and changes nothing.
 */
#ifndef RIG_TOKENIZER_H
#define RIG_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/status.h"

struct rig_tokenizer;      /* opaque: immutable after load (but for the word cache) */
struct rig_tokenizer_work; /* opaque: one thread's encoding scratch */

/* A growable array of token ids, owned by the caller; zero-initialise, release with
 * rig_tokenizer_ids_free. Encoding appends to it. */
struct rig_tokenizer_ids {
    int32_t *ids;    /* (capacity) token ids; the first `count` are valid */
    size_t count;    /* ids held */
    size_t capacity; /* ids allocated */
};

/* A growable UTF-8 text buffer, owned by the caller; zero-initialise, release with
 * rig_tokenizer_text_free. Decoding and rendering append to it and keep it NUL-terminated. */
struct rig_tokenizer_text {
    char *data;      /* (capacity) bytes; data[len] == '\0' once anything was appended */
    size_t len;      /* bytes held, without the NUL */
    size_t capacity; /* bytes allocated */
};

void rig_tokenizer_ids_free(struct rig_tokenizer_ids *ids);
void rig_tokenizer_text_free(struct rig_tokenizer_text *text);

/* ---- loading --------------------------------------------------------------------------- */

/* Loads `dir`/tokenizer.json and, when present, `dir`/tokenizer_config.json (special tokens
 * and the chat template). Returns RIG_E_IO when a file cannot be read, RIG_E_PARSE for bad
 * JSON, RIG_E_UNSUPPORTED naming the field for a feature outside this implementation; *out is
 * set only on success. */
enum rig_status rig_tokenizer_load(const char *dir, struct rig_tokenizer **out, char *error,
                                   size_t error_len);
/* The same from explicit paths; `config_path` may be NULL. */
enum rig_status rig_tokenizer_load_files(const char *tokenizer_path, const char *config_path,
                                         struct rig_tokenizer **out, char *error, size_t error_len);
/* Frees a tokenizer; NULL is allowed. No thread may still be using it. */
void rig_tokenizer_free(struct rig_tokenizer *tokenizer);

/* Number of ids (the largest id + 1, added tokens included). Can't fail. */
int32_t rig_tokenizer_vocab_size(const struct rig_tokenizer *tokenizer);
/* Id of the token whose vocabulary text is `token` (NUL-terminated), or -1. Can't fail. */
int32_t rig_tokenizer_token_id(const struct rig_tokenizer *tokenizer, const char *token);
/* Vocabulary text of `id` (byte-level form, e.g. "Ġthe"), NULL for an id with no token. */
const char *rig_tokenizer_token_text(const struct rig_tokenizer *tokenizer, int32_t id);
/* Whether `id` is an added token flagged special. Can't fail. */
bool rig_tokenizer_is_special(const struct rig_tokenizer *tokenizer, int32_t id);

/* Special token ids from tokenizer_config.json (-1 when not configured). */
struct rig_tokenizer_specials {
    int32_t bos_id;
    int32_t eos_id;
    int32_t pad_id;
};
struct rig_tokenizer_specials rig_tokenizer_specials(const struct rig_tokenizer *tokenizer);

/* ---- encoding -------------------------------------------------------------------------- */

/* Creates one thread's encoding scratch for `tokenizer`. RIG_E_NO_MEMORY on failure. */
enum rig_status rig_tokenizer_work_create(const struct rig_tokenizer *tokenizer,
                                          struct rig_tokenizer_work **out, char *error,
                                          size_t error_len);
void rig_tokenizer_work_free(struct rig_tokenizer_work *work);

/* Encodes `len` bytes of UTF-8 `text` and appends the ids to `out`. With `add_special_tokens`
 * the post-processor adds its tokens (HF's default); special tokens written in the text are
 * always recognised. `work` is the calling thread's scratch (NULL: a temporary one is made).
 * Returns RIG_E_INVALID for text that is not valid UTF-8 (the message gives the byte offset),
 * RIG_E_NO_MEMORY when `out` cannot grow; on error `out` is as it was. */
enum rig_status rig_tokenizer_encode(const struct rig_tokenizer *tokenizer,
                                     struct rig_tokenizer_work *work, const char *text, size_t len,
                                     bool add_special_tokens, struct rig_tokenizer_ids *out,
                                     char *error, size_t error_len);

/* ---- decoding -------------------------------------------------------------------------- */

/* Appends the text of `ids` to `out`, as HF's decode: ids with no token are skipped, special
 * tokens too when `skip_special_tokens`; bytes that are not valid UTF-8 become U+FFFD.
 * RIG_E_NO_MEMORY when `out` cannot grow (then `out` is as it was). */
enum rig_status rig_tokenizer_decode(const struct rig_tokenizer *tokenizer, const int32_t *ids,
                                     size_t count, bool skip_special_tokens,
                                     struct rig_tokenizer_text *out, char *error, size_t error_len);

/* Incremental detokenizer of one request: feed ids one by one, get text pieces that never end
 * inside a UTF-8 character; the pieces of all steps plus finish() concatenate to exactly
 * rig_tokenizer_decode of all the ids. Plain data, no allocation; one owner thread. */
struct rig_tokenizer_stream {
    const struct rig_tokenizer *tokenizer;
    bool skip_special_tokens;
    uint8_t pending[4];  /* (pending_len) bytes of a UTF-8 character not yet complete */
    uint8_t pending_len; /* 0..3 */
    uint64_t ids_seen;   /* ids fed so far */
};

void rig_tokenizer_stream_init(struct rig_tokenizer_stream *stream,
                               const struct rig_tokenizer *tokenizer, bool skip_special_tokens);
/* Largest number of bytes one step or finish can write (room for the NUL not included). */
size_t rig_tokenizer_stream_piece_max(const struct rig_tokenizer *tokenizer);
/* Feeds one id; writes the newly complete text (maybe empty) to `piece` (NUL-terminated,
 * `*piece_len` bytes). RIG_E_CAPACITY when `capacity` < piece_max + 1 (nothing changes). */
enum rig_status rig_tokenizer_stream_step(struct rig_tokenizer_stream *stream, int32_t id,
                                          char *piece, size_t capacity, size_t *piece_len,
                                          char *error, size_t error_len);
/* Ends the stream: writes what is pending (an incomplete character becomes U+FFFD). */
enum rig_status rig_tokenizer_stream_finish(struct rig_tokenizer_stream *stream, char *piece,
                                            size_t capacity, size_t *piece_len, char *error,
                                            size_t error_len);

/* ---- chat templates -------------------------------------------------------------------- */

/* The chat template found in tokenizer_config.json, recognised by its text. */
enum rig_chat_template {
    RIG_CHAT_TEMPLATE_NONE,    /* the config has no chat_template */
    RIG_CHAT_TEMPLATE_UNKNOWN, /* a template this implementation does not know */
    RIG_CHAT_TEMPLATE_QWEN3,   /* Qwen3's (thinking, tools), as shipped with Qwen3 models */
    RIG_CHAT_TEMPLATE_LLAMA3,  /* Meta-Llama-3-*-Instruct's */
    RIG_CHAT_TEMPLATE_CHATML,  /* plain ChatML: the documented fallback for unknown templates */
};

struct rig_chat_message {
    const char *role;              /* "system", "user", "assistant", "tool" */
    const char *content;           /* UTF-8 text */
    const char *reasoning_content; /* assistant reasoning, or NULL (Qwen3 only) */
    const char *tool_calls_json;   /* assistant tool calls: a JSON array of {"name",
                                    * "arguments"} or OpenAI's {"function": {...}}, or NULL */
};

struct rig_chat_options {
    bool add_generation_prompt; /* open an assistant turn at the end */
    bool enable_thinking;       /* Qwen3: false writes an empty <think></think> block */
    const char *tools_json;     /* Qwen3: a JSON array of tool definitions, or NULL */
};

/* Which template the tokenizer's config carries. Can't fail. */
enum rig_chat_template rig_tokenizer_chat_template(const struct rig_tokenizer *tokenizer);
const char *rig_chat_template_name(enum rig_chat_template kind);

/* Renders `messages` with `kind` (pass rig_tokenizer_chat_template(tokenizer) for the model's
 * own) and appends the text to `out`, equal to transformers' apply_chat_template(...,
 * tokenize=False). RIG_E_UNSUPPORTED for NONE/UNKNOWN (render CHATML explicitly as the
 * fallback), RIG_E_INVALID for an empty conversation, a message without role or content, or
 * tools / tool calls that are not the JSON described above; `out` is then as it was. Tools and
 * tool calls are rendered by the Qwen3 template only (the others have no place for them). */
enum rig_status rig_tokenizer_chat_render(const struct rig_tokenizer *tokenizer,
                                          enum rig_chat_template kind,
                                          const struct rig_chat_message *messages, size_t count,
                                          const struct rig_chat_options *options,
                                          struct rig_tokenizer_text *out, char *error,
                                          size_t error_len);

#endif /* RIG_TOKENIZER_H */
