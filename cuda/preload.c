/* preload.c — loads rig's own kernels at device open (preload.h). */
#include "cuda/preload.h"

#include <cuda.h> /* driver types only: the calls go through entry points */
#include <cuda_runtime.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/cuda_internal.h"

extern const void *(*const rig_cuda_modules[])(void); /* build/cuda/cuda_modules.c */
extern const size_t rig_cuda_module_count;

struct rig__driver {
    CUresult (*func_get_module)(CUmodule *module, CUfunction function);
    CUresult (*function_count)(unsigned int *count, CUmodule module);
    CUresult (*enumerate)(CUfunction *functions, unsigned int count, CUmodule module);
    CUresult (*func_load)(CUfunction function);
    CUresult (*is_loaded)(CUfunctionLoadingState *state, CUfunction function);
};

/* The driver's entry point `name` as of CUDA 12.4; false when the driver lacks it. */
static bool rig__entry(const char *name, void **out)
{
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t error = cudaGetDriverEntryPointByVersion(name, out, 12040, cudaEnableDefault,
                                                          &found);
    if (error != cudaSuccess || found != cudaDriverEntryPointSuccess || *out == NULL) {
        (void)cudaGetLastError();
        return false;
    }
    return true;
}

static bool rig__driver(struct rig__driver *d)
{
    return rig__entry("cuFuncGetModule", (void **)&d->func_get_module) &&
           rig__entry("cuModuleGetFunctionCount", (void **)&d->function_count) &&
           rig__entry("cuModuleEnumerateFunctions", (void **)&d->enumerate) &&
           rig__entry("cuFuncLoad", (void **)&d->func_load) &&
           rig__entry("cuFuncIsLoaded", (void **)&d->is_loaded);
}

static enum rig_status rig__driver_error(const char *call, CUresult result)
{
    char message[64];
    snprintf(message, sizeof message, "CUresult %d", (int)result);
    return rig_cuda_report(RIG_E_DEVICE, __FILE__, __LINE__, call, message);
}

/* Loads (load) or counts the loaded (!load) functions of the module that holds `anchor`. */
static enum rig_status rig__walk_module(const struct rig__driver *d, const void *anchor, bool load,
                                        int64_t *functions, int64_t *loaded)
{
    cudaFunction_t function = NULL;
    RIG_CUDA_TRY(cudaGetFuncBySymbol(&function, anchor));
    CUmodule module = NULL;
    unsigned int count = 0;
    CUresult r = d->func_get_module(&module, (CUfunction)function);
    if (r != CUDA_SUCCESS) return rig__driver_error("cuFuncGetModule", r);
    if ((r = d->function_count(&count, module)) != CUDA_SUCCESS)
        return rig__driver_error("cuModuleGetFunctionCount", r);
    CUfunction *all = calloc(count > 0 ? count : 1, sizeof *all);
    if (all == NULL) return RIG_E_NO_MEMORY;
    r = d->enumerate(all, count, module);
    for (unsigned int i = 0; i < count && r == CUDA_SUCCESS; i++) {
        CUfunctionLoadingState state = CU_FUNCTION_LOADING_STATE_UNLOADED;
        if (load) r = d->func_load(all[i]);
        else if ((r = d->is_loaded(&state, all[i])) == CUDA_SUCCESS)
            *loaded += state == CU_FUNCTION_LOADING_STATE_LOADED;
    }
    free(all);
    if (r != CUDA_SUCCESS) return rig__driver_error(load ? "cuFuncLoad" : "cuFuncIsLoaded", r);
    *functions += count;
    return RIG_OK;
}

enum rig_status rig_cuda_preload(int64_t *functions)
{
    struct rig__driver d;
    if (!rig__driver(&d)) return RIG_OK; /* a driver before CUDA 12.4: lazy loading */
    int64_t unused = 0;
    for (size_t i = 0; i < rig_cuda_module_count; i++)
        RIG_TRY(rig__walk_module(&d, rig_cuda_modules[i](), true, functions, &unused));
    return RIG_OK;
}

enum rig_status rig_cuda_kernels_loaded(int64_t *modules, int64_t *functions, int64_t *loaded)
{
    struct rig__driver d;
    if (!rig__driver(&d)) return RIG_E_UNSUPPORTED;
    *modules = (int64_t)rig_cuda_module_count;
    *functions = *loaded = 0;
    for (size_t i = 0; i < rig_cuda_module_count; i++)
        RIG_TRY(rig__walk_module(&d, rig_cuda_modules[i](), false, functions, loaded));
    return RIG_OK;
}
