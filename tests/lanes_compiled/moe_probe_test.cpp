// The compiled lane's mixture-of-experts stages, stage by stage (GPU; skipped without one): a step
// of tiny-qwen3-moe is run launch by launch (probe_compiled_step), every value a stage stores is
// read back after its launch, and the staged CPU executor (src/lift/staged_executor.h) runs the
// same staged program on the same inputs from the same KV cache (the lane's bf16 pool, widened),
// so the first stage whose values differ is the broken one, whatever the stages after it do.
//
// Steps probed: (a) a sequence's first token alone (T = 1 from an empty cache), (b) a decode token
// alone at position 40 after a 40-token prompt (T = 1 with context: the step where the lock check
// is 0.137 off), (c) two sequences decoding together (T = 2: the grouped form of the experts);
// and, on bf16 weights with the experts' tensor-core form forced at every T >= 2, a 40-token
// prefill and (c).
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
#include "common/repo_dirs.h"
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

/// Writes tiny-qwen3-moe's config with hidden 256 and expert FFN 256 and random bf16 weights to
/// `dir` (made afresh) and opens it.
model::ModelDir wide_rows_model(const std::filesystem::path& dir) {
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
  return model::ModelDir::open(dir);
}

// The experts kernels' register form (each warp loads its whole weight rows, or a token's k down
// rows, before its dot products): it runs where an expert row is bf16 of a multiple of 256
// values, which tiny-qwen3-moe's 64-wide rows are not. wide_rows_model's random bf16 weights,
// probed like the tiny model above: a first token, a decode at position 40, and two sequences
// decoding together.
TEST(CompiledMoeProbe, WideExpertRowsAgreeWithTheStagedExecutorStageByStage) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "lg-moe-wide-rows";
  auto md = wide_rows_model(dir);
  auto lane = make_lane("compiled", md, {.max_seq = 128});
  std::vector<int32_t> prompt(39);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 53 + 5) % 500);
  probe_steps(*lane, md, prompt, false, "wide rows: ");
  std::filesystem::remove_all(dir);
}

/// A compiled lane of `md` whose experts run their tensor-core form (route, grouped GEMM, combine)
/// at every step of two tokens or more (LG_COMPILED_MOE_MMA_T, read when the lane is made).
/// `min_t`: another LG_COMPILED_MOE_MMA_T (100000: the grouped CUDA-core form at every step).
std::unique_ptr<Lane> tensor_core_experts_lane(const model::ModelDir& md, int64_t max_seq = 128,
                                               const char* min_t = "2") {
  setenv("LG_COMPILED_MOE_MMA_T", min_t, 1);
  auto lane = make_lane("compiled", md, {.max_seq = max_seq});
  unsetenv("LG_COMPILED_MOE_MMA_T");
  return lane;
}

/// The tensor-core form of the experts stages, stage by stage: a prefill of `prompt` as one step
/// (T = prompt length), then that sequence and a second one (prompt 7, 99, 250) decoding together
/// (T = 2). Its activations are rounded to bf16 on the way into the tensor cores (rel. 2^-9 per
/// element, as the dense prefill GEMMs' packs), well inside kTol.
void probe_tensor_core_steps(Lane& lane, const model::ModelDir& md, const std::vector<int32_t>& prompt,
                             const std::string& label) {
  const lift::StagedProgram& prog = compiled_lane_program(lane);
  size_t forms = 0;
  for (const auto& l : compiled_lane_plan(lane).launches) forms += l.prefill && l.prefill->experts;
  ASSERT_GT(forms, 0u) << label << "no experts launch has the tensor-core form";
  std::vector<std::vector<float>> params;
  for (const auto& t : runtime::bind_params(prog.graph, md.checkpoint)) params.push_back(t.to_f32());
  lift::StagedExecutor ex(prog, std::move(params));
  const LaneLimits lim = lane.limits();
  runtime::BlockManager blocks(lim.num_blocks, lim.block_size);
  runtime::SoloSequence a(lane, &blocks), b(lane, &blocks);
  const SeqStep pre = a.next(prompt, true);
  compare(probe_compiled_step(lane, std::span<const SeqStep>(&pre, 1)), prog, ex,
          label + "prefill of " + std::to_string(prompt.size()) + " tokens");
  a.advance(static_cast<int64_t>(prompt.size()));
  if (::testing::Test::HasFatalFailure()) return;
  const int32_t bnext = b.feed(std::vector<int32_t>{7, 99, 250}, false).argmax;
  const std::vector<int32_t> ta{prompt.back()}, tb{bnext};
  const std::vector<SeqStep> q{a.next(ta, true), b.next(tb, true)};
  compare(probe_compiled_step(lane, q), prog, ex, label + "two sequences decoding (tensor-core experts)");
}

