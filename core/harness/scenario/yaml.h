/* yaml.h — strict reading of YAML documents through libfyaml's document API.
 *
 * Why a layer over libfyaml: every file rig reads (scenarios, and whatever else wants it) must
 * reject what it does not understand — an unknown key, a string where a number belongs, a
 * number out of range — with a message naming file:line:column and the key, the way a
 * compiler does. libfyaml gives nodes and tokens; these helpers turn them into checked values
 * and positioned messages. A syntax error is reported from libfyaml's collected diagnostics.
 *
 * Conventions: every helper returns RIG_OK or a negative status after writing
 * "file:line:column: message" into the context's error buffer; nothing is changed on error.
 * The rig_yaml_key_* helpers look `key` up in a mapping and leave `*out` unchanged when the key
 * is absent (so the caller sets the default first). Positions are 1-based.
 *
 * Threads: a context and its document are used by one thread at a time.
 */
#ifndef RIG_YAML_H
#define RIG_YAML_H

#include <libfyaml.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/status.h"

#define RIG_YAML_OVERRIDES_MAX 64

struct rig_yaml {
    const char *file;  /* name used in messages */
    char *error;       /* (error_len) receives the first error */
    size_t error_len;
    /* Nodes put in by rig_yaml_override: an error inside one names the override instead of
     * a position in the file, which the node does not come from. */
    struct fy_node *override_nodes[2 * RIG_YAML_OVERRIDES_MAX]; /* (override_node_count) keys
                                                                   and values put in */
    const char *override_texts[2 * RIG_YAML_OVERRIDES_MAX];     /* (override_node_count) */
    int32_t override_node_count;
    int32_t override_count;
};

/* Parses a file (or text when `text` is non-NULL) into a document. On a syntax error returns
 * NULL with *status = RIG_E_PARSE and the position in the message; a missing file is RIG_E_IO.
 * An empty document is RIG_E_PARSE too. */
struct fy_document *rig_yaml_parse(struct rig_yaml *y, const char *text, enum rig_status *status);

/* 1-based line and column where `node` starts (a collection: its first scalar); 0, 0 when
 * unknown. Can't fail. */
void rig_yaml_position(struct fy_node *node, int32_t *line, int32_t *column);

/* Writes "file:line:column: <formatted message>" for `node` (NULL: no position) and returns
 * `status`. Only the first error is kept: later calls leave the message alone. */
enum rig_status rig_yaml_fail(const struct rig_yaml *y, struct fy_node *node,
                              enum rig_status status, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

/* RIG_E_INVALID unless `node` is a mapping (resp. sequence); `what` names it in the message. */
enum rig_status rig_yaml_mapping(const struct rig_yaml *y, struct fy_node *node,
                                 const char *what);
enum rig_status rig_yaml_sequence(const struct rig_yaml *y, struct fy_node *node,
                                  const char *what);
/* RIG_E_INVALID unless `node` is a scalar (text of any length, an alias refused). */
enum rig_status rig_yaml_text(const struct rig_yaml *y, struct fy_node *node, const char *what);
/* RIG_E_INVALID at the first key of `map` that is not in `known` (NULL-terminated), with the
 * list of known keys in the message. Keys must be plain scalars. */
enum rig_status rig_yaml_check_keys(const struct rig_yaml *y, struct fy_node *map,
                                    const char *what, const char *const *known);
/* The value under `key`, or NULL when absent. */
struct fy_node *rig_yaml_get(struct fy_node *map, const char *key);
/* True when `node` is a plain scalar that reads as YAML null (~, null, empty). */
bool rig_yaml_is_null(struct fy_node *node);

/* Typed scalars. `what` names the value in messages (usually its key). */
enum rig_status rig_yaml_int(const struct rig_yaml *y, struct fy_node *node, const char *what,
                             int64_t lo, int64_t hi, int64_t *out);
/* Accepts "inf" / ".inf" when hi is infinite. */
enum rig_status rig_yaml_double(const struct rig_yaml *y, struct fy_node *node,
                                const char *what, double lo, double hi, double *out);
enum rig_status rig_yaml_bool(const struct rig_yaml *y, struct fy_node *node, const char *what,
                              bool *out);
/* Copies the scalar; RIG_E_RANGE when it does not fit in `capacity` bytes with its NUL. */
enum rig_status rig_yaml_string(const struct rig_yaml *y, struct fy_node *node,
                                const char *what, char *out, size_t capacity);
/* A duration "250ms", "1.5s", "40us", "7ns" or a bare number of seconds, >= 0, in ns. */
enum rig_status rig_yaml_duration_ns(const struct rig_yaml *y, struct fy_node *node,
                                     const char *what, int64_t *out);
/* One of `names` (NULL-terminated); *out = its index. */
enum rig_status rig_yaml_enum(const struct rig_yaml *y, struct fy_node *node, const char *what,
                              const char *const *names, int32_t *out);

/* The same, looked up by key in `map`; absent keys leave *out unchanged and return RIG_OK. */
enum rig_status rig_yaml_key_int(const struct rig_yaml *y, struct fy_node *map, const char *key,
                                 int64_t lo, int64_t hi, int64_t *out);
enum rig_status rig_yaml_key_double(const struct rig_yaml *y, struct fy_node *map,
                                    const char *key, double lo, double hi, double *out);
enum rig_status rig_yaml_key_bool(const struct rig_yaml *y, struct fy_node *map,
                                  const char *key, bool *out);
enum rig_status rig_yaml_key_string(const struct rig_yaml *y, struct fy_node *map,
                                    const char *key, char *out, size_t capacity);
enum rig_status rig_yaml_key_duration_ns(const struct rig_yaml *y, struct fy_node *map,
                                         const char *key, int64_t *out);
enum rig_status rig_yaml_key_enum(const struct rig_yaml *y, struct fy_node *map,
                                  const char *key, const char *const *names, int32_t *out);

/* Applies an override "a.b.c=value" to `doc`: walks mappings by key (and sequences by index),
 * creating missing mapping keys on the way, and puts `value` (parsed as YAML, so "[1, 2]" is a
 * list) at the end. RIG_E_INVALID with a message when the path crosses a scalar or an index is
 * out of range. */
enum rig_status rig_yaml_override(struct rig_yaml *y, struct fy_document *doc,
                                  const char *assignment);

#endif /* RIG_YAML_H */
