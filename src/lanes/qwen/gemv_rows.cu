// Launchers of the tensor-core GEMV of a few rows (launch_gemv_rows): the register-fed form
// (kernels/gemv_rows.cuh) and the TMA form (kernels/gemv_rows_tma.cuh).
#include <algorithm>
#include <cstdint>
#include <string>

#include "lanes/qwen/kernels.h"
#include "lanes/qwen/kernels/gemv_rows.cuh"
#include "lanes/qwen/kernels/gemv_rows_tma.cuh"
#include "lanes/qwen/launch_pdl.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/tensor_map.h"
#include "support/error.h"

namespace lg::qwen {

bool gemv_rows_supports(int N, int K) { return N > 0 && N % 16 == 0 && K > 0 && K % 8 == 0; }

int gemv_rows_batch_limit() {
  static const int limit = [] {
    switch (lab_knob("LG_QWEN_GEMV_ROWS", -1)) {
      case 0: return 0;
      case 1: return kGemvRowsRegistersMaxT;
      case 2: return kGemvRowsMaxT;
      default: break;
    }
    // Unset: where it was measured faster (the H100 and the H200; see kernels.h), 16 rows on the
    // TMA form.
    const std::string card = cuda::device_description();
    return card.rfind("NVIDIA H100", 0) == 0 || card.rfind("NVIDIA H200", 0) == 0 ? 16 : 0;
  }();
  return limit;
}

int gemv_rows_max_t(GemvRowsForm form) {
  if (form == GemvRowsForm::kDefault) form = gemv_rows_form();
  return form == GemvRowsForm::kTma ? kGemvRowsMaxT : kGemvRowsRegistersMaxT;
}

GemvRowsForm gemv_rows_form() {
  static const GemvRowsForm f = lab_knob("LG_QWEN_GEMV_ROWS", 0) == 1 ? GemvRowsForm::kRegisters : GemvRowsForm::kTma;
  return f;
}

namespace {

/// Lab knob LG_QWEN_ROWS_ATOMIC_SPLITS=1: K splits add into the output atomically (the form before
/// the ordered sum, not deterministic), for A/B of what the ordered sum costs.
bool atomic_splits() {
  static const bool on = lab_knob("LG_QWEN_ROWS_ATOMIC_SPLITS", 0) == 1;
  return on;
}

/// Most K splits a launch of `a` may take: kResidual what its partials and arrivals hold (1
/// without them), kSlices what its partials hold, at most kGemvRowsMaxSplits; 1 for the others.
int split_room(GemvRowsOutput out, const GemvRowsArgs& a) {
  if (out != GemvRowsOutput::kResidual && out != GemvRowsOutput::kSlices) return 1;
  if (out == GemvRowsOutput::kResidual && atomic_splits()) return kGemvRowsMaxSplits;
  const bool counters = out == GemvRowsOutput::kSlices || (a.arrivals && a.arrivals_n >= gemv_rows_arrival_ints(a.N));
  if (!a.partials || !counters) return 1;
  const size_t per_split = static_cast<size_t>(a.T) * static_cast<size_t>(a.N);
  return static_cast<int>(std::clamp<size_t>(a.partials_n / per_split, 1, kGemvRowsMaxSplits));
}

/// K splits of a kResidual launch: about one item (16-row tile x K split) per warp of the grid
/// when the tiles alone are fewer than its warps (N = 4096: 256 tiles for 2112 warps at 4 blocks
/// per SM -> 8 splits of 512 k), and no split shorter than one pipeline's depth of steps
/// (kRowsDepth x 32 k), so a warp's loads in flight stay full. Knob LG_QWEN_GEMV_ROWS_SPLITS
/// fixes the count (bench/qwen_lane.md style A/B); `room` caps it (split_room).
int gemv_rows_splits(int tiles, int nc, int warps, int room) {
  static const int forced = lab_knob("LG_QWEN_GEMV_ROWS_SPLITS", 0);
  const int want = forced > 0 ? forced : std::max(1, warps / tiles);
  const int min_chunks = 4 * dev::kRowsDepth;
  return std::clamp(want, 1, std::max(1, std::min(room, nc / min_chunks)));
}

template <int NT, GemvRowsOutput OUT>
void gemv_rows_as(const dev::GemvRowsParams& p, int blocks, cudaStream_t s) {
  launch_pdl(dev::gemv_rows_kernel<NT, OUT>, dim3(blocks), dim3(dev::kRowsThreads), 0, s, p);
}

template <GemvRowsOutput OUT>
void gemv_rows_nt(const dev::GemvRowsParams& p, int blocks, cudaStream_t s) {
  if (p.T <= 8) return gemv_rows_as<1, OUT>(p, blocks, s);
  return gemv_rows_as<2, OUT>(p, blocks, s);
}

/// K splits of a kTma launch: the fewest that give the grid's blocks items within 10% of an
/// even share each (items round-robin over `blocks`), at least one chunk (kTmaK) a split, at most
/// `room` splits (split_room).
int gemv_tma_splits(int tiles, int chunks, int blocks, int room) {
  int best = 1;
  double best_eff = 0;
  for (int s = 1; s <= std::min(chunks, room); ++s) {
    const int items = tiles * s;
    const int rounds = (items + blocks - 1) / blocks;
    const double eff = static_cast<double>(items) / (static_cast<double>(rounds) * blocks);  // busy share
    if (eff > best_eff + 1e-9) best = s, best_eff = eff;
    if (eff >= 0.9) return s;
  }
  return best;
}

/// Stages of the TMA form's ring for NT n-tiles: 4 at one n-tile (T <= 8), 3 above; the blocks an
/// SM follow from the shared memory (tma_blocks_per_sm: 3 stages hold four blocks at one n-tile,
/// three at two). H100, 8B step, 512 positions, with the sums in split order (bench/RESULTS.md,
/// thirty-fourth session, call 2): 2 / 8 sequences 5.99 / 6.22 ms at 4 stages against 6.04 / 6.30
/// at 3 and 6.48 / 6.68 at 8; 16 / 32 sequences 6.65 / 7.79 at 3 against 6.89 / 8.15 at 4 and
/// 7.29 / 8.82 at 8 (the 8 stages of one block an SM were the thirtieth session's pick at one
/// n-tile, with two blocks' 4 above). Knob LG_QWEN_TMA_STAGES (2, 3, 4 or 8) fixes it.
int tma_stages(int NT) {
  static const int forced = lab_knob("LG_QWEN_TMA_STAGES", 0);
  if (forced == 2 || forced == 3 || forced == 4 || forced == 8) return forced;
  return NT == 1 ? 4 : 3;
}

/// Consumer warps of the TMA form's blocks: 4, or 8 with knob LG_QWEN_TMA_KHALVES=1 (two a 16-row
/// MMA tile, each half of a stage's k: twice the MMA issue an SM's shared memory feeds).
int tma_consumer_warps() {
  static const int cw = lab_knob("LG_QWEN_TMA_KHALVES", 0) == 1 ? 8 : 4;
  return cw;
}

/// n-tiles of 8 rows the TMA form runs for T rows.
int tma_n_tiles(int T) { return T <= 8 ? 1 : T <= 16 ? 2 : 4; }

/// Blocks of gemv_rows_tma_kernel<NT, OUT, S, CW> an SM holds (its shared memory decides), after
/// letting the kernel take that much dynamic shared memory; once per instantiation.
template <int NT, GemvRowsOutput OUT, int S, int CW>
int tma_blocks_per_sm() {
  static const int n = [] {
    constexpr int smem = dev::tma_smem_bytes(NT, S, CW);
    auto* kernel = dev::gemv_rows_tma_kernel<NT, OUT, S, CW>;
    LG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int blocks = 0;
    LG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, dev::tma_threads(CW), smem));
    return std::max(1, blocks);
  }();
  return n;
}

