/* test_config.c — Hugging Face config.json parsing (core/model/config.c) and the presets.
 *
 * Checks the built-in presets against the published shapes (Qwen3-0.6B has 596,049,920
 * parameters), the transformers-5 configs of the golden models (rope_parameters), both RoPE
 * spellings, and that every unsupported feature or malformed field is refused with a message
 * naming the file and the field while the output struct stays untouched.
 */
#include <string.h>

#include "core/model/model.h"
#include "tests/support/test_support.h"

static void test_presets(void **state)
{
    (void)state;
    struct rig_model_config c;
    assert_int_equal(rig_model_config_preset("tiny", &c), RIG_OK);
    assert_string_equal(c.name, "tiny");
    assert_int_equal(c.arch, RIG_ARCH_QWEN3);
    assert_true(c.qk_norm);
    assert_false(c.qkv_bias);
    assert_true(c.num_kv_heads < c.num_heads);
    assert_true(c.vocab_size >= 512 && c.vocab_size <= 2048);

    assert_int_equal(rig_model_config_preset("qwen3-0.6b", &c), RIG_OK);
    assert_int_equal(c.hidden_size, 1024);
    assert_int_equal(c.num_heads, 16);
    assert_int_equal(c.num_kv_heads, 8);
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(c.num_layers, 28);
    assert_int_equal(c.vocab_size, 151936);
    assert_true(c.tie_word_embeddings);
    assert_int_equal(c.eos_count, 1);
    assert_int_equal(c.eos_token_ids[0], 151645);
    assert_int_equal(c.bos_token_id, 151643);
    assert_float_equal(c.rope.theta, 1000000.0f, 0.5f);
    assert_int_equal(c.rope.scaling, RIG_ROPE_SCALING_NONE);
    assert_int_equal(rig_model_weight_bytes(&c, 1), 2ull * 596049920ull);
    assert_int_equal(rig_model_kv_bytes_per_slot(&c, 1), 28 * 2 * 8 * 128 * 2);
    assert_int_equal(rig_model_kv_bytes_per_slot(&c, 2), 28 * 2 * 4 * 128 * 2);
    /* More ranks than KV heads: one replicated KV head per rank. */
    assert_int_equal(rig_model_kv_heads_per_rank(&c, 16), 1);

    assert_int_equal(rig_model_config_preset("qwen3-32b", &c), RIG_OK);
    assert_false(c.tie_word_embeddings);
    assert_int_equal(c.num_layers, 64);
    assert_int_equal(rig_model_config_preset("qwen3-8b", &c), RIG_OK);
    assert_int_equal(c.hidden_size, 4096);

    assert_int_equal(rig_model_config_preset("llama-3.2-1b", &c), RIG_OK);
    assert_int_equal(c.arch, RIG_ARCH_LLAMA);
    assert_false(c.qk_norm);
    assert_int_equal(c.head_dim, 64);
    assert_int_equal(c.rope.scaling, RIG_ROPE_SCALING_LLAMA3);
    assert_float_equal(c.rope.factor, 32.0f, 0.0f);
    assert_float_equal(c.rope.low_freq_factor, 1.0f, 0.0f);
    assert_float_equal(c.rope.high_freq_factor, 4.0f, 0.0f);
    assert_int_equal(c.rope.original_max_position, 8192);
    assert_float_equal(c.rope.theta, 500000.0f, 0.5f);
    assert_int_equal(c.eos_count, 3);
    assert_int_equal(c.eos_token_ids[2], 128009);
    assert_float_equal(c.rms_norm_eps, 1e-5f, 1e-12f);

    assert_int_equal(rig_model_config_preset("gpt2", &c), RIG_E_NOT_FOUND);
    assert_int_equal(rig_model_config_preset("../tiny", &c), RIG_E_NOT_FOUND);
}

