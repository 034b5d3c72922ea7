/* measure.cu — measures, on a real GPU, the numbers a simulator device profile holds.
 *
 * Not part of the build: a standalone probe whose output is copied into
 * sim/profiles/<gpu>.yaml by hand (with the date and the GPU) until the calibration issue
 * automates it. Build on any machine with the CUDA toolkit and run on the GPU machine:
 *   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a sim/profiles/measure.cu -lcublas \
 *        -o build-gpu/measure
 *   LD_LIBRARY_PATH=/usr/local/cuda/lib64 build-gpu/measure
 * What it measures (medians of repeated trials, wall time from CLOCK_MONOTONIC on the host
 * and CUDA events on the device):
 *   kernel_launch_host_ns     host time of one cudaLaunchKernel of an empty kernel;
 *   min_kernel_ns             device time per empty kernel queued back to back;
 *   launch round trip         launch + run + cudaStreamSynchronize of one empty kernel, idle
 *                             (once after a burst, and as the median of 201 back to back);
 *   graph_launch_host_ns      host time of cudaGraphLaunch of a 100-node graph;
 *   graph_node_ns             device time per empty node of that graph;
 *   h2d/d2h                   pinned 256 MiB copy bandwidth, and a 4-byte copy's time;
 *   copy                      device-to-device 1 GiB bandwidth (read + write bytes);
 *   elementwise               a bf16 scale kernel over 1 GiB (read + write bytes);
 *   gemm                      cuBLAS bf16 GEMM, fp32 accumulation, TFLOP/s and bytes/s.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));    \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define TRIALS 7

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

__global__ void empty_kernel(void) {}

/* Keeps the GPU busy for about `ns`, so that work queued behind it runs back to back. */
__global__ void spin_kernel(long long ns)
{
    long long start = clock64();
    while (clock64() - start < ns * 2) {
    }
}

__global__ void scale_kernel(__nv_bfloat16 *out, const __nv_bfloat16 *in, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) out[i] = __float2bfloat16(__bfloat162float(in[i]) * 1.5f);
}

static float event_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

static void launches(cudaStream_t s, cudaEvent_t a, cudaEvent_t b)
{
    const int n = 500;
    double host[TRIALS], device[TRIALS], round[TRIALS];
    for (int t = 0; t < TRIALS; t++) {
        spin_kernel<<<1, 1, 0, s>>>(20000000); /* 20 ms: the queue fills behind it */
        CHECK(cudaEventRecord(a, s));
        double t0 = now_ns();
        for (int i = 0; i < n; i++) empty_kernel<<<1, 32, 0, s>>>();
        host[t] = (now_ns() - t0) / n;
        CHECK(cudaEventRecord(b, s));
        device[t] = event_ms(a, b) * 1e6 / n;
        CHECK(cudaStreamSynchronize(s));
        t0 = now_ns();
        empty_kernel<<<1, 32, 0, s>>>();
        CHECK(cudaStreamSynchronize(s));
        round[t] = now_ns() - t0;
    }
    printf("kernel_launch_host_ns     %.0f\n", median(host, TRIALS));
    printf("min_kernel_ns             %.0f   (empty kernels back to back)\n",
           median(device, TRIALS));
    printf("launch_round_trip_ns      %.0f   (launch + run + synchronize, idle GPU)\n",
           median(round, TRIALS));
}

