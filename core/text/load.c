/* load.c — reads a Hugging Face tokenizer.json (jansson) into the immutable tables encoding
 * and decoding use: token texts and decoded bytes by id, an open-addressed vocabulary table,
 * an open-addressed merge table keyed by the id pair, the added tokens indexed by first byte,
 * the normaliser and pre-tokenizer steps (PCRE2, JIT compiled) and the post-processor's
 * tokens. Whatever this implementation does not do fails with RIG_E_UNSUPPORTED naming the
 * field, so a tokenizer is never half understood.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/text/tokenizer_impl.h"

#define RIG__FILE_BYTES_MAX ((size_t)1 << 30)

/* Ids are array indices (tables sized by the largest id): an id far beyond any real
 * vocabulary (the largest are ~256K) would make loading allocate and walk hundreds of
 * millions of entries (tests/fuzz/fuzz_tokenizer_load.c found 155,555,549: 11 s, 2 GB). */
#define RIG__VOCAB_IDS_MAX (1 << 22)

/* The GPT-2 byte-to-unicode map: printable bytes stand for themselves, the others take the
 * code points 256, 257, ... in byte order. */
static uint32_t rig__byte_char(uint8_t byte)
{
    if ((byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE) return byte;
    uint32_t rank = 0;
    for (uint32_t b = 0; b < byte; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        rank += printable ? 0 : 1;
    }
    return 256 + rank;
}

static size_t rig__utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

enum rig_status rig__tokenizer_read_file(const char *path, char **data, size_t *len,
                                         struct rig__tokenizer_error error)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL) return rig__tokenizer_fail(error, RIG_E_IO, "cannot open %s", path);
    char *buffer = NULL;
    size_t size = 0, capacity = 0;
    enum rig_status status = RIG_OK;
    for (;;) {
        if (capacity - size < 65536) {
            capacity = capacity == 0 ? (size_t)1 << 20 : capacity * 2;
            char *grown = capacity > RIG__FILE_BYTES_MAX ? NULL : realloc(buffer, capacity + 1);
            if (grown == NULL) {
                status = rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "%s: too large to read", path);
                break;
            }
            buffer = grown;
        }
        size_t got = fread(buffer + size, 1, capacity - size, file);
        size += got;
        if (got == 0) break;
    }
    if (status == RIG_OK && ferror(file))
        status = rig__tokenizer_fail(error, RIG_E_IO, "error reading %s", path);
    fclose(file);
    if (status != RIG_OK) {
        free(buffer);
        return status;
    }
    buffer[size] = '\0';
    *data = buffer;
    *len = size;
    return RIG_OK;
}

/* ---- small JSON accessors ------------------------------------------------------------- */

static enum rig_status rig__json_bool(const json_t *object, const char *key, bool fallback,
                                      bool *out, const char *where,
                                      struct rig__tokenizer_error error)
{
    const json_t *value = json_object_get(object, key);
    if (value == NULL || json_is_null(value)) {
        *out = fallback;
        return RIG_OK;
    }
    if (!json_is_boolean(value))
        return rig__tokenizer_fail(error, RIG_E_PARSE, "%s.%s: expected a boolean", where, key);
    *out = json_is_true(value);
    return RIG_OK;
}

/* The "type" of a component object, or NULL (with a message) when it has none. */
static const char *rig__json_type(const json_t *object, const char *where,
                                  struct rig__tokenizer_error error)
{
    const char *type = json_string_value(json_object_get(object, "type"));
    if (type == NULL) rig__tokenizer_fail(error, RIG_E_PARSE, "%s: missing \"type\"", where);
    return type;
}

/* ---- token tables ---------------------------------------------------------------------- */

static uint32_t rig__pow2_at_least(uint64_t n)
{
    uint64_t size = 16;
    while (size < n)
        size *= 2;
    RIG_ASSERT(size <= ((uint64_t)1 << 31));
    return (uint32_t)size;
}

static void rig__vocab_insert(struct rig_tokenizer *tok, int32_t id)
{
    const char *text = tok->texts + tok->text_offset[id];
    uint32_t slot = (uint32_t)rig__tokenizer_hash(text, strlen(text)) & tok->vocab_mask;
    for (uint32_t probe = 0; probe <= tok->vocab_mask; probe++) {
        if (tok->vocab_slots[slot] == 0) {
            tok->vocab_slots[slot] = (uint32_t)id + 1;
            return;
        }
        slot = (slot + 1) & tok->vocab_mask;
    }
    RIG_UNREACHABLE(); /* the table is sized at least twice the vocabulary */
}

int32_t rig__tokenizer_lookup(const struct rig_tokenizer *tok, const char *text, size_t len)
{
    uint32_t slot = (uint32_t)rig__tokenizer_hash(text, len) & tok->vocab_mask;
    for (uint32_t probe = 0; probe <= tok->vocab_mask; probe++) {
        uint32_t entry = tok->vocab_slots[slot];
        if (entry == 0) return -1;
        const char *candidate = tok->texts + tok->text_offset[entry - 1];
        if (strncmp(candidate, text, len) == 0 && candidate[len] == '\0') return (int32_t)entry - 1;
        slot = (slot + 1) & tok->vocab_mask;
    }
    return -1;
}

