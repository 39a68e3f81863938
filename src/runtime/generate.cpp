#include "runtime/generate.h"

#include <algorithm>
#include <chrono>

#include "runtime/finite_logits.h"
#include "support/error.h"

namespace lg::runtime {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Generation generate(Lane& lane, std::span<const int32_t> prompt, const GenerateOptions& options) {
  if (prompt.empty()) throw Error("the prompt is empty: generation needs at least one prompt token");
  const auto n = static_cast<int64_t>(prompt.size());
  if (n > lane.max_seq())
    throw Error("the prompt has " + std::to_string(n) + " tokens, more than the context of " +
                std::to_string(lane.max_seq()) + " tokens");
  if (options.max_new_tokens < 1) throw Error("max new tokens must be >= 1, got " + std::to_string(options.max_new_tokens));
  Sampler sampler(options.sampling);
  const bool want_logits = !sampler.greedy();
  // Sampling sees every lane's logits, so it checks them (the cpu lane also checks when greedy).
  auto next = [&](const StepResult& r, int64_t position, bool prefill) {
    if (!want_logits) return r.argmax;
    check_finite_logits(r.logits, position, prefill, lane.name());
    return sampler.pick(r.logits);
  };
  auto is_eos = [&](int32_t t) { return std::find(options.eos_ids.begin(), options.eos_ids.end(), t) != options.eos_ids.end(); };

  Generation g;
  g.stats.prompt_tokens = n;
  lane.reset();
  const auto t0 = std::chrono::steady_clock::now();
  StepResult r = lane.step(prompt, 0, want_logits);
  g.stats.prefill_s = seconds_since(t0);
  int32_t tok = next(r, n - 1, true);
  g.stats.first_token_s = seconds_since(t0);
  int64_t pos = n;
  const auto t1 = std::chrono::steady_clock::now();
  while (true) {
    g.tokens.push_back(tok);
    if (options.on_token) options.on_token(tok);
    if (is_eos(tok)) { g.stats.stop = "eos"; break; }
    if (options.should_stop && options.should_stop()) { g.stats.stop = "caller"; break; }
    if (static_cast<int64_t>(g.tokens.size()) >= options.max_new_tokens) { g.stats.stop = "max_tokens"; break; }
    if (pos >= lane.max_seq()) { g.stats.stop = "context"; break; }
    const int32_t one[1] = {tok};
    r = lane.step(one, pos, want_logits);
    tok = next(r, pos, false);
    ++pos;
    ++g.stats.decode_steps;
  }
  g.stats.decode_s = seconds_since(t1);
  return g;
}

std::optional<int32_t> first_out_of_vocab(std::span<const int32_t> ids, int64_t vocab_size) {
  for (const int32_t id : ids)
    if (id < 0 || id >= vocab_size) return id;
  return std::nullopt;
}

}  // namespace lg::runtime
