/* encode.c — text to ids, following HF TokenizerImpl::encode step by step: added tokens split
 * the raw text (leftmost-longest, then single_word/lstrip/rstrip as AddedVocabulary does), each
 * plain segment is normalised with utf8proc, split again by the added tokens flagged
 * `normalized`, pre-tokenised (regex splits with PCRE2, ByteLevel prefix space), and each
 * piece goes through BPE (bpe.c) unless the word cache already holds it.
 *
 * The scratch (struct rig_tokenizer_work) grows to the largest input seen and is reused: a
 * thread that encodes many texts allocates only while its inputs grow.
 */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/text/tokenizer_impl.h"

/* A pre-tokenised piece: bytes of the segment being encoded, or of the work's arena (pieces
 * that gained a prefix space). */
struct rig__piece {
    size_t offset; /* into the segment or the arena */
    size_t len;    /* bytes */
    bool in_arena;
};

struct rig_tokenizer_work {
    const struct rig_tokenizer *tokenizer;
    pcre2_match_data *match; /* one ovector pair is enough: no captures are used */
    pcre2_match_context *context;
    pcre2_jit_stack *jit_stack;
    int32_t *codepoints; /* (codepoints_cap) utf8proc's decomposition buffer */
    size_t codepoints_cap;
    char *normalized; /* (normalized_cap) the normalised segment */
    size_t normalized_cap;
    struct rig__piece *pieces[2]; /* (pieces_cap) current and next pre-tokenizer lists */
    size_t pieces_count[2];
    size_t pieces_cap;
    char *arena; /* (arena_cap) pieces with a prefix space */
    size_t arena_len, arena_cap;
    struct rig__bpe_symbol *symbols; /* (bpe_cap) BPE scratch, one per byte of a piece */
    struct rig__bpe_merge *heap;     /* (2 * bpe_cap + 2) */
    int32_t *bpe_ids;                /* (bpe_cap) */
    size_t bpe_cap;
    struct rig__tokenizer_error error; /* the running encode call's message buffer */
};

enum rig_status rig_tokenizer_work_create(const struct rig_tokenizer *tok,
                                          struct rig_tokenizer_work **out, char *error,
                                          size_t error_len)
{
    RIG_ASSERT(tok != NULL);
    RIG_ASSERT(out != NULL);
    struct rig__tokenizer_error sink = {error, error_len};
    struct rig_tokenizer_work *work = calloc(1, sizeof *work);
    if (work == NULL) return rig__tokenizer_fail(sink, RIG_E_NO_MEMORY, "out of memory");
    work->tokenizer = tok;
    work->match = pcre2_match_data_create(1, NULL);
    work->context = pcre2_match_context_create(NULL);
    work->jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
    if (work->match == NULL || work->context == NULL || work->jit_stack == NULL) {
        rig_tokenizer_work_free(work);
        return rig__tokenizer_fail(sink, RIG_E_NO_MEMORY, "out of memory creating regex scratch");
    }
    pcre2_jit_stack_assign(work->context, NULL, work->jit_stack);
    *out = work;
    return RIG_OK;
}

void rig_tokenizer_work_free(struct rig_tokenizer_work *work)
{
    if (work == NULL) return;
    pcre2_match_data_free(work->match);
    pcre2_match_context_free(work->context);
    pcre2_jit_stack_free(work->jit_stack);
    free(work->codepoints);
    free(work->normalized);
    free(work->pieces[0]);
    free(work->pieces[1]);
    free(work->arena);
    free(work->symbols);
    free(work->heap);
    free(work->bpe_ids);
    free(work);
}

/* Grows *buffer to hold `needed` elements of `size` bytes. */
static enum rig_status rig__grow(void **buffer, size_t *capacity, size_t needed, size_t size,
                                 struct rig__tokenizer_error error)
{
    if (needed <= *capacity) return RIG_OK;
    size_t grown = *capacity < 256 ? 256 : *capacity;
    while (grown < needed)
        grown *= 2;
    if (grown > SIZE_MAX / size / 4)
        return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "input too large");
    void *memory = realloc(*buffer, grown * size);
    if (memory == NULL)
        return rig__tokenizer_fail(error, RIG_E_NO_MEMORY, "out of memory encoding");
    *buffer = memory;
    *capacity = grown;
    return RIG_OK;
}

