/* attention_prefill_wgmma.cu — the Hopper path of causal paged prefill attention at head dims
 * 128 and 64: FlashAttention-3's structure on warpgroup MMA (wgmma, sm_90a), same semantics and
 * GQA packing as the mma.sync kernels of attention_prefill.cu (row rho = token * G + g; see
 * that file's header), which stay the path for everything else and under RIG_PREFILL_WGMMA=0.
 * Everything below is written for D 128; the kernel is templated on D, and at D 64 a head row
 * is exactly one 128-byte swizzle atom (tiles have one 64-column half, so the descriptors' LBO
 * never comes into play), S = Q K^T takes 4 k16 steps, O += P V is wgmma m64n64k16 (32
 * accumulators a thread), a producer warp instruction gathers 4 key rows, and Q, K and V tiles
 * take half the bytes (Q [BM][64], K and V [stages][BN][64]).
 *
 * Decode (cu_q NULL, from attention_decode.cu) is the same kernel with one query token a request:
 * an item is a (request, KV head), placed without a scan, the grid persistent, one consumer
 * warpgroup, and variant bit RIG__WG_DECODE (P's bf16 rounding residual through spare rows);
 * at head dim 64 also RIG__WG_HALF and RIG__WG_TWO (two blocks a multiprocessor).
 *
 * Block: WG consumer warpgroups (2 by default, 1 when 2-warpgroup blocks would leave SMs idle:
 * short chunks) owning 64 packed query rows each (BM = 64 WG, the wgmma M), plus one producer
 * warpgroup that gathers K and V. With 2 consumers the producer gives registers back
 * (setmaxnreg 64; at 56 it spilled) so each consumer thread may hold 216.
 *  - Shared memory (one 1024-byte aligned window): Q [2][BM][64], then K [2 stages][2][BN][64]
 *    and V likewise, BN = 128 keys a tile. Every tile is split into two 64-column halves (128
 *    bytes a row) stored with the 128-byte swizzle (16-byte chunk c of row r at c ^ (r % 8)),
 *    the layout wgmma's descriptors name "SWIZZLE_128B": Q and K are K-major operands (SBO 1024
 *    bytes from one 8-row group to the next), V the same bytes read as an MN-major B operand
 *    (LBO = one half's size between the two 64-column halves of the head dim, SBO 1024 between
 *    8-key groups).
 *  - Work items (row tile, KV head), longest causal tiles first; with few requests the grid is
 *    persistent (one block per SM, items dealt in snake order, RIG_PREFILL_WGMMA_PERSISTENT=0
 *    turns it off) and the producer runs on into a block's next item while the consumers
 *    finish the current one (stages and mbarrier phases count over the block's whole run).
 *  - Producer: warps 0-1 gather K, warps 2-3 V (64 keys a warp), each thread reading two slots
 *    of the page table a tile ahead and issuing 16-byte cp.async, zero-filling keys past the
 *    block's last. The lean gather (the default, variant bit 1): 8 rows a warp instruction, 4
 *    lanes on 64 contiguous bytes of each (16 full 32-byte sectors an instruction), so that a
 *    row's address is one shuffle and one IMAD.WIDE for its 4 copies (2 at D 64) and every
 *    shared-memory offset is a per-lane constant plus an immediate: about 1.75 instructions a
 *    copy in the SASS, against about 19 for the older gather (variant 0: two full rows a warp
 *    instruction, a 64-bit address computed for every copy), which spent more issue slots than
 *    a consumer warp's softmax. cp.async.mbarrier.arrive.noinc signals the stage's K or V
 *    "full" barrier, and a stage is refilled once every consumer warp has arrived on its
 *    "empty" barrier. 2 stages (3 with RIG_PREFILL_WGMMA_STAGES=3: 225 KB of shared memory
 *    with 2 consumers).
 *  - Consumer (per warpgroup, FA3's intra-warpgroup pipelining): issue S = Q K_j^T (8 wgmma
 *    m64n128k16, A and B from shared memory) and O += P_{j-1} V_{j-1} (8 wgmma, P from
 *    registers, V transposed), wait for S only, run the online softmax of S_j (fp32, log2
 *    units folded into one FFMA before ex2.approx; the causal mask only on the block's
 *    diagonal tiles) while the tensor cores do P V, then wait, rescale O and round P_j to bf16
 *    straight from the S accumulators (the m64nN accumulator layout is the A register layout,
 *    as with mma.sync). With 2 consumers, FA3's inter-warpgroup ping-pong: a warpgroup issues
 *    its GEMMs only in its turn (named barriers 4 and 5; 3 consumers take turns round robin over
 *    4, 5 and 6), so that one's softmax runs while the other's GEMMs hold the tensor cores
 *    (RIG_PREFILL_WGMMA_PINGPONG=0 turns it off).
 *  - Cached data is written by cp.async (generic proxy) and read by wgmma (async proxy): each
 *    consumer thread runs fence.proxy.async after its barrier wait, before the wgmma.
 *  - Output: O / l as bf16 into the warpgroup's own Q rows (same swizzle, no bank conflicts),
 *    then 16-byte coalesced stores.
 * Registers (ptxas of CUDA 13.0, -Xptxas -v): 2 consumer warpgroups 168 at entry, then 64
 * (producer) / 216 (consumers) by setmaxnreg, no spills with ping-pong (8 bytes without); 1
 * consumer warpgroup 238, no spills; the variants on the default path 168 at entry, no spills
 * for 1, 5, 9, 21, 23 and 31, 8 bytes (once an item, outside the tile loop) for 3, 7 and 15;
 * 1 consumer with variant 7 240. Shared memory 161 KB (2 consumers, 2 stages; 193 KB with
 * variant bit 16), 225 KB (3 stages), 145 KB (1 consumer): one block per SM. Decode: 243
 * registers at D 128, 254 at D 64 with one block an SM; the D 64 two-block form (RIG__WG_TWO)
 * 128 at entry, then 56 (producer) / 200 (consumer) by setmaxnreg, no spills, 73 KB of shared
 * memory a block.
 *  - Variants (RIG_PREFILL_WGMMA_VARIANT=N, bits, a timing switch read at every call; unset:
 *    RIG__WG_VARIANT_DEFAULT 1): 1 the lean gather; 2 the softmax's row max and sum over 4
 *    partial values a row; 4 no O rescale where no row of the warp changed its max; 8 O
 *    rescaled between issuing S and P V (FA3's place); 16 Q of the block's next item loaded
 *    into a second buffer during this one (193 KB). The default path (2 consumers, ping-pong,
 *    2 stages) is built with 0, 1 and 31 (3, 5, 9, 15, 21 and 23 were measured on the branch
 *    that made them and dropped from the build); the other shapes (1 consumer, no ping-pong,
 *    3 stages, 3 consumers) 0, and 7 for any other N, the default included.
 * Status (H100, commit f431adf, docs/performance.md "Issue 18: prefill attention on wgmma"):
 * test_attention_prefill passes on every path (and with 3 stages); the default
 * (RIG_PREFILL_WGMMA_DEFAULT 1). 8192 causal chunk 585-629 us (437-470 TFLOP/s) against the
 * mma.sync kernel's 1313-1513 us in the same call; the 580 TFLOP/s target is not reached.
 * Variants (helper branch prefill-attn, one call, NVIDIA H100 80GB HBM3, driver 580.159.04, bundle
 * of b7911b2, `rig bench attention --repeats 20` medians, two interleaved rounds, one process
 * each): 8192 causal chunk, us, variant 0 (the kernel above) 587, 592 (464-468 TFLOP/s); 1 506,
 * 466 (543-590); 5 493, 505; 15 490, 551; 9 566, 472; 31 604, 559. So the lean gather is worth
 * ~15 % (every variant with it but 31, Q prefetch, beat both runs of 0); the other bits are within
 * the process-to-process spread (up to 20 %), hence the default 1, whose output on the default
 * shape is bit for bit variant 0's (only the copy pattern changes). ncu (clocks as found): variant
 * 0 583 us, SM throughput 48 %, L2 38 %, 0.71 of 2.99 warps eligible a scheduler; variant 31
 * 481 us, 58 %, 57 %, 0.49 eligible (the stall reasons did not come back). `rig bench prefill`
 * 8192 chunk (Qwen3-0.6B): variant 0 34.58 ms (MFU 53.7 %), 31 32.54 ms (57.0 %); D 64
 * (Llama-3.2-1B heads) 8192 chunk 890 us (variant 0) against 766 (31). test_attention_prefill
 * passed with variant 31 (every path, so 31 on the default shape and 7 on the others). At
 * e4b555c (the default 1; H100, one call, docs/performance.md) test_cuda_ops passed and the
 * 8192 causal chunk ran 507.5 / 539.3 us against variant 0's 582.9 / 597.0 in the same binary;
 * the Qwen3-0.6B 8192 step's MFU 59.0 / 60.2 % against 54.0 / 53.2 %.
 * Head dim 64 (commit 4b7cd1d, Llama-3.2-1B heads 32 / 8, same doc section): passes
 * test_attention_prefill on every path, also with RIG_PREFILL_WGMMA_CONSUMERS=3 (3 consumer
 * warpgroups, 192 rows, round-robin ping-pong, setmaxnreg 24 / 160: D 64 only, a timing switch,
 * not faster); registers at D 64: 2 consumers 168 then 64 / 216, 1 consumer 255, no spills;
 * 81 KB of shared memory (2 consumers, 2 stages). 8192 causal chunk 820-976 us (282-335
 * TFLOP/s) against 1264-1445 us for mma.sync; lone 512 chunk 13.6-15.9 us against 24.8-27.7;
 * Llama-3.2-1B 8192 prefill step 41.1-41.3 ms (MFU 61.4-62.2 %) against 48.3-48.5 (52.3-52.7).
 *
 * Device code exists only in the sm_90a build (__CUDA_ARCH_FEAT_SM90_ALL); the compute_90 PTX
 * gets a kernel that traps, and the launcher takes this path only on a 9.0 device.
 */
