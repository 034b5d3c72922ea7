/* config.c — Hugging Face config.json → struct rig_model_config, and the built-in presets.
 *
 * Supported: Qwen3ForCausalLM, Qwen2ForCausalLM, LlamaForCausalLM, MistralForCausalLM, with
 * SiLU MLPs, optional llama3 RoPE scaling, tied or untied embeddings. Both spellings of RoPE
 * settings are read: `rope_theta` + `rope_scaling` (transformers 4) and `rope_parameters`
 * (transformers 5). Anything the forward cannot run (another architecture or activation,
 * o_proj/MLP biases, sliding windows, another RoPE type) is an error that names the file and
 * the field, never a silent approximation. Every number is range-checked, so a config that
 * parses is one the model can size buffers from without overflow.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hal/embedded.h"
#include "core/model/model.h"

#define RIG__CONFIG_BYTES_MAX (1 << 20) /* a config.json is a few KB; refuse anything huge */

struct rig__config_parse {
    const char *source; /* file name or "preset NAME", for messages */
    char *error;
    size_t error_len;
};

static enum rig_status rig__config_fail(struct rig__config_parse *ctx, enum rig_status status,
                                        const char *field, const char *format, ...)
{
    if (ctx->error == NULL || ctx->error_len == 0) return status;
    int used = snprintf(ctx->error, ctx->error_len, "%s: field '%s': ", ctx->source, field);
    if (used < 0 || (size_t)used >= ctx->error_len) return status;
    va_list ap;
    va_start(ap, format);
    vsnprintf(ctx->error + used, ctx->error_len - (size_t)used, format, ap);
    va_end(ap);
    return status;
}

/* Reads an integer field in [lo, hi]. Absent or null gives `fallback` unless `required`. */
static enum rig_status rig__get_int(struct rig__config_parse *ctx, const json_t *obj,
                                    const char *key, bool required, int64_t fallback,
                                    int64_t lo, int64_t hi, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_null(v)) {
        if (required) return rig__config_fail(ctx, RIG_E_PARSE, key, "missing");
        *out = fallback;
        return RIG_OK;
    }
    double d = json_is_real(v) ? json_real_value(v) : 0.0;
    /* Range first: converting a double outside int64 (1e24) is undefined behaviour. */
    bool integral_real = json_is_real(v) && d > -9.2e18 && d < 9.2e18 && d == (double)(int64_t)d;
    if (!json_is_integer(v) && !integral_real)
        return rig__config_fail(ctx, RIG_E_PARSE, key, "must be an integer");
    int64_t value = json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)d;
    if (value < lo || value > hi)
        return rig__config_fail(ctx, RIG_E_RANGE, key, "%lld is outside [%lld, %lld]",
                                (long long)value, (long long)lo, (long long)hi);
    *out = value;
    return RIG_OK;
}

/* Reads a positive finite number; absent or null gives `fallback` unless `required`. */
static enum rig_status rig__get_float(struct rig__config_parse *ctx, const json_t *obj,
                                      const char *key, bool required, double fallback,
                                      float *out)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_null(v)) {
        if (required) return rig__config_fail(ctx, RIG_E_PARSE, key, "missing");
        *out = (float)fallback;
        return RIG_OK;
    }
    if (!json_is_number(v)) return rig__config_fail(ctx, RIG_E_PARSE, key, "must be a number");
    double d = json_number_value(v);
    if (!(d > 0.0) || d > 1e30) return rig__config_fail(ctx, RIG_E_RANGE, key, "must be > 0");
    *out = (float)d;
    return RIG_OK;
}

static enum rig_status rig__get_bool(struct rig__config_parse *ctx, const json_t *obj,
                                     const char *key, bool fallback, bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_null(v)) {
        *out = fallback;
        return RIG_OK;
    }
    if (!json_is_boolean(v)) return rig__config_fail(ctx, RIG_E_PARSE, key, "must be a boolean");
    *out = json_is_true(v);
    return RIG_OK;
}

static const struct {
    const char *architecture;
    const char *model_type;
    enum rig_model_arch arch;
    int64_t max_position_default; /* the transformers config class default */
} rig__archs[] = {
    {"Qwen3ForCausalLM", "qwen3", RIG_ARCH_QWEN3, 32768},
    {"Qwen2ForCausalLM", "qwen2", RIG_ARCH_QWEN2, 32768},
    {"LlamaForCausalLM", "llama", RIG_ARCH_LLAMA, 2048},
    {"MistralForCausalLM", "mistral", RIG_ARCH_MISTRAL, 131072},
};

