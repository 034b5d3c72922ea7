/* fuzz_support.c — see fuzz_support.h. */
#include "tests/fuzz/fuzz_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hal/status.h"

static char rig__fuzz_dir[64];
static char rig__fuzz_path[128];

static void rig__fuzz_cleanup(void)
{
    if (rig__fuzz_path[0] != '\0') unlink(rig__fuzz_path);
    if (rig__fuzz_dir[0] != '\0') rmdir(rig__fuzz_dir);
}

char *rig_fuzz_cstring(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    RIG_ASSERT(text != NULL);
    if (size > 0) memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

const char *rig_fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    if (rig__fuzz_dir[0] == '\0') {
        snprintf(rig__fuzz_dir, sizeof rig__fuzz_dir, "/tmp/rig-fuzz-XXXXXX");
        char *made = mkdtemp(rig__fuzz_dir);
        RIG_ASSERT(made != NULL);
        atexit(rig__fuzz_cleanup);
    }
    int n = snprintf(rig__fuzz_path, sizeof rig__fuzz_path, "%s/%s", rig__fuzz_dir, name);
    RIG_ASSERT(n > 0 && (size_t)n < sizeof rig__fuzz_path);
    FILE *file = fopen(rig__fuzz_path, "wb");
    RIG_ASSERT(file != NULL);
    size_t written = size == 0 ? 0 : fwrite(data, 1, size, file);
    int closed = fclose(file);
    RIG_ASSERT(written == size);
    RIG_ASSERT(closed == 0);
    return rig__fuzz_path;
}