#include <cuda_bf16.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/ops/attention_common.cuh"
#include "cuda/ops/attention_prefill.cuh"

RIG_CUDA_MODULE(attention_prefill_wgmma)

#define RIG__WG_BN     128    /* keys per tile */
#define RIG__WG_ROWS   64     /* packed query rows per consumer warpgroup (wgmma M) */
#define RIG__WG_THREAD 128    /* threads per warpgroup */
#ifndef RIG__WG_PRODUCER_REGS /* registers a thread with 2 consumer warpgroups (setmaxnreg) */
#define RIG__WG_PRODUCER_REGS 64
#endif
#ifndef RIG__WG_CONSUMER_REGS
#define RIG__WG_CONSUMER_REGS 216
#endif
#ifndef RIG__WG3_PRODUCER_REGS /* with 3 consumer warpgroups (head dim 64 only) */
#define RIG__WG3_PRODUCER_REGS 24
#endif
#ifndef RIG__WG3_CONSUMER_REGS
#define RIG__WG3_CONSUMER_REGS 160
#endif

/* Shape of one instantiation: WG consumer warpgroups and one producer warpgroup, ST stages,
 * head dim D (128: two 64-column swizzled halves a tile; 64: one). */
template <int WG, int ST = 2, int D = 128> struct rig__wg_shape {
    static constexpr int BM = WG * RIG__WG_ROWS;
    static constexpr int THREADS = (WG + 1) * RIG__WG_THREAD;
    static constexpr uint32_t Q_BYTES = BM * D * 2;
    static constexpr uint32_t TILE_BYTES = RIG__WG_BN * D * 2; /* one K or V stage */
    static constexpr size_t SHARED = Q_BYTES + 2 * ST * (size_t)TILE_BYTES + 1024; /* + align */
    static constexpr size_t SHARED_PREFETCH = SHARED + Q_BYTES; /* a second Q after V */
};

/* What a block works on for one work item, found from cu_q by each thread (rig__wg_next). */
struct rig__wg_place {
    const int32_t *slots; /* [keys] the request's page-table row */
    int64_t q_begin;      /* first token of the request in q and out */
    int row0;             /* first packed row of the block */
    int packed_rows;      /* q_len * group of the request */
    int first_position;   /* kv_len - q_len: position of the request's first new token */
    int keys;             /* keys the block's last row sees; < 0: a spare block */
    int open_tiles;       /* leading key tiles every row of the block sees whole */
};

/* Variant bits of the kernel (template argument V; RIG_PREFILL_WGMMA_VARIANT=N picks N for
 * timing, unset: RIG__WG_VARIANT_DEFAULT): the lean producer gather, tree reductions in the
 * softmax, skipping O's rescale where no max changed, O's rescale at FA3's place, Q prefetch. */
enum { RIG__WG_LEAN = 1, RIG__WG_TREE = 2, RIG__WG_SKIP = 4, RIG__WG_EARLY = 8 };
enum { RIG__WG_PREFETCH = 16 }; /* Q of a block's next item loaded during this one (2 buffers) */
/* Decode (cu_q NULL, G <= 8, one consumer warpgroup): P V as exact as fp32 P. Packed rows 8-15
 * repeat rows 0-7 (the same query heads, so the same scores, maxima and sums, in the same
 * threads: the m64 accumulator gives a thread rows r and r + 8), and where rows 0-7 take P
 * rounded to bf16, rows 8-15 take the rounding's residual P - bf16(P), rounded again; the output
 * row is the sum of the two, off from fp32 P by ~2^-17 relative instead of 2^-9 (the tests'
 * decode bound is the register path's). The rows are there anyway: a request's G <= 8 rows use
 * at most 8 of the 64. */
enum { RIG__WG_DECODE = 32 };
/* With RIG__WG_DECODE: rows 8-15's scores are rows 0-7's, bit for bit, so the softmax
 * exponentiates, sums and takes the maxima of rows 0-7 only, and the residual rows are formed
 * from them (half the ex2 and conversions of a tile; the same bits: the 53 tensor-core decode
 * cases print the same NMSE). Alone it moved D 64 by -2 % and D 128 by +3 % (H200); it is what
 * lets the consumer of RIG__WG_TWO fit 200 registers (196 against 254). */
enum { RIG__WG_HALF = 64 };
/* With RIG__WG_DECODE and one consumer warpgroup (head dim 64): two blocks a multiprocessor.
 * The producer gives registers back (RIG__WG2B_PRODUCER_REGS), the consumer takes
 * RIG__WG2B_CONSUMER_REGS, 2 x 256 threads x 128 at launch, and the persistent grid is two
 * blocks an SM. One block's consumer runs while the other's waits on its barriers and wgmma:
 * a lone consumer's chain per 128-key tile (wait, S, softmax, P V) was the bound, not bytes in
 * flight (3 or 4 stages did not help) nor its ex2 (RIG__WG_HALF). H200, Llama-3.2-1B's heads at
 * 256 x 1024: 199 -> 154 us (2.70 -> 3.48 TB/s); docs/performance.md. */
enum { RIG__WG_TWO = 128 };
#ifndef RIG__WG2B_PRODUCER_REGS
#define RIG__WG2B_PRODUCER_REGS 56
#endif
#ifndef RIG__WG2B_CONSUMER_REGS
#define RIG__WG2B_CONSUMER_REGS 200
#endif
#ifndef RIG__WG_VARIANT_DEFAULT
#define RIG__WG_VARIANT_DEFAULT 1
#endif

/* Barriers of the K/V pipeline, each an mbarrier (8 bytes) in static shared memory. */
enum { RIG__FULL_K = 0, RIG__FULL_V = 4, RIG__EMPTY_K = 8, RIG__EMPTY_V = 12, RIG__BARRIERS = 16 };

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

static __device__ __forceinline__ void rig__wg_bar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

static __device__ __forceinline__ void rig__wg_bar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done = 0;
    while (!done) {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    }
}

