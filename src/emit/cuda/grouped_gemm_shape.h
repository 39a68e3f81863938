// The host's statement of the experts' grouped tensor-core GEMM shape: its row tile and the grid
// and route workspace that follow from it. They restate src/kernels/grouped_gemm.cuh (lg_moe::kTileM,
// max_tiles, route_ints), device text that host code cannot include; tests/emit/moe_shape_test.cu,
// compiled by nvcc, includes both and holds them equal. Plain C++17 with no project includes, so
// that nvcc can compile that test.
#pragma once

#include <cstdint>

namespace lg::emit::cuda::grouped_gemm_shape {

/// Pairs (token, slot) a row tile of the grouped GEMM holds, all routed to one expert.
inline constexpr int64_t kTileRows = 64;

/// Row tiles a step of P pairs over E experts can need: each of the E + 1 buckets (the last for
/// out-of-range expert indices) wastes less than one tile.
constexpr int64_t max_tiles(int64_t E, int64_t P) { return P / kTileRows + E + 2; }

/// The route workspace in ints: counts, segments and tiles of the E + 1 buckets, then each pair's
/// sorted position and each position's pair.
constexpr int64_t route_ints(int64_t E, int64_t P) { return 3 * (E + 1) + 2 + 2 * max_tiles(E, P) + 2 * P; }

}  // namespace lg::emit::cuda::grouped_gemm_shape
