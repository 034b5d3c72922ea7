/* gemm_candidates.cu — a measuring tool, not part of rig: for the decode-size GEMMs of the
 * presets (out[M, N] = x[M, K] W[N, K]^T, bf16 in and out, fp32 accumulate — rig's
 * cuda/ops/gemm_plan.cu descriptors), times cuBLASLt's first heuristic choice (what rig's GEMM
 * plans run) against the other candidates the heuristic returns and against the first choice
 * with split-K forced, with the weights cold in L2 (copies rotated, > 200 MB) as in a decode
 * step. One line per (N, K, M). Build and run on the GPU machine:
 *   nvcc -O2 -arch=sm_90a -o /tmp/gc tools/gpu/gemm_candidates.cu -lcublasLt && /tmp/gc [M,M,...]
 * The optional argument lists the row counts (default the decode sizes 1 ... 256; prefill
 * sizes up to 16,384 rows work too: the weights are then as often warm as not).
 */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) != 0) {                                                                            \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x);                         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define WORKSPACE ((size_t)32 << 20)
#define CANDIDATES 24
#define RUNS 30

/* Finite bf16 values of both signs in [1, 2): constant operands would time differently. */
static __global__ void fill_random(uint16_t *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        p[i] = (uint16_t)(0x3f80u | (h & 0x7fu) | ((h >> 8) & 1u) << 15);
    }
}

static cublasLtHandle_t lt;
static void *workspace;
static cudaStream_t stream;

struct shape {
    const char *name;
    int n, k;
};

/* Median-free mean over RUNS calls, each on the next weight copy; -1 when the algo fails. */
static float time_algo(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t w_layout,
                       cublasLtMatrixLayout_t x_layout, cublasLtMatrixLayout_t d_layout,
                       const cublasLtMatmulAlgo_t *algo, void **weights, int copies, void *x,
                       void *out)
{
    float alpha = 1.0f, beta = 0.0f;
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    for (int i = 0; i < 3; i++)
        if (cublasLtMatmul(lt, desc, &alpha, weights[i % copies], w_layout, x, x_layout, &beta, out,
                           d_layout, out, d_layout, algo, workspace, WORKSPACE, stream) != 0)
            return -1.0f;
    cudaEventRecord(start, stream);
    for (int i = 0; i < RUNS; i++)
        (void)cublasLtMatmul(lt, desc, &alpha, weights[(i + 3) % copies], w_layout, x, x_layout,
                             &beta, out, d_layout, out, d_layout, algo, workspace, WORKSPACE,
                             stream);
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (cudaGetLastError() != cudaSuccess) return -1.0f;
    return ms * 1000.0f / RUNS;
}

static int attr_u32(const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t a)
{
    uint32_t v = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, a, &v, sizeof v, &written) != 0) return -1;
    return (int)v;
}