static enum rig_status rig__bpe_reserve(struct rig_tokenizer_work *work, size_t len)
{
    if (len <= work->bpe_cap) return RIG_OK;
    size_t capacity = work->bpe_cap < 64 ? 64 : work->bpe_cap;
    while (capacity < len)
        capacity *= 2;
    void *symbols = realloc(work->symbols, capacity * sizeof *work->symbols);
    if (symbols != NULL) work->symbols = symbols;
    void *heap = realloc(work->heap, (2 * capacity + 2) * sizeof *work->heap);
    if (heap != NULL) work->heap = heap;
    void *ids = realloc(work->bpe_ids, capacity * sizeof *work->bpe_ids);
    if (ids != NULL) work->bpe_ids = ids;
    if (symbols == NULL || heap == NULL || ids == NULL)
        return rig__tokenizer_fail(work->error, RIG_E_NO_MEMORY, "out of memory encoding");
    work->bpe_cap = capacity;
    return RIG_OK;
}

/* ---- the word cache -------------------------------------------------------------------- */

static bool rig__cache_get(const struct rig_tokenizer *tok, const uint8_t *key, size_t len,
                           uint64_t hash, struct rig_tokenizer_ids *out)
{
    struct rig__cache_shard *shard = &tok->cache[hash >> 58];
    const struct rig__cache_slot *slot = &shard->slots[hash & (RIG__CACHE_SLOTS - 1)];
    bool found = false;
    pthread_mutex_lock(&shard->lock);
    if (slot->hash == hash && slot->key_len == len && memcmp(slot->key, key, len) == 0) {
        memcpy(out->ids + out->count, slot->ids, slot->ids_count * sizeof(int32_t));
        out->count += slot->ids_count;
        found = true;
    }
    pthread_mutex_unlock(&shard->lock);
    return found;
}

/* Direct-mapped: a newer word evicts the older one in its slot, so the cache stays bounded. */
static void rig__cache_put(const struct rig_tokenizer *tok, const uint8_t *key, size_t len,
                           uint64_t hash, const int32_t *ids, size_t count)
{
    if (count > RIG__CACHE_IDS_MAX) return;
    struct rig__cache_shard *shard = &tok->cache[hash >> 58];
    struct rig__cache_slot *slot = &shard->slots[hash & (RIG__CACHE_SLOTS - 1)];
    pthread_mutex_lock(&shard->lock);
    slot->hash = hash;
    slot->key_len = (uint8_t)len;
    slot->ids_count = (uint8_t)count;
    memcpy(slot->key, key, len);
    memcpy(slot->ids, ids, count * sizeof(int32_t));
    pthread_mutex_unlock(&shard->lock);
}
_Static_assert(RIG__CACHE_SHARDS == 64, "the shard is the top 6 bits of the hash");

/* ---- BPE of one piece ------------------------------------------------------------------ */

/* Whether the decoded bytes of ids are exactly bytes: BPE only ever regroups the bytes. */
static bool rig__ids_spell(const struct rig_tokenizer *tok, const int32_t *ids, size_t count,
                           const uint8_t *bytes, size_t len)
{
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t begin = tok->bytes_offset[ids[i]], size = tok->bytes_offset[ids[i] + 1] - begin;
        if (at + size > len || memcmp(tok->bytes + begin, bytes + at, size) != 0) return false;
        at += size;
    }
    return at == len;
}

/* With ignore_merges, a piece whose byte-level text is a token is that token. */
static int32_t rig__whole_piece(const struct rig_tokenizer *tok, const uint8_t *bytes, size_t len)
{
    char text[2 * RIG__CACHE_KEY_MAX + 2 * RIG__TOKEN_BYTES_MAX];
    size_t at = 0;
    if (len > RIG__TOKEN_BYTES_MAX) return -1;
    for (size_t i = 0; i < len; i++) {
        const char *token = tok->texts + tok->text_offset[tok->byte_token[bytes[i]]];
        size_t token_len = strlen(token);
        memcpy(text + at, token, token_len);
        at += token_len;
    }
    return rig__tokenizer_lookup(tok, text, at);
}

