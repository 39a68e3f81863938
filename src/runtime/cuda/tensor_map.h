// Tensor maps for the Tensor Memory Accelerator (sm_90 TMA: cp.async.bulk.tensor), encoded on the
// host through the driver's cuTensorMapEncodeTiled, reached with cudaGetDriverEntryPointByVersion
// so binaries keep linking cudart only (src/runtime/cuda/CMakeLists.txt).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace lg::cuda {

/// A row-major bf16 matrix [rows, inner] at `base` (16-byte aligned, inner a multiple of 8) as
/// tiles of box_rows x box_inner elements (box_inner * 2 <= 128 bytes, box_rows <= 256), loaded
/// with the 128-byte swizzle (16-byte chunk c of tile row r lands at chunk c ^ (r % 8); the tile's
/// shared-memory base must be 1,024-byte aligned) and zeros for elements outside the matrix.
/// Throws lg::Error naming `what` when the driver has no cuTensorMapEncodeTiled or refuses the map.
CUtensorMap tensor_map_bf16_2d(const void* base, uint64_t rows, uint64_t inner, uint32_t box_rows, uint32_t box_inner,
                               const char* what);

}  // namespace lg::cuda
