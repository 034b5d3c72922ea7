/* embedded.h — built-in data files compiled into the binary (tools/cmake/embed.cmake):
 * simulator device profiles (sim/profiles/NAME.yaml) and model presets
 * (core/model/presets/NAME.json). The binary needs no data directory at run time.
 * The table is immutable; safe from any thread. */
#ifndef RIG_EMBEDDED_H
#define RIG_EMBEDDED_H

#include <stddef.h>

struct rig_embedded_file {
    const char *name; /* file name without directory, e.g. "h100.yaml" */
    const char *text; /* NUL-terminated contents */
    size_t size;      /* bytes, without the NUL */
};

/* Terminated by an entry whose name is NULL. */
extern const struct rig_embedded_file rig_embedded_files[];

/* The embedded file called `name`, or NULL when there is none. Can't fail. */
const struct rig_embedded_file *rig_embedded_find(const char *name);

#endif /* RIG_EMBEDDED_H */
