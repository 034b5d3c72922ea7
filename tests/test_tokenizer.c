/* test_tokenizer.c — the C tokenizer against Hugging Face `tokenizers`.
 *
 * Checks, on the real Qwen3 tokenizer (tests/data/tokenizer/qwen3) and on five small variant
 * tokenizers (tests/data/tokenizer/variants/, other pre-tokenizers, normalisers, added-token
 * flags, post-processors): identical ids for every corpus string (reference ids written by
 * tools/tokenizer/make_reference.py with HF tokenizers), identical decodes with and without
 * special tokens, streaming detokenization of every string (pieces concatenate to the decode,
 * none ends inside a UTF-8 character), invalid UTF-8 and bad files rejected with the state
 * unchanged, lookups and special ids, lossy decoding of broken byte sequences, concurrent use
 * from several threads, and pathological inputs (long words, long whitespace runs).
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/text/tokenizer.h"
#include "tests/support/test_support.h"

#define QWEN3_DIR    RIG_TEST_DATA_DIR "/tokenizer/qwen3"
#define VARIANTS_DIR RIG_TEST_DATA_DIR "/tokenizer/variants"

static struct rig_tokenizer *qwen3;
static json_t *corpus; /* array of {"text", "ids", "decoded", "decoded_skip"} */
static char load_error[512]; /* the message of load_text's last failed load */

/* Reads a JSON-lines file into an array. */
static json_t *load_jsonl(const char *path)
{
    FILE *file = fopen(path, "r");
    assert_non_null(file);
    json_t *rows = json_array();
    char *line = NULL;
    size_t capacity = 0;
    while (getline(&line, &capacity, file) > 0) {
        json_error_t error;
        json_t *row = json_loads(line, 0, &error);
        assert_non_null(row);
        json_array_append_new(rows, row);
    }
    free(line);
    fclose(file);
    return rows;
}

static int setup(void **state)
{
    (void)state;
    char error[512];
    if (rig_tokenizer_load(QWEN3_DIR, &qwen3, error, sizeof error) != RIG_OK) {
        fprintf(stderr, "load: %s\n", error);
        return -1;
    }
    corpus = load_jsonl(RIG_TEST_DATA_DIR "/tokenizer/corpus.jsonl");
    return json_array_size(corpus) >= 300 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rig_tokenizer_free(qwen3);
    json_decref(corpus);
    return 0;
}

static bool valid_utf8(const char *text, size_t len)
{
    size_t at = 0;
    while (at < len) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)text + at,
                                              (utf8proc_ssize_t)(len - at), &cp);
        if (n <= 0) return false;
        at += (size_t)n;
    }
    return true;
}

static const char *row_text(const json_t *row, const char *key, size_t *len)
{
    const json_t *value = json_object_get(row, key);
    assert_true(json_is_string(value));
    *len = json_string_length(value);
    return json_string_value(value);
}

/* Encodes every row and compares ids; decodes the reference ids both ways. Returns rows. */
static size_t check_rows(const struct rig_tokenizer *tok, const json_t *rows)
{
    struct rig_tokenizer_work *work;
    assert_int_equal(rig_tokenizer_work_create(tok, &work, NULL, 0), RIG_OK);
    struct rig_tokenizer_ids ids = {0};
    struct rig_tokenizer_text text = {0};
    size_t index;
    const json_t *row;
    json_array_foreach((json_t *)rows, index, row)
    {
        size_t len;
        const char *input = row_text(row, "text", &len);
        const json_t *expected = json_object_get(row, "ids");
        ids.count = 0;
        assert_int_equal(rig_tokenizer_encode(tok, work, input, len, true, &ids, NULL, 0), RIG_OK);
        bool same = ids.count == json_array_size(expected);
        for (size_t i = 0; same && i < ids.count; i++)
            same = ids.ids[i] == json_integer_value(json_array_get(expected, i));
        if (!same) fprintf(stderr, "row %zu: ids differ for \"%s\"\n", index, input);
        assert_true(same);
        const char *keys[] = {"decoded", "decoded_skip"};
        for (int skip = 0; skip < 2; skip++) {
            size_t want_len;
            const char *want = row_text(row, keys[skip], &want_len);
            text.len = 0;
            assert_int_equal(rig_tokenizer_decode(tok, ids.ids, ids.count, skip, &text, NULL, 0),
                             RIG_OK);
            if (text.len != want_len || memcmp(text.data, want, want_len) != 0)
                fprintf(stderr, "row %zu: decode \"%s\" != \"%s\"\n", index, text.data, want);
            assert_int_equal(text.len, want_len);
            assert_memory_equal(text.data, want, want_len);
        }
    }
    rig_tokenizer_ids_free(&ids);
    rig_tokenizer_text_free(&text);
    rig_tokenizer_work_free(work);
    return json_array_size(rows);
}

