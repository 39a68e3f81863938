// Randomized differential test of lifting + fusion: a seeded generator builds small but valid
// graphs (token embedding, then a random mix of elementwise chains with broadcast weights,
// duplicated subexpressions for the common-subexpression merge, row and middle-axis reductions,
// RMSNorm/LayerNorm/softmax, GEMMs against transposed weights with shared activations and norm
// prologues, RoPE on head views, a KV cache write + attention), and every one must compute what the
// IR's reference executor computes with the default fusion, with no fusion, and with each pass
// switched off alone. A failure prints the seed, the generator's recipe and the stage listing; the
// minimised cases live in fusion_test.cpp as named regression tests.
#include "random_programs.h"

#include <chrono>
#include <cstdlib>

#include "lift/explain.h"

namespace lg::lift::test {
namespace {

// Tolerance. Both executors store every value as f32, but they round differently: the reference
// (ir/cpu_executor) rounds every elementwise op to f32 and runs MatMul and attention through
// OpenBLAS sgemm (f32 accumulation); reductions accumulate in double. The staged executor
// evaluates a whole stage in double (dot products and reductions too) and rounds only its stores.
// The gap is therefore the reference's own f32 error: ~2^-24 per op, and for a K-long f32 dot
// product up to K * 2^-24 of sum |a*b| (K <= 128 here: 7.6e-6 in the worst case, ~1e-6 typical).
// The generator keeps values bounded (exp, sin, cos only of tanh'd or normalised values, divisors
// >= 1, no log/sqrt of values near 0, centred rows given a spread, softmax logits within +-4), so
// no step amplifies that error by more than a small factor. Measured (2026-11-30), the error
// relative to each output's largest magnitude: seeds 1-300 at most 3.3e-6, seeds 301-2800 at most
// 9.3e-6. Before the bounds, seeds failed at 1.3e-5..2.5e-5 with every pass off too (the reference's
// rounding amplified by a near-constant row or logits ~20, not the compiler). 1e-5 still catches
// any wrong index, stale buffer, missed store or dropped op, which all give errors of order 1.
constexpr double kTol = 1e-5;

// Seeds per run (11 option sets each): ~11 s in a RelWithDebInfo build. LG_RANDOM_SEEDS=N and
// LG_RANDOM_FIRST_SEED=S run seeds S..S+N-1 instead, for longer searches by hand.
constexpr uint32_t kSeeds = 300;

uint32_t env_or(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : fallback;
}

std::vector<std::pair<std::string, FuseOptions>> option_sets() {
  std::vector<std::pair<std::string, FuseOptions>> out;
  out.push_back({"default", FuseOptions{}});
  out.push_back({"all off", FuseOptions{false, false, false, false, false, false, false, false, false}});
  bool FuseOptions::*fields[] = {&FuseOptions::inline_elementwise, &FuseOptions::reduce_epilogue,
                                 &FuseOptions::merge_gemm_siblings, &FuseOptions::gemm_epilogue,
                                 &FuseOptions::gemm_prologue, &FuseOptions::gather_epilogue,
                                 &FuseOptions::gemm_reduce_prologue, &FuseOptions::state_write_into_producer,
                                 &FuseOptions::group_launches};
  const char* names[] = {"inline_elementwise", "reduce_epilogue", "merge_gemm_siblings", "gemm_epilogue",
                         "gemm_prologue", "gather_epilogue", "gemm_reduce_prologue", "state_write_into_producer",
                         "group_launches"};
  for (size_t i = 0; i < std::size(fields); ++i) {
    FuseOptions o;
    o.*fields[i] = false;
    out.push_back({std::string("no ") + names[i], o});
  }
  return out;
}

TEST(RandomPrograms, StagedEqualsReferenceForEveryPassSet) {
  const auto sets = option_sets();
  double worst = 0;
  int failures = 0;
  const uint32_t first = env_or("LG_RANDOM_FIRST_SEED", 1), count = env_or("LG_RANDOM_SEEDS", kSeeds);
  auto t0 = std::chrono::steady_clock::now();
  for (uint32_t seed = first; seed < first + count; ++seed) {
    RandomProgram rp = random_program(seed);
    auto params = random_params(rp.graph, seed);
    for (const auto& [name, opts] : sets) {
      double err = 0;
      std::string what;
      try {
        err = staged_vs_reference(rp.graph, params, rp.steps, opts);
      } catch (const std::exception& e) {
        err = std::numeric_limits<double>::infinity();
        what = e.what();
      }
      if (err < kTol) {
        worst = std::max(worst, err);
        continue;
      }
      ++failures;
      std::string listing;
      try {
        StagedProgram p = lift(rp.graph);
        fuse(p, opts);
        listing = explain(p);
      } catch (const std::exception& e) {
        listing = std::string("(lift/fuse threw: ") + e.what() + ")";
      }
      ADD_FAILURE() << "seed " << seed << ", " << name << ": error " << err << (what.empty() ? "" : " (" + what + ")")
                    << "\nrecipe:\n" << rp.recipe << "stages:\n" << listing;
      if (failures >= 40) return;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("random programs: %u seeds x %zu option sets in %.1f s, worst relative error %.3g\n", count,
              sets.size(), secs, worst);
}

// The generator itself must produce what it promises: programs that lift, that the fusion passes
// shrink, and that use the features the test is about (so that a generator change that silently
// stops producing them fails here rather than making the test above vacuous).
TEST(RandomPrograms, GeneratorCoversTheFeatures) {
  int cse = 0, gemm_prologue = 0, attention = 0, rope = 0, middle = 0, siblings = 0;
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    RandomProgram rp = random_program(seed);
    StagedProgram unfused = lift(rp.graph);
    size_t live = 0;
    for (size_t i = 0; i < rp.graph.nodes.size(); ++i) live += !unfused.is_inline[i];
    StagedProgram fused = lift(rp.graph);
    fuse(fused);
    EXPECT_LE(fused.stages.size(), unfused.stages.size()) << "seed " << seed;
    // A node whose operands differ from the original graph's was rewired by the merge.
    for (size_t i = 0; i < rp.graph.nodes.size(); ++i)
      if (rp.graph.nodes[i].operands != unfused.graph.nodes[i].operands) { ++cse; break; }
    for (const Stage& st : fused.stages) {
      bool has_reduce = false, has_mm = false;
      int mms = 0;
      for (ir::ValueId v : st.nodes) {
        has_reduce |= ir::is_reduce(fused.graph.at(v).op);
        mms += fused.graph.at(v).op == ir::Op::MatMul;
      }
      has_mm = mms > 0;
      gemm_prologue += st.kind == StageKind::Gemm && has_reduce && has_mm;
      siblings += mms > 1;
    }
    attention += rp.recipe.find("attention") != std::string::npos;
    rope += rp.recipe.find("rope") != std::string::npos;
    middle += rp.recipe.find("middle-axis") != std::string::npos;
  }
  EXPECT_GT(cse, static_cast<int>(kSeeds) / 4);
  EXPECT_GT(gemm_prologue, static_cast<int>(kSeeds) / 10);
  EXPECT_GT(siblings, static_cast<int>(kSeeds) / 10);
  EXPECT_GT(attention, static_cast<int>(kSeeds) / 10);
  EXPECT_GT(rope, static_cast<int>(kSeeds) / 10);
  EXPECT_GT(middle, static_cast<int>(kSeeds) / 10);
  std::printf("generator: %d with merged subexpressions, %d norm+GEMM stages, %d merged GEMM siblings, %d with "
              "attention, %d with RoPE, %d with middle-axis reductions (of %u)\n",
              cse, gemm_prologue, siblings, attention, rope, middle, kSeeds);
}

}  // namespace
}  // namespace lg::lift::test