/* The architecture from `architectures[0]`, else from `model_type`. */
static enum rig_status rig__parse_arch(struct rig__config_parse *ctx, const json_t *root,
                                       struct rig_model_config *out, int64_t *max_position)
{
    const json_t *list = json_object_get(root, "architectures");
    const char *field = "architectures";
    const char *name = NULL;
    if (json_is_array(list) && json_array_size(list) > 0) {
        if (json_array_size(list) != 1)
            return rig__config_fail(ctx, RIG_E_UNSUPPORTED, field, "exactly one expected");
        name = json_string_value(json_array_get(list, 0));
    } else {
        field = "model_type";
        name = json_string_value(json_object_get(root, "model_type"));
    }
    if (name == NULL) return rig__config_fail(ctx, RIG_E_PARSE, field, "missing or not a string");
    for (size_t i = 0; i < RIG_ARRAY_LEN(rig__archs); i++) {
        const char *known = field[0] == 'a' ? rig__archs[i].architecture : rig__archs[i].model_type;
        if (strcmp(name, known) != 0) continue;
        out->arch = rig__archs[i].arch;
        *max_position = rig__archs[i].max_position_default;
        return RIG_OK;
    }
    return rig__config_fail(ctx, RIG_E_UNSUPPORTED, field,
                            "'%s' is not supported (supported: Qwen3ForCausalLM, "
                            "Qwen2ForCausalLM, LlamaForCausalLM, MistralForCausalLM)",
                            name);
}

static enum rig_status rig__parse_shape(struct rig__config_parse *ctx, const json_t *root,
                                        struct rig_model_config *out)
{
    int64_t v, heads, kv_heads, hidden;
    RIG_TRY(rig__get_int(ctx, root, "vocab_size", true, 0, 1, 1 << 22, &v));
    out->vocab_size = (int32_t)v;
    RIG_TRY(rig__get_int(ctx, root, "hidden_size", true, 0, 1, 1 << 16, &hidden));
    out->hidden_size = (int32_t)hidden;
    RIG_TRY(rig__get_int(ctx, root, "intermediate_size", true, 0, 1, 1 << 18, &v));
    out->intermediate_size = (int32_t)v;
    RIG_TRY(rig__get_int(ctx, root, "num_hidden_layers", true, 0, 1, 1024, &v));
    out->num_layers = (int32_t)v;
    RIG_TRY(rig__get_int(ctx, root, "num_attention_heads", true, 0, 1, 1024, &heads));
    out->num_heads = (int32_t)heads;
    RIG_TRY(rig__get_int(ctx, root, "num_key_value_heads", false, heads, 1, heads, &kv_heads));
    if (heads % kv_heads != 0)
        return rig__config_fail(ctx, RIG_E_INVALID, "num_key_value_heads",
                                "%lld does not divide num_attention_heads %lld",
                                (long long)kv_heads, (long long)heads);
    out->num_kv_heads = (int32_t)kv_heads;
    if (hidden % heads != 0 && json_object_get(root, "head_dim") == NULL)
        return rig__config_fail(ctx, RIG_E_INVALID, "head_dim",
                                "missing and hidden_size is not a multiple of the heads");
    RIG_TRY(rig__get_int(ctx, root, "head_dim", false, hidden / heads, 2, 1024, &v));
    if (v % 2 != 0) return rig__config_fail(ctx, RIG_E_INVALID, "head_dim", "must be even");
    out->head_dim = (int32_t)v;
    return RIG_OK;
}

/* The llama3 scaling parameters, from `rope_scaling` or `rope_parameters`. */
static enum rig_status rig__parse_llama3(struct rig__config_parse *ctx, const json_t *obj,
                                         struct rig_rope_params *rope)
{
    int64_t original;
    rope->scaling = RIG_ROPE_SCALING_LLAMA3;
    RIG_TRY(rig__get_float(ctx, obj, "factor", true, 0.0, &rope->factor));
    RIG_TRY(rig__get_float(ctx, obj, "low_freq_factor", true, 0.0, &rope->low_freq_factor));
    RIG_TRY(rig__get_float(ctx, obj, "high_freq_factor", true, 0.0, &rope->high_freq_factor));
    RIG_TRY(rig__get_int(ctx, obj, "original_max_position_embeddings", true, 0, 1, 1 << 24,
                          &original));
    rope->original_max_position = (int32_t)original;
    if (!(rope->high_freq_factor > rope->low_freq_factor))
        return rig__config_fail(ctx, RIG_E_INVALID, "rope_scaling.high_freq_factor",
                                "must exceed low_freq_factor");
    return RIG_OK;
}