static void test_corpus_matches_hf(void **state)
{
    (void)state;
    assert_true(check_rows(qwen3, corpus) >= 400);
}

static void test_variants_match_hf(void **state)
{
    (void)state;
    const char *names[] = {"gpt2", "llama3", "splits", "inverted", "legacy"};
    for (size_t i = 0; i < RIG_ARRAY_LEN(names); i++) {
        char dir[512], path[600];
        snprintf(dir, sizeof dir, "%s/%s", VARIANTS_DIR, names[i]);
        snprintf(path, sizeof path, "%s/reference.jsonl", dir);
        struct rig_tokenizer *tok = NULL;
        char error[512];
        enum rig_status status = rig_tokenizer_load(dir, &tok, error, sizeof error);
        if (status != RIG_OK) fprintf(stderr, "%s: %s\n", names[i], error);
        assert_int_equal(status, RIG_OK);
        json_t *rows = load_jsonl(path);
        fprintf(stderr, "variant %s\n", names[i]);
        assert_true(check_rows(tok, rows) >= 300);
        json_decref(rows);
        rig_tokenizer_free(tok);
    }
}

/* Streams ids one at a time: every piece is whole UTF-8, the pieces make the full decode. */
static void stream_and_compare(const struct rig_tokenizer *tok, const int32_t *ids, size_t n,
                               bool skip, const char *want, size_t want_len)
{
    size_t capacity = rig_tokenizer_stream_piece_max(tok) + 1;
    char *piece = malloc(capacity);
    struct rig_tokenizer_text joined = {0};
    struct rig_tokenizer_stream stream;
    rig_tokenizer_stream_init(&stream, tok, skip);
    size_t piece_len;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(
            rig_tokenizer_stream_step(&stream, ids[i], piece, capacity, &piece_len, NULL, 0),
            RIG_OK);
        assert_true(valid_utf8(piece, piece_len));
        assert_int_equal(strlen(piece), piece_len);
        if (piece_len > 0) {
            joined.data = realloc(joined.data, joined.len + piece_len + 1);
            memcpy(joined.data + joined.len, piece, piece_len);
            joined.len += piece_len;
        }
    }
    assert_int_equal(rig_tokenizer_stream_finish(&stream, piece, capacity, &piece_len, NULL, 0),
                     RIG_OK);
    assert_true(valid_utf8(piece, piece_len));
    joined.data = realloc(joined.data, joined.len + piece_len + 1);
    memcpy(joined.data + joined.len, piece, piece_len);
    joined.len += piece_len;
    assert_int_equal(joined.len, want_len);
    assert_memory_equal(joined.data, want, want_len);
    assert_int_equal(stream.ids_seen, n);
    free(joined.data);
    free(piece);
}

static void test_stream_every_corpus_string(void **state)
{
    (void)state;
    size_t index;
    const json_t *row;
    json_array_foreach(corpus, index, row)
    {
        const json_t *ids_json = json_object_get(row, "ids");
        size_t n = json_array_size(ids_json);
        int32_t *ids = malloc((n + 1) * sizeof *ids);
        for (size_t i = 0; i < n; i++)
            ids[i] = (int32_t)json_integer_value(json_array_get(ids_json, i));
        size_t len;
        const char *want = row_text(row, "decoded", &len);
        stream_and_compare(qwen3, ids, n, false, want, len);
        want = row_text(row, "decoded_skip", &len);
        stream_and_compare(qwen3, ids, n, true, want, len);
        free(ids);
    }
}

