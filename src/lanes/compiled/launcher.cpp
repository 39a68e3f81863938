#include "lanes/compiled/launcher.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lanes/launch_skip.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/launch_profile.h"

namespace lg::compiled {

Launcher::Launcher(const emit::cuda::CudaProgram& prog, const std::vector<cudaKernel_t>& kernels,
                   std::vector<void*>& ptrs, cudaStream_t stream)
    : prog_(prog), kernels_(kernels), ptrs_(ptrs), stream_(stream) {
  const char* pdl = std::getenv("LG_COMPILED_PDL");
  pdl_ = !(pdl && std::string(pdl) == "0");
  // The decode GEMV grid is capped at one wave of the kernel's resident blocks (gemv_blocks);
  // LG_COMPILED_GEMV_BPS caps it at that many blocks per SM instead, for measurements (0: one
  // block per 8 outputs).
  if (const char* bps = std::getenv("LG_COMPILED_GEMV_BPS"); bps && *bps) gemv_bps_ = std::atoi(bps);
  // LG_COMPILED_MOE_MMA_T: the fewest tokens of a step whose experts run on the tensor cores
  // (the plan's min_t otherwise), for measurements and for tests of that form on small models.
  if (const char* t = std::getenv("LG_COMPILED_MOE_MMA_T"); t && *t) moe_mma_t_ = std::max(2, std::atoi(t));
  // LG_COMPILED_SKIP=REGEX: decode steps leave out the launches whose kernel name matches. The
  // step's results are then wrong; what remains is the step's time without those launches, the
  // most that fusing them away could save (prefill steps run every launch, so the buffers the
  // skipped kernels would write hold realistic values: distinct routed experts, finite rows).
  skip_ = launch_skip_from_env("LG_COMPILED_SKIP", "decode steps");
  allocate_split_kv();
}

/// Splits of a split-KV attention launch over `rows` tokens: as many as keep the grid within
/// attn_blocks_ (one wave at two 256-thread blocks per SM: the kernel's register bound), at
/// most the splits the context can fill, at least 1. Blocks past a token's last chunk exit at
/// once, so a short context pays only their launch. Qwen3-8B (16 blocks per token): 2 splits
/// at B = 8, 1 from B = 9 on.
/// A form with its own target (SplitKv::blocks_per_sm: the tensor-core form's small blocks,
/// the one-row form's three an SM: Qwen3-8B's one sequence 24 splits on an H200) aims at that
/// many blocks an SM instead, unless LG_COMPILED_ATTN_BPS sets every form's.
int64_t Launcher::splits(const emit::cuda::SplitKv& sp, int64_t rows) const {
  const int64_t items = std::max<int64_t>(rows * sp.items_per_row, 1);
  const int64_t target = sp.blocks_per_sm > 0 && !attn_bps_knob_ ? sp.blocks_per_sm * cuda::sm_count() : attn_blocks_;
  return std::clamp<int64_t>(target / items, 1, sp.max_splits);
}

/// The kernel and split-KV form an attention launch runs at `rows` rows: its one-row form at one
/// (LaunchPlan::one_row), its wide form from wide->min_rows on (LaunchPlan::wide), else its own.
std::pair<int32_t, const emit::cuda::SplitKv&> Launcher::split_form(const emit::cuda::LaunchPlan& l, int64_t rows) {
  if (l.one_row && rows == 1) return {l.one_row->kernel, l.one_row->split};
  if (l.wide && rows >= l.wide->min_rows) return {l.wide->kernel, l.wide->split};
  return {l.kernel, *l.split};
}

/// The split-KV attention's scratch, shared by every launch (they run one after another): the
/// partials of the largest T * splits * part_floats any launch can ask for, and one counter per
/// item of the largest T, zeroed (each launch leaves them zero).
void Launcher::allocate_split_kv() {
  // LG_COMPILED_ATTN_BPS: target blocks per SM of a split-KV launch (measurements).
  const char* bps = std::getenv("LG_COMPILED_ATTN_BPS");
  attn_bps_knob_ = bps && *bps;
  attn_blocks_ = static_cast<int64_t>(attn_bps_knob_ ? std::max(1, std::atoi(bps)) : 2) * cuda::sm_count();
  int64_t part = 1, count = 1;
  for (const auto& l : prog_.launches) {
    if (!l.split) continue;
    const int64_t max_rows = l.rows_sym == 0 ? prog_.max_t : prog_.max_b;
    for (int64_t t = 1; t <= max_rows; ++t) {
      const auto& sp = split_form(l, t).second;
      const int64_t n = splits(sp, t);
      if (n > 1) part = std::max(part, t * n * sp.part_floats);
      count = std::max(count, t * sp.items_per_row);
    }
  }
  split_part_ = cuda::DeviceBuffer(static_cast<size_t>(part) * sizeof(float));
  split_count_ = cuda::DeviceBuffer(static_cast<size_t>(count) * sizeof(int));
  cuda::memset_device_now(split_count_.data(), 0, split_count_.bytes());
}

/// `splits` > 0: a split-KV attention kernel (its scratch after the buffers), on a grid of
/// (blocks, splits).
void Launcher::launch_kernel(int32_t kernel, const std::vector<int32_t>& buffers, int64_t layer, int64_t blocks,
                             int32_t block, int64_t T, int64_t splits, int64_t grid_y) {
  long t = static_cast<long>(T), l = static_cast<long>(layer);
  void* part = split_part_.data();
  void* count = split_count_.data();
  std::vector<void*> args;
  for (int32_t b : buffers) args.push_back(&ptrs_[static_cast<size_t>(b)]);
  if (splits > 0) {
    args.push_back(&part);
    args.push_back(&count);
  }
  if (layer >= 0) args.push_back(&l);
  args.push_back(&t);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(splits > 0 ? splits : grid_y));
  cfg.blockDim = dim3(static_cast<unsigned>(block));
  cfg.stream = stream_;
  // Every emitted kernel starts with griddepcontrol.wait and then lets its successor be
  // scheduled (launch_dependents), so each launch's blocks may be resident before the previous
  // one ends (programmatic dependent launch; LG_COMPILED_PDL=0 turns it off).
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl_ ? 1 : 0;
  LG_CUDA_CHECK(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(kernels_[static_cast<size_t>(kernel)]),
                                    args.data()));
}