static __device__ __forceinline__ void rig__wg_bar_arrive(uint32_t bar)
{
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(bar)
                 : "memory");
}

/* Arrives on `bar` once every cp.async this thread issued so far has landed. */
static __device__ __forceinline__ void rig__wg_bar_arrive_copies(uint32_t bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

/* Orders this thread's view of shared memory (filled by cp.async) before wgmma reads it. */
static __device__ __forceinline__ void rig__wg_fence_async(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

static __device__ __forceinline__ void rig__wg_named_sync(int id)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(RIG__WG_THREAD) : "memory");
}

/* The ping-pong between consumer warpgroups (FA3): warpgroup w waits on barrier
 * RIG__WG_TURN + w for its turn to issue its GEMMs, then hands the turn to the next one (w + 1
 * modulo the count); 256 threads: the 128 waiting plus the 128 that arrived. */
#define RIG__WG_TURN 4 /* after the warpgroups' own barriers 1 .. 3 */
static __device__ __forceinline__ void rig__wg_turn_wait(int wg)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(RIG__WG_TURN + wg), "n"(2 * RIG__WG_THREAD) : "memory");
}

static __device__ __forceinline__ void rig__wg_turn_give(int to)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(RIG__WG_TURN + to), "n"(2 * RIG__WG_THREAD)
                 : "memory");
}

/* Descriptor of a 128-byte-swizzled operand at shared address `address` (1024-aligned atoms;
 * offsets inside an atom row are added to the start address, as the hardware expects). */
static __device__ __forceinline__ uint64_t rig__wg_desc(uint32_t address, uint32_t lbo_bytes,
                                                        uint32_t sbo_bytes)
{
    return (uint64_t)((address & 0x3FFFF) >> 4) | (uint64_t)((lbo_bytes >> 4) & 0x3FFF) << 16 |
           (uint64_t)((sbo_bytes >> 4) & 0x3FFF) << 32 | (uint64_t)1 << 62;
}

