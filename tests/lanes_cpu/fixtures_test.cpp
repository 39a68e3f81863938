// Acceptance of the cpu lane (issue 4): the .lg forward run by the reference executor against
// the fixtures made by Hugging Face transformers (fp32, CPU).
//  - prefill logits (last position, and the head of position 0): relative error < 1e-4. Both
//    sides are fp32; the difference is summation order over a few hundred terms per dot
//    product (~1e-6 relative each), so 1e-4 leaves room without hiding a wrong op (a wrong
//    RoPE, norm or mask moves the logits by > 1e-1 relative).
//  - greedy tokens equal at every step whose top-2 margin is above 1e-3, until the first step
//    at or below it (a near tie that summation order may flip; after it the paths may differ).
//    The fixtures' `generate` call treated token id 0 as padding (transformers infers an
//    attention mask from a pad id it was given: id 0 is masked out and the positions after it
//    shift down by one), while their prefill logits come from a plain forward over all ids. So
//    the prefill is compared on the full prompt and greedy generation on the prompt without id
//    0, which is exactly what generate attended to: with that, all 24 steps of every case match
//    (without it, the 64-token cases, the only ones holding an id 0, diverge at step 0).
//  - qwen3-pycode-22m: all 48 greedy tokens of the 8 golden prompts.
//  - a decode step after a prefill equals a prefill over the whole sequence (1e-5 relative).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/repo_dirs.h"
#include "lanes/cpu/cpu_lane.h"
#include "model/model_dir.h"
#include "runtime/generate.h"
#include "common/model_copy.h"
#include "common/step_alone.h"

