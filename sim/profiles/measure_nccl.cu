/* measure_nccl.cu — measures NCCL all-reduce and all-gather on the GPUs of one host, for the
 * all_reduce_* and all_gather_* keys of a simulator device profile (see measure.cu).
 *
 * Not part of the build. One process drives every visible GPU (ncclCommInitAll + group
 * calls). For each size it reports the time per collective (median of 9 trials of 20) and
 * nccl-tests' bus bandwidth: all-reduce 2 (n-1)/n * bytes per rank / time, all-gather
 * (n-1)/n * output bytes / time. The profile's latency is the time of the smallest message.
 *   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a sim/profiles/measure_nccl.cu -lnccl \
 *        -o build-gpu/measure_nccl
 *   NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=... build-gpu/measure_nccl
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));    \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)
#define NCCL(call)                                                                         \
    do {                                                                                   \
        ncclResult_t r_ = (call);                                                          \
        if (r_ != ncclSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, ncclGetErrorString(r_));    \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define GPUS_MAX 8
#define TRIALS 9
#define REPEAT 20

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct world {
    int n;
    ncclComm_t comms[GPUS_MAX];
    cudaStream_t streams[GPUS_MAX];
    cudaEvent_t begin[GPUS_MAX], end[GPUS_MAX];
    void *send[GPUS_MAX], *recv[GPUS_MAX];
};

/* Seconds per collective on rank 0 (all ranks run together). */
static double run(struct world *w, int gather, size_t bytes_per_rank)
{
    size_t count = bytes_per_rank / 2; /* bf16 elements */
    double trials[TRIALS];
    for (int t = -1; t < TRIALS; t++) {
        for (int r = 0; r < w->n; r++) {
            CHECK(cudaSetDevice(r));
            CHECK(cudaEventRecord(w->begin[r], w->streams[r]));
        }
        for (int i = 0; i < REPEAT; i++) {
            NCCL(ncclGroupStart());
            for (int r = 0; r < w->n; r++) {
                if (gather)
                    NCCL(ncclAllGather(w->send[r], w->recv[r], count, ncclBfloat16, w->comms[r],
                                       w->streams[r]));
                else
                    NCCL(ncclAllReduce(w->send[r], w->recv[r], count, ncclBfloat16, ncclSum,
                                       w->comms[r], w->streams[r]));
            }
            NCCL(ncclGroupEnd());
        }
        for (int r = 0; r < w->n; r++) {
            CHECK(cudaSetDevice(r));
            CHECK(cudaEventRecord(w->end[r], w->streams[r]));
        }
        float ms = 0;
        CHECK(cudaSetDevice(0));
        CHECK(cudaEventSynchronize(w->end[0]));
        CHECK(cudaEventElapsedTime(&ms, w->begin[0], w->end[0]));
        for (int r = 1; r < w->n; r++) {
            CHECK(cudaSetDevice(r));
            CHECK(cudaEventSynchronize(w->end[r]));
        }
        if (t >= 0) trials[t] = ms * 1e-3 / REPEAT;
    }
    qsort(trials, TRIALS, sizeof trials[0], cmp_double);
    return trials[TRIALS / 2];
}

int main(void)
{
    struct world w;
    CHECK(cudaGetDeviceCount(&w.n));
    if (w.n < 2) {
        printf("need at least 2 GPUs, have %d\n", w.n);
        return 1;
    }
    if (w.n > GPUS_MAX) w.n = GPUS_MAX;
    const size_t max_bytes = (size_t)256 << 20;
    int devs[GPUS_MAX];
    for (int r = 0; r < w.n; r++) devs[r] = r;
    NCCL(ncclCommInitAll(w.comms, w.n, devs));
    for (int r = 0; r < w.n; r++) {
        CHECK(cudaSetDevice(r));
        CHECK(cudaStreamCreateWithFlags(&w.streams[r], cudaStreamNonBlocking));
        CHECK(cudaEventCreate(&w.begin[r]));
        CHECK(cudaEventCreate(&w.end[r]));
        CHECK(cudaMalloc(&w.send[r], max_bytes));
        CHECK(cudaMalloc(&w.recv[r], max_bytes * w.n));
        CHECK(cudaMemset(w.send[r], 0, max_bytes));
    }
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%d x %s, NCCL %d\n", w.n, prop.name, NCCL_VERSION_CODE);
    const size_t sizes[] = {8 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20};
    double share = (double)(w.n - 1) / w.n;
    for (int gather = 0; gather < 2; gather++) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t bytes = gather ? sizes[i] / w.n : sizes[i]; /* gather: output = sizes[i] */
            double s = run(&w, gather, bytes);
            double bus = gather ? share * (double)sizes[i] / s : 2 * share * (double)bytes / s;
            printf("%s %10zu bytes %s: %9.1f us  bus %7.1f GB/s\n",
                   gather ? "all_gather" : "all_reduce", sizes[i],
                   gather ? "out" : "per rank", s * 1e6, bus / 1e9);
        }
    }
    for (int r = 0; r < w.n; r++) ncclCommDestroy(w.comms[r]);
    return 0;
}
