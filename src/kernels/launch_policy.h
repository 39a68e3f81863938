// Launch policies both lanes share: plain constants, for the launchers (host C++ of both lanes)
// and for nvcc device code (__launch_bounds__).
#pragma once

namespace lg::kernels {

/// Blocks per SM of a decode GEMV's persistent grid (its warps stride over the outputs, so fewer
/// blocks mean fewer per-block prologues for the same weight stream). Measured on the H200 for
/// each lane, and 4 won in both:
///   hand-written (128-thread blocks, bench/qwen_lane.md v2): 4 (16 warps, up to 16 x 2 x
///     kGemvDepth x 16 B = 128 KB of loads in flight per SM; the register file is then full,
///     __launch_bounds__(128, 4)) beat 3 and 2 at every 8B shape;
///   compiled (256-thread blocks, bench/compiled_lane.md, 2026-11-30), 8B decode ms/token by
///     blocks per SM: 2: 5.74, 3: 5.52, 4: 5.27, 6: 5.62, uncapped (up to 1536 blocks): 5.47.
/// Retuning one lane means measuring the other too (or giving it its own constant again).
inline constexpr int kGemvBlocksPerSm = 4;

}  // namespace lg::kernels