const struct rig__merge_slot *rig__tokenizer_merge(const struct rig_tokenizer *tok, int32_t left,
                                                   int32_t right)
{
    uint64_t pair = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    uint32_t slot = (uint32_t)((pair * 0x9E3779B97F4A7C15ull) >> 32) & tok->merge_mask;
    for (uint32_t probe = 0; probe <= tok->merge_mask; probe++) {
        const struct rig__merge_slot *entry = &tok->merge_slots[slot];
        if (entry->pair == pair) return entry;
        if (entry->pair == UINT64_MAX) return NULL;
        slot = (slot + 1) & tok->merge_mask;
    }
    return NULL;
}

/* Inserts or, for a pair listed twice, overwrites (HF builds a HashMap: the last one wins). */
static void rig__merge_insert(struct rig_tokenizer *tok, int32_t left, int32_t right, uint32_t rank,
                              int32_t merged)
{
    uint64_t pair = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    uint32_t slot = (uint32_t)((pair * 0x9E3779B97F4A7C15ull) >> 32) & tok->merge_mask;
    for (uint32_t probe = 0; probe <= tok->merge_mask; probe++) {
        struct rig__merge_slot *entry = &tok->merge_slots[slot];
        if (entry->pair == pair || entry->pair == UINT64_MAX) {
            *entry = (struct rig__merge_slot){.pair = pair, .rank = rank, .merged_id = merged};
            return;
        }
        slot = (slot + 1) & tok->merge_mask;
    }
    RIG_UNREACHABLE();
}

/* Largest id in the vocabulary and the added tokens; checks every id is a sane integer. */
static enum rig_status rig__count_tokens(const json_t *vocab, const json_t *added, int32_t *count,
                                         struct rig__tokenizer_error error)
{
    int64_t largest = -1;
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)vocab, key, value)
    {
        json_int_t id = json_integer_value(value);
        if (!json_is_integer(value))
            return rig__tokenizer_fail(error, RIG_E_PARSE,
                                       "model.vocab[\"%s\"]: id is not an integer", key);
        if (id < 0 || id >= RIG__VOCAB_IDS_MAX)
            return rig__tokenizer_fail(error, RIG_E_PARSE,
                                       "model.vocab[\"%s\"]: id %lld is out of range [0, %d)", key,
                                       (long long)id, RIG__VOCAB_IDS_MAX);
        largest = id > largest ? id : largest;
    }
    size_t index;
    json_array_foreach((json_t *)added, index, value)
    {
        const json_t *id = json_object_get(value, "id");
        const json_t *content = json_object_get(value, "content");
        if (!json_is_integer(id) || !json_is_string(content))
            return rig__tokenizer_fail(error, RIG_E_PARSE,
                                       "added_tokens[%zu]: needs an integer \"id\" "
                                       "and a string \"content\"",
                                       index);
        json_int_t n = json_integer_value(id);
        if (n < 0 || n >= RIG__VOCAB_IDS_MAX)
            return rig__tokenizer_fail(
                error, RIG_E_PARSE, "added_tokens[%zu] \"%s\": id %lld is out of range [0, %d)",
                index, json_string_value(content), (long long)n, RIG__VOCAB_IDS_MAX);
        if (json_string_length(content) == 0)
            return rig__tokenizer_fail(error, RIG_E_PARSE,
                                       "added_tokens[%zu] (id %lld): empty content", index,
                                       (long long)n);
        largest = n > largest ? n : largest;
    }
    if (largest < 0) return rig__tokenizer_fail(error, RIG_E_PARSE, "model.vocab: empty");
    *count = (int32_t)(largest + 1);
    return RIG_OK;
}

/* The text of every id: vocabulary entries first, added tokens override (HF's id_to_token
 * looks in the added vocabulary first). */
static enum rig_status rig__build_texts(struct rig_tokenizer *tok, const json_t *vocab,
                                        const json_t *added, struct rig__tokenizer_error error)
{
    int32_t n = tok->token_count;
    const char **text_of = calloc((size_t)n, sizeof *text_of);
    size_t *len_of = calloc((size_t)n, sizeof *len_of);
    tok->token_flags = calloc((size_t)n, 1);
    tok->text_offset = calloc((size_t)n + 1, sizeof(uint32_t));
    enum rig_status status = RIG_OK;
    if (text_of == NULL || len_of == NULL || tok->token_flags == NULL || !tok->text_offset)
        status =
            rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory loading the vocabulary");
    const char *key;
    const json_t *value;
    size_t index, total = 0;
    if (status == RIG_OK) {
        json_object_foreach((json_t *)vocab, key, value)
        {
            json_int_t id = json_integer_value(value);
            if (text_of[id] != NULL) {
                status = rig__tokenizer_fail(error, RIG_E_PARSE,
                                             "model.vocab: \"%s\" and \"%s\" both have id %lld",
                                             text_of[id], key, (long long)id);
                break;
            }
            text_of[id] = key;
            len_of[id] = json_object_iter_key_len(json_object_key_to_iter(key));
        }
        json_array_foreach((json_t *)added, index, value)
        {
            if (status != RIG_OK) break;
            json_int_t id = json_integer_value(json_object_get(value, "id"));
            const json_t *content = json_object_get(value, "content");
            text_of[id] = json_string_value(content);
            len_of[id] = json_string_length(content);
        }
        for (int32_t id = 0; id < n && status == RIG_OK; id++) {
            if (len_of[id] > RIG__TOKEN_BYTES_MAX ||
                memchr(text_of[id] ? text_of[id] : "", '\0', len_of[id]) != NULL) {
                status = rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                                             "token %d: too long or has NUL", (int)id);
                break;
            }
            total += text_of[id] ? len_of[id] + 1 : 0;
        }
    }
    if (status == RIG_OK && total >= UINT32_MAX)
        status = rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "vocabulary texts exceed 4 GiB");
    if (status == RIG_OK && (tok->texts = malloc(total + 1)) == NULL)
        status =
            rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory loading the vocabulary");
    if (status == RIG_OK) {
        size_t at = 0;
        for (int32_t id = 0; id < n; id++) {
            tok->text_offset[id] = (uint32_t)at;
            if (text_of[id] == NULL) continue;
            tok->token_flags[id] |= RIG__TOKEN_EXISTS;
            memcpy(tok->texts + at, text_of[id], len_of[id] + 1);
            at += len_of[id] + 1;
        }
        tok->text_offset[n] = (uint32_t)at;
    }
    free(text_of);
    free(len_of);
    return status;
}