static enum rig_status rig__encode_piece(const struct rig_tokenizer *tok,
                                         struct rig_tokenizer_work *work, const uint8_t *bytes,
                                         size_t len, struct rig_tokenizer_ids *out)
{
    enum rig_status status = rig__ids_reserve(out, len, work->error);
    if (status != RIG_OK) return status;
    if (len == 1) {
        out->ids[out->count++] = tok->byte_token[bytes[0]];
        return RIG_OK;
    }
    if (tok->ignore_merges) {
        int32_t whole = rig__whole_piece(tok, bytes, len);
        if (whole >= 0) {
            out->ids[out->count++] = whole;
            return RIG_OK;
        }
    }
    bool cacheable = len <= RIG__CACHE_KEY_MAX;
    uint64_t hash = cacheable ? rig__tokenizer_hash(bytes, len) : 0;
    if (cacheable && rig__cache_get(tok, bytes, len, hash, out)) return RIG_OK;
    status = rig__bpe_reserve(work, len);
    if (status != RIG_OK) return status;
    size_t count =
        rig__bpe_piece(tok, bytes, len, work->symbols, work->heap, out->ids + out->count);
    RIG_VERIFY(rig__ids_spell(tok, out->ids + out->count, count, bytes, len));
    if (cacheable) rig__cache_put(tok, bytes, len, hash, out->ids + out->count, count);
    out->count += count;
    return RIG_OK;
}

/* ---- pre-tokenization ------------------------------------------------------------------ */

static const char *rig__piece_bytes(const struct rig_tokenizer_work *work, const char *segment,
                                    const struct rig__piece *piece)
{
    return (piece->in_arena ? work->arena : segment) + piece->offset;
}

static enum rig_status rig__push_piece(struct rig_tokenizer_work *work, int list,
                                       struct rig__piece piece)
{
    if (piece.len == 0) return RIG_OK; /* HF drops empty splits */
    size_t needed = work->pieces_count[list] + 1;
    if (needed > work->pieces_cap) {
        size_t capacity = work->pieces_cap;
        void *grown = work->pieces[0];
        enum rig_status status =
            rig__grow(&grown, &capacity, needed, sizeof(struct rig__piece), work->error);
        if (status != RIG_OK) return status;
        work->pieces[0] = grown;
        grown = realloc(work->pieces[1], capacity * sizeof(struct rig__piece));
        if (grown == NULL)
            return rig__tokenizer_fail(work->error, RIG_E_NO_MEMORY, "out of memory");
        work->pieces[1] = grown;
        work->pieces_cap = capacity;
    }
    work->pieces[list][work->pieces_count[list]++] = piece;
    return RIG_OK;
}

/* Appends the split parts of `piece` to list `to` following HF's SplitDelimiterBehavior: the
 * parts alternate non-match/match; `pending` carries a MergedWithNext delimiter forward. */
struct rig__split_state {
    struct rig__piece last; /* the part most recently produced, not yet pushed */
    bool has_last;
    bool last_is_match;
};

static enum rig_status rig__split_emit(struct rig_tokenizer_work *work, int to,
                                       const struct rig__pretokenizer_step *step,
                                       struct rig__split_state *state, struct rig__piece part,
                                       bool is_match)
{
    if (step->invert) is_match = !is_match;
    bool merge = false;
    switch (step->behavior) {
    case RIG__SPLIT_ISOLATED: break;
    case RIG__SPLIT_REMOVED:
        if (is_match) return RIG_OK;
        break;
    case RIG__SPLIT_MERGED_WITH_PREVIOUS: merge = is_match && !state->last_is_match; break;
    case RIG__SPLIT_MERGED_WITH_NEXT:
        merge = state->has_last && state->last_is_match && !is_match;
        break;
    case RIG__SPLIT_CONTIGUOUS: merge = is_match == state->last_is_match; break;
    }
    if (merge && state->has_last) {
        state->last.len = part.offset + part.len - state->last.offset;
    } else {
        if (state->has_last) {
            enum rig_status status = rig__push_piece(work, to, state->last);
            if (status != RIG_OK) return status;
        }
        state->last = part;
        state->has_last = true;
    }
    state->last_is_match = is_match;
    return RIG_OK;
}

