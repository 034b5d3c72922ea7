/* ktrace.c — a kernel timeline of any CUDA program, kernels inside replayed graphs included:
 * a CUDA injection library (the driver loads the library named by CUDA_INJECTION64_PATH at
 * cuInit and calls its InitializeInjection) that asks CUPTI for concurrent-kernel activity
 * records and writes one CSV row per kernel when the program exits.
 *
 * Why: a decode step replays a graph whose kernels overlap their neighbours (programmatic
 * dependent launch); CUDA events time the whole step, ncu serialises the kernels it profiles,
 * and the GPU machine has no nsys. CUPTI's concurrent-kernel records carry each kernel's
 * device start and end as it ran, and the graph and node it came from (docs/simulator.md,
 * "Decode steps in a graph"; tools/gpu/ktrace/steps.py takes the CSV apart).
 *
 * Use:  CUDA_INJECTION64_PATH=$PWD/libktrace.so KTRACE_OUT=trace.csv rig bench decode ...
 * Columns: start_ns, end_ns (GPU timestamps), device, stream, graph (0: not in a graph),
 * node (the graph node), correlation, grid, block, name (mangled, quoted). Records CUPTI
 * dropped are counted on stderr. Tracing costs the program a little host time per launch.
 *
 * Ownership: one process-wide writer; CUPTI hands completed buffers to ktrace__completed,
 * possibly from its own thread, so the file is written under a mutex. Not part of rig: a
 * developer's tool, built beside it when the CUDA toolkit has CUPTI (CMakeLists.txt).
 */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KTRACE_BUFFER_BYTES ((size_t)8 << 20)

static pthread_mutex_t ktrace__lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *ktrace__file;
static unsigned long long ktrace__kernels, ktrace__dropped;

static void ktrace__check(CUptiResult result, const char *what)
{
    if (result == CUPTI_SUCCESS) return;
    const char *text = NULL;
    cuptiGetResultString(result, &text);
    fprintf(stderr, "ktrace: %s: %s\n", what, text != NULL ? text : "unknown CUPTI error");
}

static void CUPTIAPI ktrace__requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, KTRACE_BUFFER_BYTES);
    *size = *buffer != NULL ? KTRACE_BUFFER_BYTES : 0;
    *max_records = 0; /* as many as fit */
}

/* A kernel's name as one CSV field: quoted, inner quotes doubled (template names hold commas). */
static void ktrace__name(FILE *f, const char *name)
{
    fputc('"', f);
    for (const char *c = name != NULL ? name : "?"; *c != '\0'; c++) {
        if (*c == '"') fputc('"', f);
        fputc(*c, f);
    }
    fputc('"', f);
}

static void CUPTIAPI ktrace__completed(CUcontext context, uint32_t stream, uint8_t *buffer,
                                       size_t size, size_t valid)
{
    pthread_mutex_lock(&ktrace__lock);
    CUpti_Activity *record = NULL;
    while (ktrace__file != NULL &&
           cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
            record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)record;
        fprintf(ktrace__file, "%llu,%llu,%u,%u,%u,%llu,%u,%d:%d:%d,%d:%d:%d,",
                (unsigned long long)k->start, (unsigned long long)k->end, k->deviceId, k->streamId,
                k->graphId, (unsigned long long)k->graphNodeId, k->correlationId, k->gridX,
                k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ);
        ktrace__name(ktrace__file, k->name);
        fputc('\n', ktrace__file);
        ktrace__kernels++;
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS)
        ktrace__dropped += dropped;
    pthread_mutex_unlock(&ktrace__lock);
    (void)size;
    free(buffer);
}

static void ktrace__finish(void)
{
    ktrace__check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flush");
    pthread_mutex_lock(&ktrace__lock);
    if (ktrace__file != NULL) {
        fclose(ktrace__file);
        ktrace__file = NULL;
        fprintf(stderr, "ktrace: %llu kernels written, %llu records dropped\n", ktrace__kernels,
                ktrace__dropped);
    }
    pthread_mutex_unlock(&ktrace__lock);
}

/* Called by the CUDA driver once, at cuInit. Returns 1 when tracing started, 0 otherwise (the
 * program runs on untraced). */
int InitializeInjection(void)
{
    const char *path = getenv("KTRACE_OUT");
    if (path == NULL || path[0] == '\0') path = "ktrace.csv";
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "ktrace: cannot write %s; not tracing\n", path);
        return 0;
    }
    fputs("start_ns,end_ns,device,stream,graph,node,correlation,grid,block,name\n", f);
    ktrace__file = f;
    CUptiResult result = cuptiActivityRegisterCallbacks(ktrace__requested, ktrace__completed);
    if (result == CUPTI_SUCCESS)
        result = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (result != CUPTI_SUCCESS) {
        ktrace__check(result, "enabling kernel records");
        fclose(f);
        ktrace__file = NULL;
        return 0;
    }
    atexit(ktrace__finish);
    return 1;
}
