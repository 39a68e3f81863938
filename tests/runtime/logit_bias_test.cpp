// logit_bias and min_tokens (runtime::SamplingOptions) against vLLM's definition written out on
// fresh random rows and histories: its min-tokens processor sets the held ids' logits to -inf, its
// logit-bias processor adds each bias, then apply_penalties (vllm/v1/sample/sampler.py's order).
// Every edited logit is the reference's f32 exactly (a held one -FLT_MAX where vLLM's is -inf),
// and the host's pick and a lane's pick (draw_token with the sampler's edits) are the pick of the
// reference row.
#include <gtest/gtest.h>

#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/draw.h"
#include "runtime/penalties.h"
#include "runtime/sampler.h"
#include "support/error.h"

namespace lg::runtime {
namespace {

// vLLM's row: held ids -inf, then + bias, then the penalties over the whole vocabulary.
std::vector<float> vllm_row(std::vector<float> l, const SamplingOptions& o, const std::vector<int32_t>& prompt,
                            const std::vector<int32_t>& output) {
  const bool hold = static_cast<int64_t>(output.size()) < o.min_tokens;
  if (hold)
    for (int32_t id : o.min_tokens_held) l[static_cast<size_t>(id)] = -INFINITY;
  for (const auto& [id, b] : o.logit_bias) l[static_cast<size_t>(id)] += b;
  std::vector<bool> in_prompt(l.size(), false);
  std::vector<int32_t> counts(l.size(), 0);
  for (int32_t t : prompt) in_prompt[static_cast<size_t>(t)] = true;
  for (int32_t t : output) ++counts[static_cast<size_t>(t)];
  const auto r = static_cast<float>(o.penalties.repetition), f = static_cast<float>(o.penalties.frequency),
             p = static_cast<float>(o.penalties.presence);
  for (size_t v = 0; v < l.size(); ++v) {
    const float penalty = in_prompt[v] || counts[v] > 0 ? r : 1.0f;
    l[v] = l[v] > 0 ? l[v] / penalty : l[v] * penalty;
    l[v] -= f * static_cast<float>(counts[v]);
    l[v] -= p * static_cast<float>(counts[v] > 0 ? 1 : 0);
  }
  return l;
}

SamplingOptions random_options(std::mt19937_64& rng, int32_t V) {
  auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
  SamplingOptions o;
  o.temperature = std::array<double, 3>{0, 0.7, 1.3}[uni(0, 2)];
  o.seed = rng();
  if (uni(0, 1)) o.penalties = {0.5 + static_cast<double>(uni(0, 99)) / 40, static_cast<double>(uni(0, 8)) / 2 - 2, 0};
  std::set<int32_t> ids;
  for (int64_t k = uni(0, 12); k > 0; --k) ids.insert(static_cast<int32_t>(uni(0, V - 1)));
  for (int32_t id : ids) o.logit_bias.emplace_back(id, static_cast<float>(uni(-100, 100)) / (uni(0, 1) ? 1.0f : 7.0f));
  o.min_tokens = uni(0, 4);
  for (int64_t k = uni(0, 3); k > 0; --k) o.min_tokens_held.push_back(static_cast<int32_t>(uni(0, V - 1)));
  return o;
}

TEST(LogitBias, EditedRowsAndPicksEqualVllmsDefinition) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  int64_t moved = 0, picks = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const auto V = static_cast<int32_t>(50 + rng() % 400);
    std::vector<float> l(static_cast<size_t>(V));
    for (float& x : l) x = logit(rng);
    std::vector<int32_t> prompt(1 + rng() % 20), output;
    for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(V));
    const SamplingOptions o = random_options(rng, V);
    SamplingOptions plain_options = o;
    plain_options.logit_bias.clear();
    plain_options.min_tokens = 0;
    Sampler host(o), lane(o), plain(plain_options);  // plain: the same uniforms and penalties
    for (int pick = 0; pick < 6; ++pick) {
      SCOPED_TRACE("trial " + std::to_string(trial) + ", pick " + std::to_string(pick));
      const std::vector<float> want_row = vllm_row(l, o, prompt, output);
      std::vector<float> row = l;
      const auto edits = lane.logit_edits(prompt, output);
      std::set<int32_t> distinct;
      for (const LogitEdit& e : edits) ASSERT_TRUE(distinct.insert(e.id).second) << "id " << e.id << " edited twice";
      apply_logit_edits(row, lane.penalty(), edits);
      for (size_t v = 0; v < row.size(); ++v) {
        if (std::isinf(want_row[v]) && want_row[v] < 0) ASSERT_EQ(row[v], -FLT_MAX) << "held id " << v;
        else ASSERT_EQ(row[v], want_row[v]) << "id " << v << ", logit " << l[v];
      }
      // The reference row's pick: its held ids can never win (-inf's weight is 0, and it is last
      // in the order), as -FLT_MAX's.
      std::vector<float> ref = want_row;
      for (float& x : ref) x = std::max(x, -FLT_MAX);
      const int32_t want = o.temperature == 0 ? argmax(ref) : -2;
      const int32_t got_host = host.pick(l, prompt, output);
      const int32_t got_lane = draw_token(l, lane.next_draw(), lane.penalty(), edits);
      ASSERT_EQ(got_lane, got_host);
      if (want != -2) {
        ASSERT_EQ(got_host, want);
      }
      if (static_cast<int64_t>(output.size()) < o.min_tokens) {
        for (int32_t id : o.min_tokens_held) ASSERT_NE(got_host, id) << "a held id was picked";
      }
      moved += got_host != plain.pick(l, prompt, output);
      ++picks;
      output.push_back(got_host);
    }
  }
  EXPECT_GT(moved, picks / 20);  // the biases and holds, not the uniforms, moved them
}

