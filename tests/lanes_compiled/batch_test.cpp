// The compiled lane on ragged batches over its paged bf16 KV pool (GPU; skipped without one):
// randomized schedules (tests/common/batch_schedules.h) in which sequences join, are prefilled
// in random chunks, decode and leave, their blocks scattered over the pool; at every step that
// ends a prompt or decodes, each sequence's logits must agree with its run alone on the same lane.
//
// Tolerance: 5e-2 norm-wise relative error of the logits, and argmaxes equal wherever the alone
// run's top-2 margin is above 0.1 (docs/locks.md, the bf16 lanes' margin). Alone, a decode token
// runs the decode program (GEMVs, one row) and a prompt the prefill forms (cuBLASLt GEMMs, the
// paged flash attention with bf16 q and P); in a batch the same token is one row of T through the
// GEMMs and the row-wise paged attention: another fp32 summation order, and activations rounded
// to bf16 between the stages, so the two paths agree to bf16's precision, not fp32's. Each path
// is within 2e-2 of the fp32 reference (compiled_lane_test.cpp's bound, `lg lock check
// --compare-logits` measures it), so within 2 x 2e-2 of each other. A sequence that reads another
// sequence's rows, a wrong position or a stale block table changes its attention in every layer,
// far beyond that; the worst error seen is printed so a GPU log shows the headroom.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/batch_schedules.h"
#include "lanes/factory.h"
#include "model/model_dir.h"
#include "runtime/cuda/device.h"

namespace lg {
namespace {

const std::string kShared = std::getenv("LG_SHARED_DIR") ? std::getenv("LG_SHARED_DIR") : LG_SHARED_DIR;

constexpr double kPathTolerance = 5e-2;  // see the top of the file
constexpr double kBf16Margin = 0.1;      // docs/locks.md
constexpr double kGrossError = 0.25;     // tests/lanes_qwen/batch_test.cpp

/// `n` seeded schedules on `lane`; prints what they covered and the worst error.
void run_schedules(Lane& lane, const std::string& what, int32_t vocab, uint64_t first_seed, int n,
                   Lane* reference = nullptr, double tol = kPathTolerance) {
  lg::testing::run_seeded_schedules(lane, what, vocab, first_seed, n, tol, kBf16Margin, reference);
}

// The default limits (blocks of 16) and tight ones (blocks of 4, steps of at most 3 sequences and
// 24 tokens, a pool just big enough), where prompts are cut into chunks and sequences wait.
TEST(CompiledBatch, TinyQwen3RandomSchedulesAgreeWithRunsAlone) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto md = model::ModelDir::open(kShared + "/fixtures/tiny-qwen3");
  const auto vocab = static_cast<int32_t>(md.config.vocab_size);
  {
    auto lane = make_lane("compiled", md, {.max_seq = 128});
    run_schedules(*lane, "tiny-qwen3 (default limits)", vocab, 1000, 40);
  }
  {
    auto lane = make_lane("compiled", md, {.max_seq = 64, .kv_tokens = 6 * 52, .max_batch = 3, .max_tokens = 24,
                                           .block_size = 4});
    EXPECT_EQ(lane->limits().block_size, 4);
    EXPECT_EQ(lane->limits().max_batch, 3);
    EXPECT_EQ(lane->limits().max_tokens, 24);
    run_schedules(*lane, "tiny-qwen3 (blocks of 4, 3 x 24)", vocab, 2000, 40);
  }
}

TEST(CompiledBatch, Pycode22mRandomSchedulesAgreeWithRunsAlone) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto md = model::ModelDir::open(kShared + "/models/qwen3-pycode-22m");
  auto lane = make_lane("compiled", md, {.max_seq = 256});
  // Held to the fp32 reference with the argmax rule, as the hand-written lane's test is
  // (tests/lanes_qwen/batch_test.cpp says why).
  auto reference = make_lane("cpu", md, {.max_seq = 256});
  run_schedules(*lane, "qwen3-pycode-22m", static_cast<int32_t>(md.config.vocab_size), 3000, 20, reference.get(),
                kGrossError);
}

}  // namespace
}  // namespace lg
