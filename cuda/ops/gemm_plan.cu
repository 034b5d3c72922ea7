/* gemm_plan.cu — cuBLASLt GEMM plans per size class of M (see gemm_plan.cuh). */
#include <cublasLt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/ops/common.cuh"
#include "cuda/ops/gemm_plan.cuh"

RIG_CUDA_MODULE(gemm_plan)

/* Classes 0..4: M = 1, 2, 4, 8, 16; then 4 per octave from (16, 32] to (2^19, 2^20]. */
#define RIG__PER_OCTAVE 4
#define RIG__CLASSES    (5 + 16 * RIG__PER_OCTAVE)
#define RIG__CLASS_NONE 0 /* not chosen yet */
#define RIG__CLASS_PLAN 1 /* algo[] holds the class's algorithm */
#define RIG__CLASS_FALL 2 /* no algorithm, or cuBLASLt refused it: cublasGemmEx */

struct rig__family {
    int32_t ordinal; /* the device the algorithms were chosen for */
    int64_t n, k, ld_w, ld_x, ld_out;
    cudaDataType_t out_type;
    int32_t align; /* bytes every operand's address and row stride are a multiple of (<= 16) */
    bool warmed;   /* every chosen algorithm has run once (rig__warm) */
    cublasLtMatmulDescOpaque_t desc;
    cublasLtMatrixLayoutOpaque_t w_layout;
    uint8_t state[RIG__CLASSES];
    cublasLtMatmulAlgo_t algo[RIG__CLASSES];
};

/* A stream's handle on the plans: its cuBLASLt handle. */
struct rig_cuda_gemm_plans {
    cublasLtHandle_t lt;
    bool enabled;
};

/* The process's plans, one table per device, shared by every stream of that device (engines
 * of one process, and a bench's runs one after another, choose each algorithm once); static
 * storage, each table under its own lock. Per device, not one for the process: a TP rank's
 * thread holds its table's lock while the family's first use launches its warm runs, and
 * that launch can wait for its GPU (cuBLASLt loads the kernel lazily, and a module load waits
 * for the device's running kernels — an all-reduce among them, waiting for the other ranks).
 * With one lock for all devices, a rank waiting for the lock before its own all-reduce never
 * issued it: the 4-GPU hang of docs/gpu.md. A device's table is only ever used by the one
 * rank driving it, so no lock couples two ranks. */
#define RIG__DEVICES 16 /* ordinals past this: no plans (cublasGemmEx) */
struct rig__table {
    pthread_mutex_t lock;
    struct rig__family families[RIG_CUDA_GEMM_FAMILIES_MAX];
    int32_t count;
};
static struct rig__table rig__tables[RIG__DEVICES];
static pthread_once_t rig__tables_once = PTHREAD_ONCE_INIT;

static void rig__tables_init(void)
{
    for (int32_t i = 0; i < RIG__DEVICES; i++)
        pthread_mutex_init(&rig__tables[i].lock, NULL);
}

/* The table of the calling thread's current device; NULL past RIG__DEVICES. */
static struct rig__table *rig__table(void)
{
    int ordinal = -1;
    if (cudaGetDevice(&ordinal) != cudaSuccess || ordinal < 0 || ordinal >= RIG__DEVICES)
        return NULL;
    pthread_once(&rig__tables_once, rig__tables_init);
    return &rig__tables[ordinal];
}

static_assert(RIG_CUDA_GEMM_PLAN_M_MAX == (int64_t)1 << 20, "the classes end at 2^20");

int32_t rig_cuda_gemm_plan_class(int64_t m, int64_t *largest)
{
    RIG_ASSERT(m >= 1 && m <= RIG_CUDA_GEMM_PLAN_M_MAX);
    if (m <= 16) {
        int32_t c = 0;
        while (((int64_t)1 << c) < m)
            c++;
        *largest = (int64_t)1 << c;
        return c;
    }
    int32_t e = 63 - __builtin_clzll((unsigned long long)(m - 1)); /* 2^e < m <= 2^(e+1) */
    int64_t quantum = ((int64_t)1 << e) / RIG__PER_OCTAVE;
    int64_t j = (m + quantum - 1) / quantum - RIG__PER_OCTAVE; /* 1..RIG__PER_OCTAVE */
    RIG_ASSERT(j >= 1 && j <= RIG__PER_OCTAVE);
    *largest = (RIG__PER_OCTAVE + j) * quantum;
    return 5 + (e - 4) * RIG__PER_OCTAVE + (int32_t)(j - 1);
}