/* Byte offset of 16-byte chunk c (0..15) of row r in a swizzled tile of `rows` rows. */
static __device__ __forceinline__ uint32_t rig__wg_chunk(int r, int c, int rows)
{
    return (uint32_t)((c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
}

#define RIG__F8(d, i)                                                                              \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),    \
        "+f"(d[i + 6]), "+f"(d[i + 7])
#define RIG__F64(d)                                                                                \
    RIG__F8(d, 0), RIG__F8(d, 8), RIG__F8(d, 16), RIG__F8(d, 24), RIG__F8(d, 32), RIG__F8(d, 40),  \
        RIG__F8(d, 48), RIG__F8(d, 56)
#define RIG__D64                                                                                   \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "  \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "   \
    "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "   \
    "%56, %57, %58, %59, %60, %61, %62, %63}"

/* d (+)= A B over one k16 step, m64n128, A and B K-major in shared memory. */
static __device__ __forceinline__ void rig__wg_mma_ss(float (&d)[64], uint64_t a, uint64_t b,
                                                      uint32_t accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " RIG__D64
                 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : RIG__F64(d)
                 : "l"(a), "l"(b), "r"(accumulate));
}

/* d += A B over one k16 step, m64n128, A in registers, B MN-major in shared memory. */
static __device__ __forceinline__ void rig__wg_mma_rs(float (&d)[64], const uint32_t (&a)[4],
                                                      uint64_t b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " RIG__D64
                 ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : RIG__F64(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

#define RIG__F32(d) RIG__F8(d, 0), RIG__F8(d, 8), RIG__F8(d, 16), RIG__F8(d, 24)
#define RIG__D32                                                                                   \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "  \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"

/* d += A B over one k16 step, m64n64 (head dim 64), A in registers, B MN-major in shared
 * memory. */
static __device__ __forceinline__ void rig__wg_mma_rs(float (&d)[32], const uint32_t (&a)[4],
                                                      uint64_t b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " RIG__D32
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : RIG__F32(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

static __device__ __forceinline__ void rig__wg_fence(void)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

static __device__ __forceinline__ void rig__wg_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N> static __device__ __forceinline__ void rig__wg_wait(void)
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Pins registers an asynchronous wgmma reads or writes: the compiler may neither move their
 * uses above the wait that precedes this nor reuse them before it. */
template <int N> static __device__ __forceinline__ void rig__wg_pin(float (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(r[i])::"memory");
}

static __device__ __forceinline__ void rig__wg_pin(uint32_t (&r)[8][4])
{
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            asm volatile("" : "+r"(r[i][j])::"memory");
}

/* Places the block: which request and which BM rows of it (the grid is an upper bound from
 * the host; device lengths decide how many tiles exist). Decode (cu_q NULL: one token a request,
 * its G rows in one tile) places tile b at request b without a scan. */
template <int BM>
static __device__ void rig__wg_find(const struct rig_cuda_attention_args *a, int group, int64_t b,
                                    struct rig__wg_place *place)
{
    place->keys = -1;
    for (int64_t r = a->cu_q == NULL ? b : 0; r < a->requests; r++) {
        int64_t q_begin = a->cu_q == NULL ? r : a->cu_q[r];
        int64_t q_len = a->cu_q == NULL ? 1 : a->cu_q[r + 1] - q_begin;
        int64_t tiles = rig_cuda_div_up(q_len * group, BM);
        if (a->cu_q == NULL) b = 0;
        if (b >= tiles) {
            b -= tiles;
            continue;
        }
        int64_t table_row = a->table_idx[r];
        int kv_len = a->kv_len[r];
        bool usable =
            table_row >= 0 && table_row < a->page_table_rows && kv_len <= a->page_table_cols;
        place->slots = a->page_table + (usable ? table_row : 0) * a->page_table_stride;
        place->q_begin = q_begin;
        place->row0 = (int)(b * BM);
        place->packed_rows = (int)(q_len * group);
        place->first_position = kv_len - (int)q_len;
        int last_row = min(place->row0 + BM, place->packed_rows) - 1;
        int keys = usable ? place->first_position + last_row / group + 1 : 0;
        int open = (place->first_position + place->row0 / group + 1) / RIG__WG_BN;
        place->keys = max(keys, 0);
        place->open_tiles =
            usable ? min(max(open, 0), (int)rig_cuda_div_up(place->keys, RIG__WG_BN)) : 0;
        return;
    }
}

/* One K or V tile of keys [key0, key0 + BN) into a swizzled stage. Warp w gathers keys
 * 32w .. 32w + 31, 256 / D rows per instruction (two at D 128, four at D 64); `slot` is the
 * slot of key key0 + 32w + lane. */
template <int D>
static __device__ __forceinline__ void rig__wg_gather(const uint16_t *head, int64_t stride_s,
                                                      uint32_t stage, int slot, int key0, int keys,
                                                      int warp, int lane)
{
    constexpr int CH = D / 8, PER = 32 / CH; /* 16-byte chunks a row, rows an instruction */
#pragma unroll
    for (int round = 0; round < 32 / PER; round++) {
        int from = PER * round + lane / CH, row = 32 * warp + from, c = lane % CH;
        int row_slot = __shfl_sync(0xffffffffu, slot, from);
        bool valid = key0 + row < keys;
        const uint16_t *src = head + (valid ? (int64_t)row_slot * stride_s : 0) + c * 8;
        rig_cuda_cp_async16(stage + rig__wg_chunk(row, c, RIG__WG_BN), src, valid);
    }
}

/* 16 bytes global -> shared at constant offsets from both addresses (folded into the
 * instruction: the lean gather's inner loop is the copies alone); zero-filled when !valid. */
template <uint32_t TO, uint32_t FROM>
static __device__ __forceinline__ void rig__wg_copy16(uint32_t dst, const char *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0+%3], [%1+%4], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0), "n"(TO), "n"(FROM));
}

/* Row `K` * 8 + lane / 4 of the lean gather below: its 64 contiguous bytes of each 256 (D 128) or
 * 128 (D 64). */
template <int D, int K>
static __device__ __forceinline__ void rig__wg_gather_row(const char *from, uint32_t stride_bytes,
                                                          uint32_t to0, uint32_t to1, int slot,
                                                          int keys_left, int lane)
{
    constexpr uint32_t HALF = RIG__WG_BN * 128, TO = 1024 * K;
    int row = lane / 4 + 8 * K;
    uint32_t row_slot = (uint32_t)__shfl_sync(0xffffffffu, slot, row);
    const char *src = from + (uint64_t)row_slot * stride_bytes;
    bool valid = row < keys_left;
    rig__wg_copy16<TO, 0>(to0, src, valid);
    rig__wg_copy16<TO, 64>(to1, src, valid);
    if constexpr (D == 128) {
        rig__wg_copy16<TO + HALF, 128>(to0, src, valid);
        rig__wg_copy16<TO + HALF, 192>(to1, src, valid);
    }
}

/* The lean form of rig__wg_gather (variant bit RIG__WG_LEAN): 32 keys of a tile from row
 * `row0` of the stage, 8 rows a warp instruction with 4 lanes on 64 contiguous bytes of each
 * (lane l: rows row0 + l / 4 + 8 k, chunks l % 4 + 4 i), so that a row's address is computed
 * once for its 2 (D 64) or 4 (D 128) copies and every shared-memory offset is a per-lane
 * constant (`at`: row l / 4's chunks l % 4 and l % 4 + 4 after the swizzle, which row + 8 k
 * keeps) plus an immediate. `slot`: the slot of key key0 + row0 + lane (0 past the last key). */
template <int D>
static __device__ __forceinline__ void
rig__wg_gather_lean(const char *head, uint32_t stride_bytes, uint32_t stage,
                    const uint32_t (&at)[2], int slot, int row0, int key0, int keys, int lane)
{
    const char *from = head + (lane % 4) * 16;
    uint32_t to0 = stage + row0 * 128 + at[0], to1 = stage + row0 * 128 + at[1];
    int keys_left = keys - key0 - row0;
    rig__wg_gather_row<D, 0>(from, stride_bytes, to0, to1, slot, keys_left, lane);
    rig__wg_gather_row<D, 1>(from, stride_bytes, to0, to1, slot, keys_left, lane);
    rig__wg_gather_row<D, 2>(from, stride_bytes, to0, to1, slot, keys_left, lane);
    rig__wg_gather_row<D, 3>(from, stride_bytes, to0, to1, slot, keys_left, lane);
}

/* The producer's part of one work item: tiles it0 .. it0 + tiles - 1 of the block's running
 * count (stage it % ST, its (it / ST)-th use), so that it runs on into the next item while the
 * consumers finish this one. Warps 0 and 1 gather K, warps 2 and 3 V (64 keys a warp), so that
 * K of a tile never waits behind the release of an older V stage; each thread reads the
 * page-table slots of its next tile a tile ahead. */
template <int WG, int ST, int D, int V>
static __device__ void rig__wg_produce(const struct rig_cuda_attention_args *a,
                                       const struct rig__wg_place *place, uint32_t k_tiles,
                                       uint32_t v_tiles, uint32_t bars, int kv_head, int it0)
{
    using S = rig__wg_shape<WG, ST, D>;
    int t = (int)threadIdx.x - WG * RIG__WG_THREAD, warp = t / 32, lane = t % 32;
    bool values = warp >= 2;
    int part = warp & 1; /* keys 64 part .. 64 part + 63 of each tile */
    const uint16_t *head = (values ? a->v_cache : a->k_cache) + kv_head * a->cache_stride_h;
    uint32_t tiles_base = values ? v_tiles : k_tiles;
    int full = values ? RIG__FULL_V : RIG__FULL_K, empty = values ? RIG__EMPTY_V : RIG__EMPTY_K;
    int tiles = (int)rig_cuda_div_up(place->keys, RIG__WG_BN);
    int key = 64 * part + lane;
    int next0 = key < place->keys ? place->slots[key] : 0;
    int next1 = key + 32 < place->keys ? place->slots[key + 32] : 0;
    uint32_t stride_bytes = (uint32_t)(a->cache_stride_s * 2); /* checked by the launcher */
    int quad = lane % 4, row = lane / 4;
    uint32_t at[2] = {(uint32_t)(row * 128 + ((quad ^ row) << 4)),
                      (uint32_t)(row * 128 + (((quad + 4) ^ row) << 4))};
    for (int j = 0; j < tiles; j++) {
        int it = it0 + j, stage = it % ST, key0 = j * RIG__WG_BN;
        int slot0 = next0, slot1 = next1;
        key = key0 + RIG__WG_BN + 64 * part + lane;
        next0 = key < place->keys ? place->slots[key] : 0;
        next1 = key + 32 < place->keys ? place->slots[key + 32] : 0;
        if (it >= ST) rig__wg_bar_wait(bars + 8 * (empty + stage), (uint32_t)(it / ST - 1) & 1);
        uint32_t tile = tiles_base + stage * S::TILE_BYTES;
        if constexpr ((V & RIG__WG_LEAN) != 0) {
            const char *bytes = reinterpret_cast<const char *>(head);
            rig__wg_gather_lean<D>(bytes, stride_bytes, tile, at, slot0, 64 * part, key0,
                                   place->keys, lane);
            rig__wg_gather_lean<D>(bytes, stride_bytes, tile, at, slot1, 64 * part + 32, key0,
                                   place->keys, lane);
        } else {
#pragma unroll 1
            for (int half = 0; half < 2; half++)
                rig__wg_gather<D>(head, a->cache_stride_s, tile, half ? slot1 : slot0, key0,
                                  place->keys, 2 * part + half, lane);
        }
        rig__wg_bar_arrive_copies(bars + 8 * (full + stage));
    }
}

/* Masks when MASK (key > the row's position, which also covers the zero-filled keys past the
 * block's last), exponentiates in place as exp2(s * scale_log2 - m * scale_log2), one FFMA an
 * element (m, l: the rows' running max in raw score units and sum; scale_log2 > 0, which the
 * launcher checks); alpha: the factor the rows' O must be rescaled by (exactly 1 where a row's
 * max did not change). BN = 128. TREE (variant bit RIG__WG_TREE): the row max and sum over 4
 * partial values a row each (dependency chains of 16 instead of 64). */
template <bool MASK, bool TREE, bool HALF = false>
static __device__ __forceinline__ void rig__wg_softmax(float (&s)[64], float (&m)[2], float (&l)[2],
                                                       const int (&position)[2], int key0,
                                                       float scale_log2, float (&alpha)[2])
{
    constexpr int P = TREE ? 4 : 1; /* partial maxima and sums a row */
    constexpr int E = HALF ? 2 : 4; /* values of each n-tile taken: HALF, the first row's only */
    int key_lane = key0 + (threadIdx.x % 4) * 2;
    float part[2][P];
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
        for (int i = 0; i < P; i++)
            part[h][i] = -INFINITY;
#pragma unroll
    for (int j = 0; j < 16; j++) {
#pragma unroll
        for (int e = 0; e < E; e++) {
            if (MASK && key_lane + j * 8 + (e & 1) > position[e / 2]) s[4 * j + e] = -INFINITY;
            float &x = part[e / 2][TREE ? (j % 2) * 2 + (e & 1) : 0];
            x = fmaxf(x, s[4 * j + e]);
        }
    }
    float base[2];
#pragma unroll
    for (int h = 0; h < E / 2; h++) {
        float tile_max = part[h][0];
#pragma unroll
        for (int i = 1; i < P; i++)
            tile_max = fmaxf(tile_max, part[h][i]);
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
        float m_new = fmaxf(m[h], tile_max);
        base[h] = m_new == -INFINITY ? 0.0f : m_new * scale_log2; /* nothing visible yet */
        alpha[h] = rig_cuda_exp2(m[h] * scale_log2 - base[h]);
        m[h] = m_new;
    }
    float sum[2][P];
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
        for (int i = 0; i < P; i++)
            sum[h][i] = 0.0f;
#pragma unroll
    for (int j = 0; j < 16; j++) {
#pragma unroll
        for (int e = 0; e < E; e++) {
            s[4 * j + e] = rig_cuda_exp2(fmaf(s[4 * j + e], scale_log2, -base[e / 2]));
            sum[e / 2][TREE ? (j % 2) * 2 + (e & 1) : 0] += s[4 * j + e];
        }
    }
#pragma unroll
    for (int h = 0; h < E / 2; h++) {
        float total = sum[h][0];
        if constexpr (TREE) total = (sum[h][0] + sum[h][1]) + (sum[h][2] + sum[h][3]);
        l[h] = l[h] * alpha[h] + total;
    }
    if constexpr (HALF) { /* the second row is the first (its s values are left raw) */
        m[1] = m[0];
        l[1] = l[0];
        alpha[1] = alpha[0];
    }
}

/* S = Q K^T for the warpgroup's 64 rows: D / 16 k16 steps over the head dim. */
template <int WG, int D>
static __device__ __forceinline__ void rig__wg_scores(float (&s)[64], uint32_t q_rows,
                                                      uint32_t k_stage)
{
    using S = rig__wg_shape<WG>;
    uint64_t q = rig__wg_desc(q_rows, 16, 1024), k = rig__wg_desc(k_stage, 16, 1024);
    rig__wg_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) { /* offsets in the descriptors' 16-byte units */
        uint64_t q_offset = (kk >> 2) * (S::BM * 128 / 16) + (kk & 3) * 2;
        uint64_t k_offset = (kk >> 2) * (RIG__WG_BN * 128 / 16) + (kk & 3) * 2;
        rig__wg_mma_ss(s, q + q_offset, k + k_offset, kk > 0);
    }
    rig__wg_commit();
}

/* O += P V: 8 k16 steps over the tile's keys, V read as an MN-major (transposed) operand;
 * m64nD (D / 2 accumulators a thread). */
template <int N>
static __device__ __forceinline__ void rig__wg_values(float (&o)[N], const uint32_t (&p)[8][4],
                                                      uint32_t v_stage)
{
    uint64_t v = rig__wg_desc(v_stage, RIG__WG_BN * 128, 1024);
    rig__wg_fence();
#pragma unroll
    for (int kk = 0; kk < RIG__WG_BN / 16; kk++)
        rig__wg_mma_rs(o, p[kk], v + (uint64_t)kk * (2048 / 16));
    rig__wg_commit();
}

/* x - bf16(x) (exact in fp32), what rounding x to bf16 lost. */
static __device__ __forceinline__ float rig__wg_residual(float x)
{
    return x - __bfloat162float(__float2bfloat16_rn(x));
}

/* P (bf16 A fragments) from the exponentiated scores: for k step kk, n-tiles 2kk and 2kk + 1
 * (registers 0 and 2 hold the thread's first row, 1 and 3 its row 8 below). DEC
 * (RIG__WG_DECODE): the second row takes the first one's rounding residual. */
template <bool DEC = false, bool HALF = false>
static __device__ __forceinline__ void rig__wg_probabilities(uint32_t (&p)[8][4],
                                                             const float (&s)[64])
{
#pragma unroll
    for (int kk = 0; kk < 8; kk++) {
        p[kk][0] = rig_cuda_pack_bf16(s[8 * kk + 0], s[8 * kk + 1]);
        p[kk][2] = rig_cuda_pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
        if constexpr (HALF) { /* the residual of the first row's values, their bf16 unpacked */
            p[kk][1] = rig_cuda_pack_bf16(s[8 * kk + 0] - __uint_as_float(p[kk][0] << 16),
                                          s[8 * kk + 1] - __uint_as_float(p[kk][0] & 0xffff0000u));
            p[kk][3] = rig_cuda_pack_bf16(s[8 * kk + 4] - __uint_as_float(p[kk][2] << 16),
                                          s[8 * kk + 5] - __uint_as_float(p[kk][2] & 0xffff0000u));
        } else if constexpr (DEC) {
            p[kk][1] = rig_cuda_pack_bf16(rig__wg_residual(s[8 * kk + 2]),
                                          rig__wg_residual(s[8 * kk + 3]));
            p[kk][3] = rig_cuda_pack_bf16(rig__wg_residual(s[8 * kk + 6]),
                                          rig__wg_residual(s[8 * kk + 7]));
        } else {
            p[kk][1] = rig_cuda_pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
            p[kk][3] = rig_cuda_pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
        }
    }
}

/* O *= alpha row by row. SKIP (variant bit RIG__WG_SKIP): not at all where no row of the warp
 * changed its max (alpha exactly 1 for all; the warp votes, so the branch is uniform). */
template <bool SKIP, int N>
static __device__ __forceinline__ void rig__wg_rescale(float (&o)[N], const float (&alpha)[2])
{
    if (SKIP && !__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) return;
#pragma unroll
    for (int j = 0; j < N / 4; j++) {
        o[4 * j + 0] *= alpha[0];
        o[4 * j + 1] *= alpha[0];
        o[4 * j + 2] *= alpha[1];
        o[4 * j + 3] *= alpha[1];
    }
}

/* Issues the consumer warpgroup's 64 rows of Q, by cp.async into its rows of the swizzled Q
 * tile at q_tile, as one commit group (rig__wg_q_ready waits for it). */
template <int WG, int D, bool DEC = false>
static __device__ __forceinline__ void
rig__wg_load_q(const struct rig_cuda_attention_args *a, const struct rig__wg_place *place,
               uint32_t q_tile, int wg, int t, int kv_head, int group)
{
    using S = rig__wg_shape<WG>;
    constexpr int CH = D / 8, PER = RIG__WG_THREAD / CH; /* chunks a row, rows a round */
#pragma unroll
    for (int round = 0; round < RIG__WG_ROWS / PER; round++) {
        int i = round * PER + t / CH, c = t % CH, row = wg * RIG__WG_ROWS + i;
        int rho = place->row0 + (DEC ? row & ~8 : row); /* DEC: rows 8-15 repeat 0-7 */
        bool valid = rho < place->packed_rows;
        int64_t token = valid ? place->q_begin + rho / group : 0;
        int64_t head = valid ? kv_head * group + rho % group : 0;
        const uint16_t *src = a->q + token * a->q_stride_t + head * a->q_stride_h + c * 8;
        rig_cuda_cp_async16(q_tile + rig__wg_chunk(row, c, S::BM), src, valid);
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Waits until this thread's Q copies but the newest N groups have landed, then until every
 * thread of the warpgroup is there: its Q rows are ready for wgmma. */
template <int N> static __device__ __forceinline__ void rig__wg_q_ready(int wg)
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
    rig__wg_fence_async();
    rig__wg_named_sync(1 + wg);
}

/* Normalises the rows, stages them as bf16 in the warpgroup's own Q rows (every wgmma that
 * read them has completed) and writes them out with 16-byte stores; returns once every thread
 * of the warpgroup has read its rows back. */
template <int WG, int D, bool DEC = false>
static __device__ __forceinline__ void
rig__wg_store(const struct rig_cuda_attention_args *a, const struct rig__wg_place *place,
              const float (&o)[D / 2], const float (&l)[2], uint32_t q_tile, char *window, int wg,
              int t, int kv_head, int group)
{
    using S = rig__wg_shape<WG>;
    constexpr int CH = D / 8, PER = RIG__WG_THREAD / CH; /* chunks a row, rows a round */
    int warp = t / 32, lane = t % 32;
    uint32_t window_address = rig_cuda_smem_address(window);
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float sum = l[h];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        float inverse = sum > 0.0f ? 1.0f / sum : 0.0f;
        int row = wg * RIG__WG_ROWS + warp * 16 + lane / 4 + 8 * h;
#pragma unroll
        for (int j = 0; j < CH; j++) {
            uint32_t at = q_tile + rig__wg_chunk(row, j, S::BM) + (lane % 4) * 4;
            float lo = o[4 * j + 2 * h], hi = o[4 * j + 2 * h + 1];
            if (DEC) { /* row r's output: its P V plus row r + 8's (the residual's) */
                lo = o[4 * j] + o[4 * j + 2];
                hi = o[4 * j + 1] + o[4 * j + 3];
            }
            *reinterpret_cast<uint32_t *>(window + (at - window_address)) =
                rig_cuda_pack_bf16(lo * inverse, hi * inverse);
        }
    }
    rig__wg_named_sync(1 + wg);
#pragma unroll
    for (int round = 0; round < RIG__WG_ROWS / PER; round++) {
        int i = round * PER + t / CH, c = t % CH, row = wg * RIG__WG_ROWS + i;
        int rho = place->row0 + row;
        if (rho >= place->packed_rows) continue;
        uint16_t *out = a->out + (place->q_begin + rho / group) * a->out_stride_t +
                        (int64_t)(kv_head * group + rho % group) * a->out_stride_h + c * 8;
        uint32_t at = q_tile + rig__wg_chunk(row, c, S::BM);
        *reinterpret_cast<uint4 *>(out) =
            *reinterpret_cast<const uint4 *>(window + (at - window_address));
    }
    rig__wg_named_sync(1 + wg); /* the rows are read out before the next item's Q lands */
}

/* Everything one consumer warpgroup does for one work item, tiles it0 .. of the block's
 * running count (see rig__wg_produce); the file header has the pipeline. PINGPONG (2 consumer
 * warpgroups): each issues its GEMMs only in its turn, so that one's softmax runs while the
 * other's GEMMs hold the tensor cores; per item warpgroup 0 gives itself the first turn and
 * warpgroup 1 does not give back its last, so every barrier phase completes within the item.
 * V: the variant bits (RIG__WG_TREE, RIG__WG_SKIP, RIG__WG_EARLY: O is rescaled by the last
 * softmax's alpha between issuing S = Q K^T and O += P V, FA3's place, instead of right after
 * the softmax; RIG__WG_PREFETCH: the caller has loaded Q into q_tile, else this loads it there
 * first). */
template <int WG, bool PINGPONG, int ST, int D, int V>
static __device__ void
rig__wg_consume(const struct rig_cuda_attention_args *a, const struct rig__wg_place *place,
                char *window, uint32_t q_tile, uint32_t bars, int kv_head, int group, int it0)
{
    using S = rig__wg_shape<WG, ST, D>;
    constexpr bool TREE = (V & RIG__WG_TREE) != 0, SKIP = (V & RIG__WG_SKIP) != 0;
    constexpr bool EARLY = (V & RIG__WG_EARLY) != 0, DEC = (V & RIG__WG_DECODE) != 0;
    constexpr bool HALF = DEC && (V & RIG__WG_HALF) != 0;
    static_assert(!DEC || (WG == 1 && (V & RIG__WG_PREFETCH) == 0), "decode: one warpgroup");
    int wg = (int)threadIdx.x / RIG__WG_THREAD, t = (int)threadIdx.x % RIG__WG_THREAD;
    int warp = t / 32, lane = t % 32;
    uint32_t k_tiles = rig_cuda_smem_address(window) + S::Q_BYTES;
    uint32_t v_tiles = k_tiles + ST * S::TILE_BYTES;
    uint32_t q_rows = q_tile + wg * RIG__WG_ROWS * 128;
    if constexpr ((V & RIG__WG_PREFETCH) == 0) {
        rig__wg_load_q<WG, D, DEC>(a, place, q_tile, wg, t, kv_head, group);
        rig__wg_q_ready<0>(wg);
    }
    float o[D / 2], s[64], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, alpha[2];
    uint32_t p[8][4];
    int position[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int row = wg * RIG__WG_ROWS + warp * 16 + lane / 4 + 8 * h;
        int rho = place->row0 + (DEC ? row & ~8 : row);
        position[h] = rho < place->packed_rows ? place->first_position + rho / group : -1;
    }
#pragma unroll
    for (int i = 0; i < 64; i++)
        s[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < D / 2; i++)
        o[i] = 0.0f;
    const float scale_log2 = a->scale * 1.4426950408889634f;
    int tiles = (int)rig_cuda_div_up(place->keys, RIG__WG_BN);
    if (tiles > 0) {
        int stage = it0 % ST;
        if (PINGPONG && wg == 0) rig__wg_turn_give(0);
        rig__wg_bar_wait(bars + 8 * (RIG__FULL_K + stage), (uint32_t)(it0 / ST) & 1);
        rig__wg_fence_async();
        if (PINGPONG) rig__wg_turn_wait(wg);
        rig__wg_scores<WG, D>(s, q_rows, k_tiles + stage * S::TILE_BYTES);
        if (PINGPONG && (wg != WG - 1 || tiles > 1)) rig__wg_turn_give((wg + 1) % WG);
        rig__wg_wait<0>();
        rig__wg_pin(s);
        __syncwarp();
        if (lane == 0) rig__wg_bar_arrive(bars + 8 * (RIG__EMPTY_K + stage));
        if (place->open_tiles > 0)
            rig__wg_softmax<false, TREE, HALF>(s, m, l, position, 0, scale_log2, alpha);
        else
            rig__wg_softmax<true, TREE, HALF>(s, m, l, position, 0, scale_log2, alpha);
        rig__wg_probabilities<DEC, HALF>(p, s);
    }
    for (int j = 1; j < tiles; j++) {
        int it = it0 + j, stage = it % ST, prev = (it - 1) % ST;
        rig__wg_bar_wait(bars + 8 * (RIG__FULL_K + stage), (uint32_t)(it / ST) & 1);
        rig__wg_bar_wait(bars + 8 * (RIG__FULL_V + prev), (uint32_t)((it - 1) / ST) & 1);
        rig__wg_fence_async();
        if (PINGPONG) rig__wg_turn_wait(wg);
        rig__wg_scores<WG, D>(s, q_rows, k_tiles + stage * S::TILE_BYTES);
        if (EARLY && j > 1) rig__wg_rescale<SKIP>(o, alpha);
        rig__wg_values(o, p, v_tiles + prev * S::TILE_BYTES);
        if (PINGPONG && (wg != WG - 1 || j + 1 < tiles)) rig__wg_turn_give((wg + 1) % WG);
        rig__wg_wait<1>();
        rig__wg_pin(s);
        __syncwarp();
        if (lane == 0) rig__wg_bar_arrive(bars + 8 * (RIG__EMPTY_K + stage));
        if (j < place->open_tiles)
            rig__wg_softmax<false, TREE, HALF>(s, m, l, position, j * RIG__WG_BN, scale_log2,
                                               alpha);
        else
            rig__wg_softmax<true, TREE, HALF>(s, m, l, position, j * RIG__WG_BN, scale_log2,
                                              alpha);
        rig__wg_wait<0>();
        rig__wg_pin(o);
        rig__wg_pin(p);
        __syncwarp();
        if (lane == 0) rig__wg_bar_arrive(bars + 8 * (RIG__EMPTY_V + prev));
        if (!EARLY) rig__wg_rescale<SKIP>(o, alpha);
        rig__wg_probabilities<DEC, HALF>(p, s);
    }
    if (tiles > 0) {
        int last = (it0 + tiles - 1) % ST;
        rig__wg_bar_wait(bars + 8 * (RIG__FULL_V + last), (uint32_t)((it0 + tiles - 1) / ST) & 1);
        rig__wg_fence_async();
        if (EARLY && tiles > 1) rig__wg_rescale<SKIP>(o, alpha);
        rig__wg_values(o, p, v_tiles + last * S::TILE_BYTES);
        rig__wg_wait<0>();
        rig__wg_pin(o);
        rig__wg_pin(p);
        __syncwarp();
        if (lane == 0) rig__wg_bar_arrive(bars + 8 * (RIG__EMPTY_V + last));
    }
    rig__wg_store<WG, D, DEC>(a, place, o, l, q_tile, window, wg, t, kv_head, group);
}

#endif /* __CUDA_ARCH_FEAT_SM90_ALL */

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* Places the block's item of round `round` (see rig__wg_kernel); false when it has no more. */
template <int BM>
static __device__ __forceinline__ bool rig__wg_next(const struct rig_cuda_attention_args *a,
                                                    int items, int round,
                                                    struct rig__wg_place *place, int *kv_head)
{
    int heads_kv = (int)a->heads_kv, blocks = (int)gridDim.x, block = (int)blockIdx.x;
    int item = round * blocks + ((round & 1) ? blocks - 1 - block : block);
    if (item >= items) return false;
    int group = (int)(a->heads_q / a->heads_kv);
    /* the last tile first (prefill: the longest causal tiles), or for decode in batch order */
    int64_t tile = a->cu_q == NULL && a->decode_in_order
                       ? (int64_t)(item / heads_kv)
                       : (int64_t)(items / heads_kv - 1 - item / heads_kv);
    rig__wg_find<BM>(a, group, tile, place);
    *kv_head = item % heads_kv;
    return true;
}

/* The block's next item with keys from round *round on (advanced past it); false when none. */
template <int BM>
static __device__ __forceinline__ bool rig__wg_next_real(const struct rig_cuda_attention_args *a,
                                                         int items, int *round,
                                                         struct rig__wg_place *place, int *kv_head)
{
    while (rig__wg_next<BM>(a, items, *round, place, kv_head)) {
        (*round)++;
        if (place->keys >= 0) return true;
    }
    return false;
}

/* A consumer warpgroup's whole run with RIG__WG_PREFETCH: item n's Q sits in buffer n % 2 (the
 * first after V, shared memory permitting), and item n + 1's is issued before item n is
 * consumed, into the buffer item n - 1 staged its output in (read back by then). */
template <int WG, bool PINGPONG, int ST, int D, int V>
static __device__ void rig__wg_consume_all(const struct rig_cuda_attention_args *a, int items,
                                           char *window, uint32_t bars, int group)
{
    using S = rig__wg_shape<WG, ST, D>;
    int wg = (int)threadIdx.x / RIG__WG_THREAD, t = (int)threadIdx.x % RIG__WG_THREAD;
    uint32_t q_tiles[2] = {rig_cuda_smem_address(window),
                           rig_cuda_smem_address(window) + S::Q_BYTES + 2 * ST * S::TILE_BYTES};
    struct rig__wg_place place, ahead;
    int kv_head = 0, ahead_head = 0, round = 0;
    bool have = rig__wg_next_real<S::BM>(a, items, &round, &place, &kv_head);
    if (have) rig__wg_load_q<WG, D>(a, &place, q_tiles[0], wg, t, kv_head, group);
    for (int n = 0, it0 = 0; have; n++) {
        bool more = rig__wg_next_real<S::BM>(a, items, &round, &ahead, &ahead_head);
        if (more) {
            rig__wg_load_q<WG, D>(a, &ahead, q_tiles[(n + 1) & 1], wg, t, ahead_head, group);
            rig__wg_q_ready<1>(wg);
        } else {
            rig__wg_q_ready<0>(wg);
        }
        rig__wg_consume<WG, PINGPONG, ST, D, V>(a, &place, window, q_tiles[n & 1], bars, kv_head,
                                                group, it0);
        it0 += (int)rig_cuda_div_up(place.keys, RIG__WG_BN);
        place = ahead;
        kv_head = ahead_head;
        have = more;
    }
}
#endif

/* Work items: one per (row tile, KV head), KV head fastest, row tiles in reverse (the longest
 * causal tiles first), `items` of them (an upper bound from the host; device lengths decide
 * which exist, the rest are skipped). Block i takes items i, then 2G - 1 - i, then 2G + i, ...
 * (G blocks, the order snaking so that every block gets a like share of long and short items);
 * with G = items that is one item a block. Every thread places each of its items itself. */
template <int WG, bool PINGPONG, int ST, int D, int V>
static __global__ void __launch_bounds__(rig__wg_shape<WG>::THREADS, (V &RIG__WG_TWO) ? 2 : 1)
    rig__wg_kernel(struct rig_cuda_attention_args a, int items)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using S = rig__wg_shape<WG, ST, D>;
    extern __shared__ __align__(1024) char rig__wg_shared[];
    __shared__ __align__(8) uint64_t barriers[RIG__BARRIERS];
    int group = (int)(a.heads_q / a.heads_kv);
    uint32_t bars = rig_cuda_smem_address(barriers);
    if (threadIdx.x == 0) {
        for (int i = 0; i < ST; i++) {
            rig__wg_bar_init(bars + 8 * (RIG__FULL_K + i), RIG__WG_THREAD / 2);
            rig__wg_bar_init(bars + 8 * (RIG__FULL_V + i), RIG__WG_THREAD / 2);
            rig__wg_bar_init(bars + 8 * (RIG__EMPTY_K + i), 4 * WG);
            rig__wg_bar_init(bars + 8 * (RIG__EMPTY_V + i), 4 * WG);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    uint32_t base = rig_cuda_smem_address(rig__wg_shared);
    char *window = rig__wg_shared + (((base + 1023) & ~1023u) - base);
    uint32_t aligned = rig_cuda_smem_address(window);
    /* setmaxnreg takes effect only with each role one branch of a single if/else. */
    if ((int)threadIdx.x >= WG * RIG__WG_THREAD) {
        if constexpr (WG == 2)
            asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(RIG__WG_PRODUCER_REGS)
                         : "memory");
        if constexpr (WG == 3)
            asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(RIG__WG3_PRODUCER_REGS)
                         : "memory");
        if constexpr (WG == 1 && (V & RIG__WG_TWO) != 0)
            asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(RIG__WG2B_PRODUCER_REGS)
                         : "memory");
        struct rig__wg_place place;
        int kv_head;
        for (int round = 0, it0 = 0; rig__wg_next<S::BM>(&a, items, round, &place, &kv_head);
             round++) {
            if (place.keys < 0) continue;
            rig__wg_produce<WG, ST, D, V>(&a, &place, aligned + S::Q_BYTES,
                                          aligned + S::Q_BYTES + ST * S::TILE_BYTES, bars, kv_head,
                                          it0);
            it0 += (int)rig_cuda_div_up(place.keys, RIG__WG_BN);
        }
        asm volatile("cp.async.wait_all;\n" ::: "memory");
    } else {
        if constexpr (WG == 2)
            asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(RIG__WG_CONSUMER_REGS)
                         : "memory");
        if constexpr (WG == 3)
            asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(RIG__WG3_CONSUMER_REGS)
                         : "memory");
        if constexpr (WG == 1 && (V & RIG__WG_TWO) != 0)
            asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(RIG__WG2B_CONSUMER_REGS)
                         : "memory");
        if constexpr ((V & RIG__WG_PREFETCH) != 0) {
            rig__wg_consume_all<WG, PINGPONG, ST, D, V>(&a, items, window, bars, group);
        } else {
            struct rig__wg_place place;
            int kv_head;
            for (int round = 0, it0 = 0; rig__wg_next<S::BM>(&a, items, round, &place, &kv_head);
                 round++) {
                if (place.keys < 0) continue;
                rig__wg_consume<WG, PINGPONG, ST, D, V>(&a, &place, window, aligned, bars, kv_head,
                                                        group, it0);
                it0 += (int)rig_cuda_div_up(place.keys, RIG__WG_BN);
            }
        }
    }
