/* profile.c — device profiles from YAML (libfyaml), see profile.h.
 *
 * The parser is table driven: every key of the flat mapping has one row below saying its
 * kind and where it lands in struct rig_sim_profile. A key seen twice, a key not in the
 * table and a key missing from the file are all errors, so a typo never silently leaves a
 * default in place.
 */
#include "sim/profile.h"

#include <errno.h>
#include <libfyaml.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "hal/embedded.h"
#include "hal/yaml_guard.h"
#include "sim/optable.h"

static enum rig_status rig__load_profile(const char *name, struct rig_sim_profile *out, char *error,
                                         size_t error_size);

enum rig__key_kind {
    RIG__KEY_NAME,     /* string */
    RIG__KEY_COUNT,    /* integer >= 0 (bytes, nanoseconds) */
    RIG__KEY_RATE,     /* real > 0 (FLOP/s, bytes/s) */
    RIG__KEY_FRACTION, /* real in (0, 1] */
    RIG__KEY_TEXT,     /* string up to the op_table field's size */
    RIG__KEY_CURVE,    /* "RANKS:BYTES:NS ..." into all_reduce_curve (profile.h) */
    RIG__KEY_REAL,     /* real >= 0 (the host model's coefficients, ns per unit) */
};

struct rig__key {
    const char *key;
    enum rig__key_kind kind;
    size_t offset;
    bool optional; /* may be left out (the field keeps the default rig_sim_profile_parse sets):
                      the later additions, so older profile files still load */
};

#define RIG__AT(field) offsetof(struct rig_sim_profile, field)
#define RIG__EFF(class)                                                                            \
    (offsetof(struct rig_sim_profile, efficiency) + (size_t)(class) * sizeof(double))
#define RIG__LATENCY(class)                                                                        \
    (offsetof(struct rig_sim_profile, latency_ns) + (size_t)(class) * sizeof(int64_t))
#define RIG__BLOCKS(class)                                                                         \
    (offsetof(struct rig_sim_profile, full_blocks) + (size_t)(class) * sizeof(int64_t))
#define RIG__HOST(term, factor)                                                                    \
    (offsetof(struct rig_sim_profile, host) +                                                      \
     ((size_t)(term) * RIG_HOST_FACTORS + (size_t)(factor)) * sizeof(double))
#define RIG__HOST_KEYS(term, name)                                                                 \
    {"host_" name "_ns", RIG__KEY_REAL, RIG__HOST(term, RIG_HOST_BASE), true},                     \
        {"host_" name "_per_request_ns", RIG__KEY_REAL, RIG__HOST(term, RIG_HOST_REQUESTS), true}, \
        {"host_" name "_per_token_ns", RIG__KEY_REAL, RIG__HOST(term, RIG_HOST_TOKENS), true},     \
        {"host_" name "_per_new_ns", RIG__KEY_REAL, RIG__HOST(term, RIG_HOST_NEW), true},          \
        {"host_" name "_per_finished_ns", RIG__KEY_REAL, RIG__HOST(term, RIG_HOST_FINISHED), true}
#define RIG__EXPONENT(class)                                                                       \
    (offsetof(struct rig_sim_profile, occupancy_exponent) + (size_t)(class) * sizeof(double))

