/* yaml.c — strict YAML reading helpers (see yaml.h). */
#include "core/harness/scenario/yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "hal/yaml_guard.h"

/* Collections are walked down to their first scalar for a position; nesting deeper than
 * this is not worth a position. */
#define RIG__YAML_DEPTH_MAX 64
#define RIG__YAML_PATH_PARTS_MAX 16

#define RIG__YAML_FILE_BYTES_MAX ((size_t)1 << 30)

/* A diagnostic sink that prints nothing (errors are collected, or dropped). */
static struct fy_diag *rig__yaml_quiet_diag(void)
{
    struct fy_diag_cfg diag_config;
    fy_diag_cfg_default(&diag_config);
    diag_config.fp = NULL;
    diag_config.level = FYET_ERROR;
    return fy_diag_create(&diag_config);
}

static struct fy_document *rig__yaml_build(struct rig_yaml *y, const char *text,
                                           enum rig_status *status)
{
    struct fy_diag *diag = rig__yaml_quiet_diag();
    if (diag == NULL) {
        *status = rig_yaml_fail(y, NULL, RIG_E_NO_MEMORY, "cannot create a YAML diagnostic");
        return NULL;
    }
    fy_diag_set_collect_errors(diag, true);
    struct fy_parse_cfg config = {0};
    config.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG;
    config.diag = diag;
    struct fy_document *doc = text != NULL ? fy_document_build_from_string(&config, text,
                                                                           strlen(text))
                                           : fy_document_build_from_file(&config, y->file);
    *status = RIG_OK;
    if (doc == NULL) {
        void *iter = NULL;
        struct fy_diag_error *first = fy_diag_errors_iterate(diag, &iter);
        if (first != NULL) {
            snprintf(y->error, y->error_len, "%s:%d:%d: %s", y->file, first->line,
                     first->column, first->msg);
            *status = RIG_E_PARSE;
        } else {
            /* No diagnostic: either the file cannot be read or it holds no document. */
            FILE *file = text == NULL ? fopen(y->file, "r") : NULL;
            if (file != NULL) fclose(file);
            *status = text != NULL || file != NULL
                          ? rig_yaml_fail(y, NULL, RIG_E_PARSE, "the document is empty")
                          : rig_yaml_fail(y, NULL, RIG_E_IO, "cannot read the file");
        }
    } else if (fy_document_root(doc) == NULL) {
        *status = rig_yaml_fail(y, NULL, RIG_E_PARSE, "the document is empty");
        fy_document_destroy(doc);
        doc = NULL;
    }
    fy_diag_destroy(diag);
    return doc;
}

/* Reads the whole file into a NUL-terminated heap buffer of *len bytes (before the NUL);
 * NULL when it cannot be read. */
static char *rig__yaml_read(const char *path, size_t *out_len)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL) return NULL;
    size_t capacity = 4096, len = 0;
    char *data = malloc(capacity);
    while (data != NULL && !ferror(file) && !feof(file) && capacity <= RIG__YAML_FILE_BYTES_MAX) {
        len += fread(data + len, 1, capacity - 1 - len, file);
        if (len + 1 < capacity) continue;
        char *grown = realloc(data, capacity * 2);
        if (grown == NULL) free(data);
        data = grown;
        capacity *= 2;
    }
    bool failed = data == NULL || ferror(file) || !feof(file);
    fclose(file);
    if (failed) {
        free(data);
        return NULL;
    }
    data[len] = '\0';
    *out_len = len;
    return data;
}

/* Line and column (1-based) of byte `at` of `text`. */
static void rig__yaml_locate(const char *text, int64_t at, int32_t *line, int32_t *column)
{
    *line = 1;
    *column = 1;
    for (int64_t i = 0; i < at; i++) {
        *column = text[i] == '\n' ? 1 : *column + 1;
        *line += text[i] == '\n';
    }
}

/* Byte offset of the first byte of `text` that is not valid UTF-8, or -1. */
static int64_t rig__yaml_bad_utf8(const char *text)
{
    const utf8proc_uint8_t *at = (const utf8proc_uint8_t *)text;
    size_t len = strlen(text), done = 0;
    while (done < len) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(at + done, (utf8proc_ssize_t)(len - done), &cp);
        if (n <= 0) return (int64_t)done;
        done += (size_t)n;
    }
    return -1;
}

