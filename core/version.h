/* version.h — rig's version and the git commit it was built from (generated at build time
 * by tools/cmake/gitinfo.cmake; "-dirty" when the tree had uncommitted changes). */
#ifndef RIG_VERSION_H
#define RIG_VERSION_H

extern const char *const rig_version_string; /* "0.1.0" */
extern const char *const rig_git_commit;     /* "1a2b3c4d5e6f" */

#endif /* RIG_VERSION_H */
