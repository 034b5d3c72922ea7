/* fill_dummy.cu — seeded dummy weights (see fill_dummy.cuh).
 *
 * One thread per Philox call: a call gives the four elements [4g, 4g + 4) of the full
 * tensor (hal/dummy.h), so thread (row r, group j) of the block owns the elements of group
 * g = first_r / 4 + j that fall inside row r of the block, first_r being the full-tensor
 * index of the row's first element. When the tensor's width and the block's first column are
 * multiples of 4, every row starts a group and a row of cols elements has ceil(cols / 4)
 * groups; otherwise a row may start mid-group and has at most (cols + 2) / 4 + 1, the extra
 * threads finding nothing to write. Consecutive threads write consecutive 8-byte runs of one
 * row (one 64-bit store when the run is whole and aligned), so a warp's stores coalesce.
 * Grid-stride over rows × groups; the grid is capped, as the u32 fill's.
 */
#include "cuda/ops/common.cuh"
#include "cuda/ops/fill_dummy.cuh"

RIG_CUDA_MODULE(fill_dummy)

static __global__ void rig__fill_dummy_kernel(uint16_t *dst, struct rig_dummy_piece piece,
                                              int64_t groups_per_row, int64_t total)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        int64_t r = t / groups_per_row, j = t - r * groups_per_row;
        int64_t first = (piece.row0 + r) * piece.width + piece.col0;
        int64_t group = first / 4 + j;
        int64_t c0 = group * 4 - first; /* block column of the group's first element: >= -3 */
        if (c0 >= piece.cols) continue;
        struct rig_philox_out bits = rig_dummy_words(piece.seed, piece.tag, (uint64_t)group);
        uint16_t *row = dst + r * piece.cols;
        uint16_t v[4];
        for (int w = 0; w < 4; w++)
            v[w] = rig_dummy_from_word(bits.v[w], piece.scale, piece.offset);
        if (c0 >= 0 && c0 + 4 <= piece.cols && ((uintptr_t)(row + c0) & 7u) == 0) {
            *(uint2 *)(row + c0) = make_uint2((uint32_t)v[0] | (uint32_t)v[1] << 16,
                                              (uint32_t)v[2] | (uint32_t)v[3] << 16);
            continue;
        }
        for (int w = 0; w < 4; w++)
            if (c0 + w >= 0 && c0 + w < piece.cols) row[c0 + w] = v[w];
    }
}

enum rig_status rig_cuda_fill_dummy_bf16(cudaStream_t stream, void *dst,
                                         const struct rig_dummy_piece *piece)
{
    RIG_ASSERT(dst != NULL && piece != NULL);
    RIG_ASSERT(piece->rows > 0 && piece->cols > 0 && piece->width >= piece->col0 + piece->cols);
    bool aligned = piece->width % 4 == 0 && piece->col0 % 4 == 0;
    int64_t groups_per_row = aligned ? rig_cuda_div_up(piece->cols, 4) : (piece->cols + 2) / 4 + 1;
    int64_t total = piece->rows * groups_per_row;
    int64_t blocks = rig_cuda_div_up(total, 256);
    if (blocks > 65536) blocks = 65536; /* grid-stride loop covers the rest */
    rig__fill_dummy_kernel<<<(unsigned)blocks, 256, 0, stream>>>((uint16_t *)dst, *piece,
                                                                 groups_per_row, total);
    RIG_CUDA_LAUNCHED();
    return RIG_OK;
}