/* Decoded bytes of every token: each character of the text that is a byte-level stand-in
 * becomes its byte, any other character stays as its UTF-8 (HF's ByteLevel decoder). A
 * `normalized` added token decodes from its normalised text, as HF's id_to_token gives it. */
static enum rig_status rig__build_bytes(struct rig_tokenizer *tok,
                                        struct rig__tokenizer_error error)
{
    int16_t byte_of[324];
    for (size_t i = 0; i < RIG_ARRAY_LEN(byte_of); i++)
        byte_of[i] = -1;
    for (int b = 0; b < 256; b++)
        byte_of[rig__byte_char((uint8_t)b)] = (int16_t)b;
    int32_t n = tok->token_count;
    tok->bytes_offset = calloc((size_t)n + 1, sizeof(uint32_t));
    size_t extra = 0; /* normalised added tokens can be longer than their content */
    for (uint32_t a = 0; a < tok->added_count; a++)
        extra += tok->added[a].match_len;
    tok->bytes = malloc((size_t)tok->text_offset[n] + extra + 1);
    if (tok->bytes_offset == NULL || tok->bytes == NULL)
        return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory loading the vocabulary");
    uint32_t at = 0;
    for (int32_t id = 0; id < n; id++) {
        tok->bytes_offset[id] = at;
        if (!(tok->token_flags[id] & RIG__TOKEN_EXISTS)) continue;
        const uint8_t *text = (const uint8_t *)tok->texts + tok->text_offset[id];
        for (uint32_t a = 0; (tok->token_flags[id] & RIG__TOKEN_ADDED) && a < tok->added_count;
             a++) {
            if (tok->added[a].id == id) text = (const uint8_t *)tok->added[a].match;
        }
        size_t len = strlen((const char *)text), i = 0;
        while (i < len) {
            int32_t mapped = -1;
            size_t width = 1;
            if (text[i] < 0x80) {
                mapped = byte_of[text[i]];
            } else if ((text[i] & 0xE0) == 0xC0 && i + 1 < len) {
                uint32_t cp = ((uint32_t)(text[i] & 0x1F) << 6) | (text[i + 1] & 0x3F);
                mapped = cp < RIG_ARRAY_LEN(byte_of) ? byte_of[cp] : -1;
                width = 2;
            }
            if (mapped >= 0) {
                tok->bytes[at++] = (uint8_t)mapped;
                i += width;
                continue;
            }
            tok->bytes[at++] = text[i++]; /* copy a foreign character byte by byte */
            while (i < len && (text[i] & 0xC0) == 0x80)
                tok->bytes[at++] = text[i++];
        }
        uint32_t decoded = at - tok->bytes_offset[id];
        tok->token_bytes_max = decoded > tok->token_bytes_max ? decoded : tok->token_bytes_max;
    }
    tok->bytes_offset[n] = at;
    if (tok->token_bytes_max > RIG__TOKEN_BYTES_MAX) /* a normalised added token can grow */
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                                   "a token decodes to more than %d bytes", RIG__TOKEN_BYTES_MAX);
    return RIG_OK;
}

/* ---- model: vocabulary and merges ------------------------------------------------------ */

static enum rig_status rig__check_model_fields(struct rig_tokenizer *tok, const json_t *model,
                                               struct rig__tokenizer_error error)
{
    const char *type = json_string_value(json_object_get(model, "type"));
    if (type != NULL && strcmp(type, "BPE") != 0)
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "model.type \"%s\": only BPE", type);
    const char *empty_fields[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (size_t i = 0; i < RIG_ARRAY_LEN(empty_fields); i++) {
        const json_t *value = json_object_get(model, empty_fields[i]);
        if (value != NULL && !json_is_null(value) &&
            !(json_is_string(value) && json_string_length(value) == 0))
            return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                                       "model.%s: only empty is supported", empty_fields[i]);
    }
    const json_t *dropout = json_object_get(model, "dropout");
    if (dropout != NULL && !json_is_null(dropout) && json_number_value(dropout) != 0.0)
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "model.dropout: BPE dropout");
    bool byte_fallback = false;
    enum rig_status status =
        rig__json_bool(model, "byte_fallback", false, &byte_fallback, "model", error);
    if (status == RIG_OK && byte_fallback)
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                                   "model.byte_fallback: not byte-level BPE");
    if (status == RIG_OK)
        status = rig__json_bool(model, "ignore_merges", false, &tok->ignore_merges, "model", error);
    return status;
}

