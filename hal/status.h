/* status.h — rig's error codes and the assertion macros every module uses.
 *
 * Operating errors (bad input, out of pages, a file that does not parse) are returned as a
 * negative `enum rig_status`; bugs crash through RIG_ASSERT. One X-macro gives every status
 * its name and message, as libuv does. RIG_VERIFY guards O(n) checks (walking the radix
 * tree, recounting pages): on in debug and test builds (RIG_VERIFY_ENABLED), off in release.
 *
 * The error convention (docs/architecture.md, "Errors"): a function that can fail returns an
 * `enum rig_status`, RIG_OK or negative, and leaves its state unchanged on error; where the
 * caller needs to know why, it also takes `char *error, size_t error_len` and writes one line
 * there (engine creation, the driver, model and scenario loading). RIG_TRY propagates a
 * failed status from a sequence of calls.
 *
 * Thread safety: everything here is reentrant; rig_status_name/message return static strings.
 */
#ifndef RIG_STATUS_H
#define RIG_STATUS_H

#include <stdio.h>
#include <stdlib.h>

#define RIG_STATUS_MAP(X)                                                              \
    X(OK, 0, "success")                                                                \
    X(E_INVALID, -1, "invalid argument")                                               \
    X(E_SHAPE, -2, "tensor shape mismatch")                                            \
    X(E_DTYPE, -3, "unsupported or mismatched dtype")                                  \
    X(E_HANDLE, -4, "invalid handle")                                                  \
    X(E_NO_MEMORY, -5, "out of host memory")                                           \
    X(E_DEVICE_MEMORY, -6, "out of device memory")                                     \
    X(E_UNSUPPORTED, -7, "operation not supported by this backend")                    \
    X(E_NOT_FOUND, -8, "not found")                                                    \
    X(E_IO, -9, "input/output error")                                                  \
    X(E_PARSE, -10, "parse error")                                                     \
    X(E_DEVICE, -11, "device error")                                                   \
    X(E_STATE, -12, "operation not allowed in this state")                             \
    X(E_CAPACITY, -13, "a configured limit was reached")                               \
    X(E_FAULT, -14, "injected fault")                                                  \
    X(E_RANGE, -15, "value out of range")                                              \
    X(E_TIMEOUT, -16, "timed out")

enum rig_status {
#define RIG__STATUS_ENUM(name, value, message) RIG_##name = (value),
    RIG_STATUS_MAP(RIG__STATUS_ENUM)
#undef RIG__STATUS_ENUM
};

/* Name of a status ("E_SHAPE"); "UNKNOWN" for a value outside the map. Can't fail. */
const char *rig_status_name(enum rig_status status);
/* Human-readable message of a status; "unknown status" outside the map. Can't fail. */
const char *rig_status_message(enum rig_status status);

/* Aborts with file:line and the failed expression. Always on: for cheap invariants. */
#define RIG_ASSERT(cond)                                                                   \
    do {                                                                                   \
        if (!(cond)) rig__assert_fail(#cond, __FILE__, __LINE__, "");                     \
    } while (0)
#define RIG_ASSERT_MSG(cond, msg)                                                          \
    do {                                                                                   \
        if (!(cond)) rig__assert_fail(#cond, __FILE__, __LINE__, (msg));                  \
    } while (0)

#ifdef RIG_VERIFY_ENABLED
#define RIG_VERIFY(cond) RIG_ASSERT(cond)
#define RIG_VERIFY_ON 1
#else
/* Unevaluated: the condition still compiles (and its helpers count as used). */
#define RIG_VERIFY(cond) ((void)sizeof((cond) ? 1 : 0))
#define RIG_VERIFY_ON 0
#endif

#define RIG_UNREACHABLE() rig__assert_fail("unreachable", __FILE__, __LINE__, "")

/* C11's _Noreturn is not C++: the CUDA backend's .cu files include this header too. */
#ifdef __cplusplus
#define RIG_NORETURN [[noreturn]]
#else
#define RIG_NORETURN _Noreturn
#endif

/* Prints "rig: assertion failed at file:line: cond (msg)" to stderr and aborts. */
RIG_NORETURN void rig__assert_fail(const char *cond, const char *file, int line, const char *msg);

/* Returns the status of `expr` from the enclosing function when it is not RIG_OK: for a
 * sequence of calls that each may fail and leave nothing to undo. */
#define RIG_TRY(expr)                                                                      \
    do {                                                                                   \
        enum rig_status rig__try = (expr);                                                 \
        if (rig__try != RIG_OK) return rig__try;                                           \
    } while (0)

#define RIG_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif /* RIG_STATUS_H */