static const struct rig__key rig__keys[] = {
    {"name", RIG__KEY_NAME, RIG__AT(name), false},
    {"op_table", RIG__KEY_TEXT, RIG__AT(op_table), true},
    {"pageable_host_copies", RIG__KEY_COUNT, RIG__AT(pageable_host_copies), true},
    {"multiprocessors", RIG__KEY_COUNT, RIG__AT(multiprocessors), true},
    {"op_table_warm_weight", RIG__KEY_FRACTION, RIG__AT(op_table_warm_weight), true},
    {"op_table_warm_weight_early", RIG__KEY_FRACTION, RIG__AT(op_table_warm_weight_early), true},
    RIG__HOST_KEYS(RIG_HOST_SCHEDULE, "schedule"),
    RIG__HOST_KEYS(RIG_HOST_PREPARE, "prepare"),
    RIG__HOST_KEYS(RIG_HOST_PROCESS, "process"),
    RIG__HOST_KEYS(RIG_HOST_LOOP, "loop"),
    {"upload_host_ns", RIG__KEY_COUNT, RIG__AT(upload_host_ns), true},
    {"download_host_ns", RIG__KEY_COUNT, RIG__AT(download_host_ns), true},
    {"device_copy_host_ns", RIG__KEY_COUNT, RIG__AT(device_copy_host_ns), true},
    {"event_record_host_ns", RIG__KEY_COUNT, RIG__AT(event_record_host_ns), true},
    {"stream_wait_host_ns", RIG__KEY_COUNT, RIG__AT(stream_wait_host_ns), true},
    {"memory_bytes", RIG__KEY_COUNT, RIG__AT(memory_bytes), false},
    {"peak_bf16_flops", RIG__KEY_RATE, RIG__AT(peak_bf16_flops), false},
    {"hbm_bytes_per_s", RIG__KEY_RATE, RIG__AT(hbm_bytes_per_s), false},
    {"gemm_efficiency", RIG__KEY_FRACTION, RIG__EFF(RIG_SIM_OP_CLASS_GEMM), false},
    {"attention_efficiency", RIG__KEY_FRACTION, RIG__EFF(RIG_SIM_OP_CLASS_ATTENTION), false},
    {"elementwise_efficiency", RIG__KEY_FRACTION, RIG__EFF(RIG_SIM_OP_CLASS_ELEMENTWISE), false},
    {"copy_efficiency", RIG__KEY_FRACTION, RIG__EFF(RIG_SIM_OP_CLASS_COPY), false},
    {"decode_attention_efficiency", RIG__KEY_FRACTION, RIG__EFF(RIG_SIM_OP_CLASS_DECODE_ATTENTION),
     false},
    {"kernel_launch_host_ns", RIG__KEY_COUNT, RIG__AT(kernel_launch_host_ns), false},
    {"kernel_launch_latency_ns", RIG__KEY_COUNT, RIG__AT(kernel_launch_latency_ns), false},
    {"graph_launch_host_ns", RIG__KEY_COUNT, RIG__AT(graph_launch_host_ns), false},
    {"graph_node_ns", RIG__KEY_COUNT, RIG__AT(graph_node_ns), false},
    {"min_kernel_ns", RIG__KEY_COUNT, RIG__AT(min_kernel_ns), false},
    {"h2d_bytes_per_s", RIG__KEY_RATE, RIG__AT(h2d_bytes_per_s), false},
    {"h2d_latency_ns", RIG__KEY_COUNT, RIG__AT(h2d_latency_ns), false},
    {"d2h_bytes_per_s", RIG__KEY_RATE, RIG__AT(d2h_bytes_per_s), false},
    {"d2h_latency_ns", RIG__KEY_COUNT, RIG__AT(d2h_latency_ns), false},
    {"all_reduce_bytes_per_s", RIG__KEY_RATE, RIG__AT(all_reduce_bytes_per_s), false},
    {"all_reduce_latency_ns", RIG__KEY_COUNT, RIG__AT(all_reduce_latency_ns), false},
    {"all_gather_bytes_per_s", RIG__KEY_RATE, RIG__AT(all_gather_bytes_per_s), false},
    {"all_gather_latency_ns", RIG__KEY_COUNT, RIG__AT(all_gather_latency_ns), false},
    {"all_reduce_graph_ns", RIG__KEY_CURVE, RIG__AT(all_reduce_curve), true},
    {"gpus_per_node", RIG__KEY_COUNT, RIG__AT(gpus_per_node), true},
    {"inter_node_bytes_per_s", RIG__KEY_RATE, RIG__AT(inter_node_bytes_per_s), true},
    {"inter_node_latency_ns", RIG__KEY_COUNT, RIG__AT(inter_node_latency_ns), true},
    {"gemm_compute_efficiency", RIG__KEY_FRACTION, RIG__AT(gemm_compute_efficiency), false},
    {"gemm_k_half", RIG__KEY_COUNT, RIG__AT(gemm_k_half), false},
    {"gemm_latency_ns", RIG__KEY_COUNT, RIG__LATENCY(RIG_SIM_OP_CLASS_GEMM), false},
    {"attention_latency_ns", RIG__KEY_COUNT, RIG__LATENCY(RIG_SIM_OP_CLASS_ATTENTION), false},
    {"decode_attention_latency_ns", RIG__KEY_COUNT, RIG__LATENCY(RIG_SIM_OP_CLASS_DECODE_ATTENTION),
     false},
    {"elementwise_latency_ns", RIG__KEY_COUNT, RIG__LATENCY(RIG_SIM_OP_CLASS_ELEMENTWISE), false},
    {"copy_latency_ns", RIG__KEY_COUNT, RIG__LATENCY(RIG_SIM_OP_CLASS_COPY), false},
    {"gemm_full_blocks", RIG__KEY_COUNT, RIG__BLOCKS(RIG_SIM_OP_CLASS_GEMM), false},
    {"gemm_occupancy_exponent", RIG__KEY_FRACTION, RIG__EXPONENT(RIG_SIM_OP_CLASS_GEMM), false},
    {"attention_full_blocks", RIG__KEY_COUNT, RIG__BLOCKS(RIG_SIM_OP_CLASS_ATTENTION), false},
    {"attention_occupancy_exponent", RIG__KEY_FRACTION, RIG__EXPONENT(RIG_SIM_OP_CLASS_ATTENTION),
     false},
    {"decode_attention_full_blocks", RIG__KEY_COUNT, RIG__BLOCKS(RIG_SIM_OP_CLASS_DECODE_ATTENTION),
     false},
    {"decode_attention_occupancy_exponent", RIG__KEY_FRACTION,
     RIG__EXPONENT(RIG_SIM_OP_CLASS_DECODE_ATTENTION), false},
};
#define RIG__KEY_COUNT_ALL ((int32_t)RIG_ARRAY_LEN(rig__keys))
#define RIG__KEYS_MAX      128 /* the seen-keys set's size */
_Static_assert(RIG_ARRAY_LEN(rig__keys) <= RIG__KEYS_MAX, "the seen-keys set is too small");