// tiny-qwen3-moe's weights are fp32, which the lane keeps (its experts read them as f32): the
// tensor-core form would round them to bf16, so it is not planned for them, as the dense prefill
// GEMMs' cuBLASLt form is not (has_gemm_prefill_form).
TEST(CompiledMoeProbe, Fp32ExpertWeightsKeepTheExactForm) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  auto md = model::ModelDir::open(kShared + "/fixtures/tiny-qwen3-moe");
  auto lane = tensor_core_experts_lane(md);
  size_t experts = 0;
  for (const auto& l : compiled_lane_plan(*lane).launches) {
    EXPECT_FALSE(l.prefill && l.prefill->experts);
    for (int32_t s : l.stages) experts += compiled_lane_program(*lane).stages[static_cast<size_t>(s)].kind == lift::StageKind::Experts;
  }
  EXPECT_EQ(experts, 6u);  // 3 layers, gate/up and down
}

// wide_rows_model's bf16 weights take the tensor-core form: contractions of 256 (8 steps of the
// double-buffered loop), 256 outputs (4 column tiles), 40 tokens x top-2 of 8 experts (10 pairs
// an expert on average: partial row tiles).
TEST(CompiledMoeProbe, TensorCoreExpertsOfWideRowsAgreeWithTheStagedExecutor) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "lg-moe-wide-rows-mma";
  auto md = wide_rows_model(dir);
  auto lane = tensor_core_experts_lane(md);
  std::vector<int32_t> prompt(40);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 53 + 5) % 500);
  probe_tensor_core_steps(*lane, md, prompt, "wide rows: ");
  std::filesystem::remove_all(dir);
}

// Full and partial row tiles, several an expert: a 400-token prefill (100 pairs an expert on
// average) in the tensor-core form against the grouped CUDA-core form, on two lanes of the same
// weights. Up to the first layer's experts both run the same kernels on the same inputs, so their
// values (the routing too) must be equal bit for bit; the first layer's expert outputs then agree
// within 1e-2 (the tensor-core form's activations are rounded to bf16: rel. 2^-9 an element).
// Later layers are not compared: there the two forms' inputs differ by that rounding, and at 400
// tokens a near tie in the router (two experts' logits within ~1e-4, as the staged executor
// comparison met at this prompt) can swap a token's slots, which moves whole rows of the SwiGLU.
TEST(CompiledMoeProbe, TensorCoreExpertsEqualTheGroupedFormOnFullTiles) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "lg-moe-wide-rows-tiles";
  auto md = wide_rows_model(dir);
  std::vector<int32_t> prompt(400);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 53 + 5) % 500);
  auto mma_lane = tensor_core_experts_lane(md, 512, "2");
  auto grouped_lane = tensor_core_experts_lane(md, 512, "100000");
  auto probe = [&](Lane& lane) {
    const LaneLimits lim = lane.limits();
    runtime::BlockManager blocks(lim.num_blocks, lim.block_size);
    runtime::SoloSequence a(lane, &blocks);
    const SeqStep pre = a.next(prompt, true);
    return probe_compiled_step(lane, std::span<const SeqStep>(&pre, 1));
  };
  const ProbedStep mma = probe(*mma_lane), grouped = probe(*grouped_lane);
  const ir::Graph& graph = compiled_lane_program(*mma_lane).graph;
  ASSERT_EQ(mma.values.size(), grouped.values.size());
  // The first layer's experts launches: gate/up (it stores the SwiGLU) and the launch after it
  // (down, storing the residual sum).
  int32_t gate_up = -1;
  for (const auto& v : mma.values)
    if (gate_up < 0 && graph.at(v.node).op == ir::Op::MoeGateUp) gate_up = v.launch;
  ASSERT_GE(gate_up, 0);
  int compared = 0;
  for (size_t i = 0; i < mma.values.size() && mma.values[i].launch <= gate_up + 1; ++i) {
    const auto& v = mma.values[i];
    ASSERT_EQ(v.node, grouped.values[i].node);
    const ir::Node& n = graph.at(v.node);
    const double e = lg::testing::rel_err(v.values, grouped.values[i].values);
    std::printf("  launch %d %-40s rel %.3e\n", v.launch, (n.name + "=" + std::string(ir::op_name(n.op))).c_str(), e);
    if (v.launch < gate_up) {
      EXPECT_EQ(v.values, grouped.values[i].values) << n.name << " (launch " << v.launch << "): before the experts";
    } else {
      EXPECT_LE(e, 1e-2) << n.name << " (launch " << v.launch << ")";
      ++compared;
    }
  }
  EXPECT_EQ(compared, 2);
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