enum rig_status rig_cuda_gemm_plans_create(struct rig_cuda_gemm_plans **out)
{
    struct rig_cuda_gemm_plans *p =
        (struct rig_cuda_gemm_plans *)calloc(1, sizeof(struct rig_cuda_gemm_plans));
    if (p == NULL) return RIG_E_NO_MEMORY;
    cublasStatus_t status = cublasLtCreate(&p->lt);
    if (status != CUBLAS_STATUS_SUCCESS) {
        free(p);
        return rig_cuda_report(RIG_E_DEVICE, __FILE__, __LINE__, "cublasLtCreate",
                               cublasGetStatusString(status));
    }
    const char *switch_ = getenv("RIG_CUDA_GEMM_PLANS");
    p->enabled = !(switch_ != NULL && strcmp(switch_, "0") == 0);
    *out = p;
    return RIG_OK;
}

void rig_cuda_gemm_plans_destroy(struct rig_cuda_gemm_plans *p)
{
    if (p == NULL) return;
    (void)cublasLtDestroy(p->lt);
    free(p);
}

/* The largest power of two <= 16 that divides `value`. */
static int32_t rig__align_of(uint64_t value)
{
    int32_t align = 16;
    while (align > 1 && value % (uint64_t)align != 0)
        align /= 2;
    return align;
}

static int32_t rig__call_align(const struct rig_cuda_gemm_call *c)
{
    size_t out_size = c->out_type == CUDA_R_32F ? 4 : 2;
    uint64_t values[6] = {(uint64_t)(uintptr_t)c->w,   (uint64_t)(uintptr_t)c->x,
                          (uint64_t)(uintptr_t)c->out, (uint64_t)c->ld_w * 2,
                          (uint64_t)c->ld_x * 2,       (uint64_t)c->ld_out * out_size};
    int32_t align = 16;
    for (int i = 0; i < 6; i++) {
        int32_t a = rig__align_of(values[i]);
        align = a < align ? a : align;
    }
    return align;
}

/* The layouts of X [k, m] and D [n, m] (column-major) of the family at `m`. */
static bool rig__layouts(const struct rig__family *f, int64_t m, cublasLtMatrixLayoutOpaque_t *x,
                         cublasLtMatrixLayoutOpaque_t *d)
{
    return cublasLtMatrixLayoutInit(x, CUDA_R_16BF, (uint64_t)f->k, (uint64_t)m, f->ld_x) ==
               CUBLAS_STATUS_SUCCESS &&
           cublasLtMatrixLayoutInit(d, f->out_type, (uint64_t)f->n, (uint64_t)m, f->ld_out) ==
               CUBLAS_STATUS_SUCCESS;
}

/* Chooses the algorithm of class `c` (largest M `m`) by cuBLASLt's heuristic. */
static void rig__choose(cublasLtHandle_t lt, struct rig__family *f, int32_t c, int64_t m)
{
    f->state[c] = RIG__CLASS_FALL;
    cublasLtMatrixLayoutOpaque_t x, d;
    cublasLtMatmulPreferenceOpaque_t pref;
    if (!rig__layouts(f, m, &x, &d) || cublasLtMatmulPreferenceInit(&pref) != CUBLAS_STATUS_SUCCESS)
        return;
    uint64_t workspace = RIG_CUDA_BLAS_WORKSPACE_BYTES;
    uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    uint32_t align = (uint32_t)f->align;
    bool ok =
        cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace, sizeof workspace) == CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatmulPreferenceSetAttribute(
                   &pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction,
                   sizeof reduction) == CUBLAS_STATUS_SUCCESS;
    static const cublasLtMatmulPreferenceAttributes_t aligns[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && ok; i++)
        ok = cublasLtMatmulPreferenceSetAttribute(&pref, aligns[i], &align, sizeof align) ==
             CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulHeuristicResult_t result;
    memset(&result, 0, sizeof result);
    int found = 0;
    if (!ok || cublasLtMatmulAlgoGetHeuristic(lt, &f->desc, &f->w_layout, &x, &d, &d, &pref, 1,
                                              &result, &found) != CUBLAS_STATUS_SUCCESS)
        return;
    if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS ||
        result.workspaceSize > RIG_CUDA_BLAS_WORKSPACE_BYTES)
        return;
    f->algo[c] = result.algo;
    f->state[c] = RIG__CLASS_PLAN;
}

