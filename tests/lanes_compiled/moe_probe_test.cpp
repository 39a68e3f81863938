// The compiled lane's mixture-of-experts stages, stage by stage (GPU; skipped without one): a step
// of tiny-qwen3-moe is run launch by launch (probe_compiled_step), every value a stage stores is
// read back after its launch, and the staged CPU executor (src/lift/staged_executor.h) runs the
// same staged program on the same inputs from the same KV cache (the lane's bf16 pool, widened),
// so the first stage whose values differ is the broken one, whatever the stages after it do.
//
// Steps probed: (a) a sequence's first token alone (T = 1 from an empty cache), (b) a decode token
// alone at position 40 after a 40-token prompt (T = 1 with context: the step where the lock check
// is 0.137 off), (c) two sequences decoding together (T = 2: the grouped form of the experts).
//
// Tolerance 2e-2 norm-wise per stored value, the compiled lane's bound on logits against the fp32
// reference (compiled_lane_test.cpp): the weights are fp32 here, and within a step the two differ
// by summation order (fp32 against double) and by this step's K/V row, which the lane stores in
// bf16 (rel. 4e-3) where the executor keeps fp32. The top-k indices must be equal: a near tie in
// the router (the executor's top-k values then differ by less than 1e-4) is reported as such.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/batch_schedules.h"  // rel_err
#include "ir/ir.h"
#include "lang/lower.h"
#include "lanes/compiled/compiled_lane.h"
#include "lanes/factory.h"
#include "lift/staged_executor.h"
#include "model/checkpoint_writer.h"
#include "model/config.h"
#include "model/model_dir.h"
#include "runtime/bind_params.h"
#include "runtime/cuda/device.h"
#include "runtime/kv_blocks.h"
#include "runtime/model_source.h"
#include "runtime/solo_sequence.h"

namespace lg {
namespace {

const std::string kShared = std::getenv("LG_SHARED_DIR") ? std::getenv("LG_SHARED_DIR") : LG_SHARED_DIR;
constexpr double kTol = 2e-2;  // see the top of the file

/// Replays `ps` on `ex` and compares every stored value; prints one line per value and fails at
/// the first one past kTol, naming it and its first differing elements.
void compare(const ProbedStep& ps, const lift::StagedProgram& prog, lift::StagedExecutor& ex, const std::string& what) {
  for (size_t i = 0; i < ps.states.size(); ++i) ex.set_state(i, ps.states[i]);
  ex.step(ps.inputs, ps.symbols);
  std::printf("== %s (T %lld, B %lld): %zu stored values\n", what.c_str(), static_cast<long long>(ps.symbols[0]),
              static_cast<long long>(ps.symbols[1]), ps.values.size());
  for (const auto& v : ps.values) {
    const ir::Node& n = prog.graph.at(v.node);
    const std::vector<float>& ref = ex.stored(v.node);
    const std::string name = "launch " + std::to_string(v.launch) + " %" + std::to_string(v.node) + " " + n.name + "=" +
                             std::string(ir::op_name(n.op));
    ASSERT_EQ(v.values.size(), ref.size()) << what << ": " << name << ": sizes differ";
    const double e = lg::testing::rel_err(v.values, ref);
    const bool indices = n.op == ir::Op::ArgTopK;
    size_t wrong = 0;
    if (indices)
      for (size_t k = 0; k < ref.size(); ++k) wrong += v.values[k] != ref[k];
    std::printf("  %-56s rel %.3e%s\n", name.c_str(), e,
                indices ? (" indices differing: " + std::to_string(wrong)).c_str() : "");
    if (e <= kTol && wrong == 0) continue;
    std::string detail;
    int shown = 0;
    for (size_t k = 0; k < ref.size() && shown < 8; ++k) {
      const double d = std::fabs(static_cast<double>(v.values[k]) - ref[k]);
      if (d <= kTol * std::max(1.0, std::fabs(static_cast<double>(ref[k])))) continue;
      detail += "\n    [" + std::to_string(k) + "] lane " + std::to_string(v.values[k]) + ", executor " +
                std::to_string(ref[k]);
      ++shown;
    }
    // At a top-k, the values the executor ranked (a near tie explains swapped indices).
    if (indices)
      for (const auto& w : ps.values)
        if (w.launch == v.launch && prog.graph.at(w.node).op == ir::Op::TopK) {
          detail += "\n    top-k values: lane";
          for (float x : w.values) detail += " " + std::to_string(x);
          detail += "; executor";
          for (float x : ex.stored(w.node)) detail += " " + std::to_string(x);
        }
    FAIL() << what << ": the first stage that differs is " << name << " (relative error " << e << ", tolerance "
           << kTol << ")" << detail;
  }
}

/// The steps both probes take, each compared stage by stage against the staged executor over
/// the lane's own program and `md`'s weights: (a) a sequence's first token (500) alone; (b) after
/// `prompt`, a decode token alone at position 40; (c) that sequence at 41 and a second one after
/// the prompt 7, 99, 250 decoding together (the grouped form). `first_own_sequence`: (a) is a
/// sequence of its own and `prompt` holds 40 tokens; else (a) is the first position of the
/// sequence that `prompt` (39 tokens) continues.
void probe_steps(Lane& lane, const model::ModelDir& md, const std::vector<int32_t>& prompt, bool first_own_sequence,
                 const std::string& label) {
  const lift::StagedProgram& prog = compiled_lane_program(lane);
  std::vector<std::vector<float>> params;
  for (const auto& t : runtime::bind_params(prog.graph, md.checkpoint)) params.push_back(t.to_f32());
  lift::StagedExecutor ex(prog, std::move(params));
  const LaneLimits lim = lane.limits();
  runtime::BlockManager blocks(lim.num_blocks, lim.block_size);
  runtime::SoloSequence a(lane, &blocks), b(lane, &blocks);  // no blocks until they are fed
  {
    runtime::SoloSequence own(lane, &blocks);
    runtime::SoloSequence& s = first_own_sequence ? own : a;
    const std::vector<int32_t> tok{500};
    const SeqStep q = s.next(tok, true);
    compare(probe_compiled_step(lane, std::span<const SeqStep>(&q, 1)), prog, ex, label + "first token alone");
    s.advance(1);
    if (::testing::Test::HasFatalFailure()) return;
  }
  const int32_t next = a.feed(prompt, false).argmax;
  {
    const std::vector<int32_t> tok{next};
    const SeqStep q = a.next(tok, true);
    compare(probe_compiled_step(lane, std::span<const SeqStep>(&q, 1)), prog, ex, label + "decode alone at position 40");
    a.advance(1);
    if (::testing::Test::HasFatalFailure()) return;
  }
  const int32_t bnext = b.feed(std::vector<int32_t>{7, 99, 250}, false).argmax;
  const std::vector<int32_t> ta{next}, tb{bnext};
  const std::vector<SeqStep> q{a.next(ta, true), b.next(tb, true)};
  compare(probe_compiled_step(lane, q), prog, ex, label + "two sequences decoding (positions 41 and 3)");
}

TEST(CompiledMoeProbe, TinyQwen3MoeStepsAgreeWithTheStagedExecutorStageByStage) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto md = model::ModelDir::open(kShared + "/fixtures/tiny-qwen3-moe");
  auto lane = make_lane("compiled", md, {.max_seq = 128});
  std::vector<int32_t> prompt(40);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 37 + 11) % 500);
  probe_steps(*lane, md, prompt, true, "");
}