static enum rig_status rig__parse_rope(struct rig__config_parse *ctx, const json_t *root,
                                       struct rig_rope_params *rope)
{
    memset(rope, 0, sizeof *rope);
    const json_t *params = json_object_get(root, "rope_parameters");
    const char *field = "rope_parameters";
    if (params == NULL || json_is_null(params)) {
        params = json_object_get(root, "rope_scaling");
        field = "rope_scaling";
    }
    RIG_TRY(rig__get_float(ctx, root, "rope_theta", false, 10000.0, &rope->theta));
    if (params == NULL || json_is_null(params)) return RIG_OK;
    if (!json_is_object(params)) return rig__config_fail(ctx, RIG_E_PARSE, field, "not an object");
    RIG_TRY(rig__get_float(ctx, params, "rope_theta", false, rope->theta, &rope->theta));
    const char *type = json_string_value(json_object_get(params, "rope_type"));
    if (type == NULL) type = json_string_value(json_object_get(params, "type"));
    if (type == NULL || strcmp(type, "default") == 0) return RIG_OK;
    if (strcmp(type, "llama3") == 0) return rig__parse_llama3(ctx, params, rope);
    return rig__config_fail(ctx, RIG_E_UNSUPPORTED, field,
                            "rope_type '%s' is not supported (supported: default, llama3)", type);
}

/* Token ids: an integer, a list of integers, or null. */
static enum rig_status rig__parse_tokens(struct rig__config_parse *ctx, const json_t *root,
                                         struct rig_model_config *out)
{
    int64_t bos;
    RIG_TRY(rig__get_int(ctx, root, "bos_token_id", false, -1, -1, out->vocab_size - 1, &bos));
    out->bos_token_id = (int32_t)bos;
    out->eos_count = 0;
    const json_t *eos = json_object_get(root, "eos_token_id");
    if (eos == NULL || json_is_null(eos)) return RIG_OK;
    size_t count = json_is_array(eos) ? json_array_size(eos) : 1;
    if (count > RIG_MODEL_EOS_MAX)
        return rig__config_fail(ctx, RIG_E_CAPACITY, "eos_token_id", "more than %d ids",
                                RIG_MODEL_EOS_MAX);
    for (size_t i = 0; i < count; i++) {
        const json_t *v = json_is_array(eos) ? json_array_get(eos, i) : eos;
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= out->vocab_size)
            return rig__config_fail(ctx, RIG_E_RANGE, "eos_token_id",
                                    "ids must be integers in [0, vocab_size)");
        out->eos_token_ids[out->eos_count++] = (int32_t)json_integer_value(v);
    }
    return RIG_OK;
}

/* Features the forward does not implement: refused by name. */
static enum rig_status rig__refuse_unsupported(struct rig__config_parse *ctx, const json_t *root,
                                               int64_t max_position)
{
    const json_t *act = json_object_get(root, "hidden_act");
    if (act != NULL && !json_is_null(act) &&
        (!json_is_string(act) || strcmp(json_string_value(act), "silu") != 0))
        return rig__config_fail(ctx, RIG_E_UNSUPPORTED, "hidden_act", "only 'silu' is supported");
    bool flag = false;
    RIG_TRY(rig__get_bool(ctx, root, "mlp_bias", false, &flag));
    if (flag) return rig__config_fail(ctx, RIG_E_UNSUPPORTED, "mlp_bias", "true is not supported");
    RIG_TRY(rig__get_bool(ctx, root, "use_sliding_window", false, &flag));
    if (flag)
        return rig__config_fail(ctx, RIG_E_UNSUPPORTED, "use_sliding_window",
                                "sliding-window attention is not supported");
    const json_t *types = json_object_get(root, "layer_types"); /* transformers 5 */
    for (size_t i = 0; json_is_array(types) && i < json_array_size(types); i++) {
        const char *type = json_string_value(json_array_get(types, i));
        if (type == NULL || strcmp(type, "full_attention") != 0)
            return rig__config_fail(ctx, RIG_E_UNSUPPORTED, "layer_types",
                                    "layer %zu is '%s'; only full_attention is supported", i,
                                    type != NULL ? type : "?");
    }
    const json_t *window = json_object_get(root, "sliding_window");
    bool gated = json_object_get(root, "use_sliding_window") != NULL; /* Qwen2/3: off above */
    if (!gated && window != NULL && !json_is_null(window) &&
        (!json_is_integer(window) || json_integer_value(window) < max_position))
        return rig__config_fail(ctx, RIG_E_UNSUPPORTED, "sliding_window",
                                "sliding-window attention is not supported");
    return RIG_OK;
}