/// The grid of a decode GEMV launch (a GEMM stage at T = 1, whose warps stride over its
/// outputs): at most one wave of the kernel's resident blocks (its occupancy at this block size
/// times the SMs), in as few equal rounds of outputs per warp as that allows. A second, partial
/// wave would leave most SMs idle at its end; fewer blocks than a wave mean fewer per-block
/// prologues (the RMSNorm and the staged activation row, read from L2 by every block) for the
/// same weight stream. So QKV's 768 blocks of outputs at 8B become 384 doing two each, rather
/// than 528 of which 45% do a second (H200, 8B decode, one call: 5.089 ms against 5.135).
/// The occupancy follows the kernel's registers, which differ from program to program (35 to
/// 112 in the emitted GEMVs): under the old fixed cap of 4 blocks per SM, Gemma 3's gate/up
/// (1,920 blocks of outputs, 5 resident per SM) ran as 480 blocks of four rounds, 0.73 of a
/// wave, and a cap above the occupancy made a partial second wave (bench/RESULTS.md, session 8).
int64_t Launcher::gemv_blocks(const emit::cuda::LaunchPlan& l) {
  const int64_t blocks = l.grid(1);
  const int64_t cap = static_cast<int64_t>(gemv_bps_ > 0 ? gemv_bps_ : resident_blocks_per_sm(l.kernel, l.block)) *
                      cuda::sm_count();
  const int64_t rounds = (blocks + cap - 1) / cap;
  return (blocks + rounds - 1) / rounds;
}

/// Blocks of `block` threads of `kernel` an SM holds at once (its registers and shared memory), at least 1.
int Launcher::resident_blocks_per_sm(int32_t kernel, int32_t block) {
  int& occ = occupancy_[{kernel, block}];
  if (occ == 0)
    LG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &occ, reinterpret_cast<const void*>(kernels_[static_cast<size_t>(kernel)]), block, 0));
  return std::max(occ, 1);
}

/// One launch over `T` rows (its kernels' T) in a step of B sequences.
void Launcher::launch_one(const emit::cuda::LaunchPlan& l, int64_t T, int64_t B) {
  if (T == 1 && l.gemm && gemv_bps_ != 0) return launch_kernel(l.kernel, l.args, l.layer, gemv_blocks(l), l.block, T);
  // The prefill form at T > 1; a paged flash attention only for a step of one sequence (the
  // split-KV kernel serves decode rows and ragged batches).
  if (T == 1 || !l.prefill || (l.prefill->one_sequence && B > 1) ||
      T < (l.prefill->experts && moe_mma_t_ > 0 ? moe_mma_t_ : l.prefill->min_t)) {
    if (!l.split) return launch_kernel(l.kernel, l.args, l.layer, l.grid(T), l.block, T);
    const auto [kernel, sp] = split_form(l, T);
    return launch_kernel(kernel, l.args, l.layer, T * sp.items_per_row, sp.threads, T, splits(sp, T));
  }
  launch_prefill(l, T);
}