#else
    (void)a;
    (void)items;
    __trap(); /* the launcher takes this path only on devices the sm_90a build serves */
#endif
}

/* RIG_PREFILL_WGMMA_PINGPONG=0 turns the ping-pong off, RIG_PREFILL_WGMMA_PERSISTENT=0 the
 * persistent grid (testing and timing switches; both on when unset). */
static bool rig__wg_switch(const char *name)
{
    return rig_cuda_env(name, 1) != 0;
}

template <int WG, bool PINGPONG, int ST, int D, int V>
static enum rig_status rig__wg_launch(const struct rig_cuda_launch *launch,
                                      const struct rig_cuda_attention_args *a)
{
    using S = rig__wg_shape<WG, ST, D>;
    constexpr size_t SHARED = (V & RIG__WG_PREFETCH) != 0 ? S::SHARED_PREFETCH : S::SHARED;
    if (SHARED > launch->shared_optin_bytes) return RIG_E_UNSUPPORTED;
    int64_t group = a->heads_q / a->heads_kv;
    bool decode = a->cu_q == NULL; /* one item per (request, KV head) */
    int64_t items = decode ? a->requests * a->heads_kv
                           : (rig_cuda_div_up(a->rows * group, S::BM) + a->requests) * a->heads_kv;
    if (items > INT32_MAX / 2) return RIG_E_UNSUPPORTED;
    /* Placing a prefill item scans the requests, so a persistent block (several items) only for
     * few of them; a decode item is placed at once. */
    int64_t blocks = items;
    if ((decode || a->requests <= 16) && rig__wg_switch("RIG_PREFILL_WGMMA_PERSISTENT")) {
        int64_t resident = (V & RIG__WG_TWO) != 0 ? 2 * (int64_t)launch->sm_count : launch->sm_count;
        blocks = items < resident ? items : resident;
    }
    RIG_CUDA_TRY(cudaFuncSetAttribute(rig__wg_kernel<WG, PINGPONG, ST, D, V>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SHARED));
    rig__wg_kernel<WG, PINGPONG, ST, D, V>
        <<<(unsigned)blocks, S::THREADS, SHARED, launch->stream>>>(*a, (int)items);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}

