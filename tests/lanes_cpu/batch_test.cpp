// Batched steps on the cpu lane (issue 12): any mix of sequences gives each the logits it gets
// alone. Hundreds of seeded schedules (tests/common/batch_schedules.h): random prompt lengths,
// random prefill chunks interleaved with decodes, sequences joining and leaving, block tables
// scattered over a shuffled pool.
#include <gtest/gtest.h>

#include <iostream>

#include "common/batch_schedules.h"
#include "common/repo_dirs.h"
#include "lanes/cpu/cpu_lane.h"
#include "model/model_dir.h"

namespace lg {
namespace {


void run_schedules(const std::string& dir_path, uint64_t seeds, int32_t lo, int32_t hi, int64_t block_size) {
  const model::ModelDir dir = model::ModelDir::open(dir_path);
  LaneOptions o;
  o.max_seq = 64;
  o.block_size = block_size;
  o.kv_tokens = 6 * 64;  // every sequence of a schedule at once
  o.max_batch = 8;
  o.max_tokens = 48;
  auto lane = make_cpu_lane(dir, o);
  testing::ScheduleStats all;
  for (uint64_t seed = 0; seed < seeds; ++seed) {
    const auto st = testing::run_random_schedule(*lane, seed, lo, hi, 1e-5, 1e-4);
    all.compared += st.compared;
    all.argmax_compared += st.argmax_compared;
    all.steps += st.steps;
    all.max_batch = std::max(all.max_batch, st.max_batch);
    all.worst_rel = std::max(all.worst_rel, st.worst_rel);
    if (::testing::Test::HasFailure()) break;
  }
  std::cout << "[ " << dir_path << " ] " << seeds << " schedules, " << all.steps << " steps, up to " << all.max_batch
            << " sequences a step; " << all.compared << " logits rows compared (worst relative error " << all.worst_rel
            << "), " << all.argmax_compared << " argmaxes\n";
  // The schedules must really batch and really compare, or they prove nothing.
  EXPECT_GE(all.max_batch, 4);
  EXPECT_GE(all.argmax_compared, all.compared * 9 / 10);
}

TEST(BatchedSteps, TinyQwen3EachSequenceAsAlone) {
  run_schedules(kShared + "/fixtures/tiny-qwen3", 200, 3, 510, 4);
}

TEST(BatchedSteps, TinyQwen2EachSequenceAsAlone) {
  run_schedules(kShared + "/fixtures/tiny-qwen2", 60, 3, 510, 16);
}

// The routed experts over a token axis of several sequences: each token's experts are its own.
TEST(BatchedSteps, TinyQwen3MoeEachSequenceAsAlone) {
  run_schedules(kShared + "/fixtures/tiny-qwen3-moe", 100, 3, 510, 4);
}

TEST(BatchedSteps, Pycode22mEachSequenceAsAlone) {
  run_schedules(kSource + "/models/qwen3-pycode-22m", 12, 3, 151000, 16);
}

}  // namespace
}  // namespace lg