/* One merge as "left right" or ["left", "right"]; finds the three ids. */
static enum rig_status rig__parse_merge(const struct rig_tokenizer *tok, const json_t *merge,
                                        size_t rank, int32_t ids[3],
                                        struct rig__tokenizer_error error)
{
    const char *left = NULL, *right = NULL;
    size_t left_len = 0, right_len = 0;
    if (json_is_string(merge)) {
        left = json_string_value(merge);
        const char *space = strchr(left, ' ');
        if (space == NULL || strchr(space + 1, ' ') != NULL)
            return rig__tokenizer_fail(error, RIG_E_PARSE, "model.merges[%zu]: not \"a b\"", rank);
        left_len = (size_t)(space - left);
        right = space + 1;
        right_len = strlen(right);
    } else if (json_is_array(merge) && json_array_size(merge) == 2 &&
               json_is_string(json_array_get(merge, 0)) &&
               json_is_string(json_array_get(merge, 1))) {
        left = json_string_value(json_array_get(merge, 0));
        right = json_string_value(json_array_get(merge, 1));
        left_len = json_string_length(json_array_get(merge, 0));
        right_len = json_string_length(json_array_get(merge, 1));
    } else {
        return rig__tokenizer_fail(error, RIG_E_PARSE, "model.merges[%zu]: not a pair", rank);
    }
    char joined[2 * RIG__TOKEN_BYTES_MAX + 1];
    if (left_len + right_len > RIG__TOKEN_BYTES_MAX)
        return rig__tokenizer_fail(error, RIG_E_PARSE, "model.merges[%zu]: too long", rank);
    memcpy(joined, left, left_len);
    memcpy(joined + left_len, right, right_len);
    ids[0] = rig__tokenizer_lookup(tok, left, left_len);
    ids[1] = rig__tokenizer_lookup(tok, right, right_len);
    ids[2] = rig__tokenizer_lookup(tok, joined, left_len + right_len);
    if (ids[0] < 0 || ids[1] < 0 || ids[2] < 0)
        return rig__tokenizer_fail(error, RIG_E_PARSE, "model.merges[%zu]: token not in vocab",
                                   rank);
    return RIG_OK;
}

static enum rig_status rig__load_model(struct rig_tokenizer *tok, const json_t *model,
                                       struct rig__tokenizer_error error)
{
    const json_t *vocab = json_object_get(model, "vocab");
    const json_t *merges = json_object_get(model, "merges");
    if (!json_is_object(vocab) || !json_is_array(merges))
        return rig__tokenizer_fail(error, RIG_E_PARSE, "model: needs vocab (object) and merges");
    tok->vocab_mask = rig__pow2_at_least(2 * (uint64_t)json_object_size(vocab)) - 1;
    tok->vocab_slots = calloc((size_t)tok->vocab_mask + 1, sizeof(uint32_t));
    tok->merge_mask = rig__pow2_at_least(2 * (uint64_t)json_array_size(merges)) - 1;
    tok->merge_slots = malloc(((size_t)tok->merge_mask + 1) * sizeof(struct rig__merge_slot));
    if (tok->vocab_slots == NULL || tok->merge_slots == NULL)
        return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory loading the vocabulary");
    memset(tok->merge_slots, 0xFF, ((size_t)tok->merge_mask + 1) * sizeof *tok->merge_slots);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)vocab, key, value)
    {
        int32_t id = (int32_t)json_integer_value(value);
        if (strcmp(tok->texts + tok->text_offset[id], key) == 0) rig__vocab_insert(tok, id);
    }
    size_t rank;
    json_array_foreach((json_t *)merges, rank, value)
    {
        int32_t ids[3] = {-1, -1, -1};
        enum rig_status status = rig__parse_merge(tok, value, rank, ids, error);
        if (status != RIG_OK) return status;
        rig__merge_insert(tok, ids[0], ids[1], (uint32_t)rank, ids[2]);
    }
    for (int b = 0; b < 256; b++) {
        char text[4];
        size_t len = rig__utf8_put(rig__byte_char((uint8_t)b), text);
        tok->byte_token[b] = rig__tokenizer_lookup(tok, text, len);
    }
    return RIG_OK;
}

/* ---- added tokens ---------------------------------------------------------------------- */

utf8proc_option_t rig__normalizer_options(enum rig__normalizer normalizer)
{
    switch (normalizer) {
    case RIG__NORMALIZER_NFC: return UTF8PROC_STABLE | UTF8PROC_COMPOSE;
    case RIG__NORMALIZER_NFD: return UTF8PROC_STABLE | UTF8PROC_DECOMPOSE;
    case RIG__NORMALIZER_NFKC: return UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    case RIG__NORMALIZER_NFKD: return UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    }
    RIG_UNREACHABLE();
}

/* The text an added token is matched as: its content, or for a `normalized` token the content
 * after the normaliser (HF matches those in the normalised text). */
static enum rig_status rig__added_match_text(const struct rig_tokenizer *tok,
                                             struct rig__added_token *token,
                                             struct rig__tokenizer_error error)
{
    token->match = (char *)token->content;
    token->match_len = token->len;
    if (!token->normalized || tok->normalizer_count == 0) return RIG_OK;
    utf8proc_uint8_t *text = (utf8proc_uint8_t *)strdup(token->content);
    for (uint32_t s = 0; s < tok->normalizer_count && text != NULL; s++) {
        utf8proc_uint8_t *next = NULL;
        utf8proc_ssize_t len = utf8proc_map(
            text, 0, &next, rig__normalizer_options(tok->normalizers[s]) | UTF8PROC_NULLTERM);
        free(text);
        text = len < 0 ? NULL : next;
    }
    if (text == NULL || text[0] == '\0') {
        free(text);
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "added token \"%s\": cannot normalise",
                                   token->content);
    }
    token->match = (char *)text;
    token->match_len = (uint32_t)strlen((char *)text);
    return RIG_OK;
}

