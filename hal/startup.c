/* startup.c — the start-up trace (startup.h). */
#include "hal/startup.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_once_t rig__once = PTHREAD_ONCE_INIT;
static pthread_mutex_t rig__lock = PTHREAD_MUTEX_INITIALIZER;
static bool rig__enabled;
static int64_t rig__first_ns, rig__last_ns;

static int64_t rig__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void rig__init(void)
{
    const char *v = getenv("RIG_START_TRACE");
    rig__enabled = v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
    rig__first_ns = rig__last_ns = rig__now_ns();
}

void rig_startup_mark(const char *what, ...)
{
    pthread_once(&rig__once, rig__init);
    if (!rig__enabled) return;
    char text[160];
    va_list args;
    va_start(args, what);
    vsnprintf(text, sizeof text, what, args);
    va_end(args);
    pthread_mutex_lock(&rig__lock);
    int64_t now = rig__now_ns();
    fprintf(stderr, "rig: start-up  +%.3f s  = %6.3f s  %s\n", (double)(now - rig__last_ns) / 1e9,
            (double)(now - rig__first_ns) / 1e9, text);
    rig__last_ns = now;
    pthread_mutex_unlock(&rig__lock);
}
