/* yaml_guard.c — see yaml_guard.h. */
#include "hal/yaml_guard.h"

#include <stdbool.h>

/* Bytes of the line break at `at` (YAML's "\r\n", "\r", "\n", and the UTF-8 NEL, LS and PS
 * that YAML 1.1 readers also break on), 0 when there is none. */
static size_t rig__line_break(const char *text, size_t len, size_t at)
{
    const unsigned char *u = (const unsigned char *)text;
    if (u[at] == '\n') return 1;
    if (u[at] == '\r') return at + 1 < len && u[at + 1] == '\n' ? 2 : 1;
    if (u[at] == 0xC2 && at + 1 < len && u[at + 1] == 0x85) return 2;
    if (u[at] == 0xE2 && at + 2 < len && u[at + 1] == 0x80 &&
        (u[at + 2] == 0xA8 || u[at + 2] == 0xA9))
        return 3;
    return 0;
}

static bool rig__blank_or_end(const char *text, size_t len, size_t at)
{
    return at >= len || text[at] == ' ' || text[at] == '\t' || rig__line_break(text, len, at) > 0;
}

int64_t rig_yaml_explicit_key_at(const char *text, size_t len)
{
    size_t at = 0;
    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB &&
        (unsigned char)text[2] == 0xBF)
        at = 3; /* a byte order mark */
    while (at < len) {
        /* At a line's start: indentation (spaces, and tabs, which YAML forbids there but a
         * reader may skip), then any "- " sequence entries and ": " explicit values (a key
         * may open inside either: "- ? k", ": ? k"). */
        for (;;) {
            while (at < len && (text[at] == ' ' || text[at] == '\t'))
                at++;
            if (at + 1 < len && (text[at] == '-' || text[at] == ':') &&
                (text[at + 1] == ' ' || text[at + 1] == '\t')) {
                at += 2;
                continue;
            }
            break;
        }
        if (at < len && text[at] == '?' && rig__blank_or_end(text, len, at + 1)) return (int64_t)at;
        size_t step = 0;
        while (at < len && (step = rig__line_break(text, len, at)) == 0)
            at++;
        at += step;
    }
    return -1;
}