/// The kTma form's launch with S stages: its grid (every block an SM holds, or a.max_blocks), K
/// splits (kResidual, kSlices: a.splits, the knob, or gemv_tma_splits within split_room) and the
/// launch; returns the splits.
template <int NT, GemvRowsOutput OUT, int S, int CW>
int gemv_tma_as(GemvRowsOutput out, const GemvRowsArgs& a, dev::GemvTmaParams p, const CUtensorMap& wmap,
                 const CUtensorMap& xmap, cudaStream_t s) {
  const int chunks = (a.K + dev::kTmaK - 1) / dev::kTmaK;
  const int fit = cuda::sm_count() * tma_blocks_per_sm<NT, OUT, S, CW>();
  const int most = a.max_blocks > 0 ? std::min(a.max_blocks, fit) : fit;
  int splits = 1;
  static const int forced = lab_knob("LG_QWEN_GEMV_ROWS_SPLITS", 0);
  if (out == GemvRowsOutput::kResidual || out == GemvRowsOutput::kSlices) {
    const int room = split_room(out, a);
    const int want = a.splits > 0 ? a.splits : std::min(forced, room);
    splits = want > 0 ? std::min(want, chunks) : gemv_tma_splits(p.tiles, chunks, most, room);
  }
  // k of a split: whole chunks, every split non-empty.
  const int split_chunks = (chunks + splits - 1) / splits;
  p.split_k = split_chunks * dev::kTmaK;
  p.splits = (chunks + split_chunks - 1) / split_chunks;
  const int blocks = std::max(1, std::min(p.tiles * p.splits, most));
  launch_pdl(dev::gemv_rows_tma_kernel<NT, OUT, S, CW>, dim3(blocks), dim3(dev::tma_threads(CW)),
             dev::tma_smem_bytes(NT, S, CW), s, p, wmap, xmap);
  return p.splits;
}

