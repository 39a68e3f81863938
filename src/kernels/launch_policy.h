// Launch policies both lanes share: plain constants, for the launchers (host C++ of both lanes)
// and for nvcc device code (__launch_bounds__).
#pragma once

namespace lg::kernels {

/// Blocks per SM of the hand-written lane's decode GEMV persistent grid (its warps stride over the
/// outputs, so fewer blocks mean fewer per-block prologues for the same weight stream). 128-thread
/// blocks, bench/qwen_lane.md v2: 4 (16 warps, up to 16 x 2 x kGemvDepth x 16 B = 128 KB of loads
/// in flight per SM; the register file is then full, __launch_bounds__(128, 4)) beat 3 and 2 at
/// every 8B shape. The compiled lane's emitted GEMVs differ in registers from program to program,
/// so it sizes each grid from the kernel's occupancy instead (CompiledLane::gemv_blocks); its
/// earlier fixed cap of 4 measured, 8B decode ms/token by blocks per SM (bench/compiled_lane.md,
/// 2026-11-30): 2: 5.74, 3: 5.52, 4: 5.27, 6: 5.62, uncapped: 5.47.
inline constexpr int kGemvBlocksPerSm = 4;

}  // namespace lg::kernels