/// A launch's prefill form over T rows: GEMMs pack their activations as bf16, run cuBLASLt on the
/// tensor cores, then their epilogue; attention runs the flash-attention kernel (no packs, no
/// GEMMs); experts route their pairs and run the grouped GEMM (then moe_down's combine as the
/// epilogue).
void Launcher::launch_prefill(const emit::cuda::LaunchPlan& l, int64_t T) {
  const auto& pf = *l.prefill;
  auto elementwise_grid = [](int64_t n) { return std::clamp<int64_t>((n + 255) / 256, 1, 4096); };
  auto mark = [&](const std::string& part) {
    if (mark_) mark_(part.c_str());
  };
  if (const auto& ex = pf.experts) {
    launch_kernel(ex->route_kernel, ex->route_args, ex->route_layer, 1, 1024, T);
    mark(".route");
    // Blocks past the step's tiles exit at once.
    launch_kernel(ex->gemm_kernel, ex->gemm_args, ex->gemm_layer, ex->max_tiles(T), 128, T, 0, ex->col_tiles);
    mark(".mma");
  }
  for (size_t i = 0; i < pf.packs.size(); ++i) {
    const auto& pk = pf.packs[i];
    launch_kernel(pk.kernel, pk.args, pk.layer, elementwise_grid(T * pk.K), 256, T);
    mark(".pack" + std::to_string(i));
  }
  for (const auto& gm : pf.gemms) {
    const auto* a = static_cast<const __nv_bfloat16*>(ptrs_[static_cast<size_t>(gm.a)]);
    const auto* w = static_cast<const __nv_bfloat16*>(ptrs_[static_cast<size_t>(gm.w)]);
    auto* out = static_cast<float*>(ptrs_[static_cast<size_t>(gm.out)]);
    const int t = static_cast<int>(T), n = static_cast<int>(gm.N), k = static_cast<int>(gm.K);
    if (gm.c >= 0)
      gemm_.matmul_add(a, w, static_cast<const float*>(ptrs_[static_cast<size_t>(gm.c)]), out, t, n, k, stream_);
    else
      gemm_.matmul(a, w, out, t, n, k, false, stream_);
    mark(".gemm");
  }
  if (pf.epilogue_kernel < 0) return;
  int64_t blocks = 0;
  if (pf.t_tile > 0) {
    blocks = (T + pf.t_tile - 1) / pf.t_tile * pf.work_const.at(0);
  } else {
    int64_t work = 0;
    for (size_t i = 0; i < pf.work_const.size(); ++i) {
      int64_t w = pf.work_const[i];
      for (int32_t k = 0; k < pf.work_t_power[i]; ++k) w *= T;
      work = std::max(work, w);
    }
    blocks = elementwise_grid(work);
  }
  launch_kernel(pf.epilogue_kernel, pf.epilogue_args, pf.epilogue_layer, blocks, pf.block, T);
  mark(pf.t_tile > 0 ? ".flash" : ".epilogue");
}

void Launcher::launch_all(int64_t T, int64_t B) {
  for (size_t i = 0; i < prog_.launches.size(); ++i) launch_at(i, T, B);
}

void Launcher::launch_at(size_t i, int64_t T, int64_t B) {
  const auto& l = prog_.launches[i];
  const int64_t rows = l.rows_sym == 0 ? T : B;
  if (skip_ && T == B && std::regex_search(prog_.kernels[static_cast<size_t>(l.kernel)].name, *skip_)) return;
  launch_one(l, rows, B);
}

// LG_PROFILE_LAUNCHES=1: the second step of each T (the first pays for lazy module loading and
// cuBLASLt's set-up) is run once more beforehand with an event around every launch; stderr gets
// the time per kernel, summed over its launches, largest first. The KV cache is rewritten by the
// real step that follows.
void Launcher::profile(int64_t T, int64_t B) {
  // One event after every kernel: a prefill launch's packs, GEMMs and epilogue are timed apart
  // (labelled kernel.part), through mark_, which launch_one calls after each of them.
  cuda::LaunchProfile prof(stream_);
  std::string kernel, grid;
  size_t marks = 0;
  mark_ = [&](const char* part) {
    prof.mark(kernel + part + grid);
    ++marks;
  };
  for (size_t i = 0; i < prog_.launches.size(); ++i) {
    const auto& l = prog_.launches[i];
    const int64_t rows = l.rows_sym == 0 ? T : B;
    kernel = prog_.kernels[static_cast<size_t>(l.split ? split_form(l, rows).first : l.kernel)].name;
    const int64_t blocks = T == 1 && l.gemm && gemv_bps_ != 0 ? gemv_blocks(l) : l.grid(rows);
    const int32_t threads = l.split ? split_form(l, rows).second.threads : l.block;
    grid = " (grid " + std::to_string(blocks) + " x " + std::to_string(threads) + ")";
    const size_t before = marks;
    launch_at(i, T, B);
    if (marks == before) prof.mark(kernel + grid);
  }
  mark_ = nullptr;
  std::fputs(prof.report("compiled lane T=" + std::to_string(T) + " B=" + std::to_string(B) + ", " +
                         std::to_string(prog_.launches.size()) + " planned launches").c_str(),
             stderr);
}

}  // namespace lg::compiled
