/* tokenizer_impl.h — the tokenizer's private layout, shared by its .c files only (load.c,
 * encode.c, bpe.c, decode.c, chat.c, text.c). Nothing outside core/text/ includes it.
 *
 * Invariants after load: every id in [0, token_count) with TOKEN_EXISTS has a NUL-terminated
 * vocabulary text and decoded bytes; vocab_slots and merge_slots are open-addressed tables at
 * most half full; byte_token[b] is the id of the single-byte token of b; the word cache is the
 * only mutable part and is guarded per shard.
 */
#ifndef RIG_TOKENIZER_IMPL_H
#define RIG_TOKENIZER_IMPL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <utf8proc.h>

#include "core/text/tokenizer.h"

enum {
    RIG__TOKEN_EXISTS = 1,
    RIG__TOKEN_ADDED = 2,
    RIG__TOKEN_SPECIAL = 4,
};

#define RIG__NORMALIZER_STEPS_MAX   8
#define RIG__PRETOKENIZER_STEPS_MAX 8
#define RIG__TEMPLATE_TOKENS_MAX    8
#define RIG__ADDED_TOKENS_MAX       65536
#define RIG__TOKEN_BYTES_MAX        4096
/* The word cache: shards x slots, pieces up to KEY_MAX bytes giving up to IDS_MAX ids. */
#define RIG__CACHE_SHARDS  64
#define RIG__CACHE_SLOTS   256
#define RIG__CACHE_KEY_MAX 94 /* a run of ~30 CJK characters is one piece */
#define RIG__CACHE_IDS_MAX 23
_Static_assert((RIG__CACHE_SLOTS & (RIG__CACHE_SLOTS - 1)) == 0, "cache slots: power of 2");

enum rig__normalizer {
    RIG__NORMALIZER_NFC,
    RIG__NORMALIZER_NFD,
    RIG__NORMALIZER_NFKC,
    RIG__NORMALIZER_NFKD,
};

enum rig__split_behavior {
    RIG__SPLIT_ISOLATED,
    RIG__SPLIT_REMOVED,
    RIG__SPLIT_MERGED_WITH_PREVIOUS,
    RIG__SPLIT_MERGED_WITH_NEXT,
    RIG__SPLIT_CONTIGUOUS,
};

/* One pre-tokenizer step: a regex split (Split, or ByteLevel's own regex) and/or a prefix
 * space (ByteLevel add_prefix_space). */
struct rig__pretokenizer_step {
    pcre2_code *regex;  /* NULL: no split in this step */
    bool jit;           /* regex is JIT compiled: pcre2_jit_match may be called */
    char *literal;      /* Split with a String pattern: the literal (else NULL) */
    size_t literal_len; /* bytes of literal */
    enum rig__split_behavior behavior;
    bool invert;           /* Split's invert: the non-matches are the delimiters */
    bool add_prefix_space; /* ByteLevel: prepend ' ' to a piece not starting with one */
};

struct rig__added_token {
    int32_t id;
    uint32_t len;        /* bytes of content */
    const char *content; /* NUL-terminated, points into the tokenizer's token texts */
    char *match;         /* what is searched for: content, normalised when `normalized`
                          * (owned when it differs from content) */
    uint32_t match_len;  /* bytes of match */
    bool lstrip, rstrip, single_word, normalized, special;
};

struct rig__merge_slot {
    uint64_t pair;     /* (left id << 32) | right id; UINT64_MAX when empty */
    uint32_t rank;     /* position in the merges list: lower merges first */
    int32_t merged_id; /* id of the token left+right */
};

struct rig__cache_slot {
    uint64_t hash;                   /* 0 when empty */
    uint8_t key_len;                 /* bytes of key */
    uint8_t ids_count;               /* ids */
    char key[RIG__CACHE_KEY_MAX];    /* (key_len) piece bytes */
    int32_t ids[RIG__CACHE_IDS_MAX]; /* (ids_count) BPE result */
};

struct rig__cache_shard {
    pthread_mutex_t lock;
    struct rig__cache_slot slots[RIG__CACHE_SLOTS];
};

struct rig_tokenizer {
    int32_t token_count;      /* largest id + 1 */
    uint8_t *token_flags;     /* (token_count) RIG__TOKEN_* bits */
    uint32_t *text_offset;    /* (token_count + 1) into texts; a token's text ends in NUL */
    char *texts;              /* (text_offset[token_count]) vocabulary texts */
    uint32_t *bytes_offset;   /* (token_count + 1) into bytes */
    uint8_t *bytes;           /* (bytes_offset[token_count]) decoded bytes of each token */
    uint32_t token_bytes_max; /* longest decoded token, bytes */

    uint32_t *vocab_slots; /* (vocab_mask + 1) id + 1 per slot, 0 when empty */
    uint32_t vocab_mask;
    struct rig__merge_slot *merge_slots; /* (merge_mask + 1) */
    uint32_t merge_mask;
    int32_t byte_token[256]; /* id of the token of each single byte, -1 when none */
    bool ignore_merges;      /* BPE: a piece that is itself a token is kept whole */