/* Where a diagnostic points: file name and 1-based line and column. */
struct rig__where {
    const char *file;
    int line;
    int column;
};

static enum rig_status rig__error(char *error, size_t error_size, enum rig_status status,
                                  struct rig__where where, const char *format, ...)
{
    int used = snprintf(error, error_size, "%s:%d:%d: ", where.file, where.line, where.column);
    if (used >= 0 && (size_t)used < error_size) {
        va_list ap;
        va_start(ap, format);
        vsnprintf(error + used, error_size - (size_t)used, format, ap);
        va_end(ap);
    }
    return status;
}

static struct rig__where rig__node_where(const char *file, struct fy_node *node)
{
    struct rig__where where = {file, 1, 1};
    struct fy_token *token = node ? fy_node_get_scalar_token(node) : NULL;
    const struct fy_mark *mark = token ? fy_token_start_mark(token) : NULL;
    if (mark != NULL) {
        where.line = mark->line + 1;
        where.column = mark->column + 1;
    }
    return where;
}

/* Parses a curve: items "RANKS:BYTES:NS" separated by blanks, line breaks or commas, at most
 * RIG_SIM_CURVE_POINTS, ranks a whole number >= 2, bytes and ns > 0, sorted by ranks and, within
 * one rank count, by strictly rising bytes. */
#define RIG__CURVE_SEPARATORS " ,\t\n\r" /* between points (strchr also matches the end) */