/* Finds the next match of the step's pattern in subject[from, len) as [*start, *end); both are
 * len when there is none. Errors from PCRE2 (a JIT stack too small) become RIG_E_CAPACITY. */
static enum rig_status rig__find(struct rig_tokenizer_work *work,
                                 const struct rig__pretokenizer_step *step, const char *subject,
                                 size_t len, size_t from, size_t *start, size_t *end)
{
    if (step->literal != NULL) {
        for (size_t at = from; at + step->literal_len <= len; at++) {
            if (memcmp(subject + at, step->literal, step->literal_len) == 0) {
                *start = at;
                *end = at + step->literal_len;
                return RIG_OK;
            }
        }
        *start = *end = len;
        return RIG_OK;
    }
    for (size_t at = from; at < len;) {
        /* The text was validated once: no UTF check per match. JIT's direct entry skips the
         * interpreter's option checks, which matter for the many short matches. */
        int rc = step->jit ? pcre2_jit_match(step->regex, (PCRE2_SPTR)subject, len, at, 0,
                                             work->match, work->context)
                           : pcre2_match(step->regex, (PCRE2_SPTR)subject, len, at,
                                         PCRE2_NO_UTF_CHECK, work->match, work->context);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0)
            return rig__tokenizer_fail(work->error, RIG_E_CAPACITY,
                                       "pre-tokenizer regex failed (%d)", rc);
        PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(work->match);
        if (ovector[1] > ovector[0]) {
            *start = ovector[0];
            *end = ovector[1];
            return RIG_OK;
        }
        at = ovector[0] + 1; /* an empty match: step over one character */
        while (at < len && ((uint8_t)subject[at] & 0xC0) == 0x80)
            at++;
    }
    *start = *end = len;
    return RIG_OK;
}

static enum rig_status rig__split_piece(struct rig_tokenizer_work *work, const char *segment,
                                        const struct rig__pretokenizer_step *step,
                                        const struct rig__piece *piece, int to)
{
    const char *subject = rig__piece_bytes(work, segment, piece);
    struct rig__split_state state = {0};
    size_t previous = 0, start = 0, end = 0;
    enum rig_status status = RIG_OK;
    /* Each round consumes at least one byte: at most piece->len rounds. */
    while (status == RIG_OK && previous < piece->len) {
        status = rig__find(work, step, subject, piece->len, previous, &start, &end);
        if (status != RIG_OK) break;
        struct rig__piece part = {.offset = piece->offset + previous, .in_arena = piece->in_arena};
        if (start > previous) {
            part.len = start - previous;
            status = rig__split_emit(work, to, step, &state, part, false);
        }
        if (status == RIG_OK && end > start) {
            part.offset = piece->offset + start;
            part.len = end - start;
            status = rig__split_emit(work, to, step, &state, part, true);
        }
        previous = end;
    }
    if (status == RIG_OK && state.has_last) status = rig__push_piece(work, to, state.last);
    return status;
}

static enum rig_status rig__prefix_space(struct rig_tokenizer_work *work, const char *segment,
                                         struct rig__piece *piece)
{
    const char *bytes = rig__piece_bytes(work, segment, piece);
    if (bytes[0] == ' ') return RIG_OK;
    void *arena = work->arena;
    enum rig_status status =
        rig__grow(&arena, &work->arena_cap, work->arena_len + piece->len + 1, 1, work->error);
    if (status != RIG_OK) return status;
    work->arena = arena;
    bytes = rig__piece_bytes(work, segment, piece); /* the arena may have moved */
    work->arena[work->arena_len] = ' ';
    memmove(work->arena + work->arena_len + 1, bytes, piece->len);
    *piece =
        (struct rig__piece){.offset = work->arena_len, .len = piece->len + 1, .in_arena = true};
    work->arena_len += piece->len;
    return RIG_OK;
}