static enum rig_status rig__load_added(struct rig_tokenizer *tok, const json_t *added,
                                       struct rig__tokenizer_error error)
{
    size_t count = json_array_size(added);
    if (count > RIG__ADDED_TOKENS_MAX)
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "added_tokens: more than %d",
                                   RIG__ADDED_TOKENS_MAX);
    tok->added = calloc(count + 1, sizeof *tok->added);
    if (tok->added == NULL) return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory");
    size_t index;
    const json_t *value;
    json_array_foreach((json_t *)added, index, value)
    {
        struct rig__added_token *token = &tok->added[tok->added_count];
        token->id = (int32_t)json_integer_value(json_object_get(value, "id"));
        token->content = tok->texts + tok->text_offset[token->id];
        token->len = (uint32_t)strlen(token->content);
        char where[48];
        snprintf(where, sizeof where, "added_tokens[%zu]", index);
        enum rig_status status = RIG_OK;
        bool *flags[] = {&token->lstrip, &token->rstrip, &token->single_word, &token->normalized,
                         &token->special};
        const char *names[] = {"lstrip", "rstrip", "single_word", "normalized", "special"};
        for (size_t i = 0; i < RIG_ARRAY_LEN(flags) && status == RIG_OK; i++)
            status = rig__json_bool(value, names[i], i == 3, flags[i], where, error);
        if (status != RIG_OK) return status;
        if (token->len == 0) continue; /* HF ignores empty added tokens */
        status = rig__added_match_text(tok, token, error);
        if (status != RIG_OK) return status;
        tok->token_flags[token->id] |= RIG__TOKEN_ADDED;
        if (token->special) tok->token_flags[token->id] |= RIG__TOKEN_SPECIAL;
        if (token->normalized) tok->has_normalized_added = true;
        tok->added_count++;
    }
    return RIG_OK;
}

/* Buckets the added tokens by first byte, longest first, so that matching at a position is
 * leftmost-longest as HF's Aho-Corasick automaton (MatchKind::LeftmostLongest). */
static enum rig_status rig__index_added(struct rig_tokenizer *tok,
                                        struct rig__tokenizer_error error)
{
    uint32_t counts[256] = {0};
    for (uint32_t i = 0; i < tok->added_count; i++)
        counts[(uint8_t)tok->added[i].match[0]]++;
    for (int b = 0; b < 256; b++) {
        if (counts[b] == 0) continue;
        uint32_t *list = malloc((counts[b] + 1) * sizeof *list);
        if (list == NULL) return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory");
        uint32_t n = 0;
        for (uint32_t i = 0; i < tok->added_count; i++) {
            if ((uint8_t)tok->added[i].match[0] != b) continue;
            uint32_t at = n++; /* insertion sort by length, descending, stable */
            while (at > 0 && tok->added[list[at - 1]].match_len < tok->added[i].match_len) {
                list[at] = list[at - 1];
                at--;
            }
            list[at] = i;
        }
        list[n] = UINT32_MAX;
        tok->added_by_byte[b] = list;
    }
    return RIG_OK;
}

/* ---- normalizer, pre-tokenizer, post-processor, decoder -------------------------------- */

/* Calls `load` on a component (normalizer, pre_tokenizer, post_processor), or on each member
 * of a Sequence (listed under `list_key`). A Sequence inside a Sequence is not supported, which
 * keeps loading free of recursion; no HF file in these families nests them. */
static enum rig_status rig__load_steps(struct rig_tokenizer *tok, const json_t *component,
                                       const char *field, const char *list_key,
                                       enum rig_status (*load)(struct rig_tokenizer *tok,
                                                               const json_t *step, const char *type,
                                                               struct rig__tokenizer_error error),
                                       struct rig__tokenizer_error error)
{
    if (component == NULL || json_is_null(component)) return RIG_OK;
    const char *type = rig__json_type(component, field, error);
    if (type == NULL) return RIG_E_PARSE;
    if (strcmp(type, "Sequence") != 0) return load(tok, component, type, error);
    const json_t *list = json_object_get(component, list_key);
    if (!json_is_array(list))
        return rig__tokenizer_fail(error, RIG_E_PARSE, "%s.%s: expected an array", field, list_key);
    size_t index;
    const json_t *step;
    json_array_foreach((json_t *)list, index, step)
    {
        const char *step_type = rig__json_type(step, field, error);
        if (step_type == NULL) return RIG_E_PARSE;
        if (strcmp(step_type, "Sequence") == 0)
            return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "%s.%s[%zu]: nested Sequence",
                                       field, list_key, index);
        enum rig_status status = load(tok, step, step_type, error);
        if (status != RIG_OK) return status;
    }
    return RIG_OK;
}

static enum rig_status rig__load_normalizer(struct rig_tokenizer *tok, const json_t *normalizer,
                                            const char *type, struct rig__tokenizer_error error)
{
    (void)normalizer;
    static const char *const names[] = {"NFC", "NFD", "NFKC", "NFKD"};
    for (size_t i = 0; i < RIG_ARRAY_LEN(names); i++) {
        if (strcmp(type, names[i]) != 0) continue;
        if (tok->normalizer_count == RIG__NORMALIZER_STEPS_MAX)
            return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "normalizer: too many steps");
        tok->normalizers[tok->normalizer_count++] = (enum rig__normalizer)i;
        return RIG_OK;
    }
    return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "normalizer.type \"%s\" is not supported",
                               type);
}