static enum rig_status rig__set_curve(const struct rig__key *key, const char *text,
                                      struct rig_sim_profile *profile, struct rig__where where,
                                      char *error, size_t error_size)
{
    struct rig_sim_curve_point points[RIG_SIM_CURVE_POINTS];
    int32_t count = 0;
    const char *at = text;
    for (;;) {
        while (*at != '\0' && strchr(RIG__CURVE_SEPARATORS, *at) != NULL)
            at++;
        if (*at == '\0') break;
        if (count == RIG_SIM_CURVE_POINTS)
            return rig__error(error, error_size, RIG_E_RANGE, where,
                              "key '%s': more than %d points", key->key, RIG_SIM_CURVE_POINTS);
        double v[3];
        for (int32_t i = 0; i < 3; i++) {
            char *end = NULL;
            errno = 0;
            v[i] = strtod(at, &end);
            bool sep_ok = i < 2 ? *end == ':' : strchr(RIG__CURVE_SEPARATORS, *end) != NULL;
            if (end == at || errno != 0 || !isfinite(v[i]) || !sep_ok)
                return rig__error(error, error_size, RIG_E_PARSE, where,
                                  "key '%s': point %d is not RANKS:BYTES:NS", key->key, count + 1);
            at = i < 2 ? end + 1 : end;
        }
        if (v[0] < 2 || v[0] > 1024 || v[0] != floor(v[0]) || !(v[1] > 0) || !(v[2] > 0))
            return rig__error(error, error_size, RIG_E_RANGE, where,
                              "key '%s': point %d needs ranks 2..1024 (whole), bytes > 0, ns > 0",
                              key->key, count + 1);
        struct rig_sim_curve_point p = {(int32_t)v[0], v[1], v[2]};
        if (count > 0) {
            const struct rig_sim_curve_point *q = &points[count - 1];
            if (p.ranks < q->ranks || (p.ranks == q->ranks && !(p.bytes > q->bytes)))
                return rig__error(error, error_size, RIG_E_RANGE, where,
                                  "key '%s': point %d is out of order (sort by ranks, then by "
                                  "rising bytes)",
                                  key->key, count + 1);
        }
        points[count++] = p;
    }
    memcpy(profile->all_reduce_curve, points, (size_t)count * sizeof points[0]);
    profile->all_reduce_curve_count = count;
    return RIG_OK;
}

/* Parses one scalar value into its field. Values are plain numbers ("3.35e12", "4000");
 * the whole scalar must be consumed. */
static enum rig_status rig__set_value(const struct rig__key *key, const char *text,
                                      struct rig_sim_profile *profile, struct rig__where where,
                                      char *error, size_t error_size)
{
    char *field = (char *)profile + key->offset;
    if (key->kind == RIG__KEY_CURVE)
        return rig__set_curve(key, text, profile, where, error, error_size);
    if (key->kind == RIG__KEY_NAME || key->kind == RIG__KEY_TEXT) {
        size_t max =
            key->kind == RIG__KEY_NAME ? RIG_SIM_PROFILE_NAME_MAX : sizeof profile->op_table;
        if (text[0] == '\0' || strlen(text) >= max)
            return rig__error(error, error_size, RIG_E_RANGE, where,
                              "key '%s': must be 1..%zu characters", key->key, max - 1);
        memcpy(field, text, strlen(text) + 1);
        return RIG_OK;
    }
    char *end = NULL;
    errno = 0;
    double value = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !isfinite(value))
        return rig__error(error, error_size, RIG_E_PARSE, where, "key '%s': '%s' is not a number",
                          key->key, text);
    if (key->kind == RIG__KEY_COUNT) {
        if (value < 0 || value > 9.0e18 || value != floor(value))
            return rig__error(error, error_size, RIG_E_RANGE, where,
                              "key '%s': %s must be a whole number >= 0", key->key, text);
        int64_t count = (int64_t)value;
        memcpy(field, &count, sizeof count);
        return RIG_OK;
    }
    if (key->kind == RIG__KEY_REAL) {
        if (value < 0)
            return rig__error(error, error_size, RIG_E_RANGE, where,
                              "key '%s': %s must be a number >= 0", key->key, text);
        memcpy(field, &value, sizeof value);
        return RIG_OK;
    }
    if (!(value > 0) || (key->kind == RIG__KEY_FRACTION && value > 1))
        return rig__error(error, error_size, RIG_E_RANGE, where, "key '%s': %s must be %s",
                          key->key, text, key->kind == RIG__KEY_FRACTION ? "in (0, 1]" : "> 0");
    memcpy(field, &value, sizeof value);
    return RIG_OK;
}

static int32_t rig__find_key(const char *name)
{
    for (int32_t i = 0; i < RIG__KEY_COUNT_ALL; i++) {
        if (strcmp(rig__keys[i].key, name) == 0) return i;
    }
    return -1;
}