/* Single-byte tokens of a 3-byte character: nothing until the third, then the character. */
static void test_stream_holds_partial_characters(void **state)
{
    (void)state;
    const char *han = "\xE5\xA5\xBD"; /* 好: three bytes that byte-level maps to themselves */
    int32_t ids[3];
    char token[8];
    for (int i = 0; i < 3; i++) {
        /* The byte-level token of each byte: its vocabulary text is the mapped character. */
        uint8_t byte = (uint8_t)han[i];
        uint32_t cp = (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE ? byte : 0;
        assert_true(cp != 0);
        token[0] = (char)(0xC0 | (cp >> 6));
        token[1] = (char)(0x80 | (cp & 0x3F));
        token[2] = '\0';
        ids[i] = rig_tokenizer_token_id(qwen3, token);
        assert_true(ids[i] >= 0);
    }
    char piece[4096];
    size_t len;
    struct rig_tokenizer_stream stream;
    rig_tokenizer_stream_init(&stream, qwen3, false);
    assert_int_equal(rig_tokenizer_stream_step(&stream, ids[0], piece, sizeof piece, &len, NULL, 0),
                     RIG_OK);
    assert_int_equal(len, 0);
    assert_int_equal(rig_tokenizer_stream_step(&stream, ids[1], piece, sizeof piece, &len, NULL, 0),
                     RIG_OK);
    assert_int_equal(len, 0);
    assert_int_equal(rig_tokenizer_stream_step(&stream, ids[2], piece, sizeof piece, &len, NULL, 0),
                     RIG_OK);
    assert_string_equal(piece, han);
    /* An incomplete character at the end becomes U+FFFD, as the full decode does. */
    assert_int_equal(rig_tokenizer_stream_step(&stream, ids[0], piece, sizeof piece, &len, NULL, 0),
                     RIG_OK);
    assert_int_equal(len, 0);
    assert_int_equal(rig_tokenizer_stream_finish(&stream, piece, sizeof piece, &len, NULL, 0),
                     RIG_OK);
    assert_string_equal(piece, "\xEF\xBF\xBD");
    struct rig_tokenizer_text text = {0};
    int32_t broken[] = {ids[0], ids[1], ids[0], ids[1], ids[2]};
    assert_int_equal(rig_tokenizer_decode(qwen3, broken, 5, false, &text, NULL, 0), RIG_OK);
    assert_string_equal(text.data, "\xEF\xBF\xBD\xE5\xA5\xBD"); /* one U+FFFD per subpart */
    stream_and_compare(qwen3, broken, 5, false, text.data, text.len);
    /* A piece buffer smaller than piece_max + 1 is refused and nothing changes. */
    rig_tokenizer_stream_init(&stream, qwen3, false);
    char error[128] = "";
    assert_int_equal(
        rig_tokenizer_stream_step(&stream, ids[0], piece, 8, &len, error, sizeof error),
        RIG_E_CAPACITY);
    assert_int_equal(stream.ids_seen, 0);
    char expected[128];
    snprintf(expected, sizeof expected, "detokenizer piece buffer of 8 bytes is smaller than %zu",
             rig_tokenizer_stream_piece_max(qwen3) + 1);
    assert_string_equal(error, expected);
    rig_tokenizer_text_free(&text);
}

static void test_invalid_utf8_is_an_error(void **state)
{
    (void)state;
    const char *bad[] = {
        "\x80", "ab\xC0\x80",     "\xED\xA0\x80", "x\xE4\xB8",       "\xF5\x80\x80\x80",
        "\xFF", "ok\xF0\x9F\x98", "\xC2",         "\xF4\x90\x80\x80"};
    struct rig_tokenizer_ids ids = {0};
    int32_t sentinel = 7;
    char error[512];
    assert_int_equal(rig_tokenizer_encode(qwen3, NULL, "x", 1, false, &ids, NULL, 0), RIG_OK);
    sentinel = ids.ids[0];
    for (size_t i = 0; i < RIG_ARRAY_LEN(bad); i++) {
        assert_int_equal(rig_tokenizer_encode(qwen3, NULL, bad[i], strlen(bad[i]), true, &ids,
                                              error, sizeof error),
                         RIG_E_INVALID);
        assert_non_null(strstr(error, "UTF-8"));
        assert_int_equal(ids.count, 1);
        assert_int_equal(ids.ids[0], sentinel);
    }
    /* Embedded NUL is valid UTF-8 and is encoded like any byte. */
    assert_int_equal(rig_tokenizer_encode(qwen3, NULL, "a\0b", 3, false, &ids, NULL, 0), RIG_OK);
    assert_true(ids.count >= 3);
    rig_tokenizer_ids_free(&ids);
}

static void test_lookups_and_specials(void **state)
{
    (void)state;
    assert_int_equal(rig_tokenizer_vocab_size(qwen3), 151669);
    assert_int_equal(rig_tokenizer_token_id(qwen3, "<|im_end|>"), 151645);
    assert_string_equal(rig_tokenizer_token_text(qwen3, 151645), "<|im_end|>");
    assert_int_equal(rig_tokenizer_token_id(qwen3, "\xC4\xA0the"), 279); /* "Ġthe" */
    assert_int_equal(rig_tokenizer_token_id(qwen3, "no such token, surely"), -1);
    assert_null(rig_tokenizer_token_text(qwen3, -1));
    assert_null(rig_tokenizer_token_text(qwen3, 151669));
    assert_true(rig_tokenizer_is_special(qwen3, 151643));
    assert_false(rig_tokenizer_is_special(qwen3, rig_tokenizer_token_id(qwen3, "<think>")));
    assert_false(rig_tokenizer_is_special(qwen3, 279));
    struct rig_tokenizer_specials specials = rig_tokenizer_specials(qwen3);
    assert_int_equal(specials.bos_id, -1);
    assert_int_equal(specials.eos_id, 151645);
    assert_int_equal(specials.pad_id, 151643);
    assert_int_equal(rig_tokenizer_chat_template(qwen3), RIG_CHAT_TEMPLATE_QWEN3);
    /* Ids without a token (padding rows of the embedding, negatives) decode to nothing. */
    int32_t ids[] = {-5, 151700, 279, 1 << 30};
    struct rig_tokenizer_text text = {0};
    assert_int_equal(rig_tokenizer_decode(qwen3, ids, 4, false, &text, NULL, 0), RIG_OK);
    assert_string_equal(text.data, " the");
    rig_tokenizer_text_free(&text);
}

static void write_file(const char *path, const char *text)
{
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs(text, file);
    fclose(file);
}

/* Loads a tokenizer.json written from `text`; returns the status, checks the message. */
static enum rig_status load_text(const char *text, const char *message_part)
{
    char path[] = "/tmp/rig_tokenizer_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    write_file(path, text);
    struct rig_tokenizer *tok = (struct rig_tokenizer *)&tok; /* must stay untouched */
    struct rig_tokenizer *before = tok;
    enum rig_status status =
        rig_tokenizer_load_files(path, NULL, &tok, load_error, sizeof load_error);
    remove(path);
    if (status == RIG_OK) {
        rig_tokenizer_free(tok);
        return status;
    }
    assert_ptr_equal(tok, before);
    if (strstr(load_error, message_part) == NULL)
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", load_error, message_part);
    assert_non_null(strstr(load_error, message_part));
    return status;
}

#define MINI_VOCAB "{\"a\": 0, \"b\": 1, \"ab\": 2}"
#define MINI(model_extra, rest)                                                                    \
    "{\"added_tokens\": [], \"model\": {\"type\": \"BPE\", \"vocab\": " MINI_VOCAB                 \
    ", \"merges\": [\"a b\"]" model_extra "}, " rest "}"

static void test_load_errors(void **state)
{
    (void)state;
    struct rig_tokenizer *tok = NULL;
    assert_int_equal(rig_tokenizer_load("/nonexistent/dir", &tok, NULL, 0), RIG_E_IO);
    assert_null(tok);
    assert_int_equal(load_text("{\"model\": ", "tokenizer"), RIG_E_PARSE);
    assert_int_equal(
        load_text("{\"added_tokens\": [], \"model\": {\"type\": \"WordPiece\"}}", "model.type"),
        RIG_E_UNSUPPORTED);
    assert_int_equal(
        load_text(MINI(", \"byte_fallback\": true", "\"decoder\": null"), "model.byte_fallback"),
        RIG_E_UNSUPPORTED);
    assert_int_equal(load_text(MINI("", "\"normalizer\": {\"type\": \"Lowercase\"}"),
                               "normalizer.type \"Lowercase\""),
                     RIG_E_UNSUPPORTED);
    assert_int_equal(
        load_text(MINI("", "\"pre_tokenizer\": {\"type\": \"Whitespace\"}"), "pre_tokenizer.type"),
        RIG_E_UNSUPPORTED);
    assert_int_equal(load_text(MINI("", "\"normalizer\": {\"type\": \"Sequence\", "
                                        "\"normalizers\": [{\"type\": \"Sequence\", "
                                        "\"normalizers\": []}]}"),
                               "nested Sequence"),
                     RIG_E_UNSUPPORTED);
    assert_int_equal(load_text(MINI("", "\"post_processor\": {\"type\": \"RobertaProcessing\"}"),
                               "post_processor.type"),
                     RIG_E_UNSUPPORTED);
    assert_int_equal(load_text(MINI("", "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
                                        "{\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}"),
                               "regex error"),
                     RIG_E_UNSUPPORTED);
    assert_int_equal(load_text(MINI("", "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}, "
                                        "\"decoder\": {\"type\": \"Metaspace\"}"),
                               "decoder.type"),
                     RIG_E_UNSUPPORTED);
    /* A byte-level file whose vocabulary lacks the byte tokens cannot encode every input. */
    assert_int_equal(load_text(MINI("", "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}, "
                                        "\"decoder\": {\"type\": \"ByteLevel\"}"),
                               "has no token"),
                     RIG_E_UNSUPPORTED);
    assert_int_equal(
        load_text("{\"added_tokens\": [], \"model\": {\"type\": \"BPE\", \"vocab\":" MINI_VOCAB
                  ", \"merges\": [\"a c\"]}}",
                  "model.merges[0]"),
        RIG_E_PARSE);
}

/* Loads a tokenizer.json written from `text`: it must fail with `status` and exactly
 * "FILE: `message`". */
static void expect_load_message(const char *text, enum rig_status status, const char *message)
{
    assert_int_equal(load_text(text, message), status);
    const char *error = load_error;
    size_t n = strlen(error), m = strlen(message);
    bool exact = n >= m + 2 && strcmp(error + n - m, message) == 0 &&
                 strncmp(error, "/tmp/rig_tokenizer_test_", 24) == 0 &&
                 strchr(error, ':') == error + n - m - 2;
    if (!exact)
        fail_msg("message \"%s\", expected \"FILE: %s\"", error, message);
}

#define MINI_ADDED(added)                                                                          \
    "{\"added_tokens\": [" added "], \"model\": {\"type\": \"BPE\", \"vocab\": " MINI_VOCAB      \
    ", \"merges\": [\"a b\"]}}"

/* Bad ids, empty or malformed added tokens, duplicate vocabulary ids and regexes that
 * compile but cannot match fail at load, each with an exact message. */
static void test_load_messages(void **state)
{
    (void)state;
    expect_load_message(MINI_ADDED("{\"id\": 3, \"content\": \"<x>\"}, "
                                   "{\"id\": 99999999, \"content\": \"<big>\"}"),
                        RIG_E_PARSE,
                        "added_tokens[1] \"<big>\": id 99999999 is out of range [0, 4194304)");
    expect_load_message(MINI_ADDED("{\"id\": -1, \"content\": \"<neg>\"}"), RIG_E_PARSE,
                        "added_tokens[0] \"<neg>\": id -1 is out of range [0, 4194304)");
    expect_load_message(MINI_ADDED("{\"id\": 3, \"content\": \"\"}"), RIG_E_PARSE,
                        "added_tokens[0] (id 3): empty content");
    expect_load_message(MINI_ADDED("{\"id\": 3}"), RIG_E_PARSE,
                        "added_tokens[0]: needs an integer \"id\" and a string \"content\"");
    expect_load_message(MINI_ADDED("{\"id\": \"3\", \"content\": \"<x>\"}"), RIG_E_PARSE,
                        "added_tokens[0]: needs an integer \"id\" and a string \"content\"");
    expect_load_message("{\"added_tokens\": [], \"model\": {\"type\": \"BPE\", \"vocab\": "
                        "{\"a\": 0, \"b\": 1, \"ab\": 1}, \"merges\": [\"a b\"]}}",
                        RIG_E_PARSE, "model.vocab: \"b\" and \"ab\" both have id 1");
    expect_load_message("{\"added_tokens\": [], \"model\": {\"type\": \"BPE\", \"vocab\": "
                        "{\"a\": 0, \"b\": 5000000}, \"merges\": []}}",
                        RIG_E_PARSE, "model.vocab[\"b\"]: id 5000000 is out of range [0, 4194304)");
    expect_load_message(MINI("", "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
                                 "{\"Regex\": \"(?R)\"}, \"behavior\": \"Isolated\"}"),
                        RIG_E_UNSUPPORTED,
                        "pre_tokenizer Split.pattern.Regex \"(?R)\": regex cannot match: nested "
                        "recursion at the same subject position");
    expect_load_message(MINI("", "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
                                 "{\"Regex\": \"a(\"}, \"behavior\": \"Isolated\"}"),
                        RIG_E_UNSUPPORTED,
                        "pre_tokenizer Split.pattern.Regex \"a(\": regex error at 2: missing "
                        "closing parenthesis");
}

/* With split_special_tokens, special tokens written in the text are plain text (on the small
 * GPT-2-style variant: <|endoftext|> is special, [R] is added but not special). */
static void test_split_special_tokens(void **state)
{
    (void)state;
    char path[] = "/tmp/rig_tokenizer_config_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    write_file(path, "{\"split_special_tokens\": true, \"eos_token\": \"<|endoftext|>\"}");
    struct rig_tokenizer *split;
    assert_int_equal(
        rig_tokenizer_load_files(VARIANTS_DIR "/gpt2/tokenizer.json", path, &split, NULL, 0),
        RIG_OK);
    remove(path);
    int32_t endoftext = rig_tokenizer_token_id(split, "<|endoftext|>");
    int32_t marker = rig_tokenizer_token_id(split, "[R]");
    assert_true(rig_tokenizer_is_special(split, endoftext));
    assert_false(rig_tokenizer_is_special(split, marker));
    const char *text = "a<|endoftext|>b[R] c";
    struct rig_tokenizer_ids ids = {0};
    struct rig_tokenizer_text decoded = {0};
    assert_int_equal(rig_tokenizer_encode(split, NULL, text, strlen(text), true, &ids, NULL, 0),
                     RIG_OK);
    /* HF with encode_special_tokens=True; without it, [264, 2256, 293, 2258, 272]. */
    const int32_t want[] = {264, 27, 91, 408, 78, 723, 427, 91, 29, 65, 2258, 272};
    assert_int_equal(ids.count, RIG_ARRAY_LEN(want));
    assert_memory_equal(ids.ids, want, sizeof want);
    assert_int_equal(endoftext, 2256);
    assert_int_equal(marker, 2258);
    assert_int_equal(rig_tokenizer_decode(split, ids.ids, ids.count, true, &decoded, NULL, 0),
                     RIG_OK);
    assert_string_equal(decoded.data, " a<|endoftext|>b[R] c");
    assert_int_equal(rig_tokenizer_specials(split).eos_id, endoftext);
    rig_tokenizer_ids_free(&ids);
    rig_tokenizer_text_free(&decoded);
    rig_tokenizer_free(split);
}

static void *encode_corpus_thread(void *arg)
{
    int *failures = arg;
    struct rig_tokenizer_work *work;
    if (rig_tokenizer_work_create(qwen3, &work, NULL, 0) != RIG_OK) {
        (*failures)++;
        return NULL;
    }
    struct rig_tokenizer_ids ids = {0};
    for (int round = 0; round < 2; round++) {
        size_t index;
        const json_t *row;
        json_array_foreach(corpus, index, row)
        {
            const json_t *text = json_object_get(row, "text");
            const json_t *expected = json_object_get(row, "ids");
            ids.count = 0;
            if (rig_tokenizer_encode(qwen3, work, json_string_value(text), json_string_length(text),
                                     true, &ids, NULL, 0) != RIG_OK ||
                ids.count != json_array_size(expected)) {
                (*failures)++;
                continue;
            }
            for (size_t i = 0; i < ids.count; i++)
                *failures += ids.ids[i] != json_integer_value(json_array_get(expected, i));
        }
    }
    rig_tokenizer_ids_free(&ids);
    rig_tokenizer_work_free(work);
    return NULL;
}

static void test_threads_share_one_tokenizer(void **state)
{
    (void)state;
    pthread_t threads[4];
    int failures[4] = {0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, encode_corpus_thread, &failures[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(failures[i], 0);
    }
}

/* Long runs must be handled in about linear time and round-trip exactly. */
static void test_pathological_inputs(void **state)
{
    (void)state;
    size_t n = 100000;
    char *text = malloc(n + 2);
    const char fills[] = {' ', 'a', '\n', '7'};
    struct rig_tokenizer_ids ids = {0};
    struct rig_tokenizer_text decoded = {0};
    for (size_t f = 0; f < RIG_ARRAY_LEN(fills); f++) {
        memset(text, fills[f], n);
        text[n] = 'x';
        ids.count = 0;
        decoded.len = 0;
        assert_int_equal(rig_tokenizer_encode(qwen3, NULL, text, n + 1, false, &ids, NULL, 0),
                         RIG_OK);
        assert_true(ids.count > 0 && ids.count <= n + 1);
        assert_int_equal(rig_tokenizer_decode(qwen3, ids.ids, ids.count, false, &decoded, NULL, 0),
                         RIG_OK);
        assert_int_equal(decoded.len, n + 1);
        assert_memory_equal(decoded.data, text, n + 1);
    }
    /* The empty text gives no ids and decodes to "". */
    ids.count = 0;
    assert_int_equal(rig_tokenizer_encode(qwen3, NULL, "", 0, true, &ids, NULL, 0), RIG_OK);
    assert_int_equal(ids.count, 0);
    rig_tokenizer_ids_free(&ids);
    rig_tokenizer_text_free(&decoded);
    free(text);
}

/* Random strings from NFC-stable characters of many scripts encode and decode to themselves. */
static void test_random_round_trip(void **state)
{
    (void)state;
    static const uint32_t ranges[][2] = {
        {0x20, 0x7E},       {0x09, 0x0D},     {0xA0, 0xFF},     {0x391, 0x3C9},
        {0x410, 0x44F},     {0x5D0, 0x5EA},   {0x627, 0x64A},   {0x905, 0x939},
        {0x4E00, 0x9FA5},   {0xAC00, 0xD7A3}, {0x3041, 0x3096}, {0x1F600, 0x1F64F},
        {0x1F3FB, 0x1F3FF}, {0x200B, 0x200D}, {0x2002, 0x200A}, {0x3000, 0x3000},
        {0xFF01, 0xFF5E},
    };
    struct rig_test_rng rng;
    rig_test_rng_seed(&rng, 99);
    struct rig_tokenizer_work *work;
    assert_int_equal(rig_tokenizer_work_create(qwen3, &work, NULL, 0), RIG_OK);
    struct rig_tokenizer_ids ids = {0};
    struct rig_tokenizer_text decoded = {0};
    char text[1024];
    for (int round = 0; round < 2000; round++) {
        size_t len = 0, chars = (size_t)rig_test_rng_int(&rng, 0, 60);
        for (size_t c = 0; c < chars; c++) {
            const uint32_t *range = ranges[rig_test_rng_int(&rng, 0, RIG_ARRAY_LEN(ranges) - 1)];
            uint32_t cp = (uint32_t)rig_test_rng_int(&rng, range[0], range[1]);
            len +=
                (size_t)utf8proc_encode_char((utf8proc_int32_t)cp, (utf8proc_uint8_t *)text + len);
        }
        ids.count = 0;
        decoded.len = 0;
        assert_int_equal(rig_tokenizer_encode(qwen3, work, text, len, true, &ids, NULL, 0), RIG_OK);
        assert_int_equal(rig_tokenizer_decode(qwen3, ids.ids, ids.count, false, &decoded, NULL, 0),
                         RIG_OK);
        assert_int_equal(decoded.len, len);
        assert_memory_equal(decoded.data, text, len);
    }
    rig_tokenizer_ids_free(&ids);
    rig_tokenizer_text_free(&decoded);
    rig_tokenizer_work_free(work);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_matches_hf),
        cmocka_unit_test(test_variants_match_hf),
        cmocka_unit_test(test_stream_every_corpus_string),
        cmocka_unit_test(test_stream_holds_partial_characters),
        cmocka_unit_test(test_invalid_utf8_is_an_error),
        cmocka_unit_test(test_lookups_and_specials),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_load_messages),
        cmocka_unit_test(test_split_special_tokens),
        cmocka_unit_test(test_threads_share_one_tokenizer),
        cmocka_unit_test(test_pathological_inputs),
        cmocka_unit_test(test_random_round_trip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