/* Runs a compiled pre-tokenizer regex over a few probe texts: a pattern that compiles but
 * cannot match at all (PCRE2 reports an error, e.g. the endless recursion of "(?R)") fails at
 * load, not at the first encode. The interpreter first (its messages do not depend on whether
 * JIT is available), then the JIT code encoding uses. */
static enum rig_status rig__probe_regex(pcre2_code *code, const char *pattern, size_t len,
                                        const char *where, struct rig__tokenizer_error error)
{
    static const char *const probes[] = {"", "Hello, world! 123", " \xc3\xa9t\xc3\xa9\n\t  x's"};
    pcre2_match_data *match = pcre2_match_data_create_from_pattern(code, NULL);
    if (match == NULL) return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory");
    int rc = PCRE2_ERROR_NOMATCH;
    for (size_t k = 0; k < 2 * RIG_ARRAY_LEN(probes) && rc >= PCRE2_ERROR_NOMATCH; k++) {
        const char *probe = probes[k % RIG_ARRAY_LEN(probes)]; /* interpreter first, then JIT */
        uint32_t options = k < RIG_ARRAY_LEN(probes) ? PCRE2_NO_JIT : 0;
        rc = pcre2_match(code, (PCRE2_SPTR)probe, strlen(probe), 0, options, match, NULL);
    }
    pcre2_match_data_free(match);
    if (rc >= PCRE2_ERROR_NOMATCH) return RIG_OK;
    PCRE2_UCHAR message[160];
    pcre2_get_error_message(rc, message, sizeof message);
    return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "%s \"%.*s\": regex cannot match: %s",
                               where, (int)len, pattern, (const char *)message);
}

static enum rig_status rig__compile_regex(const char *pattern, size_t len, pcre2_code **out,
                                          bool *jit, const char *where,
                                          struct rig__tokenizer_error error)
{
    int compile_error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, len, PCRE2_UTF | PCRE2_UCP,
                                     &compile_error, &offset, NULL);
    if (code == NULL) {
        PCRE2_UCHAR message[160];
        pcre2_get_error_message(compile_error, message, sizeof message);
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "%s \"%.*s\": regex error at %zu: %s",
                                   where, (int)len, pattern, (size_t)offset, (const char *)message);
    }
    *jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0; /* else: the interpreter */
    enum rig_status status = rig__probe_regex(code, pattern, len, where, error);
    if (status != RIG_OK) {
        pcre2_code_free(code);
        return status;
    }
    *out = code;
    return RIG_OK;
}

static const char rig__gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static enum rig_status rig__load_split(struct rig__pretokenizer_step *step, const json_t *split,
                                       struct rig__tokenizer_error error)
{
    const json_t *pattern = json_object_get(split, "pattern");
    const json_t *regex = json_object_get(pattern, "Regex");
    const json_t *literal = json_object_get(pattern, "String");
    static const char *const behaviors[] = {"Isolated", "Removed", "MergedWithPrevious",
                                            "MergedWithNext", "Contiguous"};
    const char *behavior = json_string_value(json_object_get(split, "behavior"));
    size_t b = 0;
    while (b < RIG_ARRAY_LEN(behaviors) && (!behavior || strcmp(behavior, behaviors[b]) != 0))
        b++;
    if (b == RIG_ARRAY_LEN(behaviors))
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "pre_tokenizer Split.behavior \"%s\"",
                                   behavior ? behavior : "(missing)");
    step->behavior = (enum rig__split_behavior)b;
    enum rig_status status = rig__json_bool(split, "invert", false, &step->invert, "Split", error);
    if (status != RIG_OK) return status;
    if (json_is_string(regex))
        return rig__compile_regex(json_string_value(regex), json_string_length(regex), &step->regex,
                                  &step->jit, "pre_tokenizer Split.pattern.Regex", error);
    if (!json_is_string(literal) || json_string_length(literal) == 0)
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                                   "pre_tokenizer Split.pattern: needs "
                                   "Regex or a non-empty String");
    step->literal_len = json_string_length(literal);
    step->literal = malloc(step->literal_len + 1);
    if (step->literal == NULL) return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory");
    memcpy(step->literal, json_string_value(literal), step->literal_len + 1);
    return RIG_OK;
}

static enum rig_status rig__load_pretokenizer(struct rig_tokenizer *tok, const json_t *pre,
                                              const char *type, struct rig__tokenizer_error error)
{
    if (tok->pretokenizer_count == RIG__PRETOKENIZER_STEPS_MAX)
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "pre_tokenizer: too many steps");
    struct rig__pretokenizer_step *step = &tok->pretokenizers[tok->pretokenizer_count++];
    *step = (struct rig__pretokenizer_step){.behavior = RIG__SPLIT_ISOLATED};
    if (strcmp(type, "Split") == 0) return rig__load_split(step, pre, error);
    if (strcmp(type, "ByteLevel") != 0)
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                                   "pre_tokenizer.type \"%s\" is not "
                                   "supported",
                                   type);
    bool use_regex = true;
    enum rig_status status =
        rig__json_bool(pre, "add_prefix_space", true, &step->add_prefix_space, "ByteLevel", error);
    if (status == RIG_OK)
        status = rig__json_bool(pre, "use_regex", true, &use_regex, "ByteLevel", error);
    if (status != RIG_OK) return status;
    tok->byte_level = true;
    if (!use_regex) return RIG_OK;
    return rig__compile_regex(rig__gpt2_pattern, sizeof rig__gpt2_pattern - 1, &step->regex,
                              &step->jit, "pre_tokenizer ByteLevel", error);
}

