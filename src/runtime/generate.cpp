#include "runtime/generate.h"

#include <algorithm>

#include "runtime/scheduler.h"
#include "support/error.h"

namespace lg::runtime {

Generation generate(Lane& lane, std::span<const int32_t> prompt, const GenerateOptions& options) {
  Scheduler scheduler(lane);
  Generation out;
  std::string error;
  Request r;
  r.prompt.assign(prompt.begin(), prompt.end());
  r.options = options;
  r.on_done = [&](Generation&& g, const std::string& e) {
    out = std::move(g);
    error = e;
  };
  scheduler.submit(std::move(r));
  scheduler.run();
  if (!error.empty()) throw Error(error);
  return out;
}

std::optional<int32_t> first_out_of_vocab(std::span<const int32_t> ids, int64_t vocab_size) {
  for (const int32_t id : ids)
    if (id < 0 || id >= vocab_size) return id;
  return std::nullopt;
}

std::optional<std::string> prompt_context_error(int64_t n, int64_t context, std::string_view what) {
  const std::string has = std::string(what) + " has " + std::to_string(n) + " tokens, ";
  if (n > context) return has + "more than the context of " + std::to_string(context) + " tokens";
  if (n == context)
    return has + "the whole context of " + std::to_string(context) + " tokens: no room is left for a completion";
  return std::nullopt;
}

std::optional<std::string> completion_context_error(int64_t n, int64_t max_tokens, int64_t context,
                                                    std::string_view what) {
  const int64_t room = std::max<int64_t>(context - n, 0);
  if (max_tokens <= room) return std::nullopt;  // compared, not summed: max_tokens may be near 2^63
  return std::string(what) + " is " + std::to_string(max_tokens) + " and the prompt has " + std::to_string(n) +
         (n == 1 ? " token" : " tokens") + ": together more than the context of " + std::to_string(context) +
         " tokens (at most " + std::to_string(room) + " new token" + (room == 1 ? " fits" : "s fit") + " after this prompt)";
}

}  // namespace lg::runtime