/* A new family for the call's shape in table `t`, its descriptors set and its warm classes
 * chosen; NULL when the table is full or cuBLASLt rejects the descriptors. Under t->lock. */
static struct rig__family *rig__family_new(cublasLtHandle_t lt, struct rig__table *t,
                                           const struct rig_cuda_gemm_call *c, int32_t align)
{
    if (t->count == RIG_CUDA_GEMM_FAMILIES_MAX) return NULL;
    struct rig__family *f = &t->families[t->count];
    memset(f, 0, sizeof *f);
    f->ordinal = (int32_t)(t - rig__tables);
    f->n = c->n, f->k = c->k, f->ld_w = c->ld_w, f->ld_x = c->ld_x, f->ld_out = c->ld_out;
    f->out_type = c->out_type;
    f->align = align;
    cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
    if (cublasLtMatmulDescInit(&f->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(&f->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                       sizeof transpose) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(&f->desc, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutInit(&f->w_layout, CUDA_R_16BF, (uint64_t)c->k, (uint64_t)c->n,
                                 c->ld_w) != CUBLAS_STATUS_SUCCESS)
        return NULL;
    t->count++;
    for (int64_t m = 1; m <= RIG_CUDA_GEMM_PLAN_WARM_M;) {
        int64_t largest = 0;
        int32_t cls = rig_cuda_gemm_plan_class(m, &largest);
        rig__choose(lt, f, cls, largest);
        m = largest + 1;
    }
    return f;
}

/* The call's family in table `t` (made on first use); NULL when there is none. Under
 * t->lock. */
static struct rig__family *rig__family(cublasLtHandle_t lt, struct rig__table *t,
                                       const struct rig_cuda_gemm_call *c)
{
    int32_t align = rig__call_align(c);
    for (int32_t i = 0; i < t->count; i++) {
        struct rig__family *f = &t->families[i];
        if (f->n == c->n && f->k == c->k && f->ld_w == c->ld_w && f->ld_x == c->ld_x &&
            f->ld_out == c->ld_out && f->out_type == c->out_type && f->align == align)
            return f;
    }
    return rig__family_new(lt, t, c, align);
}

/* Runs each distinct algorithm the family has chosen once, on one row of the call's operands
 * (row 0 of out, which the call itself writes next, in stream order): cuBLASLt loads a
 * kernel the first time it launches it, whatever CUDA_MODULE_LOADING says, and on the H100
 * a prefill step whose size class was new took the host 3-9 ms more (docs/performance.md).
 * Called on the first use of the family outside graph capture (the engine makes one at
 * start-up: its warm-up forward). Under the family's table lock. */
static void rig__warm(cublasLtHandle_t lt, struct rig__family *f,
                      const struct rig_cuda_launch *launch, const struct rig_cuda_gemm_call *c)
{
    f->warmed = true;
    cublasLtMatrixLayoutOpaque_t x, d;
    if (!rig__layouts(f, 1, &x, &d)) return;
    float alpha = 1.0f, beta = 0.0f;
    for (int32_t i = 0; i < RIG__CLASSES; i++) {
        if (f->state[i] != RIG__CLASS_PLAN) continue;
        bool ran = false;
        for (int32_t j = 0; j < i && !ran; j++)
            ran = f->state[j] == RIG__CLASS_PLAN &&
                  memcmp(&f->algo[j], &f->algo[i], sizeof f->algo[i]) == 0;
        if (ran) continue;
        /* A refusal here only means the kernel is loaded at its first real use. */
        (void)cublasLtMatmul(lt, &f->desc, &alpha, c->w, &f->w_layout, c->x, &x, &beta, c->out, &d,
                             c->out, &d, &f->algo[i], launch->workspace, launch->workspace_bytes,
                             launch->stream);
    }
}

static bool rig__capturing(cudaStream_t stream)
{
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
        (void)cudaGetLastError();
        return true; /* unknown: do not launch anything extra */
    }
    return status != cudaStreamCaptureStatusNone;
}

/* The algorithm of the call's class, copied out under the lock; false when it has none. */
static bool rig__plan(cublasLtHandle_t lt, const struct rig_cuda_launch *launch,
                      const struct rig_cuda_gemm_call *c, struct rig__family **family, int32_t *cls,
                      cublasLtMatmulAlgo_t *algo)
{
    struct rig__table *t = rig__table();
    if (t == NULL) return false;
    pthread_mutex_lock(&t->lock);
    struct rig__family *f = rig__family(lt, t, c);
    bool found = false;
    if (f != NULL && !f->warmed && !rig__capturing(launch->stream)) rig__warm(lt, f, launch, c);
    if (f != NULL) {
        int64_t largest = 0;
        *cls = rig_cuda_gemm_plan_class(c->m, &largest);
        if (f->state[*cls] == RIG__CLASS_NONE) rig__choose(lt, f, *cls, largest);
        found = f->state[*cls] == RIG__CLASS_PLAN;
        if (found) *algo = f->algo[*cls];
    }
    pthread_mutex_unlock(&t->lock);
    *family = f;
    return found;
}

void rig_cuda_gemm_plans_prepare(const struct rig_cuda_launch *launch,
                                 const struct rig_cuda_gemm_call *c)
{
    RIG_ASSERT(c->m >= 1 && c->n >= 1 && c->k >= 1);
    struct rig_cuda_gemm_plans *p = launch->plans;
    if (p == NULL || !p->enabled) return;
    struct rig__table *t = rig__table();
    if (t == NULL) return;
    pthread_mutex_lock(&t->lock);
    struct rig__family *f = rig__family(p->lt, t, c);
    if (f != NULL && !f->warmed && !rig__capturing(launch->stream)) rig__warm(p->lt, f, launch, c);
    pthread_mutex_unlock(&t->lock);
}

void rig_cuda_gemm_plans_run(const struct rig_cuda_launch *launch,
                             const struct rig_cuda_gemm_call *c, bool *done)
{
    RIG_ASSERT(c->m >= 1 && c->n >= 1 && c->k >= 1);
    *done = false;
    struct rig_cuda_gemm_plans *p = launch->plans;
    if (p == NULL || !p->enabled || c->m > RIG_CUDA_GEMM_PLAN_M_MAX) return;
    struct rig__family *f = NULL;
    int32_t cls = 0;
    cublasLtMatmulAlgo_t algo;
    if (!rig__plan(p->lt, launch, c, &f, &cls, &algo)) return;
    /* Descriptors are written only when a family is made: reading them needs no lock. */
    cublasLtMatrixLayoutOpaque_t x, d;
    if (!rig__layouts(f, c->m, &x, &d)) return;
    float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = cublasLtMatmul(p->lt, &f->desc, &alpha, c->w, &f->w_layout, c->x, &x,
                                           &beta, c->out, &d, c->out, &d, &algo, launch->workspace,
                                           launch->workspace_bytes, launch->stream);
    if (status != CUBLAS_STATUS_SUCCESS) { /* refused before anything was enqueued */
        struct rig__table *t = &rig__tables[f->ordinal];
        pthread_mutex_lock(&t->lock);
        f->state[cls] = RIG__CLASS_FALL;
        pthread_mutex_unlock(&t->lock);
        return;
    }
    *done = true;
}