/* TemplateProcessing's "single": special tokens before and after $A become prefix/suffix. */
static enum rig_status rig__load_template(struct rig_tokenizer *tok, const json_t *processor,
                                          struct rig__tokenizer_error error)
{
    const json_t *single = json_object_get(processor, "single");
    const json_t *specials = json_object_get(processor, "special_tokens");
    bool seen_sequence = false;
    size_t index;
    const json_t *piece;
    json_array_foreach((json_t *)single, index, piece)
    {
        const json_t *sequence = json_object_get(piece, "Sequence");
        const char *name =
            json_string_value(json_object_get(json_object_get(piece, "SpecialToken"), "id"));
        if (sequence != NULL) {
            const char *which = json_string_value(json_object_get(sequence, "id"));
            if (which == NULL || strcmp(which, "A") != 0 || seen_sequence)
                return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                                           "post_processor.single: only $A");
            seen_sequence = true;
            continue;
        }
        const json_t *ids = json_object_get(json_object_get(specials, name ? name : ""), "ids");
        if (name == NULL || !json_is_array(ids))
            return rig__tokenizer_fail(error, RIG_E_PARSE,
                                       "post_processor.single[%zu]: unknown token", index);
        size_t k;
        const json_t *id;
        json_array_foreach((json_t *)ids, k, id)
        {
            int32_t *list = seen_sequence ? tok->template_suffix : tok->template_prefix;
            uint32_t *count =
                seen_sequence ? &tok->template_suffix_count : &tok->template_prefix_count;
            json_int_t value = json_integer_value(id);
            if (*count == RIG__TEMPLATE_TOKENS_MAX || value < 0 || value >= tok->token_count)
                return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                                           "post_processor.special_tokens");
            list[(*count)++] = (int32_t)value;
        }
    }
    return RIG_OK;
}

static enum rig_status rig__load_post(struct rig_tokenizer *tok, const json_t *post,
                                      const char *type, struct rig__tokenizer_error error)
{
    if (strcmp(type, "ByteLevel") == 0) return RIG_OK; /* only offsets change: no ids */
    if (strcmp(type, "TemplateProcessing") == 0) return rig__load_template(tok, post, error);
    return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                               "post_processor.type \"%s\" is not supported", type);
}

static enum rig_status rig__load_decoder(const json_t *decoder, struct rig__tokenizer_error error)
{
    const char *type = decoder ? json_string_value(json_object_get(decoder, "type")) : NULL;
    if (type == NULL || strcmp(type, "ByteLevel") != 0)
        return rig__tokenizer_fail(error, RIG_E_UNSUPPORTED, "decoder.type \"%s\": only ByteLevel",
                                   type ? type : "(none)");
    return RIG_OK;
}

/* ---- the whole file -------------------------------------------------------------------- */

static enum rig_status rig__load_json(struct rig_tokenizer *tok, const json_t *root,
                                      struct rig__tokenizer_error error)
{
    const json_t *model = json_object_get(root, "model");
    const json_t *added = json_object_get(root, "added_tokens");
    json_t *no_added = json_array();
    if (added == NULL || json_is_null(added)) added = no_added;
    enum rig_status status = RIG_OK;
    if (!json_is_object(model) || !json_is_array(added))
        status = rig__tokenizer_fail(error, RIG_E_PARSE, "needs \"model\" and \"added_tokens\"");
    if (status == RIG_OK) status = rig__check_model_fields(tok, model, error);
    if (status == RIG_OK && !json_is_object(json_object_get(model, "vocab")))
        status = rig__tokenizer_fail(error, RIG_E_PARSE, "model.vocab: expected an object");
    if (status == RIG_OK)
        status =
            rig__count_tokens(json_object_get(model, "vocab"), added, &tok->token_count, error);
    if (status == RIG_OK)
        status = rig__build_texts(tok, json_object_get(model, "vocab"), added, error);
    if (status == RIG_OK) status = rig__load_model(tok, model, error);
    if (status == RIG_OK)
        status = rig__load_steps(tok, json_object_get(root, "normalizer"), "normalizer",
                                 "normalizers", rig__load_normalizer, error);
    if (status == RIG_OK) status = rig__load_added(tok, added, error);
    if (status == RIG_OK) status = rig__index_added(tok, error);
    if (status == RIG_OK) status = rig__build_bytes(tok, error);
    if (status == RIG_OK)
        status = rig__load_steps(tok, json_object_get(root, "pre_tokenizer"), "pre_tokenizer",
                                 "pretokenizers", rig__load_pretokenizer, error);
    if (status == RIG_OK)
        status = rig__load_steps(tok, json_object_get(root, "post_processor"), "post_processor",
                                 "processors", rig__load_post, error);
    if (status == RIG_OK) status = rig__load_decoder(json_object_get(root, "decoder"), error);
    if (status == RIG_OK && !tok->byte_level)
        status = rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                                     "pre_tokenizer: byte-level BPE needs a "
                                     "ByteLevel pre-tokenizer");
    for (int b = 0; status == RIG_OK && b < 256; b++) {
        if (tok->byte_token[b] < 0)
            status = rig__tokenizer_fail(error, RIG_E_UNSUPPORTED,
                                         "model.vocab: byte 0x%02x has no "
                                         "token",
                                         b);
    }
    json_decref(no_added);
    return status;
}

