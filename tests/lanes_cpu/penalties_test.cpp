// Penalties on the cpu lane with the 22M model, through the scheduler as lg run, serve and batch
// use it:
//  - a greedy request with a penalty answers differently from one without, and exactly as a loop
//    written here from the definitions (vLLM's): the lane's logits row at each step, penalised by
//    hand over the whole vocabulary, then the argmax;
//  - greedy requests without a penalty keep the fast path (no logits row from the lane), those
//    with one ask for it at every step;
//  - a batch mixing penalised, min_p and plain requests, greedy and sampled, gives each exactly the
//    tokens it gets alone.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/counting_lane.h"
#include "common/repo_dirs.h"
#include "lanes/cpu/cpu_lane.h"
#include "model/model_dir.h"
#include "runtime/generate.h"
#include "runtime/scheduler.h"
#include "runtime/solo_sequence.h"

namespace lg {
namespace {


std::vector<std::vector<int32_t>> golden_prompts() {
  std::ifstream in(kShared + "/fixtures/qwen3-pycode-22m-golden.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<std::vector<int32_t>> out;
  for (const auto& c : j.at("cases")) out.push_back(c.at("prompt_ids").get<std::vector<int32_t>>());
  return out;
}

/// Greedy decoding written out from the definitions: each step's logits row from the lane, every
/// id of prompt + output divided (logit > 0) or multiplied by the repetition penalty, the
/// frequency penalty times its output count and the presence penalty subtracted, the argmax
/// taken (lowest id on a tie).
std::vector<int32_t> reference_greedy(Lane& lane, const std::vector<int32_t>& prompt, size_t n,
                                      const runtime::Penalties& p) {
  runtime::SoloSequence seq(lane);
  std::vector<int32_t> out;
  SeqResult r = seq.feed(prompt, /*want_logits=*/true);
  while (out.size() < n) {
    std::vector<float> l = r.logits;
    std::vector<int64_t> count(l.size(), 0);
    std::vector<bool> seen(l.size(), false);
    for (int32_t t : prompt) seen[static_cast<size_t>(t)] = true;
    for (int32_t t : out) {
      seen[static_cast<size_t>(t)] = true;
      ++count[static_cast<size_t>(t)];
    }
    const auto rep = static_cast<float>(p.repetition);
    size_t best = 0;
    for (size_t v = 0; v < l.size(); ++v) {
      if (seen[v]) l[v] = l[v] > 0 ? l[v] / rep : l[v] * rep;
      l[v] -= static_cast<float>(p.frequency) * static_cast<float>(count[v]);
      l[v] -= count[v] > 0 ? static_cast<float>(p.presence) : 0.0f;
      if (l[v] > l[best]) best = v;
    }
    out.push_back(static_cast<int32_t>(best));
    if (out.size() < n) r = seq.feed(std::vector<int32_t>{out.back()}, true);
  }
  return out;
}

runtime::GenerateOptions greedy_options(int64_t n, const runtime::Penalties& p = {}) {
  runtime::GenerateOptions o;
  o.max_new_tokens = n;  // no eos ids: every request runs its n tokens
  o.sampling.penalties = p;
  return o;
}

class PenaltiesOnTheCpuLane : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new model::ModelDir(model::ModelDir::open(kSource + "/models/qwen3-pycode-22m"));
    LaneOptions o;
    o.max_seq = 128;
    o.kv_tokens = 8 * 128;
    o.max_batch = 8;
    o.max_tokens = 256;
    lane_ = make_cpu_lane(*dir_, o).release();
  }
  static void TearDownTestSuite() {
    delete lane_;
    delete dir_;
  }
  static inline model::ModelDir* dir_ = nullptr;
  static inline Lane* lane_ = nullptr;
};

TEST_F(PenaltiesOnTheCpuLane, AGreedyAnswerChangesWithAPenaltyAndEqualsTheReferenceLoop) {
  const auto prompts = golden_prompts();
  const size_t n = 24;
  int changed = 0;
  for (size_t c = 0; c < 3; ++c) {
    const auto plain = runtime::generate(*lane_, prompts[c], greedy_options(n)).tokens;
    EXPECT_EQ(plain, reference_greedy(*lane_, prompts[c], n, runtime::Penalties{})) << "prompt " << c;
    for (const runtime::Penalties& p :
         {runtime::Penalties{1.3, 0, 0}, runtime::Penalties{0.8, 0, 0}, runtime::Penalties{1, 0.7, 0.4}}) {
      SCOPED_TRACE("prompt " + std::to_string(c) + ", penalties " + std::to_string(p.repetition) + "/" +
                   std::to_string(p.presence) + "/" + std::to_string(p.frequency));
      const auto penalised = runtime::generate(*lane_, prompts[c], greedy_options(n, p)).tokens;
      EXPECT_EQ(penalised, reference_greedy(*lane_, prompts[c], n, p));
      changed += penalised != plain;
    }
  }
  EXPECT_GE(changed, 6) << "the penalties should change most of these code completions";
}

using testing::CountingLane;

TEST_F(PenaltiesOnTheCpuLane, PlainGreedyKeepsTheArgmaxFastPathAndAPenaltyAsksForLogits) {
  const auto prompt = golden_prompts()[0];
  CountingLane plain(*lane_), penalised(*lane_);
  runtime::generate(plain, prompt, greedy_options(8));
  EXPECT_EQ(plain.with_logits, 0);
  EXPECT_EQ(plain.argmax_only, 8);  // the prefill and 7 decodes
  runtime::generate(penalised, prompt, greedy_options(8, {1.1, 0, 0}));
  EXPECT_EQ(penalised.with_logits, 8);
  EXPECT_EQ(penalised.argmax_only, 0);
}

// A sampled request is drawn by a lane that draws (the cpu lane does, as the GPU lanes): no logits
// row comes back, and the tokens are those the host draws from the rows.
TEST_F(PenaltiesOnTheCpuLane, ASampledRequestIsDrawnOnTheLaneAsTheHostWouldDrawIt) {
  const auto prompt = golden_prompts()[1];
  ASSERT_TRUE(lane_->draws());
  runtime::GenerateOptions o = greedy_options(12);
  o.sampling.temperature = 0.9;
  o.sampling.top_p = 0.95;
  o.sampling.seed = 31;
  CountingLane on_lane(*lane_, /*forward_draws=*/true), on_host(*lane_);
  const auto drawn = runtime::generate(on_lane, prompt, o).tokens;
  EXPECT_EQ(on_lane.with_draw, 12);  // the prefill and 11 decodes
  EXPECT_EQ(on_lane.with_logits, 0);
  EXPECT_EQ(runtime::generate(on_host, prompt, o).tokens, drawn);
  EXPECT_EQ(on_host.with_logits, 12);
  EXPECT_EQ(on_host.with_draw, 0);
  // Penalised requests, sampled and greedy, are drawn by the lane too (the scheduler sends the
  // history's edits with the draw): no row comes back, and the tokens are the host's picks.
  for (const double t : {0.9, 0.0}) {
    o.sampling.temperature = t;
    o.sampling.penalties = {1.2, 0.4, 0.3};
    CountingLane penalised(*lane_, /*forward_draws=*/true), penalised_host(*lane_);
    const auto lane_tokens = runtime::generate(penalised, prompt, o).tokens;
    EXPECT_EQ(penalised.with_draw, 12) << "temperature " << t;
    EXPECT_EQ(penalised.with_logits, 0) << "temperature " << t;
    EXPECT_EQ(runtime::generate(penalised_host, prompt, o).tokens, lane_tokens) << "temperature " << t;
    EXPECT_EQ(penalised_host.with_logits, 12) << "temperature " << t;
  }
}

TEST_F(PenaltiesOnTheCpuLane, AMixedBatchGivesEachRequestItsSoloTokens) {
  const auto prompts = golden_prompts();
  std::vector<runtime::GenerateOptions> opts;
  opts.push_back(greedy_options(20));
  opts.push_back(greedy_options(20, {1.3, 0, 0}));
  opts.push_back(greedy_options(16, {1, 0.5, 0.5}));
  opts.push_back(greedy_options(24, {0.9, -0.5, 0}));
  for (const double min_p : {0.0, 0.1}) {  // sampled, seeded: plain, and with min_p and penalties
    runtime::GenerateOptions o = greedy_options(20);
    o.sampling.temperature = 0.9;
    o.sampling.seed = 7;
    o.sampling.min_p = min_p;
    if (min_p > 0) o.sampling.penalties = {1.2, 0.3, 0.2};
    opts.push_back(o);
  }
  std::vector<std::vector<int32_t>> solo;
  for (size_t i = 0; i < opts.size(); ++i)
    solo.push_back(runtime::generate(*lane_, prompts[i % prompts.size()], opts[i]).tokens);
  // All at once, joining over the first steps: the batch mixes prefills, plain decodes (argmax
  // only) and penalised ones (logits rows).
  runtime::Scheduler sched(*lane_);
  std::vector<std::vector<int32_t>> got(opts.size());
  size_t submitted = 0;
  while (submitted < opts.size() || sched.waiting() + sched.running() > 0) {
    for (int k = 0; k < 2 && submitted < opts.size(); ++k, ++submitted) {
      runtime::Request r;
      r.prompt = prompts[submitted % prompts.size()];
      r.options = opts[submitted];
      r.on_done = [&got, i = submitted](runtime::Generation&& g, const std::string& error) {
        EXPECT_EQ(error, "");
        got[i] = g.tokens;
      };
      sched.submit(std::move(r));
    }
    sched.step();
  }
  for (size_t i = 0; i < opts.size(); ++i) EXPECT_EQ(got[i], solo[i]) << "request " << i;
  EXPECT_NE(solo[0], solo[1]);  // the same prompt, with and without the penalty
}

}  // namespace
}  // namespace lg