static void test_golden_configs(void **state)
{
    (void)state;
    struct rig_model_config c;
    char error[256];
    assert_int_equal(rig_model_config_load(RIG_TEST_DATA_DIR "/golden/llama", &c, error,
                                           sizeof error), RIG_OK);
    assert_string_equal(c.name, "llama");
    assert_int_equal(c.vocab_size, 1001);
    assert_int_equal(c.rope.scaling, RIG_ROPE_SCALING_LLAMA3);
    assert_int_equal(c.rope.original_max_position, 64);
    assert_float_equal(c.rope.theta, 500000.0f, 0.5f);
    assert_false(c.tie_word_embeddings);
    assert_int_equal(c.eos_count, 2);

    assert_int_equal(rig_model_config_load(RIG_TEST_DATA_DIR "/golden/qwen2/config.json", &c,
                                           error, sizeof error), RIG_OK);
    assert_string_equal(c.name, "qwen2");
    assert_int_equal(c.arch, RIG_ARCH_QWEN2);
    assert_true(c.qkv_bias);
    assert_int_equal(c.num_kv_heads, 1);
    assert_int_equal(c.head_dim, 16);

    assert_int_equal(rig_model_config_load(RIG_TEST_DATA_DIR "/golden/qwen3/", &c, error,
                                           sizeof error), RIG_OK);
    assert_int_equal(c.head_dim, 64); /* Hq * D = 256 != hidden 128 */
    assert_true(c.tie_word_embeddings);
    assert_float_equal(c.rope.theta, 1000000.0f, 0.5f);

    assert_int_equal(rig_model_config_load(RIG_TEST_DATA_DIR "/golden/nonexistent", &c, error,
                                           sizeof error), RIG_E_IO);
    assert_non_null(strstr(error, "nonexistent/config.json"));
}

/* A base config; each case replaces one field by substituting text. */
static const char *rig__base =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 100, \"hidden_size\": 64,"
    " \"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
    " \"num_key_value_heads\": 2, \"hidden_act\": \"silu\", \"rope_theta\": 10000.0,"
    " \"max_position_embeddings\": 512, \"eos_token_id\": 2 XX}";

static enum rig_status rig__parse_with(const char *extra, struct rig_model_config *c,
                                       char *error, size_t error_len)
{
    char text[2048];
    const char *mark = strstr(rig__base, "XX");
    int n = snprintf(text, sizeof text, "%.*s%s%s", (int)(mark - rig__base), rig__base, extra,
                     mark + 2);
    assert_true(n > 0 && (size_t)n < sizeof text);
    return rig_model_config_parse(text, strlen(text), "cfg.json", c, error, error_len);
}

static void test_defaults_and_spellings(void **state)
{
    (void)state;
    struct rig_model_config c;
    char error[256];
    assert_int_equal(rig__parse_with("", &c, error, sizeof error), RIG_OK);
    assert_int_equal(c.head_dim, 16); /* hidden / heads */
    assert_false(c.tie_word_embeddings);
    assert_int_equal(c.bos_token_id, -1);
    assert_float_equal(c.rms_norm_eps, 1e-6f, 1e-12f);
    assert_string_equal(c.name, "");

    /* transformers 4 spelling with the older "type" key. */
    assert_int_equal(rig__parse_with(", \"rope_scaling\": {\"type\": \"llama3\", \"factor\": 8,"
                                     " \"low_freq_factor\": 1, \"high_freq_factor\": 4,"
                                     " \"original_max_position_embeddings\": 8192}",
                                     &c, error, sizeof error), RIG_OK);
    assert_int_equal(c.rope.scaling, RIG_ROPE_SCALING_LLAMA3);
    assert_float_equal(c.rope.factor, 8.0f, 0.0f);
    /* transformers 5 spelling overrides rope_theta. */
    assert_int_equal(rig__parse_with(", \"rope_parameters\": {\"rope_type\": \"default\","
                                     " \"rope_theta\": 250000}", &c, error, sizeof error),
                     RIG_OK);
    assert_float_equal(c.rope.theta, 250000.0f, 0.0f);
    assert_int_equal(c.rope.scaling, RIG_ROPE_SCALING_NONE);

    assert_int_equal(rig__parse_with(", \"model_type\": \"x\", \"architectures\": null", &c,
                                     error, sizeof error), RIG_E_PARSE);
    /* Mistral without a window, a model_type-only Qwen2, a window beyond the context. */
    const char *mistral = "{\"model_type\": \"mistral\", \"vocab_size\": 10, \"hidden_size\": 8,"
                          " \"intermediate_size\": 8, \"num_hidden_layers\": 1,"
                          " \"num_attention_heads\": 2, \"sliding_window\": null}";
    assert_int_equal(rig_model_config_parse(mistral, strlen(mistral), "m.json", &c, error,
                                            sizeof error), RIG_OK);
    assert_int_equal(c.arch, RIG_ARCH_MISTRAL);
    assert_int_equal(c.num_kv_heads, 2);
    assert_int_equal(c.max_position, 131072);
}

struct rig__bad_case {
    const char *extra;
    enum rig_status status;
    const char *field;
};