/* The variant bits to launch with: RIG_PREFILL_WGMMA_VARIANT=N (a timing switch, read at
 * every call), else RIG__WG_VARIANT_DEFAULT. */
static int rig__wg_variant(void)
{
    return (int)rig_cuda_env("RIG_PREFILL_WGMMA_VARIANT", RIG__WG_VARIANT_DEFAULT);
}

/* One shape's launch with variant bits v: 0, and on the default path (2 consumer warpgroups,
 * ping-pong, 2 stages) also 1 and 31 (every bit); any other v takes everything but EARLY (7),
 * on every shape. Each variant is a kernel of its own in the binary and in the
 * kernels rig loads at start (cuda/preload.h), so only these are built: the rest of the
 * measured list (3, 5, 9, 15, 21, 23) was within the spread of 1 (see the header). */
template <int WG, bool PINGPONG, int ST, int D>
static enum rig_status rig__wg_launch_variant(const struct rig_cuda_launch *launch,
                                              const struct rig_cuda_attention_args *a, int v)
{
    constexpr int ALL = RIG__WG_LEAN | RIG__WG_TREE | RIG__WG_SKIP;
    if constexpr (WG == 2 && PINGPONG && ST == 2) {
        switch (v) {
        case 0: return rig__wg_launch<WG, PINGPONG, ST, D, 0>(launch, a);
        case 1: return rig__wg_launch<WG, PINGPONG, ST, D, 1>(launch, a);
        case 31: return rig__wg_launch<WG, PINGPONG, ST, D, 31>(launch, a);
        default: break;
        }
    }
    if (v == 0) return rig__wg_launch<WG, PINGPONG, ST, D, 0>(launch, a);
    return rig__wg_launch<WG, PINGPONG, ST, D, ALL>(launch, a);
}

