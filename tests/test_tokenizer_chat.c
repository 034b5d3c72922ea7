/* test_tokenizer_chat.c — chat templates written in C against transformers.
 *
 * Every rendering in tests/data/tokenizer/chat.jsonl (written by
 * tools/tokenizer/make_reference.py: transformers' apply_chat_template for Qwen3 — system
 * prompts, multi-turn, <think> splitting, reasoning_content, tool turns, add_generation_prompt,
 * enable_thinking undefined/true/false, tool definitions and assistant tool calls with every JSON
 * value kind, Python float reprs and control-character escapes — and transformers' Jinja
 * renderer with the Meta-Llama-3 template) is reproduced byte for byte, and the Qwen3 renderings
 * tokenise to HF's ids. Also: template recognition from tokenizer_config.json (known, unknown,
 * absent), the ChatML fallback, and invalid conversations, tools and tool calls rejected with the
 * output left as it was.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text/tokenizer.h"
#include "tests/support/test_support.h"

#define DATA RIG_TEST_DATA_DIR "/tokenizer"
/* The small Llama-3-style variant: quick to load, for the configuration cases. */
#define LLAMA3_JSON DATA "/variants/llama3/tokenizer.json"

static struct rig_tokenizer *qwen3, *llama3;

static int setup(void **state)
{
    (void)state;
    char error[512];
    if (rig_tokenizer_load(DATA "/qwen3", &qwen3, error, sizeof error) != RIG_OK ||
        rig_tokenizer_load(DATA "/variants/llama3", &llama3, error, sizeof error) != RIG_OK) {
        fprintf(stderr, "load: %s\n", error);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rig_tokenizer_free(qwen3);
    rig_tokenizer_free(llama3);
    return 0;
}

/* Renders one reference row and compares text (and ids for Qwen3). */
static void check_row(const json_t *row, size_t index)
{
    const char *template = json_string_value(json_object_get(row, "template"));
    bool is_qwen = strcmp(template, "qwen3") == 0;
    const struct rig_tokenizer *tok = is_qwen ? qwen3 : llama3;
    const json_t *messages_json = json_object_get(row, "messages");
    size_t count = json_array_size(messages_json);
    struct rig_chat_message messages[16];
    char *tool_calls[16] = {0}; /* JSON text handed to the renderer, as a server would */
    assert_true(count <= 16);
    for (size_t i = 0; i < count; i++) {
        const json_t *message = json_array_get(messages_json, i);
        const json_t *calls = json_object_get(message, "tool_calls");
        tool_calls[i] = calls ? json_dumps(calls, JSON_COMPACT) : NULL;
        messages[i] = (struct rig_chat_message){
            .role = json_string_value(json_object_get(message, "role")),
            .content = json_string_value(json_object_get(message, "content")),
            .reasoning_content = json_string_value(json_object_get(message, "reasoning_content")),
            .tool_calls_json = tool_calls[i]};
    }
    const json_t *thinking = json_object_get(row, "enable_thinking");
    const json_t *tools = json_object_get(row, "tools");
    char *tools_json = json_is_array(tools) ? json_dumps(tools, JSON_COMPACT) : NULL;
    struct rig_chat_options options = {
        .add_generation_prompt = json_is_true(json_object_get(row, "add_generation_prompt")),
        .enable_thinking = !json_is_false(thinking),
        .tools_json = tools_json};
    struct rig_tokenizer_text text = {0};
    assert_int_equal(rig_tokenizer_chat_render(tok, rig_tokenizer_chat_template(tok), messages,
                                               count, &options, &text, NULL, 0),
                     RIG_OK);
    const char *want = json_string_value(json_object_get(row, "text"));
    if (strcmp(text.data, want) != 0)
        fprintf(stderr, "row %zu (%s):\n--- got\n%s\n--- want\n%s\n", index, template, text.data,
                want);
    assert_string_equal(text.data, want);
    const json_t *ids_json = json_object_get(row, "ids");
    if (is_qwen) {
        struct rig_tokenizer_ids ids = {0};
        assert_int_equal(rig_tokenizer_encode(tok, NULL, text.data, text.len, false, &ids, NULL, 0),
                         RIG_OK);
        assert_int_equal(ids.count, json_array_size(ids_json));
        for (size_t i = 0; i < ids.count; i++)
            assert_int_equal(ids.ids[i], json_integer_value(json_array_get(ids_json, i)));
        rig_tokenizer_ids_free(&ids);
    }
    rig_tokenizer_text_free(&text);
    for (size_t i = 0; i < count; i++)
        free(tool_calls[i]);
    free(tools_json);
}

static void test_renderings_match_transformers(void **state)
{
    (void)state;
    FILE *file = fopen(DATA "/chat.jsonl", "r");
    assert_non_null(file);
    char *line = NULL;
    size_t capacity = 0, rows = 0, llama_rows = 0;
    while (getline(&line, &capacity, file) > 0) {
        json_error_t error;
        json_t *row = json_loads(line, 0, &error);
        assert_non_null(row);
        check_row(row, rows++);
        llama_rows += strcmp(json_string_value(json_object_get(row, "template")), "llama3") == 0;
        json_decref(row);
    }
    free(line);
    fclose(file);
    assert_true(rows >= 100);
    assert_true(llama_rows >= 30);
}

static void test_template_recognition(void **state)
{
    (void)state;
    assert_int_equal(rig_tokenizer_chat_template(qwen3), RIG_CHAT_TEMPLATE_QWEN3);
    assert_int_equal(rig_tokenizer_chat_template(llama3), RIG_CHAT_TEMPLATE_LLAMA3);
    assert_string_equal(rig_chat_template_name(RIG_CHAT_TEMPLATE_QWEN3), "qwen3");
    /* A template differing by one character is unknown; no config means no template. */
    char path[] = "/tmp/rig_chat_config_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *file = fdopen(fd, "w");
    fputs("{\"eos_token\": \"<|eot_id|>\", \"chat_template\": \"{{ messages }} \"}", file);
    fclose(file);
    struct rig_tokenizer *tok;
    char error[512];
    assert_int_equal(rig_tokenizer_load_files(LLAMA3_JSON, path, &tok, NULL, 0), RIG_OK);
    assert_int_equal(rig_tokenizer_chat_template(tok), RIG_CHAT_TEMPLATE_UNKNOWN);
    struct rig_chat_message message = {.role = "user", .content = "hi"};
    struct rig_chat_options options = {.add_generation_prompt = true, .enable_thinking = true};
    struct rig_tokenizer_text text = {0};
    assert_int_equal(rig_tokenizer_chat_render(tok, RIG_CHAT_TEMPLATE_UNKNOWN, &message, 1,
                                               &options, &text, error, sizeof error),
                     RIG_E_UNSUPPORTED);
    assert_non_null(strstr(error, "chatml"));
    assert_int_equal(text.len, 0);
    /* The documented fallback: plain ChatML. */
    assert_int_equal(rig_tokenizer_chat_render(tok, RIG_CHAT_TEMPLATE_CHATML, &message, 1, &options,
                                               &text, NULL, 0),
                     RIG_OK);
    assert_string_equal(text.data, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    rig_tokenizer_free(tok);
    /* A config naming a token the vocabulary lacks is a parse error naming the field. */
    file = fopen(path, "w");
    fputs("{\"eos_token\": {\"content\": \"<no-such-token>\"}}", file);
    fclose(file);
    assert_int_equal(rig_tokenizer_load_files(LLAMA3_JSON, path, &tok, error, sizeof error),
                     RIG_E_PARSE);
    assert_non_null(strstr(error, "eos_token"));
    remove(path);
    assert_int_equal(rig_tokenizer_load_files(LLAMA3_JSON, NULL, &tok, NULL, 0), RIG_OK);
    assert_int_equal(rig_tokenizer_chat_template(tok), RIG_CHAT_TEMPLATE_NONE);
    assert_int_equal(rig_tokenizer_specials(tok).eos_id, -1);
    assert_int_equal(rig_tokenizer_specials(tok).bos_id, -1);
    rig_tokenizer_free(tok);
    rig_tokenizer_text_free(&text);
}

static void test_invalid_conversations(void **state)
{
    (void)state;
    struct rig_chat_options options = {.add_generation_prompt = true, .enable_thinking = true};
    struct rig_tokenizer_text text = {0};
    char error[512];
    assert_int_equal(rig_tokenizer_chat_render(qwen3, RIG_CHAT_TEMPLATE_QWEN3, NULL, 0, &options,
                                               &text, NULL, 0),
                     RIG_E_INVALID);
    struct rig_chat_message bad[] = {{.role = "user", .content = "ok"}, {.role = "user"}};
    struct rig_tokenizer_text kept = {0};
    assert_int_equal(rig_tokenizer_chat_render(qwen3, RIG_CHAT_TEMPLATE_CHATML, bad, 1, &options,
                                               &kept, NULL, 0),
                     RIG_OK);
    size_t len = kept.len;
    assert_int_equal(
        rig_tokenizer_chat_render(qwen3, RIG_CHAT_TEMPLATE_QWEN3, bad, 2, &options, &kept, NULL, 0),
        RIG_E_INVALID);
    assert_int_equal(kept.len, len);
    /* Llama-3 needs a BOS token; Qwen3's config has none. */
    assert_int_equal(rig_tokenizer_chat_render(qwen3, RIG_CHAT_TEMPLATE_LLAMA3, bad, 1, &options,
                                               &kept, NULL, 0),
                     RIG_E_INVALID);
    assert_int_equal(kept.len, len);
    assert_int_equal(strlen(kept.data), len);
    /* Tools and tool calls must be the JSON the template expects; nothing is appended if not. */
    struct rig_chat_options with_tools = options;
    const char *bad_tools[] = {"{\"name\": \"x\"}", "[1,", "\"text\""};
    for (size_t i = 0; i < RIG_ARRAY_LEN(bad_tools); i++) {
        with_tools.tools_json = bad_tools[i];
        assert_int_equal(rig_tokenizer_chat_render(qwen3, RIG_CHAT_TEMPLATE_QWEN3, bad, 1,
                                                   &with_tools, &kept, NULL, 0),
                         RIG_E_INVALID);
        assert_int_equal(kept.len, len);
    }
    struct rig_chat_message calls[] = {
        {.role = "user", .content = "q"},
        {.role = "assistant", .content = "", .tool_calls_json = "[{\"name\": \"f\"}]"}};
    assert_int_equal(rig_tokenizer_chat_render(qwen3, RIG_CHAT_TEMPLATE_QWEN3, calls, 2, &options,
                                               &kept, error, sizeof error),
                     RIG_E_INVALID);
    assert_non_null(strstr(error, "arguments"));
    assert_int_equal(kept.len, len);
    /* Arguments nested deeper than the renderer's bound are refused, not truncated. */
    char deep[300] = "[{\"name\": \"f\", \"arguments\": ";
    size_t at = strlen(deep);
    for (int i = 0; i < 70; i++)
        deep[at++] = '[';
    for (int i = 0; i < 70; i++)
        deep[at++] = ']';
    memcpy(deep + at, "}]", 3);
    calls[1].tool_calls_json = deep;
    assert_int_equal(rig_tokenizer_chat_render(qwen3, RIG_CHAT_TEMPLATE_QWEN3, calls, 2, &options,
                                               &kept, NULL, 0),
                     RIG_E_CAPACITY);
    assert_int_equal(kept.len, len);
    rig_tokenizer_text_free(&text);
    rig_tokenizer_text_free(&kept);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renderings_match_transformers),
        cmocka_unit_test(test_template_recognition),
        cmocka_unit_test(test_invalid_conversations),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