/* The error for text that is not UTF-8 at byte `bad`. */
static enum rig_status rig__yaml_not_utf8(struct rig_yaml *y, const char *text, int64_t bad)
{
    int32_t line, column;
    rig__yaml_locate(text, bad, &line, &column);
    snprintf(y->error, y->error_len, "%s:%d:%d: the text is not valid UTF-8", y->file, line,
             column);
    return RIG_E_PARSE;
}

/* A scenario is one document: a second one (after '---') would otherwise be dropped without
 * a word. Counts the documents of the stream with libfyaml's event parser (cheap: no tree);
 * RIG_E_PARSE at the start of the second. A syntax error stops the count quietly: building
 * the document reports it. */
static enum rig_status rig__yaml_one_document(struct rig_yaml *y, const char *text, size_t len)
{
    struct fy_parse_cfg config = {0};
    config.flags = FYPCF_QUIET;
    config.diag = rig__yaml_quiet_diag();
    struct fy_parser *parser = config.diag != NULL ? fy_parser_create(&config) : NULL;
    if (parser == NULL) {
        if (config.diag != NULL) fy_diag_destroy(config.diag);
        return rig_yaml_fail(y, NULL, RIG_E_NO_MEMORY, "out of memory for a YAML parser");
    }
    enum rig_status status = RIG_OK;
    int32_t documents = 0;
    if (fy_parser_set_string(parser, text, len) == 0) {
        struct fy_event *event;
        while (status == RIG_OK && (event = fy_parser_parse(parser)) != NULL) {
            if (event->type == FYET_DOCUMENT_START && ++documents == 2) {
                struct fy_token *start = event->document_start.document_start;
                const struct fy_mark *mark = start != NULL ? fy_token_start_mark(start) : NULL;
                snprintf(y->error, y->error_len, "%s:%d:%d: a second YAML document: a "
                         "scenario file holds exactly one", y->file,
                         mark != NULL ? mark->line + 1 : 0, mark != NULL ? mark->column + 1 : 0);
                status = RIG_E_PARSE;
            }
            fy_parser_event_free(parser, event);
        }
    }
    fy_parser_destroy(parser);
    fy_diag_destroy(config.diag);
    return status;
}

/* Why YAML text is checked for UTF-8 first: the libfyaml of Debian 12 (0.8) loops forever on
 * some invalid bytes (e.g. "%\xa6", found by tests/fuzz/fuzz_scenario.c), and YAML text must be
 * Unicode anyway; it crashes on some explicit keys (hal/yaml_guard.h), refused too. A file is
 * read whole (scenarios are small) for the same checks — no NUL byte (it would end the text
 * early, with a misleading error), one document — then parsed from the file: libfyaml keeps
 * pointers into the text it parses. */
struct fy_document *rig_yaml_parse(struct rig_yaml *y, const char *text, enum rig_status *status)
{
    RIG_ASSERT(y != NULL && y->file != NULL);
    RIG_ASSERT(status != NULL);
    char *read = NULL;
    size_t len = text != NULL ? strlen(text) : 0;
    if (text == NULL && (read = rig__yaml_read(y->file, &len)) == NULL) {
        *status = rig_yaml_fail(y, NULL, RIG_E_IO, "cannot read the file");
        return NULL;
    }
    const char *source = text != NULL ? text : read;
    const char *nul = memchr(source, '\0', len);
    int64_t bad = nul != NULL ? -1 : rig__yaml_bad_utf8(source);
    int64_t key = nul != NULL || bad >= 0 ? -1 : rig_yaml_explicit_key_at(source, len);
    *status = RIG_OK;
    if (key >= 0) {
        int32_t line, column;
        rig__yaml_locate(source, key, &line, &column);
        snprintf(y->error, y->error_len,
                 "%s:%d:%d: an explicit ('? ') mapping key: rig's YAML files take plain keys",
                 y->file, line, column);
        *status = RIG_E_PARSE;
    } else if (nul != NULL) {
        int32_t line, column;
        rig__yaml_locate(source, nul - source, &line, &column);
        snprintf(y->error, y->error_len, "%s:%d:%d: a NUL byte: the file is not YAML text",
                 y->file, line, column);
        *status = RIG_E_PARSE;
    } else if (bad >= 0) {
        *status = rig__yaml_not_utf8(y, source, bad);
    } else {
        *status = rig__yaml_one_document(y, source, len);
    }
    free(read);
    return *status < 0 ? NULL : rig__yaml_build(y, text, status);
}