static enum rig_status rig__parse_root(struct rig__config_parse *ctx, const json_t *root,
                                       struct rig_model_config *out)
{
    int64_t max_position;
    bool attention_bias = false;
    memset(out, 0, sizeof *out);
    RIG_TRY(rig__parse_arch(ctx, root, out, &max_position));
    RIG_TRY(rig__parse_shape(ctx, root, out));
    RIG_TRY(rig__parse_rope(ctx, root, &out->rope));
    RIG_TRY(rig__get_float(ctx, root, "rms_norm_eps", false, 1e-6, &out->rms_norm_eps));
    RIG_TRY(rig__get_int(ctx, root, "max_position_embeddings", false, max_position, 1,
                          1 << 24, &max_position));
    out->max_position = (int32_t)max_position;
    RIG_TRY(rig__get_bool(ctx, root, "tie_word_embeddings", false, &out->tie_word_embeddings));
    RIG_TRY(rig__parse_tokens(ctx, root, out));
    RIG_TRY(rig__refuse_unsupported(ctx, root, max_position));
    /* Qwen2 always has q/k/v biases; elsewhere attention_bias would also put one on o_proj. */
    RIG_TRY(rig__get_bool(ctx, root, "attention_bias", false, &attention_bias));
    if (attention_bias && out->arch != RIG_ARCH_QWEN2)
        return rig__config_fail(ctx, RIG_E_UNSUPPORTED, "attention_bias",
                                "true is not supported for this architecture");
    out->qkv_bias = out->arch == RIG_ARCH_QWEN2;
    out->qk_norm = out->arch == RIG_ARCH_QWEN3;
    return RIG_OK;
}

enum rig_status rig_model_config_parse(const char *text, size_t size, const char *source,
                                       struct rig_model_config *out, char *error,
                                       size_t error_len)
{
    RIG_ASSERT(text != NULL && source != NULL && out != NULL);
    struct rig__config_parse ctx = {source, error, error_len};
    if (error != NULL && error_len > 0) error[0] = '\0';
    json_error_t json_error;
    json_t *root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &json_error);
    if (root == NULL) {
        if (error != NULL && error_len > 0)
            snprintf(error, error_len, "%s:%d:%d: %s", source, json_error.line,
                     json_error.column, json_error.text);
        return RIG_E_PARSE;
    }
    struct rig_model_config parsed;
    enum rig_status status = json_is_object(root)
                                 ? rig__parse_root(&ctx, root, &parsed)
                                 : rig__config_fail(&ctx, RIG_E_PARSE, "(root)", "not an object");
    json_decref(root);
    if (status == RIG_OK) *out = parsed;
    return status;
}

enum rig_status rig_model_config_preset(const char *name, struct rig_model_config *out)
{
    RIG_ASSERT(name != NULL && out != NULL);
    char file[80];
    int used = snprintf(file, sizeof file, "%s.json", name);
    if (used < 0 || (size_t)used >= sizeof file || strchr(name, '/') != NULL)
        return RIG_E_NOT_FOUND;
    const struct rig_embedded_file *f = rig_embedded_find(file);
    if (f == NULL) return RIG_E_NOT_FOUND;
    char error[256];
    enum rig_status status = rig_model_config_parse(f->text, f->size, file, out, error,
                                                    sizeof error);
    RIG_ASSERT_MSG(status == RIG_OK, error); /* a built-in preset that does not parse is a bug */
    snprintf(out->name, sizeof out->name, "%s", name);
    return RIG_OK;
}

/* Reads a whole small file into a NUL-terminated heap buffer. */
static enum rig_status rig__read_small_file(const char *path, char **text, size_t *size,
                                            char *error, size_t error_len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(error, error_len, "%s: cannot open", path);
        return RIG_E_IO;
    }
    char *buffer = malloc(RIG__CONFIG_BYTES_MAX + 1);
    size_t got = buffer != NULL ? fread(buffer, 1, RIG__CONFIG_BYTES_MAX + 1, f) : 0;
    bool failed = buffer == NULL || ferror(f);
    fclose(f);
    if (failed || got > RIG__CONFIG_BYTES_MAX) {
        free(buffer);
        snprintf(error, error_len, "%s: %s", path,
                 failed ? "read failed" : "larger than 1 MiB, not a config.json");
        return failed ? RIG_E_IO : RIG_E_CAPACITY;
    }
    buffer[got] = '\0';
    *text = buffer;
    *size = got;
    return RIG_OK;
}

