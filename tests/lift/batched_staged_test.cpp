// Batched steps through lifting and fusion (issue 12): the staged executor runs the lifted and
// fused program of a batched graph (ir/batch.h: paged state writes and attention, the result
// gathered to one row per sequence) the way the kernels will, and every sequence of random
// ragged schedules must get the logits it gets alone (tests/common/batch_schedules.h). The staged
// executor evaluates in double and stores fp32, like the reference: 1e-5 relative.
#include <gtest/gtest.h>

#include <iostream>

#include "common/batch_schedules.h"
#include "ir/batch.h"
#include "lift/lift.h"
#include "lift/passes.h"
#include "lift/staged_executor.h"
#include "model/model_dir.h"
#include "runtime/bind_params.h"
#include "runtime/forward_graph.h"

namespace lg {
namespace {

/// A lane over the staged executor of a model's batched graph (fp32 params).
class StagedLane : public Lane {
 public:
  StagedLane(const model::ModelDir& dir, const LaneOptions& o) {
    runtime::ForwardGraph fg = runtime::forward_graph(dir, o.max_seq);
    std::vector<std::vector<float>> params;
    for (const auto& t : runtime::bind_params(fg.graph, dir.checkpoint)) params.push_back(t.to_f32());
    limits_ = resolve_limits(o, fg.max_seq, fg.max_seq);
    ir::make_batched(fg.graph, {limits_.block_size, limits_.num_blocks, limits_.max_batch, limits_.max_tokens});
    program_ = lift::lift(fg.graph);
    lift::fuse(program_);
    executor_ = std::make_unique<lift::StagedExecutor>(program_, std::move(params));
  }
  std::string name() const override { return "staged"; }
  Provenance provenance() const override { return Compiled{}; }
  const LaneLimits& limits() const override { return limits_; }
  std::vector<SeqResult> step(std::span<const SeqStep> batch) override {
    const FlatBatch f = flatten(batch, limits_);
    std::vector<std::vector<int32_t>> in;
    for (const auto& i : program_.graph.inputs) {
      if (i.name == "tokens") in.push_back(f.tokens);
      else if (i.name == "pos") in.push_back(f.pos);
      else if (i.name == "seq") in.push_back(f.seq);
      else if (i.name == "block_table") in.push_back(f.block_table);
      else if (i.name == "rows") in.push_back(f.rows);
      else ADD_FAILURE() << "unknown input " << i.name;
    }
    const std::vector<float> logits = executor_->step(in, {f.T, f.B}).at(0);
    const size_t V = logits.size() / static_cast<size_t>(f.B);
    std::vector<SeqResult> out(batch.size());
    for (size_t b = 0; b < batch.size(); ++b) {
      out[b].logits.assign(logits.begin() + static_cast<std::ptrdiff_t>(b * V),
                           logits.begin() + static_cast<std::ptrdiff_t>((b + 1) * V));
      out[b].argmax = static_cast<int32_t>(std::max_element(out[b].logits.begin(), out[b].logits.end()) -
                                           out[b].logits.begin());
    }
    return out;
  }
  const lift::StagedProgram& program() const { return program_; }

 private:
  LaneLimits limits_;
  lift::StagedProgram program_;
  std::unique_ptr<lift::StagedExecutor> executor_;
};

void run(const std::string& fixture, uint64_t seeds) {
  const model::ModelDir dir = model::ModelDir::open(std::string(LG_SHARED_DIR) + "/fixtures/" + fixture);
  LaneOptions o;
  o.max_seq = 64;
  o.block_size = 4;
  o.kv_tokens = 6 * 64;
  o.max_batch = 8;
  o.max_tokens = 48;
  StagedLane lane(dir, o);
  testing::ScheduleStats all;
  for (uint64_t seed = 0; seed < seeds && !::testing::Test::HasFailure(); ++seed) {
    const auto st = testing::run_random_schedule(lane, 1000 + seed, 3, 510, 1e-5, 1e-4, 16);
    all.compared += st.compared;
    all.max_batch = std::max(all.max_batch, st.max_batch);
    all.worst_rel = std::max(all.worst_rel, st.worst_rel);
  }
  std::cout << "[ " << fixture << " staged ] " << seeds << " schedules, up to " << all.max_batch
            << " sequences a step, " << all.compared << " rows compared, worst relative error " << all.worst_rel << "\n";
  EXPECT_GE(all.max_batch, 3);
}

// The staged executor evaluates element by element in double: a few short schedules cover the
// batched forms (every one mixes prefill chunks and decodes of several sequences) in seconds.
TEST(BatchedStaged, TinyQwen3EachSequenceAsAlone) { run("tiny-qwen3", 8); }
TEST(BatchedStaged, TinyQwen2EachSequenceAsAlone) { run("tiny-qwen2", 4); }
// The topk and experts stages over a token axis of several sequences (rows gathered for the last
// layer's experts too).
TEST(BatchedStaged, TinyQwen3MoeEachSequenceAsAlone) { run("tiny-qwen3-moe", 4); }

}  // namespace
}  // namespace lg