int main(int argc, char **argv)
{
    static const struct shape shapes[] = {
        {"0.6b-qkv", 4096, 1024},  {"0.6b-o", 1024, 2048},   {"0.6b-gate_up", 6144, 1024},
        {"0.6b-down", 1024, 3072}, {"1b-qkv", 3072, 2048},   {"1b-o", 2048, 2048},
        {"1b-gate_up", 16384, 2048}, {"1b-down", 2048, 8192}, {"8b-qkv", 6144, 4096},
        {"8b-o", 4096, 4096},      {"8b-gate_up", 24576, 4096}, {"8b-down", 4096, 12288},
    };
    int ms[32] = {1, 8, 16, 32, 64, 128, 256};
    int m_count = 7, m_max = 256;
    if (argc > 1) {
        m_count = 0;
        for (char *p = argv[1]; *p != '\0' && m_count < 32;) {
            ms[m_count] = (int)strtol(p, &p, 10);
            if (ms[m_count] < 1 || ms[m_count] > 16384) {
                fprintf(stderr, "rows 1..16384\n");
                return 2;
            }
            m_count++;
            if (*p == ',') p++;
        }
        m_max = 1;
        for (int i = 0; i < m_count; i++)
            m_max = ms[i] > m_max ? ms[i] : m_max;
    }
    CHECK(cublasLtCreate(&lt));
    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaMalloc(&workspace, WORKSPACE));
    void *x, *out;
    CHECK(cudaMalloc(&x, (size_t)m_max * 12288 * 2));
    CHECK(cudaMalloc(&out, (size_t)m_max * 24576 * 2));
    fill_random<<<1024, 256>>>((uint16_t *)x, (size_t)m_max * 12288, 1u);
    printf("%-13s %4s %9s %9s %-22s %9s %-10s\n", "shape", "M", "top1_us", "best_us",
           "best (index tile split)", "split_us", "(split)");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int n = shapes[s].n, k = shapes[s].k;
        size_t bytes = (size_t)n * k * 2;
        int copies = (int)((size_t)256 * 1024 * 1024 / bytes) + 2;
        if (copies > 64) copies = 64;
        void *weights[64];
        for (int c = 0; c < copies; c++) {
            CHECK(cudaMalloc(&weights[c], bytes));
            fill_random<<<1024, 256>>>((uint16_t *)weights[c], bytes / 2, 7u + (uint32_t)c);
        }
        cublasLtMatmulDesc_t desc;
        CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasOperation_t t = CUBLAS_OP_T, no = CUBLAS_OP_N;
        CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
        CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &no, sizeof no));
        cublasLtMatrixLayout_t w_layout;
        CHECK(cublasLtMatrixLayoutCreate(&w_layout, CUDA_R_16BF, k, n, k));
        for (int mi = 0; mi < m_count; mi++) {
            int m = ms[mi];
            cublasLtMatrixLayout_t x_layout, d_layout;
            CHECK(cublasLtMatrixLayoutCreate(&x_layout, CUDA_R_16BF, k, m, k));
            CHECK(cublasLtMatrixLayoutCreate(&d_layout, CUDA_R_16BF, n, m, n));
            cublasLtMatmulPreference_t pref;
            CHECK(cublasLtMatmulPreferenceCreate(&pref));
            uint64_t ws = WORKSPACE;
            uint32_t reduction =
                CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
            uint32_t align = 16;
            CHECK(cublasLtMatmulPreferenceSetAttribute(
                pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
            CHECK(cublasLtMatmulPreferenceSetAttribute(
                pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction, sizeof reduction));
            static const cublasLtMatmulPreferenceAttributes_t aligns[4] = {
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
            for (int i = 0; i < 4; i++)
                CHECK(cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &align, sizeof align));
            cublasLtMatmulHeuristicResult_t results[CANDIDATES];
            int found = 0;
            CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, w_layout, x_layout, d_layout, d_layout,
                                                 pref, CANDIDATES, results, &found));
            float top1 = -1, best = 1e30f;
            int best_i = -1;
            for (int i = 0; i < found; i++) {
                if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
                float us = time_algo(desc, w_layout, x_layout, d_layout, &results[i].algo, weights,
                                     copies, x, out);
                if (i == 0) top1 = us;
                if (us > 0 && us < best) best = us, best_i = i;
            }
            /* split-K forced on the first choice */
            float split_best = 1e30f;
            int split_best_s = 0;
            for (int split = 2; split <= 32 && found > 0; split *= 2) {
                cublasLtMatmulAlgo_t algo = results[0].algo;
                uint32_t sv = (uint32_t)split, scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
                if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                         &sv, sizeof sv) != 0 ||
                    cublasLtMatmulAlgoConfigSetAttribute(
                        &algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme) != 0)
                    continue;
                cublasLtMatmulHeuristicResult_t check;
                if (cublasLtMatmulAlgoCheck(lt, desc, w_layout, x_layout, d_layout, d_layout,
                                            &algo, &check) != CUBLAS_STATUS_SUCCESS ||
                    check.workspaceSize > WORKSPACE)
                    continue;
                float us = time_algo(desc, w_layout, x_layout, d_layout, &algo, weights, copies, x,
                                     out);
                if (us > 0 && us < split_best) split_best = us, split_best_s = split;
            }
            char best_text[64];
            snprintf(best_text, sizeof best_text, "%d t%d s%d", best_i,
                     best_i >= 0 ? attr_u32(&results[best_i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID) : -1,
                     best_i >= 0 ? attr_u32(&results[best_i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)
                                 : -1);
            printf("%-13s %4d %9.2f %9.2f %-22s %9.2f s%d   (top1 t%d s%d; %d candidates; floor "
                   "%.2f us)\n",
                   shapes[s].name, m, top1, best, best_text,
                   split_best < 1e29f ? split_best : -1.0f, split_best_s,
                   found > 0 ? attr_u32(&results[0].algo, CUBLASLT_ALGO_CONFIG_TILE_ID) : -1,
                   found > 0 ? attr_u32(&results[0].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) : -1,
                   found, (double)bytes / 3.0e6);
            fflush(stdout);
            cublasLtMatmulPreferenceDestroy(pref);
            cublasLtMatrixLayoutDestroy(x_layout);
            cublasLtMatrixLayoutDestroy(d_layout);
        }
        cublasLtMatrixLayoutDestroy(w_layout);
        cublasLtMatmulDescDestroy(desc);
        for (int c = 0; c < copies; c++)
            cudaFree(weights[c]);
    }
    return 0;
}