/* Round trips on an idle GPU, repeated back to back: launch (or 4-byte copy) + synchronize. */
static void round_trips(cudaStream_t s)
{
    const int n = 201;
    static double kernel[201], h2d[201], d2h[201];
    int *host, *dev;
    CHECK(cudaMallocHost((void **)&host, 64));
    CHECK(cudaMalloc((void **)&dev, 64));
    for (int i = 0; i < n; i++) {
        double t0 = now_ns();
        empty_kernel<<<1, 32, 0, s>>>();
        CHECK(cudaStreamSynchronize(s));
        double t1 = now_ns();
        CHECK(cudaMemcpyAsync(dev, host, 4, cudaMemcpyHostToDevice, s));
        CHECK(cudaStreamSynchronize(s));
        double t2 = now_ns();
        CHECK(cudaMemcpyAsync(host, dev, 4, cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
        double t3 = now_ns();
        kernel[i] = t1 - t0;
        h2d[i] = t2 - t1;
        d2h[i] = t3 - t2;
    }
    printf("round trip kernel+sync    %.0f ns (median of %d)\n", median(kernel, n), n);
    printf("round trip h2d 4 B+sync   %.0f ns\n", median(h2d, n));
    printf("round trip d2h 4 B+sync   %.0f ns\n", median(d2h, n));
    CHECK(cudaFreeHost(host));
    CHECK(cudaFree(dev));
}

static void graphs(cudaStream_t s, cudaEvent_t a, cudaEvent_t b)
{
    const int nodes = 100;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < nodes; i++) empty_kernel<<<1, 32, 0, s>>>();
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    double host[TRIALS], device[TRIALS];
    for (int t = 0; t < TRIALS; t++) {
        spin_kernel<<<1, 1, 0, s>>>(5000000);
        CHECK(cudaEventRecord(a, s));
        double t0 = now_ns();
        CHECK(cudaGraphLaunch(exec, s));
        host[t] = now_ns() - t0;
        CHECK(cudaEventRecord(b, s));
        device[t] = event_ms(a, b) * 1e6 / nodes;
    }
    printf("graph_launch_host_ns      %.0f   (%d nodes)\n", median(host, TRIALS), nodes);
    printf("graph_node_ns             %.0f   (device time per empty node)\n",
           median(device, TRIALS));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
}

static void copies(cudaStream_t s, cudaEvent_t a, cudaEvent_t b)
{
    const size_t big = (size_t)256 << 20, huge = (size_t)1 << 30;
    void *host, *dev, *dev2;
    CHECK(cudaMallocHost(&host, big));
    CHECK(cudaMalloc(&dev, huge));
    CHECK(cudaMalloc(&dev2, huge));
    const cudaMemcpyKind kinds[2] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost};
    const char *names[2] = {"h2d", "d2h"};
    for (int k = 0; k < 2; k++) {
        double bw[TRIALS], small[TRIALS];
        for (int t = 0; t < TRIALS; t++) {
            void *dst = k == 0 ? dev : host, *src = k == 0 ? host : dev;
            CHECK(cudaEventRecord(a, s));
            CHECK(cudaMemcpyAsync(dst, src, big, kinds[k], s));
            CHECK(cudaEventRecord(b, s));
            bw[t] = (double)big / (event_ms(a, b) * 1e-3);
            double t0 = now_ns();
            CHECK(cudaMemcpyAsync(dst, src, 4, kinds[k], s));
            CHECK(cudaStreamSynchronize(s));
            small[t] = now_ns() - t0;
        }
        printf("%s_bytes_per_s           %.3g\n", names[k], median(bw, TRIALS));
        printf("%s_small_copy_ns         %.0f   (4 bytes, call to synchronize)\n", names[k],
               median(small, TRIALS));
    }
    double d2d[TRIALS], ew[TRIALS];
    for (int t = 0; t < TRIALS; t++) {
        CHECK(cudaEventRecord(a, s));
        CHECK(cudaMemcpyAsync(dev2, dev, huge, cudaMemcpyDeviceToDevice, s));
        CHECK(cudaEventRecord(b, s));
        d2d[t] = 2.0 * (double)huge / (event_ms(a, b) * 1e-3);
        CHECK(cudaEventRecord(a, s));
        scale_kernel<<<132 * 16, 256, 0, s>>>((__nv_bfloat16 *)dev2, (__nv_bfloat16 *)dev,
                                               huge / 2);
        CHECK(cudaEventRecord(b, s));
        ew[t] = 2.0 * (double)huge / (event_ms(a, b) * 1e-3);
    }
    printf("copy_d2d_bytes_per_s      %.3g   (read + write)\n", median(d2d, TRIALS));
    printf("elementwise_bytes_per_s   %.3g   (bf16 scale, read + write)\n", median(ew, TRIALS));
    CHECK(cudaFreeHost(host));
    CHECK(cudaFree(dev));
    CHECK(cudaFree(dev2));
}

static void gemm(cudaStream_t s, cudaEvent_t a, cudaEvent_t b, int m, int n, int k)
{
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) exit(1);
    cublasSetStream(handle, s);
    void *A, *B, *C;
    CHECK(cudaMalloc(&A, (size_t)m * k * 2));
    CHECK(cudaMalloc(&B, (size_t)n * k * 2));
    CHECK(cudaMalloc(&C, (size_t)m * n * 2));
    CHECK(cudaMemset(A, 0, (size_t)m * k * 2));
    CHECK(cudaMemset(B, 0, (size_t)n * k * 2));
    float alpha = 1, beta = 0;
    double ms[TRIALS];
    for (int t = -1; t < TRIALS; t++) { /* out[m, n] = a[m, k] b[n, k]^T, row-major */
        CHECK(cudaEventRecord(a, s));
        for (int r = 0; r < 10; r++) {
            cublasStatus_t st = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha,
                                             B, CUDA_R_16BF, k, A, CUDA_R_16BF, k, &beta, C,
                                             CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                             CUBLAS_GEMM_DEFAULT);
            if (st != CUBLAS_STATUS_SUCCESS) exit(1);
        }
        CHECK(cudaEventRecord(b, s));
        if (t >= 0) ms[t] = event_ms(a, b) / 10;
    }
    double t_s = median(ms, TRIALS) * 1e-3;
    double flops = 2.0 * m * n * k, bytes = 2.0 * ((double)m * k + (double)n * k + (double)m * n);
    printf("gemm %5d x %5d x %5d  %8.1f us  %6.1f TFLOP/s  %7.1f GB/s\n", m, n, k, t_s * 1e6,
           flops / t_s / 1e12, bytes / t_s / 1e9);
    CHECK(cudaFree(A));
    CHECK(cudaFree(B));
    CHECK(cudaFree(C));
    cublasDestroy(handle);
}

int main(void)
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    size_t free_bytes, total_bytes;
    CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    printf("device                    %s, %d SMs, %zu bytes total\n", prop.name,
           prop.multiProcessorCount, total_bytes);
    cudaStream_t s;
    cudaEvent_t a, b;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    empty_kernel<<<1, 32, 0, s>>>();
    CHECK(cudaStreamSynchronize(s));
    launches(s, a, b);
    round_trips(s);
    graphs(s, a, b);
    copies(s, a, b);
    const int shapes[][3] = {{8192, 8192, 8192}, {4096, 4096, 4096}, {2048, 5120, 5120},
                             {512, 5120, 5120},  {64, 5120, 5120},   {1, 8192, 8192},
                             {16, 25600, 5120},  {256, 25600, 5120}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        gemm(s, a, b, shapes[i][0], shapes[i][1], shapes[i][2]);
    return 0;
}
