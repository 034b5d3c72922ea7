/* status.c — names and messages of rig's status codes, and the assertion failure path. */
#include "hal/status.h"

const char *rig_status_name(enum rig_status status)
{
    switch (status) {
#define RIG__STATUS_NAME(name, value, message)                                             \
    case RIG_##name:                                                                       \
        return #name;
        RIG_STATUS_MAP(RIG__STATUS_NAME)
#undef RIG__STATUS_NAME
    }
    return "UNKNOWN";
}

const char *rig_status_message(enum rig_status status)
{
    switch (status) {
#define RIG__STATUS_MESSAGE(name, value, message)                                          \
    case RIG_##name:                                                                       \
        return message;
        RIG_STATUS_MAP(RIG__STATUS_MESSAGE)
#undef RIG__STATUS_MESSAGE
    }
    return "unknown status";
}

_Noreturn void rig__assert_fail(const char *cond, const char *file, int line, const char *msg)
{
    fprintf(stderr, "rig: assertion failed at %s:%d: %s%s%s%s\n", file, line, cond,
            msg[0] ? " (" : "", msg, msg[0] ? ")" : "");
    fflush(stderr);
    abort();
}