template <int NT, GemvRowsOutput OUT, int S>
int gemv_tma_warps(GemvRowsOutput out, const GemvRowsArgs& a, const dev::GemvTmaParams& p, const CUtensorMap& wmap,
                    const CUtensorMap& xmap, cudaStream_t s) {
  if ((a.consumer_warps ? a.consumer_warps : tma_consumer_warps()) == 8)
    return gemv_tma_as<NT, OUT, S, 8>(out, a, p, wmap, xmap, s);
  return gemv_tma_as<NT, OUT, S, 4>(out, a, p, wmap, xmap, s);
}

template <int NT, GemvRowsOutput OUT>
int gemv_tma_stages(GemvRowsOutput out, const GemvRowsArgs& a, const dev::GemvTmaParams& p, const CUtensorMap& wmap,
                     const CUtensorMap& xmap, cudaStream_t s) {
  switch (tma_stages(NT)) {
    case 2: return gemv_tma_warps<NT, OUT, 2>(out, a, p, wmap, xmap, s);
    case 3: return gemv_tma_warps<NT, OUT, 3>(out, a, p, wmap, xmap, s);
    case 4: return gemv_tma_warps<NT, OUT, 4>(out, a, p, wmap, xmap, s);
    default: return gemv_tma_warps<NT, OUT, 8>(out, a, p, wmap, xmap, s);
  }
}

template <GemvRowsOutput OUT>
int gemv_tma_nt(const GemvRowsArgs& a, const dev::GemvTmaParams& p, const CUtensorMap& wmap, const CUtensorMap& xmap,
                 cudaStream_t s) {
  switch (tma_n_tiles(p.T)) {
    case 1: return gemv_tma_stages<1, OUT>(OUT, a, p, wmap, xmap, s);
    case 2: return gemv_tma_stages<2, OUT>(OUT, a, p, wmap, xmap, s);
    default: return gemv_tma_stages<4, OUT>(OUT, a, p, wmap, xmap, s);
  }
}

/// The kTma form of launch_gemv_rows (arguments already checked; `what` names the launch in errors).
int launch_gemv_rows_tma(GemvRowsOutput out, const GemvRowsArgs& a, const std::string& what, cudaStream_t s) {
  dev::GemvTmaParams p;
  p.out_f32 = a.out_f32;
  p.out_bf16 = a.out_bf16;
  p.clear = reinterpret_cast<float4*>(a.clear);
  p.clear_n4 = a.clear ? static_cast<long long>(a.clear_n / 4) : 0;
  p.N = a.N;
  p.K = a.K;
  p.T = a.T;
  p.tiles = (a.N + dev::kTmaRows - 1) / dev::kTmaRows;
  p.partials = atomic_splits() && out == GemvRowsOutput::kResidual ? nullptr : a.partials;
  p.arrivals = a.arrivals;
  const CUtensorMap wmap = cuda::tensor_map_bf16_2d(a.W, static_cast<uint64_t>(a.N), static_cast<uint64_t>(a.K),
                                                    dev::kTmaRows, dev::kTmaBoxK, what.c_str());
  const CUtensorMap xmap = cuda::tensor_map_bf16_2d(a.x, static_cast<uint64_t>(a.T), static_cast<uint64_t>(a.K),
                                                    8 * tma_n_tiles(a.T), dev::kTmaBoxK, what.c_str());
  switch (out) {
    case GemvRowsOutput::kStore: return gemv_tma_nt<GemvRowsOutput::kStore>(a, p, wmap, xmap, s);
    case GemvRowsOutput::kResidual: return gemv_tma_nt<GemvRowsOutput::kResidual>(a, p, wmap, xmap, s);
    case GemvRowsOutput::kSwiGLU: return gemv_tma_nt<GemvRowsOutput::kSwiGLU>(a, p, wmap, xmap, s);
    case GemvRowsOutput::kSlices: return gemv_tma_nt<GemvRowsOutput::kSlices>(a, p, wmap, xmap, s);
  }
  return 0;
}

}  // namespace