// A bias of +100 makes its token the pick (logits of a few units), -100 keeps it out; min_tokens
// holds an id back for exactly min_tokens picks, then lets it through.
TEST(LogitBias, WorkedExamples) {
  const std::vector<float> l = {1.0f, 3.0f, 2.0f, -1.0f};
  SamplingOptions o;
  o.logit_bias = {{3, 100.0f}};
  EXPECT_EQ(Sampler(o).pick(l), 3);
  o.logit_bias = {{1, -100.0f}};
  EXPECT_EQ(Sampler(o).pick(l), 2);
  Sampler unbiased({});
  EXPECT_FALSE(unbiased.needs_logits());  // plain greedy: the lane's argmax
  EXPECT_TRUE(Sampler(o).needs_logits());
  SamplingOptions m;
  m.min_tokens = 2;
  m.min_tokens_held = {1};
  Sampler s(m);
  std::vector<int32_t> out;
  for (int k = 0; k < 3; ++k) out.push_back(s.pick(l, {}, out));
  EXPECT_EQ(out, (std::vector<int32_t>{2, 2, 1}));
  // A held id that is also biased and seen: one edit, held.
  m.logit_bias = {{1, 50.0f}};
  m.penalties.repetition = 1.5;
  Sampler both(m);
  const std::vector<int32_t> prompt = {1, 0};
  const auto edits = both.logit_edits(prompt, {});
  ASSERT_EQ(edits.size(), 2u);
  EXPECT_EQ(edits[0].id, 1);
  EXPECT_EQ(edits[0].bias, LogitEdit::kHeld);
  EXPECT_EQ(edits[1].id, 0);
  EXPECT_EQ(edits[1].bias, 0.0f);
  // Once min_tokens is reached the same id carries its bias instead.
  const auto later = both.logit_edits(prompt, std::vector<int32_t>{2, 2});
  ASSERT_EQ(later.size(), 3u);  // 1 and 0 from the prompt, 2 from the output
  EXPECT_EQ(later[0].bias, 50.0f);
}

