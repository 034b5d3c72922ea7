/* yaml_guard.h — YAML text that Debian 12's libfyaml (0.8) crashes on, found before libfyaml
 * sees it, so that a hostile file gets an error and not a segfault.
 *
 * libfyaml 0.8 writes through a NULL pointer (fy_indent_vacuum_internal) on a block-context
 * explicit key whose content holds ": " and a tab, e.g. "? n:\t:" (found by
 * tests/fuzz/fuzz_sim_profile.c; `rig run` on that text crashed too). rig's YAML files
 * (scenarios, device profiles) are plain mappings that never need explicit ("complex") keys,
 * so every block-context explicit key is refused: a '?' first on its line (after indentation,
 * a byte order mark, "- " sequence entries and ": " explicit values: ": ? n:\t:" crashed it
 * too, found by tests/fuzz/fuzz_scenario.c) followed by a blank or a line break (any of
 * YAML's). A '?' inside a quoted scalar that happens to start a line is refused too (the check
 * reads text, not YAML); no rig file has one. Pure function of the text; thread-safe.
 */
#ifndef RIG_HAL_YAML_GUARD_H
#define RIG_HAL_YAML_GUARD_H

#include <stddef.h>
#include <stdint.h>

/* The byte offset of the first block-context explicit key indicator in `text` (`len` bytes),
 * or -1 when there is none. Can't fail. */
int64_t rig_yaml_explicit_key_at(const char *text, size_t len);

#endif /* RIG_HAL_YAML_GUARD_H */
