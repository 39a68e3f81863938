#include "runtime/generate.h"

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

}  // namespace lg::runtime