void rig_yaml_position(struct fy_node *node, int32_t *line, int32_t *column)
{
    *line = 0;
    *column = 0;
    for (int depth = 0; node != NULL && depth < RIG__YAML_DEPTH_MAX; depth++) {
        if (fy_node_is_scalar(node)) {
            struct fy_token *token = fy_node_get_scalar_token(node);
            const struct fy_mark *mark = token != NULL ? fy_token_start_mark(token) : NULL;
            if (mark != NULL) {
                *line = mark->line + 1;
                *column = mark->column + 1;
            }
            return;
        }
        void *iter = NULL;
        if (fy_node_is_mapping(node)) {
            struct fy_node_pair *pair = fy_node_mapping_iterate(node, &iter);
            node = pair != NULL ? fy_node_pair_key(pair) : NULL;
        } else {
            node = fy_node_sequence_iterate(node, &iter);
        }
    }
}

/* The override text `node` came from, or NULL when it comes from the file. */
static const char *rig__yaml_override_of(const struct rig_yaml *y, struct fy_node *node)
{
    for (int depth = 0; node != NULL && depth < RIG__YAML_DEPTH_MAX; depth++) {
        for (int32_t i = 0; i < y->override_node_count; i++) {
            if (y->override_nodes[i] == node) return y->override_texts[i];
        }
        node = fy_node_get_parent(node);
    }
    return NULL;
}

enum rig_status rig_yaml_fail(const struct rig_yaml *y, struct fy_node *node,
                              enum rig_status status, const char *format, ...)
{
    RIG_ASSERT(status < 0);
    if (y->error == NULL || y->error_len == 0 || y->error[0] != '\0') return status;
    char message[384];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    const char *override = node != NULL ? rig__yaml_override_of(y, node) : NULL;
    int32_t line = 0, column = 0;
    if (node != NULL) rig_yaml_position(node, &line, &column);
    if (override != NULL)
        snprintf(y->error, y->error_len, "%s: --set %s: %s", y->file, override, message);
    else if (line > 0)
        snprintf(y->error, y->error_len, "%s:%d:%d: %s", y->file, line, column, message);
    else
        snprintf(y->error, y->error_len, "%s: %s", y->file, message);
    return status;
}

/* An alias (*name) where a value belongs: rig reads no anchors or aliases, and "must be a
 * mapping" would not say why. */
static bool rig__yaml_alias(const struct rig_yaml *y, struct fy_node *node, const char *what,
                            enum rig_status *status)
{
    if (node == NULL || !fy_node_is_scalar(node) || fy_node_get_style(node) != FYNS_ALIAS)
        return false;
    *status = rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' is an alias (*%s): YAML anchors and "
                            "aliases are not supported, write the value out", what,
                            fy_node_get_scalar0(node));
    return true;
}

enum rig_status rig_yaml_mapping(const struct rig_yaml *y, struct fy_node *node,
                                 const char *what)
{
    enum rig_status status;
    if (rig__yaml_alias(y, node, what, &status)) return status;
    if (node != NULL && fy_node_is_mapping(node)) return RIG_OK;
    return rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' must be a mapping (key: value, ...)",
                         what);
}

enum rig_status rig_yaml_text(const struct rig_yaml *y, struct fy_node *node, const char *what)
{
    enum rig_status status;
    if (rig__yaml_alias(y, node, what, &status)) return status;
    if (node != NULL && fy_node_is_scalar(node)) return RIG_OK;
    return rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' must be text, not a %s", what,
                         node != NULL && fy_node_is_sequence(node) ? "list" : "mapping");
}

enum rig_status rig_yaml_sequence(const struct rig_yaml *y, struct fy_node *node,
                                  const char *what)
{
    enum rig_status status;
    if (rig__yaml_alias(y, node, what, &status)) return status;
    if (node != NULL && fy_node_is_sequence(node)) return RIG_OK;
    return rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' must be a list", what);
}

static bool rig__yaml_known(const char *key, const char *const *known)
{
    for (size_t i = 0; known[i] != NULL; i++) {
        if (strcmp(known[i], key) == 0) return true;
    }
    return false;
}

