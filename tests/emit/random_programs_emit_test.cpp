// The CUDA renderer on random programs (tests/lift/random_programs.h): every stage shape the
// fusion passes make from them (norm prologues of batched or sliced GEMMs, middle-axis
// reductions, views as outputs, RoPE tables shared by several stages, ...) must render, and every
// kernel must compile for sm_90 with NVRTC. No GPU needed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "../lift/random_programs.h"
#include "emit/cuda/nvrtc.h"
#include "emit/cuda/program.h"
#include "lift/explain.h"

namespace lg::emit::cuda {
namespace {

// Seeds rendered and compiled with the default passes; NVRTC takes ~0.6 s per program (~18 s).
// LG_RANDOM_EMIT_SEEDS=N and LG_RANDOM_FIRST_SEED=S render seeds S..S+N-1 instead.
constexpr uint32_t kSeeds = 30;

uint32_t env_or(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : fallback;
}

TEST(EmitRandomPrograms, EveryKernelCompilesForSm90) {
  const uint32_t first = env_or("LG_RANDOM_FIRST_SEED", 1), count = env_or("LG_RANDOM_EMIT_SEEDS", kSeeds);
  auto t0 = std::chrono::steady_clock::now();
  int failures = 0;
  size_t kernels = 0;
  for (uint32_t seed = first; seed < first + count && failures < 10; ++seed) {
    lift::test::RandomProgram rp = lift::test::random_program(seed);
    lift::StagedProgram p = lift::lift(rp.graph);
    lift::fuse(p);
    try {
      CudaProgram prog = emit_program(p);
      kernels += prog.kernels.size();
      EXPECT_GT(nvrtc_compile(prog.source(), "random_" + std::to_string(seed)).size(), 1000u);
    } catch (const std::exception& e) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << ": " << e.what() << "\nrecipe:\n" << rp.recipe << "stages:\n"
                    << lift::explain(p);
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("rendered and compiled %u random programs (%zu kernels) in %.1f s\n", count, kernels, secs);
}

}  // namespace
}  // namespace lg::emit::cuda