/* Walks the root mapping of a parsed document into `profile`. */
static enum rig_status rig__read_mapping(const char *file, struct fy_node *root,
                                         struct rig_sim_profile *profile, char *error,
                                         size_t error_size)
{
    struct rig__where top = rig__node_where(file, root);
    if (root == NULL || !fy_node_is_mapping(root))
        return rig__error(error, error_size, RIG_E_PARSE, top, "a profile is a mapping");
    bool seen[RIG__KEYS_MAX] = {false};
    void *iter = NULL;
    struct fy_node_pair *pair;
    int32_t pairs_max = 4 * RIG__KEY_COUNT_ALL; /* bound: more than this is surely wrong */
    while ((pair = fy_node_mapping_iterate(root, &iter)) != NULL && pairs_max-- > 0) {
        struct fy_node *key_node = fy_node_pair_key(pair);
        struct fy_node *value_node = fy_node_pair_value(pair);
        struct rig__where where = rig__node_where(file, key_node);
        const char *key_text = fy_node_is_scalar(key_node) ? fy_node_get_scalar0(key_node) : "";
        int32_t index = key_text ? rig__find_key(key_text) : -1;
        if (index < 0)
            return rig__error(error, error_size, RIG_E_PARSE, where, "unknown key '%s'",
                              key_text ? key_text : "?");
        if (seen[index])
            return rig__error(error, error_size, RIG_E_PARSE, where, "key '%s' given twice",
                              key_text);
        seen[index] = true;
        if (value_node == NULL || !fy_node_is_scalar(value_node))
            return rig__error(error, error_size, RIG_E_PARSE, where,
                              "key '%s': value must be a scalar", key_text);
        const char *value_text = fy_node_get_scalar0(value_node);
        enum rig_status status =
            rig__set_value(&rig__keys[index], value_text ? value_text : "", profile,
                           rig__node_where(file, value_node), error, error_size);
        if (status != RIG_OK) return status;
    }
    for (int32_t i = 0; i < RIG__KEY_COUNT_ALL; i++) {
        if (!seen[i] && !rig__keys[i].optional)
            return rig__error(error, error_size, RIG_E_PARSE, top, "missing key '%s'",
                              rig__keys[i].key);
    }
    return RIG_OK;
}

/* Builds the document with diagnostics collected (not printed), so a YAML syntax error
 * comes back as one message with its position. */
/* Why profiles are checked before libfyaml sees them: Debian 12's libfyaml 0.8 loops forever
 * on some invalid UTF-8 ("%\xa6") and crashes on some text holding a NUL byte
 * ("? en.:\t\0\n"), both found by tests/fuzz/fuzz_sim_profile.c; YAML allows neither. It
 * also crashes on some explicit keys ("? n:\t:", the same fuzzer; hal/yaml_guard.h), which a
 * profile never needs. Returns RIG_OK or RIG_E_PARSE with the line and column of the first bad
 * byte. */
static enum rig_status rig__check_utf8(const char *file, const char *text, size_t size, char *error,
                                       size_t error_size)
{
    const utf8proc_uint8_t *bytes = (const utf8proc_uint8_t *)text;
    int64_t key = rig_yaml_explicit_key_at(text, size); /* libfyaml 0.8 crashes on some */
    int32_t line = 1, column = 1;
    for (size_t done = 0; done < size;) {
        if ((int64_t)done == key) {
            snprintf(error, error_size,
                     "%s:%d:%d: an explicit ('? ') mapping key: a profile takes plain keys", file,
                     line, column);
            return RIG_E_PARSE;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(bytes + done, (utf8proc_ssize_t)(size - done), &cp);
        if (n <= 0 || cp == 0) { /* libfyaml 0.8 also crashes on some text with a NUL */
            snprintf(error, error_size, "%s:%d:%d: %s", file, line, column,
                     n <= 0 ? "the text is not valid UTF-8" : "a NUL byte");
            return RIG_E_PARSE;
        }
        column = cp == '\n' ? 1 : column + 1;
        line += cp == '\n';
        done += (size_t)n;
    }
    return RIG_OK;
}

static enum rig_status rig__build(const char *file, const char *text, size_t size,
                                  struct fy_diag *diag, struct fy_document **out, char *error,
                                  size_t error_size)
{
    *out = NULL;
    enum rig_status utf8 = rig__check_utf8(file, text, size, error, error_size);
    if (utf8 != RIG_OK) return utf8;
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG, .diag = diag};
    *out = fy_document_build_from_string(&cfg, text, size);
    if (*out != NULL && !fy_diag_got_error(diag)) return RIG_OK;
    struct rig__where where = {file, 1, 1};
    const char *message = "YAML syntax error";
    void *iter = NULL;
    struct fy_diag_error *first = fy_diag_errors_iterate(diag, &iter);
    if (first != NULL) { /* libfyaml's collected errors are 1-based already */
        where.line = first->line;
        where.column = first->column;
        if (first->msg != NULL) message = first->msg;
    }
    return rig__error(error, error_size, RIG_E_PARSE, where, "%s", message);
}