enum rig_status rig_yaml_check_keys(const struct rig_yaml *y, struct fy_node *map,
                                    const char *what, const char *const *known)
{
    enum rig_status status = rig_yaml_mapping(y, map, what);
    if (status < 0) return status;
    void *iter = NULL;
    struct fy_node_pair *pair;
    while ((pair = fy_node_mapping_iterate(map, &iter)) != NULL) {
        struct fy_node *key = fy_node_pair_key(pair);
        const char *name = key != NULL && fy_node_is_scalar(key) ? fy_node_get_scalar0(key)
                                                                  : NULL;
        if (name == NULL)
            return rig_yaml_fail(y, key, RIG_E_INVALID, "a key in '%s' must be a plain word",
                                 what);
        if (rig__yaml_known(name, known)) continue;
        char list[256] = "";
        size_t used = 0;
        for (size_t i = 0; known[i] != NULL && used < sizeof list; i++) {
            int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", known[i]);
            used += n > 0 ? (size_t)n : 0;
        }
        return rig_yaml_fail(y, key, RIG_E_INVALID, "unknown key '%s' in %s (known: %s)", name,
                             what, list);
    }
    return RIG_OK;
}

struct fy_node *rig_yaml_get(struct fy_node *map, const char *key)
{
    RIG_ASSERT(map != NULL && fy_node_is_mapping(map));
    return fy_node_mapping_lookup_value_by_simple_key(map, key, strlen(key));
}

bool rig_yaml_is_null(struct fy_node *node)
{
    if (node == NULL || !fy_node_is_scalar(node)) return false;
    if (fy_node_get_style(node) != FYNS_PLAIN) return false;
    const char *text = fy_node_get_scalar0(node);
    return text == NULL || text[0] == '\0' || strcmp(text, "~") == 0 ||
           strcmp(text, "null") == 0 || strcmp(text, "Null") == 0 || strcmp(text, "NULL") == 0;
}

/* The text of a scalar, or NULL (with the error written) when `node` is not one. */
static const char *rig__yaml_scalar(const struct rig_yaml *y, struct fy_node *node,
                                    const char *what, enum rig_status *status)
{
    if (rig__yaml_alias(y, node, what, status)) return NULL;
    const char *text = node != NULL && fy_node_is_scalar(node) ? fy_node_get_scalar0(node)
                                                               : NULL;
    *status = RIG_OK;
    if (text == NULL || rig_yaml_is_null(node))
        *status = rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' needs a value", what);
    return *status < 0 ? NULL : text;
}

enum rig_status rig_yaml_int(const struct rig_yaml *y, struct fy_node *node, const char *what,
                             int64_t lo, int64_t hi, int64_t *out)
{
    enum rig_status status;
    const char *text = rig__yaml_scalar(y, node, what, &status);
    if (text == NULL) return status;
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 0);
    if (end == text || *end != '\0' || errno != 0)
        return rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' must be an integer, not '%s'", what,
                             text);
    if (value < lo || value > hi)
        return rig_yaml_fail(y, node, RIG_E_RANGE, "'%s' = %lld is outside [%lld, %lld]", what,
                             value, (long long)lo, (long long)hi);
    *out = value;
    return RIG_OK;
}

enum rig_status rig_yaml_double(const struct rig_yaml *y, struct fy_node *node,
                                const char *what, double lo, double hi, double *out)
{
    enum rig_status status;
    const char *text = rig__yaml_scalar(y, node, what, &status);
    if (text == NULL) return status;
    double value;
    if (strcmp(text, "inf") == 0 || strcmp(text, ".inf") == 0 || strcmp(text, ".Inf") == 0) {
        value = INFINITY;
    } else {
        char *end = NULL;
        errno = 0;
        value = strtod(text, &end);
        if (end == text || *end != '\0' || errno != 0 || isnan(value) || isinf(value))
            return rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' must be a number, not '%s'",
                                 what, text);
    }
    if (value < lo || value > hi)
        return rig_yaml_fail(y, node, RIG_E_RANGE, "'%s' = %s is outside [%g, %g]", what, text,
                             lo, hi);
    *out = value;
    return RIG_OK;
}

enum rig_status rig_yaml_bool(const struct rig_yaml *y, struct fy_node *node, const char *what,
                              bool *out)
{
    enum rig_status status;
    const char *text = rig__yaml_scalar(y, node, what, &status);
    if (text == NULL) return status;
    if (strcmp(text, "true") == 0 || strcmp(text, "True") == 0 || strcmp(text, "on") == 0 ||
        strcmp(text, "yes") == 0) {
        *out = true;
        return RIG_OK;
    }
    if (strcmp(text, "false") == 0 || strcmp(text, "False") == 0 || strcmp(text, "off") == 0 ||
        strcmp(text, "no") == 0) {
        *out = false;
        return RIG_OK;
    }
    return rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' must be true or false, not '%s'", what,
                         text);
}