namespace lg {
namespace {


nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

double rel_err(std::span<const float> got, const std::vector<float>& ref) {
  double d = 0, n = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    d += (got[k] - ref[k]) * static_cast<double>(got[k] - ref[k]);
    n += static_cast<double>(ref[k]) * ref[k];
  }
  return std::sqrt(d / n);
}

std::vector<int32_t> greedy(CpuLane& lane, const std::vector<int32_t>& prompt, size_t n, const model::ModelDir& dir) {
  runtime::GenerateOptions opts;
  opts.max_new_tokens = static_cast<int64_t>(n);
  opts.eos_ids = dir.generation.eos_token_ids;
  return runtime::generate(lane, prompt, opts).tokens;
}

class Fixture : public ::testing::TestWithParam<std::string> {};

TEST_P(Fixture, PrefillLogitsAndGreedyTokensMatchTransformers) {
  const std::string dir_path = kShared + "/fixtures/" + GetParam();
  const model::ModelDir dir = model::ModelDir::open(dir_path);
  auto lane = make_cpu_lane_concrete(dir, {.max_seq = 0});
  const nlohmann::json golden = read_json(dir_path + "/golden.json");
  size_t compared = 0, total = 0;
  for (size_t c = 0; c < golden["cases"].size(); ++c) {
    const auto& cs = golden["cases"][c];
    SCOPED_TRACE("case " + std::to_string(c));
    const auto prompt = cs["prompt_ids"].get<std::vector<int32_t>>();
    const ir::cpu::Tensor logits = lane->forward(prompt);
    const auto V = static_cast<size_t>(logits.shape[1]);
    const std::vector<float> all = logits.to_f32();
    const std::span<const float> last(all.data() + (prompt.size() - 1) * V, V);
    EXPECT_LT(rel_err(last, cs["prefill_last_logits"].get<std::vector<float>>()), 1e-4);
    const auto head = cs["prefill_first_logits_head"].get<std::vector<float>>();
    EXPECT_LT(rel_err(std::span<const float>(all.data(), head.size()), head), 1e-4);

    const auto want = cs["greedy_ids"].get<std::vector<int32_t>>();
    const auto margins = cs["argmax_margins"].get<std::vector<double>>();
    std::vector<int32_t> attended;  // see the header comment: generate masked id 0 out
    for (int32_t t : prompt)
      if (t != 0) attended.push_back(t);
    const std::vector<int32_t> got = greedy(*lane, attended, want.size(), dir);
    total += want.size();
    for (size_t s = 0; s < want.size() && margins[s] > 1e-3; ++s, ++compared) {
      ASSERT_LT(s, got.size()) << "generation stopped early";
      EXPECT_EQ(got[s], want[s]) << "step " << s << ", margin " << margins[s];
    }
  }
  std::cout << "[ " << GetParam() << " ] compared " << compared << " of " << total << " greedy steps\n";
  // Near ties (margin <= 1e-3) are rare in these fixtures: the comparison must cover most steps
  // or it proves little.
  EXPECT_GE(compared, total * 3 / 4);
}

INSTANTIATE_TEST_SUITE_P(Shared, Fixture, ::testing::Values("tiny-qwen3", "tiny-qwen3-untied-mqa", "tiny-qwen2", "tiny-llama3",
                                                           "tiny-mistral", "tiny-phi3", "tiny-gpt2", "tiny-gemma3",
                                                           "tiny-qwen3-moe"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (char& ch : s) if (ch == '-') ch = '_';
                           return s;
                         });

TEST(Pycode22m, GreedyTokensOfAllGoldenPromptsMatchFp32Transformers) {
  const model::ModelDir dir = model::ModelDir::open(kSource + "/models/qwen3-pycode-22m");
  auto lane = make_cpu_lane_concrete(dir, {.max_seq = 256});
  const nlohmann::json golden = read_json(kShared + "/fixtures/qwen3-pycode-22m-golden.json");
  ASSERT_EQ(golden["cases"].size(), 8u);
  for (const auto& cs : golden["cases"]) {
    SCOPED_TRACE(cs["prompt"].get<std::string>());
    const auto prompt = cs["prompt_ids"].get<std::vector<int32_t>>();
    const auto want = cs["fp32_cpu_greedy_ids"].get<std::vector<int32_t>>();
    ASSERT_EQ(want.size(), 48u);
    EXPECT_EQ(greedy(*lane, prompt, want.size(), dir), want);
  }
}

// openai-community/gpt2's model.safetensors names its tensors without the "transformer." that
// gpt2.lg (and transformers' GPT2LMHeadModel, which adds it at load) names: "wte.weight",
// "h.0.attn.c_attn.weight". Such a checkpoint was refused, every tensor "missing"; it now binds
// the same tensors and computes exactly the logits of the prefixed checkpoint (tiny-gpt2, written
// by save_pretrained, with the prefix stripped from every name).
TEST(BasePrefix, AGpt2CheckpointWithoutTheTransformerPrefixGivesTheSameLogits) {
  const std::string fixture = kShared + "/fixtures/tiny-gpt2";
  lg::test::ModelCopy bare(fixture);
  ASSERT_GT(bare.drop_tensor_prefix("transformer."), 0u);
  const model::ModelDir prefixed_dir = model::ModelDir::open(fixture);
  const model::ModelDir bare_dir = model::ModelDir::open(bare.dir);
  ASSERT_TRUE(bare_dir.checkpoint.contains("h.0.attn.c_attn.weight"));
  ASSERT_FALSE(bare_dir.checkpoint.contains("transformer.h.0.attn.c_attn.weight"));
  auto prefixed = make_cpu_lane_concrete(prefixed_dir, {.max_seq = 0});
  auto stripped = make_cpu_lane_concrete(bare_dir, {.max_seq = 0});
  const nlohmann::json golden = read_json(fixture + "/golden.json");
  for (const auto& cs : golden["cases"]) {
    const auto prompt = cs["prompt_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(stripped->forward(prompt).to_f32(), prefixed->forward(prompt).to_f32());
  }
}

// GPT2LMHeadModel ties lm_head to wte only when config.tie_word_embeddings says so (GPT2Config's
// default is true). gpt2.lg multiplied by wte always, so an untied checkpoint silently ran the
// wrong head. A copy of tiny-gpt2 untied, its lm_head.weight 2 * wte: every logit is exactly twice
// the tied one (doubling is exact in fp32, and the rest of the forward is the same).
TEST(Gpt2Head, AnUntiedCheckpointRunsItsOwnLmHead) {
  const std::string fixture = kShared + "/fixtures/tiny-gpt2";
  lg::test::ModelCopy untied(fixture);
  untied.edit_json("config.json", [](nlohmann::json& j) { j["tie_word_embeddings"] = false; });
  untied.add_scaled_copy("transformer.wte.weight", "lm_head.weight", 2.0f);
  const model::ModelDir tied_dir = model::ModelDir::open(fixture);
  const model::ModelDir untied_dir = model::ModelDir::open(untied.dir);
  ASSERT_FALSE(tied_dir.checkpoint.contains("lm_head.weight"));
  auto tied = make_cpu_lane_concrete(tied_dir, {.max_seq = 0});
  auto own = make_cpu_lane_concrete(untied_dir, {.max_seq = 0});
  const nlohmann::json golden = read_json(fixture + "/golden.json");
  for (const auto& cs : golden["cases"]) {
    const auto prompt = cs["prompt_ids"].get<std::vector<int32_t>>();
    std::vector<float> want = tied->forward(prompt).to_f32();
    for (float& v : want) v *= 2.0f;
    EXPECT_EQ(own->forward(prompt).to_f32(), want);
  }
}

/// Prefill seq[0, n) then decode seq[n] vs one prefill of seq[0, n]: same last logits.
void expect_decode_equals_prefill(const model::ModelDir& dir, const std::vector<int32_t>& seq,
                                  std::initializer_list<size_t> lengths) {
  auto stepped = make_cpu_lane_concrete(dir, {.max_seq = 128});
  auto full = make_cpu_lane_concrete(dir, {.max_seq = 128});
  for (size_t n : lengths) {
    SCOPED_TRACE("prefill of " + std::to_string(n) + " then one decode step");
    lg::testing::step_alone(*stepped, std::span(seq.data(), n), 0, false);
    const SeqResult dec = lg::testing::step_alone(*stepped, std::span(seq.data() + n, 1), static_cast<int64_t>(n), true);
    const SeqResult ref = lg::testing::step_alone(*full, std::span(seq.data(), n + 1), 0, true);
    EXPECT_LT(rel_err(dec.logits, ref.logits), 1e-5);
    EXPECT_EQ(dec.argmax, ref.argmax);
  }
}

TEST(DecodeAfterPrefill, EqualsPrefillOverTheWholeSequence) {
  std::vector<int32_t> seq(100);
  for (size_t k = 0; k < seq.size(); ++k) seq[k] = static_cast<int32_t>((k * 7919 + 13) % 500);
  expect_decode_equals_prefill(model::ModelDir::open(kShared + "/fixtures/tiny-qwen2"), seq, {1, 2, 9, 33, 99});
  expect_decode_equals_prefill(model::ModelDir::open(kShared + "/fixtures/tiny-qwen3-untied-mqa"), seq, {1, 17, 64});
  expect_decode_equals_prefill(model::ModelDir::open(kShared + "/fixtures/tiny-qwen3-moe"), seq, {1, 12, 57});
  for (auto& t : seq) t = t * 301 % 151000;
  expect_decode_equals_prefill(model::ModelDir::open(kSource + "/models/qwen3-pycode-22m"), seq, {1, 5, 40, 90});
}

// Gemma 3's local layers (sliding window 8): decode steps before, at and past the window, and
// after prefills that are themselves longer than it.
TEST(DecodeAfterPrefill, EqualsPrefillOverTheWholeSequenceWithASlidingWindow) {
  std::vector<int32_t> seq(100);
  for (size_t k = 0; k < seq.size(); ++k) seq[k] = static_cast<int32_t>((k * 7919 + 13) % 500);
  expect_decode_equals_prefill(model::ModelDir::open(kShared + "/fixtures/tiny-gemma3"), seq, {1, 7, 8, 9, 33, 99});
}

}  // namespace
}  // namespace lg