// The edits one Sampler returns step after step (its merged biases and holds kept across steps)
// equal the definition's, id by id: the seen ids with their output counts (the prompt's when the
// repetition penalty reads it), each biased id with its bias, each held id held while min_tokens
// holds. Histories grow, restart with another prompt (a preempted sequence's replay, or a caller
// reusing the Sampler), and cross min_tokens; biases cover from none to most of the vocabulary.
TEST(LogitBias, EditsKeptAcrossStepsEqualTheDefinition) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
  for (int trial = 0; trial < 200; ++trial) {
    const auto V = static_cast<int32_t>(uni(20, 300));
    SamplingOptions o = random_options(rng, V);
    if (uni(0, 3) == 0) {  // most of the vocabulary biased
      o.logit_bias.clear();
      for (int32_t id = 0; id < V; ++id)
        if (uni(0, 9) > 0) o.logit_bias.emplace_back(id, static_cast<float>(uni(-100, 100)));
    }
    Sampler s(o);
    std::vector<int32_t> prompt, output;
    for (int step = 0; step < 12; ++step) {
      SCOPED_TRACE("trial " + std::to_string(trial) + ", step " + std::to_string(step));
      if (step == 0 || uni(0, 5) == 0) {  // a fresh history
        prompt.assign(static_cast<size_t>(uni(1, 15)), 0);
        for (int32_t& t : prompt) t = static_cast<int32_t>(uni(0, V - 1));
        output.clear();
      }
      std::map<int32_t, std::pair<int32_t, float>> want;  // id -> (count, bias)
      if (o.penalties.active()) {
        if (o.penalties.repetition != 1)
          for (int32_t t : prompt) want[t] = {0, 0.0f};
        for (int32_t t : output) ++want.try_emplace(t, 0, 0.0f).first->second.first;
      }
      for (const auto& [id, b] : o.logit_bias) want.try_emplace(id, LogitEdit::kUnseen, 0.0f).first->second.second = b;
      if (static_cast<int64_t>(output.size()) < o.min_tokens)
        for (int32_t id : o.min_tokens_held)
          want.try_emplace(id, LogitEdit::kUnseen, 0.0f).first->second.second = LogitEdit::kHeld;
      std::map<int32_t, std::pair<int32_t, float>> got;
      for (const LogitEdit& e : s.logit_edits(prompt, output))
        ASSERT_TRUE(got.emplace(e.id, std::make_pair(e.count, e.bias)).second) << "id " << e.id << " edited twice";
      ASSERT_EQ(got, want);
      output.push_back(static_cast<int32_t>(uni(0, V - 1)));
    }
  }
}

TEST(LogitBias, BadOptionsNameTheField) {
  const auto message = [](const SamplingOptions& o) {
    try {
      Sampler s(o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  SamplingOptions o;
  o.logit_bias = {{-1, 1.0f}};
  EXPECT_EQ(message(o), "logit_bias: token id -1 is negative");
  o.logit_bias = {{5, 1.0f}, {5, 2.0f}};
  EXPECT_EQ(message(o), "logit_bias: token id 5 is given twice");
  o.logit_bias = {{5, 101.0f}};
  EXPECT_EQ(message(o), "logit_bias: token 5's bias 101 is outside [-100, 100]");
  o.logit_bias = {{5, NAN}};
  EXPECT_EQ(message(o).rfind("logit_bias: token 5's bias", 0), 0u);
  o.logit_bias = {};
  o.min_tokens = -1;
  EXPECT_EQ(message(o), "min_tokens must be >= 0, got -1");
  o.min_tokens = 1;
  o.min_tokens_held = {3, -2};
  EXPECT_EQ(message(o), "min_tokens: token id -2 is negative");
  // An id past the row is refused when the row is edited, naming it.
  SamplingOptions far;
  far.logit_bias = {{9, 1.0f}};
  Sampler s(far);
  const std::vector<float> l = {1.0f, 2.0f};
  EXPECT_THROW(s.pick(l), Error);
}

}  // namespace
}  // namespace lg::runtime