int launch_gemv_rows(GemvRowsOutput out, const GemvRowsArgs& a, cudaStream_t s) {
  const std::string what = "hand-written row GEMV (N=" + std::to_string(a.N) + " K=" + std::to_string(a.K) +
                           " T=" + std::to_string(a.T) + ")";
  if (!gemv_rows_supports(a.N, a.K))
    throw Error(what + ": unsupported shape (N a positive multiple of 16, K a positive multiple of 8)");
  const GemvRowsForm form = a.form == GemvRowsForm::kDefault ? gemv_rows_form() : a.form;
  if (a.T < 1 || a.T > gemv_rows_max_t(form))
    throw Error(what + ": T must be 1.." + std::to_string(gemv_rows_max_t(form)) + " in this form");
  if (!a.W || !a.x) throw Error(what + ": missing W or x");
  if (out == GemvRowsOutput::kSwiGLU ? !a.out_bf16 : out == GemvRowsOutput::kSlices ? !a.partials : !a.out_f32)
    throw Error(what + ": missing output");
  if (out == GemvRowsOutput::kSlices && a.partials_n < static_cast<size_t>(a.T) * static_cast<size_t>(a.N))
    throw Error(what + ": the slices' partials hold less than one slice of T x N floats");
  auto misaligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 != 0; };
  if (misaligned(a.W) || misaligned(a.x) || misaligned(a.out_f32) || misaligned(a.out_bf16))
    throw Error(what + ": W, x and the output must be 16-byte aligned");
  if (a.clear && (a.clear_n % 4 != 0 || misaligned(a.clear)))
    throw Error(what + ": the buffer to clear must be 16-byte aligned and a multiple of 4 floats");
  if (a.clear && (a.clear == a.out_f32 || static_cast<const void*>(a.clear) == a.x))
    throw Error(what + ": the buffer to clear is this launch's input or output");
  if (a.blocks_per_sm < 0 || a.blocks_per_sm > dev::kRowsMaxBlocksPerSm || a.splits < 0 || a.max_blocks < 0)
    throw Error(what + ": blocks_per_sm must be 0.." + std::to_string(dev::kRowsMaxBlocksPerSm) +
                ", splits and max_blocks >= 0");
  if (a.consumer_warps != 0 && a.consumer_warps != 4 && a.consumer_warps != 8)
    throw Error(what + ": consumer_warps must be 0 (the knob's), 4 or 8");
  if (misaligned(a.partials)) throw Error(what + ": the split partials must be 16-byte aligned");
  if (a.splits > split_room(out, a))
    throw Error(what + ": " + std::to_string(a.splits) + " K splits need partials of " + std::to_string(a.splits) +
                " x T x N floats and, adding into the output, N / 16 arrival counters (room for " +
                std::to_string(split_room(out, a)) + ", at most " + std::to_string(kGemvRowsMaxSplits) + ")");
  if (form == GemvRowsForm::kTma) return launch_gemv_rows_tma(out, a, what, s);
  static const int default_bps = std::clamp(lab_knob("LG_QWEN_GEMV_ROWS_BPS", dev::kRowsMaxBlocksPerSm), 1,
                                            dev::kRowsMaxBlocksPerSm);
  const int bps = a.blocks_per_sm > 0 ? a.blocks_per_sm : default_bps;
  dev::GemvRowsParams p;
  p.W = reinterpret_cast<const uint4*>(a.W);
  p.x = reinterpret_cast<const uint4*>(a.x);
  p.out_f32 = a.out_f32;
  p.out_bf16 = a.out_bf16;
  p.clear = reinterpret_cast<float4*>(a.clear);
  p.clear_n4 = a.clear ? static_cast<long long>(a.clear_n / 4) : 0;
  p.N = a.N;
  p.nc = a.K / 8;
  p.T = a.T;
  p.tiles = a.N / 16;
  const int max_blocks = std::min(cuda::sm_count() * bps, kGemvMaxBlocks);
  p.splits = 1;
  if (out == GemvRowsOutput::kResidual || out == GemvRowsOutput::kSlices)
    p.splits = a.splits > 0 ? std::min(a.splits, p.nc)
                            : gemv_rows_splits(p.tiles, p.nc, max_blocks * dev::kRowsWarps, split_room(out, a));
  // Chunks per split: a multiple of 4 (a step's 32 k), every split non-empty.
  p.split_chunks = (p.nc + p.splits - 1) / p.splits;
  p.split_chunks = (p.split_chunks + 3) / 4 * 4;
  p.splits = (p.nc + p.split_chunks - 1) / p.split_chunks;
  p.partials = atomic_splits() && out == GemvRowsOutput::kResidual ? nullptr : a.partials;
  p.arrivals = a.arrivals;
  const int items = p.tiles * p.splits;
  const int blocks = std::max(1, std::min((items + dev::kRowsWarps - 1) / dev::kRowsWarps, max_blocks));
  switch (out) {
    case GemvRowsOutput::kStore: gemv_rows_nt<GemvRowsOutput::kStore>(p, blocks, s); break;
    case GemvRowsOutput::kResidual: gemv_rows_nt<GemvRowsOutput::kResidual>(p, blocks, s); break;
    case GemvRowsOutput::kSwiGLU: gemv_rows_nt<GemvRowsOutput::kSwiGLU>(p, blocks, s); break;
    case GemvRowsOutput::kSlices: gemv_rows_nt<GemvRowsOutput::kSlices>(p, blocks, s); break;
  }
  return p.splits;
}

}  // namespace lg::qwen