// The experts kernels' register form (each warp loads its whole weight rows, or a token's k down
// rows, before its dot products): it runs where an expert row is bf16 of a multiple of 256
// values, which tiny-qwen3-moe's 64-wide rows are not. tiny-qwen3-moe's config with hidden 256
// and expert FFN 256, random bf16 weights written to a temporary checkpoint, probed like the
// tiny model above: a first token, a decode at position 40, and two sequences decoding together.
TEST(CompiledMoeProbe, WideExpertRowsAgreeWithTheStagedExecutorStageByStage) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "lg-moe-wide-rows";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  nlohmann::json config = model::read_config_json(kShared + "/fixtures/tiny-qwen3-moe");
  config["hidden_size"] = 256;
  config["moe_intermediate_size"] = 256;
  config["intermediate_size"] = 512;
  config["dtype"] = "bfloat16";
  {
    std::ofstream(dir / "config.json") << config.dump(2);
  }
  const auto source = runtime::find_model_source(model::ModelDir::open(kShared + "/fixtures/tiny-qwen3-moe").config);
  const ir::Graph g = lang::lower_file(source, config, lang::BindOptions{128});
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> uni(-0.05f, 0.05f);
  std::vector<model::OwnedTensor> tensors;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, bool norm) {
    model::OwnedTensor t{name, DType::BF16, shape, {}};
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    t.data.resize(static_cast<size_t>(n) * 2);
    for (int64_t i = 0; i < n; ++i) {
      const float v = norm ? 1.0f + uni(rng) : uni(rng);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      const auto h = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);  // round to nearest even
      std::memcpy(t.data.data() + 2 * i, &h, 2);
    }
    tensors.push_back(std::move(t));
  };
  for (const ir::ParamInfo& p : g.params) {
    std::vector<int64_t> shape;
    for (const ir::Dim& d : p.shape) shape.push_back(d.coeff);
    const bool norm = p.tensor.find("norm") != std::string::npos;
    if (p.parts.empty()) {
      add(p.tensor, shape, norm);
    } else {
      for (const std::string& part : p.parts) add(part, std::vector<int64_t>(shape.begin() + 1, shape.end()), norm);
    }
  }
  model::write_checkpoint(dir, tensors);
  auto md = model::ModelDir::open(dir);
  auto lane = make_lane("compiled", md, {.max_seq = 128});
  std::vector<int32_t> prompt(39);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 53 + 5) % 500);
  probe_steps(*lane, md, prompt, false, "wide rows: ");
  std::filesystem::remove_all(dir);
}