    struct rig__added_token *added; /* (added_count) in file order */
    uint32_t added_count;
    uint32_t *added_by_byte[256]; /* per first byte: indices into added, longest first,
                                   * terminated by UINT32_MAX; NULL when none */
    bool has_normalized_added;    /* some added token is matched after normalising */
    bool split_special_tokens;    /* config: special tokens in text are plain text */

    enum rig__normalizer normalizers[RIG__NORMALIZER_STEPS_MAX]; /* (normalizer_count) */
    uint32_t normalizer_count;
    struct rig__pretokenizer_step pretokenizers[RIG__PRETOKENIZER_STEPS_MAX];
    uint32_t pretokenizer_count;
    bool byte_level; /* a ByteLevel pre-tokenizer is present (bytes -> chars) */

    int32_t template_prefix[RIG__TEMPLATE_TOKENS_MAX]; /* (template_prefix_count) BOS etc. */
    uint32_t template_prefix_count;
    int32_t template_suffix[RIG__TEMPLATE_TOKENS_MAX]; /* (template_suffix_count) */
    uint32_t template_suffix_count;

    struct rig_tokenizer_specials specials;
    char *bos_token; /* text of the BOS token from the config, or NULL */
    char *eos_token; /* text of the EOS token from the config, or NULL */
    enum rig_chat_template chat_template;

    struct rig__cache_shard *cache; /* (RIG__CACHE_SHARDS) */
};

/* The public call's `char *error, size_t error_len`, handed down to the internal calls that
 * can fail so that the one that does writes the message there. */
struct rig__tokenizer_error {
    char *text; /* (len) the caller's buffer; NULL (or len 0) when it wants no message */
    size_t len;
};

/* Writes the message to `error` (when it has room) and returns `status` (negative). */
enum rig_status rig__tokenizer_fail(struct rig__tokenizer_error error, enum rig_status status,
                                    const char *format, ...) __attribute__((format(printf, 3, 4)));

/* FNV-1a over `len` bytes; never 0. */
uint64_t rig__tokenizer_hash(const void *data, size_t len);
/* Id of the vocabulary text `text` of `len` bytes, or -1. */
int32_t rig__tokenizer_lookup(const struct rig_tokenizer *tokenizer, const char *text, size_t len);
/* The merge of (left, right), or NULL. */
const struct rig__merge_slot *rig__tokenizer_merge(const struct rig_tokenizer *tokenizer,
                                                   int32_t left, int32_t right);

/* Byte offset of the first invalid UTF-8 sequence in text, or len when all is valid. */
size_t rig__utf8_invalid_at(const uint8_t *text, size_t len);
/* Appends bytes to out as Rust's from_utf8_lossy would (maximal invalid subparts -> U+FFFD).
 * `out` must have room for 3 * len bytes. Returns the bytes written. */
size_t rig__utf8_lossy(const uint8_t *bytes, size_t len, char *out);
/* Length of the longest prefix of bytes (len) that ends neither inside nor before a UTF-8
 * character that more bytes could still complete. */
size_t rig__utf8_complete_prefix(const uint8_t *bytes, size_t len);

/* Growing the caller's buffers: RIG_E_NO_MEMORY (message to `error`) when they cannot grow. */
enum rig_status rig__text_reserve(struct rig_tokenizer_text *text, size_t extra,
                                  struct rig__tokenizer_error error);
enum rig_status rig__text_append(struct rig_tokenizer_text *text, const char *data, size_t len,
                                 struct rig__tokenizer_error error);
enum rig_status rig__ids_reserve(struct rig_tokenizer_ids *ids, size_t extra,
                                 struct rig__tokenizer_error error);

/* Runs BPE on one pre-tokenised piece of raw bytes; appends the ids to out (which has room
 * for len ids). Returns the number of ids. `symbols`/`heap` are scratch for 2 * len entries. */
struct rig__bpe_symbol {
    int32_t id;
    int32_t prev, next; /* indices in the piece, -1 at the ends */
    uint32_t len;       /* bytes covered; 0 once merged into the left neighbour */
};
struct rig__bpe_merge {
    uint32_t rank;
    uint32_t pos;
    int32_t merged_id;
};
size_t rig__bpe_piece(const struct rig_tokenizer *tokenizer, const uint8_t *bytes, size_t len,
                      struct rig__bpe_symbol *symbols, struct rig__bpe_merge *heap, int32_t *out);

/* Appends `value` as Python's json.dumps(value, ensure_ascii=False) writes it (transformers'
 * `tojson`). RIG_E_CAPACITY for nesting deeper than 64. */
struct json_t;
enum rig_status rig__python_json_dumps(const struct json_t *value, struct rig_tokenizer_text *out,
                                       struct rig__tokenizer_error error);

/* Reads a whole file into a NUL-terminated malloc'd buffer (RIG_E_IO when it cannot). */
enum rig_status rig__tokenizer_read_file(const char *path, char **data, size_t *len,
                                         struct rig__tokenizer_error error);

/* utf8proc options of a normaliser step. */
utf8proc_option_t rig__normalizer_options(enum rig__normalizer normalizer);

/* Loads tokenizer_config.json into the tokenizer: specials and the chat template kind. */
enum rig_status rig__tokenizer_load_config(struct rig_tokenizer *tokenizer, const char *path,
                                           struct rig__tokenizer_error error);

#endif /* RIG_TOKENIZER_IMPL_H */