enum rig_status rig_sim_profile_parse(const char *file, const char *text, size_t size,
                                      struct rig_sim_profile *out, char *error, size_t error_size)
{
    RIG_ASSERT(file != NULL && text != NULL);
    RIG_ASSERT(out != NULL && error != NULL && error_size > 0);
    error[0] = '\0';
    struct fy_diag_cfg diag_cfg;
    fy_diag_cfg_default(&diag_cfg);
    diag_cfg.fp = NULL;
    diag_cfg.output_fn = NULL;
    struct fy_diag *diag = fy_diag_create(&diag_cfg);
    if (diag == NULL) return RIG_E_NO_MEMORY;
    fy_diag_set_collect_errors(diag, true);
    struct fy_document *document = NULL;
    enum rig_status status = rig__build(file, text, size, diag, &document, error, error_size);
    struct rig_sim_profile profile;
    memset(&profile, 0, sizeof profile);
    snprintf(profile.op_table, sizeof profile.op_table, "none");
    profile.op_table_warm_weight = 0.5;
    profile.op_table_warm_weight_early = -1; /* not given: op_table_warm_weight */
    profile.host.ns[RIG_HOST_SCHEDULE][RIG_HOST_BASE] = RIG_SIM_HOST_SCHEDULE_NS;
    profile.host.ns[RIG_HOST_PREPARE][RIG_HOST_REQUESTS] = RIG_SIM_HOST_PREPARE_PER_REQUEST_NS;
    profile.host.ns[RIG_HOST_PROCESS][RIG_HOST_REQUESTS] = RIG_SIM_HOST_PROCESS_PER_REQUEST_NS;
    profile.upload_host_ns = profile.download_host_ns = profile.device_copy_host_ns = -1;
    profile.gpus_per_node = RIG_SIM_GPUS_PER_NODE;
    profile.inter_node_bytes_per_s = RIG_SIM_INTER_NODE_BYTES_PER_S;
    profile.inter_node_latency_ns = RIG_SIM_INTER_NODE_LATENCY_NS;
    if (status == RIG_OK)
        status = rig__read_mapping(file, fy_document_root(document), &profile, error, error_size);
    if (profile.op_table_warm_weight_early < 0)
        profile.op_table_warm_weight_early = profile.op_table_warm_weight;
    int64_t *copies[3] = {&profile.upload_host_ns, &profile.download_host_ns,
                          &profile.device_copy_host_ns};
    for (int32_t i = 0; i < 3; i++) /* not given: a launch's */
        if (*copies[i] < 0) *copies[i] = profile.kernel_launch_host_ns;
    if (status == RIG_OK) *out = profile;
    fy_document_destroy(document);
    fy_diag_destroy(diag); /* unlike fy_diag_unref, frees the collected errors */
    return status;
}

/* Reads a whole file into a NUL-terminated heap string. */
static enum rig_status rig__read_file(const char *path, char **text, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL) return RIG_E_IO;
    enum rig_status status = RIG_E_IO;
    char *buffer = NULL;
    long length = -1;
    if (fseek(file, 0, SEEK_END) == 0) length = ftell(file);
    if (length >= 0 && length < (1l << 24) && fseek(file, 0, SEEK_SET) == 0) {
        buffer = malloc((size_t)length + 1);
        status = buffer ? RIG_OK : RIG_E_NO_MEMORY;
    }
    if (status == RIG_OK && fread(buffer, 1, (size_t)length, file) != (size_t)length)
        status = RIG_E_IO;
    fclose(file);
    if (status != RIG_OK) {
        free(buffer);
        return status;
    }
    buffer[length] = '\0';
    *text = buffer;
    *size = (size_t)length;
    return RIG_OK;
}

static bool rig__is_path(const char *name)
{
    size_t length = strlen(name);
    return strchr(name, '/') != NULL || (length > 5 && strcmp(name + length - 5, ".yaml") == 0);
}

/* The host the table was swept on over the profile's keys of the same names (sim/profile.h),
 * found through the key table the YAML is read with: each call's mean where the table has it
 * (a step pays a call's tails: docs/simulator.md, "The engine's host time, fitted"), else its
 * median; each host model coefficient the table carries. */