/* Pre-tokenises `segment` through every step, then BPE-encodes each piece into `out`. */
static enum rig_status rig__pretokenize(const struct rig_tokenizer *tok,
                                        struct rig_tokenizer_work *work, const char *segment,
                                        size_t len, struct rig_tokenizer_ids *out)
{
    if (len == 0) return RIG_OK;
    int current = 0;
    work->pieces_count[0] = work->pieces_count[1] = 0;
    work->arena_len = 0;
    enum rig_status status = rig__push_piece(work, current, (struct rig__piece){0, len, false});
    for (uint32_t s = 0; s < tok->pretokenizer_count && status == RIG_OK; s++) {
        const struct rig__pretokenizer_step *step = &tok->pretokenizers[s];
        for (size_t i = 0; i < work->pieces_count[current] && step->add_prefix_space; i++) {
            status = rig__prefix_space(work, segment, &work->pieces[current][i]);
            if (status != RIG_OK) return status;
        }
        if (step->regex == NULL && step->literal == NULL) continue;
        work->pieces_count[!current] = 0;
        for (size_t i = 0; i < work->pieces_count[current] && status == RIG_OK; i++) {
            struct rig__piece piece = work->pieces[current][i];
            status = rig__split_piece(work, segment, step, &piece, !current);
        }
        current = !current;
    }
    for (size_t i = 0; i < work->pieces_count[current] && status == RIG_OK; i++) {
        const struct rig__piece *piece = &work->pieces[current][i];
        status = rig__encode_piece(
            tok, work, (const uint8_t *)rig__piece_bytes(work, segment, piece), piece->len, out);
    }
    return status;
}

/* ---- normalisation --------------------------------------------------------------------- */

/* Normalises segment (valid UTF-8) through every step into work->normalized; *result points
 * at the output (the segment itself when nothing can change: no steps or pure ASCII). */
static enum rig_status rig__normalize(const struct rig_tokenizer *tok,
                                      struct rig_tokenizer_work *work, const char *segment,
                                      size_t len, const char **result, size_t *result_len)
{
    *result = segment;
    *result_len = len;
    bool ascii = true;
    for (size_t i = 0; i < len && ascii; i++)
        ascii = (uint8_t)segment[i] < 0x80;
    if (tok->normalizer_count == 0 || ascii) return RIG_OK;
    for (uint32_t s = 0; s < tok->normalizer_count; s++) {
        utf8proc_option_t options = rig__normalizer_options(tok->normalizers[s]);
        /* Decomposition grows text by at most 18 code points per input code point (Unicode's
         * stability guarantee bounds NFKD expansion); retry once with the exact size. */
        utf8proc_ssize_t count = 0;
        for (int attempt = 0; attempt < 2; attempt++) {
            count = utf8proc_decompose((const utf8proc_uint8_t *)*result,
                                       (utf8proc_ssize_t)*result_len, work->codepoints,
                                       (utf8proc_ssize_t)work->codepoints_cap, options);
            if (count < 0)
                return rig__tokenizer_fail(work->error, RIG_E_INVALID, "normalizer: %s",
                                           utf8proc_errmsg(count));
            if ((size_t)count <= work->codepoints_cap) break;
            void *grown = work->codepoints;
            enum rig_status status = rig__grow(&grown, &work->codepoints_cap, (size_t)count + 1,
                                               sizeof(int32_t), work->error);
            if (status != RIG_OK) return status;
            work->codepoints = grown;
        }
        count = utf8proc_normalize_utf32(work->codepoints, count, options);
        if (count < 0)
            return rig__tokenizer_fail(work->error, RIG_E_INVALID, "normalizer: %s",
                                       utf8proc_errmsg(count));
        void *grown = work->normalized;
        enum rig_status status =
            rig__grow(&grown, &work->normalized_cap, 4 * (size_t)count + 1, 1, work->error);
        if (status != RIG_OK) return status;
        work->normalized = grown;
        size_t at = 0;
        for (utf8proc_ssize_t i = 0; i < count; i++)
            at += (size_t)utf8proc_encode_char(work->codepoints[i],
                                               (utf8proc_uint8_t *)work->normalized + at);
        *result = work->normalized;
        *result_len = at;
    }
    return RIG_OK;
}