/* The directory's base name ("/m/Qwen3-0.6B/config.json" → "Qwen3-0.6B"). */
static void rig__name_from_path(const char *path, char *name, size_t name_len)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    size_t n = strlen(copy);
    while (n > 1 && copy[n - 1] == '/') copy[--n] = '\0';
    const char *json = strstr(copy, "config.json");
    if (json != NULL && strcmp(json, "config.json") == 0) {
        n = (size_t)(json - copy);
        while (n > 1 && copy[n - 1] == '/') n--;
        copy[n] = '\0';
    }
    const char *slash = strrchr(copy, '/');
    snprintf(name, name_len, "%s", slash != NULL && slash[1] != '\0' ? slash + 1 : copy);
}

enum rig_status rig_model_config_load(const char *path, struct rig_model_config *out,
                                      char *error, size_t error_len)
{
    RIG_ASSERT(path != NULL && out != NULL && error != NULL && error_len > 0);
    char file[4096];
    struct stat st;
    size_t path_len = strlen(path);
    bool is_json = path_len >= 5 && strcmp(path + path_len - 5, ".json") == 0;
    bool is_dir = (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) || !is_json;
    int used = snprintf(file, sizeof file, is_dir ? "%s/config.json" : "%s", path);
    if (used < 0 || (size_t)used >= sizeof file) {
        snprintf(error, error_len, "model path too long");
        return RIG_E_INVALID;
    }
    char *text = NULL;
    size_t size = 0;
    enum rig_status status = rig__read_small_file(file, &text, &size, error, error_len);
    if (status != RIG_OK) return status;
    struct rig_model_config parsed;
    status = rig_model_config_parse(text, size, file, &parsed, error, error_len);
    free(text);
    if (status != RIG_OK) return status;
    rig__name_from_path(file, parsed.name, sizeof parsed.name);
    *out = parsed;
    return RIG_OK;
}

/* Heads of each kind one rank holds; KV heads are replicated when tp exceeds them. */
int32_t rig_model_kv_heads_per_rank(const struct rig_model_config *config, int32_t tp_size)
{
    RIG_ASSERT(tp_size >= 1);
    int32_t heads = config->num_kv_heads / tp_size;
    return heads >= 1 ? heads : 1;
}

size_t rig_model_kv_bytes_per_slot(const struct rig_model_config *config, int32_t tp_size)
{
    RIG_ASSERT(config != NULL && tp_size >= 1);
    size_t per_layer = 2u * (size_t)rig_model_kv_heads_per_rank(config, tp_size) *
                       (size_t)config->head_dim * sizeof(uint16_t);
    return per_layer * (size_t)config->num_layers;
}

size_t rig_model_weight_bytes(const struct rig_model_config *config, int32_t tp_size)
{
    RIG_ASSERT(config != NULL && tp_size >= 1);
    size_t h = (size_t)config->hidden_size, d = (size_t)config->head_dim;
    size_t q = (size_t)(config->num_heads / tp_size) * d;
    size_t kv = (size_t)rig_model_kv_heads_per_rank(config, tp_size) * d;
    size_t inter = (size_t)(config->intermediate_size / tp_size);
    size_t vocab = (size_t)((config->vocab_size + tp_size - 1) / tp_size);
    size_t layer = h * (q + 2 * kv) + q * h + 3 * inter * h + 2 * h;
    if (config->qkv_bias) layer += q + 2 * kv;
    if (config->qk_norm) layer += 2 * d;
    size_t total = layer * (size_t)config->num_layers + vocab * h + h;
    if (!config->tie_word_embeddings) total += vocab * h;
    return total * sizeof(uint16_t);
}

double rig_model_kv_slots_in(const struct rig_model_config *config, int32_t tp_size, double bytes)
{
    return (bytes - (double)rig_model_weight_bytes(config, tp_size)) /
           (double)rig_model_kv_bytes_per_slot(config, tp_size);
}

int64_t rig_model_collective_bytes_max(const struct rig_model_config *config,
                                       const struct rig_model_limits *limits, int32_t tp_size)
{
    RIG_ASSERT(config != NULL && limits != NULL && tp_size >= 1);
    int64_t reduce = (int64_t)limits->max_tokens * config->hidden_size * 2;
    int64_t vocab_rank = ((int64_t)config->vocab_size + tp_size - 1) / tp_size;
    int64_t gather = (int64_t)limits->max_requests * vocab_rank * 4;
    return reduce > gather ? reduce : gather;
}