// The compiled lane against the staged executor keeping its own fp32 state (its own K/V, never
// the lane's), step after step of one sequence in one-token steps (the form of the lock check's
// 0.137): up to the first step whose routed experts differ, every step's logits must be within
// kTol of the executor's and so must its router logits; where the experts first differ, the
// reference's gap between its k-th and (k+1)-th router logit must be within twice the lane's
// deviation of that row (a near tie the lane's bf16 K/V and weights may cross), and the run stops
// there, since from then on the two compute different (both correct) forward passes.
TEST(CompiledMoeProbe, TinyQwen3MoeRoutingFollowsTheFp32ExecutorUpToANearTie) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto md = model::ModelDir::open(kShared + "/fixtures/tiny-qwen3-moe");
  auto lane = make_lane("compiled", md, {.max_seq = 128});
  const lift::StagedProgram& prog = compiled_lane_program(*lane);
  std::vector<std::vector<float>> params;
  for (const auto& t : runtime::bind_params(prog.graph, md.checkpoint)) params.push_back(t.to_f32());
  lift::StagedExecutor ex(prog, std::move(params));
  const LaneLimits lim = lane->limits();
  runtime::BlockManager blocks(lim.num_blocks, lim.block_size);
  const int64_t E = model::num_experts(md.config);

  for (uint32_t seed : {1u, 2u, 3u}) {
    ex.reset();
    runtime::SoloSequence seq(*lane, &blocks);
    std::vector<int32_t> feed(24);
    for (size_t i = 0; i < feed.size(); ++i) feed[i] = static_cast<int32_t>((i * 131 + seed * 977) % 500);
    double worst = 0;
    int64_t steps = 0;
    std::string stop = "no routing difference";
    for (size_t i = 0; i < 100; ++i) {
      const std::vector<int32_t> tok{feed[i]};
      const SeqStep q = seq.next(tok, true);
      const ProbedStep ps = probe_compiled_step(*lane, std::span<const SeqStep>(&q, 1));
      seq.advance(1);
      const std::vector<std::vector<float>> out = ex.step(ps.inputs, ps.symbols);
      // Routed experts, layer by layer, as sets (their order only pairs them with their weights).
      bool differ = false;
      for (size_t j = 0; j < ps.values.size() && !differ; ++j) {
        const auto& v = ps.values[j];
        if (prog.graph.at(v.node).op != ir::Op::ArgTopK) continue;
        std::vector<float> got = v.values, want = ex.stored(v.node);
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        if (got == want) continue;
        differ = true;
        // The router logits: the last stored [1, E] matmul before this top-k.
        for (size_t r = j; r-- > 0;) {
          const auto& w = ps.values[r];
          if (prog.graph.at(w.node).op != ir::Op::MatMul || static_cast<int64_t>(w.values.size()) != E) continue;
          const std::vector<float>& ref = ex.stored(w.node);
          double dev = 0;
          for (int64_t e = 0; e < E; ++e) dev = std::max(dev, std::fabs(static_cast<double>(w.values[e]) - ref[e]));
          std::vector<float> sorted(ref);
          std::sort(sorted.begin(), sorted.end(), std::greater<float>());
          const auto k = static_cast<size_t>(v.values.size());
          const double gap = static_cast<double>(sorted[k - 1]) - sorted[k];
          EXPECT_LT(lg::testing::rel_err(w.values, ref), kTol) << "seed " << seed << " step " << i << ": router logits";
          EXPECT_LE(gap, 2 * dev) << "seed " << seed << " step " << i << ": experts differ at a clear margin";
          stop = "routed experts first differ at position " + std::to_string(i) + ", " + prog.graph.at(v.node).name +
                 ": the reference's gap between its k-th and (k+1)-th router logit " + std::to_string(gap) +
                 ", the lane's router logits off by up to " + std::to_string(dev);
          break;
        }
      }
      if (differ) break;
      const std::vector<float>* logits = nullptr;
      for (const auto& v : ps.values)
        if (v.node == prog.graph.outputs.at(0)) logits = &v.values;
      ASSERT_NE(logits, nullptr) << "the probe stored no logits";
      const double e = lg::testing::rel_err(*logits, out[0]);
      EXPECT_LT(e, kTol) << "seed " << seed << " position " << i;
      worst = std::max(worst, e);
      ++steps;
      if (i + 1 == feed.size()) {  // past the prompt: the lane's greedy token
        const auto& l = *logits;
        feed.push_back(static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin()));
      }
    }
    std::printf("seed %u: %lld one-token steps agree (worst logits %.3e from the fp32 executor); %s\n", seed,
                static_cast<long long>(steps), worst, stop.c_str());
  }
}

}  // namespace
}  // namespace lg