static void test_refusals(void **state)
{
    (void)state;
    static const struct rig__bad_case cases[] = {
        {", \"mlp_bias\": true", RIG_E_UNSUPPORTED, "mlp_bias"},
        {", \"attention_bias\": true", RIG_E_UNSUPPORTED, "attention_bias"},
        {", \"sliding_window\": 128", RIG_E_UNSUPPORTED, "sliding_window"},
        {", \"use_sliding_window\": true", RIG_E_UNSUPPORTED, "use_sliding_window"},
        {", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4}", RIG_E_UNSUPPORTED,
         "rope_scaling"},
        {", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 4}", RIG_E_PARSE,
         "low_freq_factor"},
        {", \"head_dim\": 15", RIG_E_INVALID, "head_dim"},
        {", \"tie_word_embeddings\": 1", RIG_E_PARSE, "tie_word_embeddings"},
        {", \"bos_token_id\": 100", RIG_E_RANGE, "bos_token_id"},
        {", \"rms_norm_eps\": -1", RIG_E_RANGE, "rms_norm_eps"},
        {", \"head_dim\": 16.5", RIG_E_PARSE, "head_dim"},
        {", \"layer_types\": [\"full_attention\", \"sliding_attention\"]", RIG_E_UNSUPPORTED,
         "layer 1 is 'sliding_attention'"},
    };
    for (size_t i = 0; i < RIG_ARRAY_LEN(cases); i++) {
        struct rig_model_config c;
        memset(&c, 0x5a, sizeof c);
        char error[256] = "";
        enum rig_status status = rig__parse_with(cases[i].extra, &c, error, sizeof error);
        if (status != cases[i].status) fail_msg("case %zu: %s", i, error);
        if (strstr(error, "cfg.json: field '") == NULL) fail_msg("case %zu: %s", i, error);
        if (strstr(error, cases[i].field) == NULL)
            fail_msg("case %zu: '%s' does not name '%s'", i, error, cases[i].field);
        assert_int_equal(((unsigned char *)&c)[0], 0x5a); /* untouched */
    }
}

static void test_refusals_whole_configs(void **state)
{
    (void)state;
    struct rig_model_config c;
    char error[256];
    const char *gpt2 = "{\"architectures\": [\"GPT2LMHeadModel\"], \"vocab_size\": 10}";
    assert_int_equal(rig_model_config_parse(gpt2, strlen(gpt2), "g.json", &c, error,
                                            sizeof error), RIG_E_UNSUPPORTED);
    assert_non_null(strstr(error, "g.json: field 'architectures'"));
    assert_non_null(strstr(error, "GPT2LMHeadModel"));
    const char *gelu = "{\"model_type\": \"qwen3\", \"vocab_size\": 10, \"hidden_size\": 8,"
                       " \"intermediate_size\": 8, \"num_hidden_layers\": 1,"
                       " \"num_attention_heads\": 2, \"hidden_act\": \"gelu\"}";
    assert_int_equal(rig_model_config_parse(gelu, strlen(gelu), "g.json", &c, error,
                                            sizeof error), RIG_E_UNSUPPORTED);
    assert_non_null(strstr(error, "hidden_act"));
    const char *no_vocab = "{\"model_type\": \"qwen3\", \"hidden_size\": 8}";
    assert_int_equal(rig_model_config_parse(no_vocab, strlen(no_vocab), "g.json", &c, error,
                                            sizeof error), RIG_E_PARSE);
    assert_non_null(strstr(error, "'vocab_size': missing"));
    const char *gqa = "{\"model_type\": \"qwen3\", \"vocab_size\": 10, \"hidden_size\": 8,"
                      " \"intermediate_size\": 8, \"num_hidden_layers\": 1,"
                      " \"num_attention_heads\": 4, \"num_key_value_heads\": 3}";
    assert_int_equal(rig_model_config_parse(gqa, strlen(gqa), "g.json", &c, error,
                                            sizeof error), RIG_E_INVALID);
    assert_non_null(strstr(error, "num_key_value_heads"));
    const char *broken = "{\"model_type\": \"qwen3\",\n \"vocab_size\": }";
    assert_int_equal(rig_model_config_parse(broken, strlen(broken), "b.json", &c, error,
                                            sizeof error), RIG_E_PARSE);
    assert_non_null(strstr(error, "b.json:2:"));
    const char *array = "[1, 2]";
    assert_int_equal(rig_model_config_parse(array, strlen(array), "a.json", &c, error,
                                            sizeof error), RIG_E_PARSE);
    const char *eos = "{\"model_type\": \"qwen3\", \"vocab_size\": 10, \"hidden_size\": 8,"
                      " \"intermediate_size\": 8, \"num_hidden_layers\": 1,"
                      " \"num_attention_heads\": 2, \"eos_token_id\": [1, 10]}";
    assert_int_equal(rig_model_config_parse(eos, strlen(eos), "e.json", &c, error,
                                            sizeof error), RIG_E_RANGE);
    assert_non_null(strstr(error, "eos_token_id"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_golden_configs),
        cmocka_unit_test(test_defaults_and_spellings),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_refusals_whole_configs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
