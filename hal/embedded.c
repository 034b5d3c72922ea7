/* embedded.c — lookup in the table of built-in data files. */
#include "hal/embedded.h"

#include <string.h>

const struct rig_embedded_file *rig_embedded_find(const char *name)
{
    for (const struct rig_embedded_file *f = rig_embedded_files; f->name != NULL; f++) {
        if (strcmp(f->name, name) == 0) return f;
    }
    return NULL;
}