static void rig__take_table_host(struct rig_sim_profile *profile,
                                 const struct rig_optable_host *host)
{
    for (int32_t k = 0; k < RIG_OPTABLE_HOST_CALLS; k++) {
        int32_t index = rig__find_key(rig_optable_host_keys[k]);
        RIG_ASSERT_MSG(index >= 0 && rig__keys[index].kind == RIG__KEY_COUNT,
                       "an op table's host time names no count key of the profile");
        int64_t ns = llround(host->mean_ns[k] > 0 ? host->mean_ns[k] : host->ns[k]);
        if (ns > 0) memcpy((char *)profile + rig__keys[index].offset, &ns, sizeof ns);
    }
    for (int32_t t = 0; t < RIG_HOST_TERMS; t++) {
        for (int32_t f = 0; f < RIG_HOST_FACTORS; f++) {
            int32_t index = rig__find_key(rig_host_model_keys[t][f]);
            RIG_ASSERT_MSG(index >= 0 && rig__keys[index].kind == RIG__KEY_REAL &&
                               rig__keys[index].offset == RIG__HOST(t, f),
                           "a host model coefficient names no key of the profile");
            if (host->model_given[t][f]) profile->host.ns[t][f] = host->model.ns[t][f];
        }
    }
}

/* Loads the profile's op table, unless it says "none" or `analytic` asks for none. */
static enum rig_status rig__load_table(struct rig_sim_profile *profile, bool analytic, char *error,
                                       size_t error_size)
{
    profile->table = NULL;
    if (analytic) snprintf(profile->op_table, sizeof profile->op_table, "none");
    if (strcmp(profile->op_table, "none") == 0) return RIG_OK;
    enum rig_status status = rig_sim_optable_get(profile->op_table, profile->multiprocessors,
                                                 &profile->table, error, error_size);
    if (status != RIG_OK) return status;
    rig__take_table_host(profile, rig_sim_optable_host(profile->table));
    return RIG_OK;
}

enum rig_status rig_sim_profile_load(const char *name_or_path, struct rig_sim_profile *out,
                                     char *error, size_t error_size)
{
    RIG_ASSERT(out != NULL && error != NULL && error_size > 0);
    const char *given = (name_or_path && name_or_path[0]) ? name_or_path : "h100";
    char name[RIG_SIM_PROFILE_NAME_MAX * 4];
    snprintf(name, sizeof name, "%s", given);
    bool analytic = false, pinned = false;
    for (char *colon = strrchr(name, ':'); colon != NULL; colon = strrchr(name, ':')) {
        if (strcmp(colon, ":analytic") == 0)
            analytic = true;
        else if (strcmp(colon, ":pinned") == 0)
            pinned = true;
        else
            break; /* not a modifier: part of a path */
        *colon = '\0';
    }
    enum rig_status status = rig__load_profile(name, out, error, error_size);
    if (status == RIG_OK && pinned) out->pageable_host_copies = 0;
    if (status == RIG_OK) status = rig__load_table(out, analytic, error, error_size);
    return status;
}

static enum rig_status rig__load_profile(const char *name, struct rig_sim_profile *out, char *error,
                                         size_t error_size)
{
    if (rig__is_path(name)) {
        char *text = NULL;
        size_t size = 0;
        enum rig_status status = rig__read_file(name, &text, &size);
        if (status != RIG_OK) {
            snprintf(error, error_size, "%s: cannot read the profile: %s", name,
                     rig_status_message(status));
            return status;
        }
        status = rig_sim_profile_parse(name, text, size, out, error, error_size);
        free(text);
        return status;
    }
    char file[RIG_SIM_PROFILE_NAME_MAX * 4 + 8];
    snprintf(file, sizeof file, "%s.yaml", name);
    const struct rig_embedded_file *embedded = rig_embedded_find(file);
    if (embedded == NULL || strlen(name) >= RIG_SIM_PROFILE_NAME_MAX) {
        snprintf(error, error_size,
                 "no built-in device profile '%s' (try h100 or a path "
                 "to a .yaml file)",
                 name);
        return RIG_E_NOT_FOUND;
    }
    return rig_sim_profile_parse(file, embedded->text, embedded->size, out, error, error_size);
}
