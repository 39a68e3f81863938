// The paged KV cache as the kernels address it (docs/handwritten_lane.md, "The KV pool"). One
// layer's K (and V) pool is bf16 [KV, rows, Dh], rows = num_blocks * block_size; a sequence's
// position p lives at row block_table[p / block_size] * block_size + p % block_size of each KV
// head (vLLM's PagedAttention, with the runtime's block tables: runtime/kv_blocks.h). The lane
// takes power-of-two block sizes only, so the division is a shift.
#pragma once

#include <cstddef>

namespace lg::qwen::dev {

/// How a kernel finds a position's row: block size 1 << shift.
struct PageGeom {
  int shift;  ///< log2(block_size)
  int rows;   ///< pool rows per KV head (num_blocks << shift)
};

/// Pool row of position p of the sequence whose block table is bt (device ints, read-only while
/// any kernel of the step runs; entries past the sequence's last position are never read).
__device__ __forceinline__ int paged_row(const int* __restrict__ bt, int p, int shift) {
  return (__ldg(bt + (p >> shift)) << shift) | (p & ((1 << shift) - 1));
}

/// Element offset of row `row` of KV head kvh in a pool [KV, rows, DH].
template <int DH>
__device__ __forceinline__ size_t pool_offset(int kvh, int rows, int row) {
  return (static_cast<size_t>(kvh) * static_cast<size_t>(rows) + static_cast<size_t>(row)) * DH;
}

}  // namespace lg::qwen::dev