static enum rig_status rig__cache_create(struct rig_tokenizer *tok,
                                         struct rig__tokenizer_error error)
{
    tok->cache = calloc(RIG__CACHE_SHARDS, sizeof *tok->cache);
    if (tok->cache == NULL) return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory");
    for (int i = 0; i < RIG__CACHE_SHARDS; i++) {
        if (pthread_mutex_init(&tok->cache[i].lock, NULL) != 0)
            return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "cannot create a mutex");
    }
    return RIG_OK;
}

enum rig_status rig_tokenizer_load_files(const char *tokenizer_path, const char *config_path,
                                         struct rig_tokenizer **out, char *error, size_t error_len)
{
    RIG_ASSERT(tokenizer_path != NULL);
    RIG_ASSERT(out != NULL);
    struct rig__tokenizer_error sink = {error, error_len};
    char *data = NULL;
    size_t len = 0;
    enum rig_status status = rig__tokenizer_read_file(tokenizer_path, &data, &len, sink);
    if (status != RIG_OK) return status;
    json_error_t parse_error;
    json_t *root = json_loadb(data, len, 0, &parse_error);
    free(data);
    if (root == NULL)
        return rig__tokenizer_fail(sink, RIG_E_PARSE, "%s:%d:%d: %s", tokenizer_path,
                                   parse_error.line, parse_error.column, parse_error.text);
    struct rig_tokenizer *tok = calloc(1, sizeof *tok);
    if (tok == NULL) status = rig__tokenizer_fail(sink, RIG_E_NO_MEMORY, "out of memory");
    if (status == RIG_OK) {
        tok->specials = (struct rig_tokenizer_specials){-1, -1, -1};
        tok->chat_template = RIG_CHAT_TEMPLATE_NONE;
        status = rig__load_json(tok, root, sink);
    }
    json_decref(root);
    if (status == RIG_OK) status = rig__cache_create(tok, sink);
    if (status == RIG_OK && config_path != NULL)
        status = rig__tokenizer_load_config(tok, config_path, sink);
    if (status != RIG_OK) {
        char message[512];
        snprintf(message, sizeof message, "%s", error != NULL && error_len > 0 ? error : "");
        rig__tokenizer_fail(sink, status, "%s: %s",
                            status == RIG_E_IO ? "tokenizer" : tokenizer_path, message);
        rig_tokenizer_free(tok);
        return status;
    }
    *out = tok;
    return RIG_OK;
}

enum rig_status rig_tokenizer_load(const char *dir, struct rig_tokenizer **out, char *error,
                                   size_t error_len)
{
    RIG_ASSERT(dir != NULL);
    char tokenizer_path[4096], config_path[4096];
    int n1 = snprintf(tokenizer_path, sizeof tokenizer_path, "%s/tokenizer.json", dir);
    int n2 = snprintf(config_path, sizeof config_path, "%s/tokenizer_config.json", dir);
    if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof config_path)
        return rig__tokenizer_fail((struct rig__tokenizer_error){error, error_len}, RIG_E_INVALID,
                                   "tokenizer directory path too long");
    FILE *config = fopen(config_path, "rb");
    if (config != NULL) fclose(config);
    return rig_tokenizer_load_files(tokenizer_path, config ? config_path : NULL, out, error,
                                    error_len);
}

void rig_tokenizer_free(struct rig_tokenizer *tok)
{
    if (tok == NULL) return;
    for (uint32_t i = 0; i < tok->pretokenizer_count; i++) {
        pcre2_code_free(tok->pretokenizers[i].regex);
        free(tok->pretokenizers[i].literal);
    }
    for (int b = 0; b < 256; b++)
        free(tok->added_by_byte[b]);
    for (uint32_t i = 0; tok->added != NULL && i < tok->added_count; i++) {
        if (tok->added[i].match != tok->added[i].content) free(tok->added[i].match);
    }
    if (tok->cache != NULL) {
        for (int i = 0; i < RIG__CACHE_SHARDS; i++)
            pthread_mutex_destroy(&tok->cache[i].lock);
    }
    free(tok->cache);
    free(tok->added);
    free(tok->merge_slots);
    free(tok->vocab_slots);
    free(tok->bytes);
    free(tok->bytes_offset);
    free(tok->texts);
    free(tok->text_offset);
    free(tok->token_flags);
    free(tok->bos_token);
    free(tok->eos_token);
    free(tok);
}

int32_t rig_tokenizer_vocab_size(const struct rig_tokenizer *tok)
{
    return tok->token_count;
}

int32_t rig_tokenizer_token_id(const struct rig_tokenizer *tok, const char *token)
{
    RIG_ASSERT(token != NULL);
    for (uint32_t i = 0; i < tok->added_count; i++) {
        if (strcmp(tok->added[i].content, token) == 0) return tok->added[i].id;
    }
    return rig__tokenizer_lookup(tok, token, strlen(token));
}

const char *rig_tokenizer_token_text(const struct rig_tokenizer *tok, int32_t id)
{
    if (id < 0 || id >= tok->token_count || !(tok->token_flags[id] & RIG__TOKEN_EXISTS))
        return NULL;
    return tok->texts + tok->text_offset[id];
}

bool rig_tokenizer_is_special(const struct rig_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->token_count && (tok->token_flags[id] & RIG__TOKEN_SPECIAL);
}

struct rig_tokenizer_specials rig_tokenizer_specials(const struct rig_tokenizer *tok)
{
    return tok->specials;
}