/* ---- added tokens ---------------------------------------------------------------------- */

/* Decodes the code point at text[at] (valid UTF-8); *width gets its byte length. */
static int32_t rig__codepoint_at(const char *text, size_t len, size_t at, size_t *width)
{
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n =
        utf8proc_iterate((const utf8proc_uint8_t *)text + at, (utf8proc_ssize_t)(len - at), &cp);
    RIG_ASSERT(n > 0);
    *width = (size_t)n;
    return cp;
}

/* Start of the code point that ends just before text[at]. */
static size_t rig__codepoint_before(const char *text, size_t at)
{
    RIG_ASSERT(at > 0);
    at--;
    while (at > 0 && ((uint8_t)text[at] & 0xC0) == 0x80)
        at--;
    return at;
}

/* Rust's char::is_whitespace: the Unicode White_Space property. */
static bool rig__is_whitespace(int32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

/* A word character for single_word tokens: the regex class \w as HF's check behaves (Unicode
 * letters, marks, decimal and letter numbers, connector punctuation, ZWNJ/ZWJ); measured
 * against HF tokenizers, it is not Rust's is_alphanumeric (which misses '_' and marks). */
static bool rig__is_word_char(int32_t cp)
{
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC: return true;
    default: /* ZWNJ, ZWJ, and the symbols that are Other_Alphabetic: circled and squared
              * Latin letters */
        return cp == 0x200C || cp == 0x200D || (cp >= 0x24B6 && cp <= 0x24E9) ||
               (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
               (cp >= 0x1F170 && cp <= 0x1F189);
    }
}

struct rig__added_match {
    size_t search; /* where the automaton resumes: end of the raw match */
    size_t start;  /* the split, after lstrip */
    size_t stop;   /* the split, after rstrip */
    int32_t id;
};

/* The longest added token (of the given `normalized` flag) at text[at], or NULL. */
static const struct rig__added_token *rig__added_at(const struct rig_tokenizer *tok,
                                                    const char *text, size_t len, size_t at,
                                                    bool normalized)
{
    const uint32_t *list = tok->added_by_byte[(uint8_t)text[at]];
    if (list == NULL) return NULL;
    for (; *list != UINT32_MAX; list++) {
        const struct rig__added_token *token = &tok->added[*list];
        if (token->normalized != normalized || token->match_len > len - at) continue;
        if (tok->split_special_tokens && token->special) continue;
        if (memcmp(text + at, token->match, token->match_len) == 0) return token;
    }
    return NULL;
}

/* Finds the next accepted added token at or after match->search, as HF's find_matches: raw
 * leftmost-longest matches, single_word ones dropped when a word character touches them,
 * lstrip/rstrip widening the split over whitespace. `done` is where the previous split ended. */
static bool rig__next_added(const struct rig_tokenizer *tok, const char *text, size_t len,
                            bool normalized, size_t done, struct rig__added_match *match)
{
    for (size_t at = match->search; at < len; at++) {
        const struct rig__added_token *token = rig__added_at(tok, text, len, at, normalized);
        if (token == NULL) continue;
        size_t start = at, stop = at + token->match_len, width;
        match->search = stop;
        if (token->single_word) {
            bool word_before =
                start > 0 && rig__is_word_char(rig__codepoint_at(
                                 text, len, rig__codepoint_before(text, start), &width));
            bool word_after =
                stop < len && rig__is_word_char(rig__codepoint_at(text, len, stop, &width));
            if (word_before || word_after) {
                at = stop - 1;
                continue;
            }
        }
        while (token->lstrip && start > done) {
            size_t before = rig__codepoint_before(text, start);
            if (!rig__is_whitespace(rig__codepoint_at(text, len, before, &width))) break;
            start = before;
        }
        while (token->rstrip && stop < len &&
               rig__is_whitespace(rig__codepoint_at(text, len, stop, &width)))
            stop += width;
        match->start = start;
        match->stop = stop;
        match->id = token->id;
        return true;
    }
    return false;
}

/* A plain segment: normalise, split by `normalized` added tokens, pre-tokenise, BPE. */
static enum rig_status rig__encode_plain(const struct rig_tokenizer *tok,
                                         struct rig_tokenizer_work *work, const char *segment,
                                         size_t len, struct rig_tokenizer_ids *out)
{
    const char *text;
    size_t text_len;
    enum rig_status status = rig__normalize(tok, work, segment, len, &text, &text_len);
    if (status != RIG_OK || !tok->has_normalized_added)
        return status == RIG_OK ? rig__pretokenize(tok, work, text, text_len, out) : status;
    struct rig__added_match match = {0};
    size_t done = 0;
    while (status == RIG_OK && rig__next_added(tok, text, text_len, true, done, &match)) {
        if (match.start < done) match.start = done;
        status = rig__pretokenize(tok, work, text + done, match.start - done, out);
        if (status == RIG_OK) status = rig__ids_reserve(out, 1, work->error);
        if (status == RIG_OK) out->ids[out->count++] = match.id;
        done = match.stop;
    }
    if (status == RIG_OK) status = rig__pretokenize(tok, work, text + done, text_len - done, out);
    return status;
}

static enum rig_status rig__encode_text(const struct rig_tokenizer *tok,
                                        struct rig_tokenizer_work *work, const char *text,
                                        size_t len, struct rig_tokenizer_ids *out)
{
    struct rig__added_match match = {0};
    size_t done = 0;
    enum rig_status status = RIG_OK;
    while (status == RIG_OK && rig__next_added(tok, text, len, false, done, &match)) {
        if (match.start < done) match.start = done;
        status = rig__encode_plain(tok, work, text + done, match.start - done, out);
        if (status == RIG_OK) status = rig__ids_reserve(out, 1, work->error);
        if (status == RIG_OK) out->ids[out->count++] = match.id;
        done = match.stop;
    }
    if (status == RIG_OK) status = rig__encode_plain(tok, work, text + done, len - done, out);
    return status;
}

static enum rig_status rig__append_ids(struct rig_tokenizer_ids *out, const int32_t *ids,
                                       uint32_t count, struct rig__tokenizer_error error)
{
    if (count == 0) return RIG_OK; /* out->ids may still be NULL: no pointer arithmetic */
    enum rig_status status = rig__ids_reserve(out, count, error);
    if (status != RIG_OK) return status;
    memcpy(out->ids + out->count, ids, count * sizeof(int32_t));
    out->count += count;
    return RIG_OK;
}

enum rig_status rig_tokenizer_encode(const struct rig_tokenizer *tok,
                                     struct rig_tokenizer_work *work, const char *text, size_t len,
                                     bool add_special_tokens, struct rig_tokenizer_ids *out,
                                     char *error, size_t error_len)
{
    RIG_ASSERT(tok != NULL);
    RIG_ASSERT(out != NULL && (text != NULL || len == 0));
    RIG_ASSERT(work == NULL || work->tokenizer == tok);
    struct rig__tokenizer_error sink = {error, error_len};
    size_t invalid = len == 0 ? 0 : rig__utf8_invalid_at((const uint8_t *)text, len);
    if (invalid < len)
        return rig__tokenizer_fail(sink, RIG_E_INVALID, "text is not valid UTF-8 at byte %zu",
                                   invalid);
    struct rig_tokenizer_work *own = NULL;
    enum rig_status status = RIG_OK;
    if (work == NULL) {
        status = rig_tokenizer_work_create(tok, &own, error, error_len);
        work = own;
    }
    if (work != NULL) work->error = sink;
    size_t count_before = out->count;
    if (status == RIG_OK && add_special_tokens)
        status = rig__append_ids(out, tok->template_prefix, tok->template_prefix_count, sink);
    if (status == RIG_OK && len > 0) status = rig__encode_text(tok, work, text, len, out);
    if (status == RIG_OK && add_special_tokens)
        status = rig__append_ids(out, tok->template_suffix, tok->template_suffix_count, sink);
    if (status != RIG_OK) out->count = count_before;
    if (work != NULL) work->error = (struct rig__tokenizer_error){0};
    rig_tokenizer_work_free(own);
    return status;
}