enum rig_status rig_yaml_string(const struct rig_yaml *y, struct fy_node *node,
                                const char *what, char *out, size_t capacity)
{
    enum rig_status status;
    const char *text = rig__yaml_scalar(y, node, what, &status);
    if (text == NULL) return status;
    size_t length = strlen(text);
    if (length + 1 > capacity)
        return rig_yaml_fail(y, node, RIG_E_RANGE, "'%s' is longer than %zu characters", what,
                             capacity - 1);
    memcpy(out, text, length + 1);
    return RIG_OK;
}

enum rig_status rig_yaml_duration_ns(const struct rig_yaml *y, struct fy_node *node,
                                     const char *what, int64_t *out)
{
    enum rig_status status;
    const char *text = rig__yaml_scalar(y, node, what, &status);
    if (text == NULL) return status;
    char *end = NULL;
    errno = 0;
    double value = strtod(text, &end);
    double scale = 0;
    if (end != text && errno == 0) {
        if (*end == '\0' || strcmp(end, "s") == 0) scale = 1e9;
        else if (strcmp(end, "ms") == 0) scale = 1e6;
        else if (strcmp(end, "us") == 0) scale = 1e3;
        else if (strcmp(end, "ns") == 0) scale = 1;
        else if (strcmp(end, "min") == 0) scale = 60e9;
    }
    if (scale == 0 || isnan(value) || isinf(value))
        return rig_yaml_fail(y, node, RIG_E_INVALID,
                             "'%s' must be a duration such as 250ms, 1.5s, 40us, not '%s'",
                             what, text);
    double ns = value * scale;
    if (ns < 0 || ns > 1e18)
        return rig_yaml_fail(y, node, RIG_E_RANGE, "'%s' = %s is outside [0, 1e9 s]", what,
                             text);
    *out = (int64_t)llround(ns);
    return RIG_OK;
}

enum rig_status rig_yaml_enum(const struct rig_yaml *y, struct fy_node *node, const char *what,
                              const char *const *names, int32_t *out)
{
    enum rig_status status;
    const char *text = rig__yaml_scalar(y, node, what, &status);
    if (text == NULL) return status;
    char list[256] = "";
    size_t used = 0;
    for (int32_t i = 0; names[i] != NULL; i++) {
        if (strcmp(names[i], text) == 0) {
            *out = i;
            return RIG_OK;
        }
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
        used += n > 0 && (size_t)n < sizeof list - used ? (size_t)n : 0;
    }
    return rig_yaml_fail(y, node, RIG_E_INVALID, "'%s' must be one of %s, not '%s'", what, list,
                         text);
}

enum rig_status rig_yaml_key_int(const struct rig_yaml *y, struct fy_node *map, const char *key,
                                 int64_t lo, int64_t hi, int64_t *out)
{
    struct fy_node *node = rig_yaml_get(map, key);
    return node == NULL ? RIG_OK : rig_yaml_int(y, node, key, lo, hi, out);
}

enum rig_status rig_yaml_key_double(const struct rig_yaml *y, struct fy_node *map,
                                    const char *key, double lo, double hi, double *out)
{
    struct fy_node *node = rig_yaml_get(map, key);
    return node == NULL ? RIG_OK : rig_yaml_double(y, node, key, lo, hi, out);
}

enum rig_status rig_yaml_key_bool(const struct rig_yaml *y, struct fy_node *map,
                                  const char *key, bool *out)
{
    struct fy_node *node = rig_yaml_get(map, key);
    return node == NULL ? RIG_OK : rig_yaml_bool(y, node, key, out);
}

enum rig_status rig_yaml_key_string(const struct rig_yaml *y, struct fy_node *map,
                                    const char *key, char *out, size_t capacity)
{
    struct fy_node *node = rig_yaml_get(map, key);
    return node == NULL ? RIG_OK : rig_yaml_string(y, node, key, out, capacity);
}

enum rig_status rig_yaml_key_duration_ns(const struct rig_yaml *y, struct fy_node *map,
                                         const char *key, int64_t *out)
{
    struct fy_node *node = rig_yaml_get(map, key);
    return node == NULL ? RIG_OK : rig_yaml_duration_ns(y, node, key, out);
}

