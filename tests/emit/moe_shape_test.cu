// The host's plan of the experts' tensor-core form (src/emit/cuda/grouped_gemm_shape.h: the grouped
// GEMM's row tile, grid and route workspace) restates the device template's shape
// (src/kernels/grouped_gemm.cuh), which only nvcc and NVRTC can read. This test, compiled by nvcc,
// includes both and holds them equal; it runs no kernel, so it runs without a GPU.
#include <gtest/gtest.h>

#include "emit/cuda/grouped_gemm_shape.h"
// grouped_gemm.cuh uses flash_attention.cuh's mma helpers, pasted before it in the emitted text.
#include "kernels/flash_attention.cuh"
#include "kernels/grouped_gemm.cuh"

namespace {

namespace shape = lg::emit::cuda::grouped_gemm_shape;

static_assert(shape::kTileRows == lg_moe::kTileM, "the host's row tile is not the grouped GEMM's");

TEST(MoeShape, HostPlanAgreesWithTheGroupedGemmTemplate) {
  for (const int64_t E : {1, 8, 128, 4095})
    for (const int64_t P : {1, 2, 63, 64, 65, 127, 128, 2048, 16384, 65536}) {
      EXPECT_EQ(shape::max_tiles(E, P), lg_moe::max_tiles(E, P)) << E << " experts, " << P << " pairs";
      EXPECT_EQ(shape::route_ints(E, P), lg_moe::route_ints(E, P)) << E << " experts, " << P << " pairs";
    }
}

}  // namespace