/* The launches of one head dim: consumer warpgroups, ping-pong and stages chosen as below
 * (3 consumer warpgroups only at head dim 64, always with ping-pong). */
template <int D>
static enum rig_status rig__wg_dispatch(const struct rig_cuda_launch *launch,
                                        const struct rig_cuda_attention_args *a, bool one,
                                        bool three, bool pingpong, int consumers)
{
    int v = rig__wg_variant();
    if constexpr (D == 64)
        if (consumers == 3 && !one)
            return three ? rig__wg_launch_variant<3, true, 3, D>(launch, a, v)
                         : rig__wg_launch_variant<3, true, 2, D>(launch, a, v);
    if (one)
        return three ? rig__wg_launch_variant<1, false, 3, D>(launch, a, v)
                     : rig__wg_launch_variant<1, false, 2, D>(launch, a, v);
    if (three)
        return pingpong ? rig__wg_launch_variant<2, true, 3, D>(launch, a, v)
                        : rig__wg_launch_variant<2, false, 3, D>(launch, a, v);
    return pingpong ? rig__wg_launch_variant<2, true, 2, D>(launch, a, v)
                    : rig__wg_launch_variant<2, false, 2, D>(launch, a, v);
}

enum rig_status rig_cuda_attention_prefill_wgmma(const struct rig_cuda_launch *launch,
                                                 const struct rig_cuda_attention_args *a,
                                                 bool two_consumers)
{
    if (a->head_dim != 128 && a->head_dim != 64) return RIG_E_UNSUPPORTED;
    if (launch->compute_capability != 90) return RIG_E_UNSUPPORTED;
    if (!(a->scale > 0.0f)) return RIG_E_UNSUPPORTED; /* the softmax folds it into exp2 */
    if (a->cache_stride_s > INT32_MAX / 2) return RIG_E_UNSUPPORTED; /* 32-bit row strides */
    /* One consumer warpgroup a block while its blocks fit the multiprocessors in one round
     * (512 tokens at GQA 2: 128 blocks of 64 rows on 132 SMs), two beyond (900 tokens: 232
     * blocks of 64 rows would take two rounds, 120 of 128 rows take one).
     * RIG_PREFILL_WGMMA_CONSUMERS=1 or 2 forces the count (a timing switch). */
    int64_t group = a->heads_q / a->heads_kv;
    if (a->cu_q == NULL) { /* decode: RIG__WG_DECODE, one consumer warpgroup */
        if (group > 8 || a->rows != a->requests) return RIG_E_UNSUPPORTED;
        constexpr int V = RIG__WG_LEAN | RIG__WG_TREE | RIG__WG_SKIP | RIG__WG_DECODE;
        /* D 64: two blocks a multiprocessor (RIG__WG_TWO, with RIG__WG_HALF to fit its 200
         * registers); RIG_DECODE_TC_TWO=0 (a timing switch) runs one. At D 128 two blocks do
         * not fit the shared memory (145 KB each), and the halved softmax alone was slower. */
        if (a->head_dim == 64)
            return rig_cuda_env("RIG_DECODE_TC_TWO", 1) != 0
                       ? rig__wg_launch<1, false, 2, 64, V | RIG__WG_HALF | RIG__WG_TWO>(launch, a)
                       : rig__wg_launch<1, false, 2, 64, V>(launch, a);
        return rig__wg_launch<1, false, 2, 128, V>(launch, a);
    }
    int64_t blocks_one = rig_cuda_div_up(a->rows * group, RIG__WG_ROWS) * a->heads_kv;
    long forced = rig_cuda_env("RIG_PREFILL_WGMMA_CONSUMERS", 0); /* 0: not forced */
    bool one = blocks_one <= launch->sm_count;
    if (forced != 0) one = forced == 1;
    if (two_consumers) one = false;
    bool three = rig_cuda_env("RIG_PREFILL_WGMMA_STAGES", 2) == 3;
    bool pingpong = rig__wg_switch("RIG_PREFILL_WGMMA_PINGPONG");
    /* RIG_PREFILL_WGMMA_CONSUMERS=3: 3 consumer warpgroups (192 rows) a block at head dim 64. */
    int consumers = forced == 3 ? 3 : 2;
    if (consumers == 3) one = false;
    if (a->head_dim == 64) return rig__wg_dispatch<64>(launch, a, one, three, pingpong, consumers);
    return rig__wg_dispatch<128>(launch, a, one, three, pingpong, consumers);
}