enum rig_status rig_yaml_key_enum(const struct rig_yaml *y, struct fy_node *map,
                                  const char *key, const char *const *names, int32_t *out)
{
    struct fy_node *node = rig_yaml_get(map, key);
    return node == NULL ? RIG_OK : rig_yaml_enum(y, node, key, names, out);
}

/* Splits "a.b.c" into at most RIG__YAML_PATH_PARTS_MAX parts inside `buffer` (modified). */
static int32_t rig__yaml_split(char *buffer, char **parts)
{
    int32_t count = 0;
    char *save = NULL;
    for (char *part = strtok_r(buffer, ".", &save); part != NULL;
         part = strtok_r(NULL, ".", &save)) {
        if (count == RIG__YAML_PATH_PARTS_MAX) return -1;
        parts[count++] = part;
    }
    return count;
}

/* The child of `node` called `part`, created as an empty mapping when `node` is a mapping
 * without it; NULL when the path cannot continue. */
static struct fy_node *rig__yaml_step(struct fy_document *doc, struct fy_node *node,
                                      const char *part)
{
    if (fy_node_is_sequence(node)) {
        char *end = NULL;
        long index = strtol(part, &end, 10);
        if (end == part || *end != '\0' || index < 0 || index > INT32_MAX) return NULL;
        return fy_node_sequence_get_by_index(node, (int)index);
    }
    if (!fy_node_is_mapping(node)) return NULL;
    struct fy_node *child = rig_yaml_get(node, part);
    if (child != NULL) return child;
    struct fy_node *key = fy_node_create_scalar_copy(doc, part, strlen(part));
    child = fy_node_create_mapping(doc);
    if (key == NULL || child == NULL || fy_node_mapping_append(node, key, child) != 0)
        return NULL;
    return child;
}

enum rig_status rig_yaml_override(struct rig_yaml *y, struct fy_document *doc,
                                  const char *assignment)
{
    const char *equals = strchr(assignment, '=');
    size_t key_length = equals != NULL ? (size_t)(equals - assignment) : 0;
    char buffer[256];
    char *parts[RIG__YAML_PATH_PARTS_MAX];
    if (equals == NULL || key_length == 0 || key_length >= sizeof buffer)
        return rig_yaml_fail(y, NULL, RIG_E_INVALID, "--set %s: expected key.path=value",
                             assignment);
    if (y->override_count == RIG_YAML_OVERRIDES_MAX)
        return rig_yaml_fail(y, NULL, RIG_E_CAPACITY, "more than %d --set overrides",
                             RIG_YAML_OVERRIDES_MAX);
    memcpy(buffer, assignment, key_length);
    buffer[key_length] = '\0';
    int32_t count = rig__yaml_split(buffer, parts);
    struct fy_node *node = fy_document_root(doc);
    for (int32_t i = 0; i + 1 < count && node != NULL; i++)
        node = rig__yaml_step(doc, node, parts[i]);
    if (count <= 0 || node == NULL || !fy_node_is_mapping(node))
        return rig_yaml_fail(y, NULL, RIG_E_INVALID,
                             "--set %s: the key path does not lead to a mapping", assignment);
    const char *value_text = equals + 1;
    struct fy_node *value = fy_node_build_from_string(doc, value_text, strlen(value_text));
    if (value == NULL)
        return rig_yaml_fail(y, NULL, RIG_E_PARSE, "--set %s: the value is not valid YAML",
                             assignment);
    const char *last = parts[count - 1];
    struct fy_node_pair *pair = fy_node_mapping_lookup_pair_by_string(node, last, strlen(last));
    struct fy_node *key = NULL;
    int rc;
    if (pair != NULL) {
        rc = fy_node_pair_set_value(pair, value);
    } else {
        key = fy_node_create_scalar_copy(doc, last, strlen(last));
        rc = key != NULL ? fy_node_mapping_append(node, key, value) : -1;
    }
    if (rc != 0)
        return rig_yaml_fail(y, NULL, RIG_E_NO_MEMORY, "--set %s: cannot modify the document",
                             assignment);
    y->override_nodes[y->override_node_count] = value;
    y->override_texts[y->override_node_count++] = assignment;
    if (key != NULL) {
        y->override_nodes[y->override_node_count] = key;
        y->override_texts[y->override_node_count++] = assignment;
    }
    y->override_count++;
    return RIG_OK;
}
