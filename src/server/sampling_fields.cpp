#include "server/sampling_fields.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "server/json_fields.h"

namespace lg::server {

namespace {

using nlohmann::json;

// The penalties and min_p, in the ranges vLLM's SamplingParams checks (a 400 naming the field,
// as vLLM answers its ValueError). Absent ones take generation_config.json's defaults (Engine::start).
void parse_penalties(const json& j, GenerationRequest& g) {
  if (const json* v = field(j, "repetition_penalty")) {
    const double p = number(*v, "repetition_penalty");
    if (!(p > 0)) throw RequestError("repetition_penalty", fmt::format("'repetition_penalty' must be > 0, got {}", p));
    g.repetition_penalty = p;
  }
  for (auto [name, out] : {std::pair{"presence_penalty", &g.presence_penalty},
                           std::pair{"frequency_penalty", &g.frequency_penalty}}) {
    if (const json* v = field(j, name)) {
      const double p = number(*v, name);
      if (!(p >= -2 && p <= 2)) throw RequestError(name, fmt::format("'{}' must be in [-2, 2], got {}", name, p));
      *out = p;
    }
  }
  if (const json* v = field(j, "min_p")) {
    const double p = number(*v, "min_p");
    if (!(p >= 0 && p <= 1)) throw RequestError("min_p", fmt::format("'min_p' must be in [0, 1], got {}", p));
    g.min_p = p;
  }
}

// A logit_bias key: a token id written in decimal ("50256"), as OpenAI's API takes them.
int32_t bias_token(const std::string& key) {
  const auto bad = [&] {
    return RequestError("logit_bias", fmt::format("'logit_bias' maps token ids (decimal strings such as \"50256\") "
                                                  "to biases; \"{}\" is not a token id",
                                                  key.size() > 40 ? key.substr(0, 40) + "..." : key));
  };
  if (key.empty() || key.size() > 10) throw bad();
  int64_t id = 0;
  for (const char c : key) {
    if (c < '0' || c > '9') throw bad();
    id = id * 10 + (c - '0');
  }
  if (id > INT32_MAX) throw bad();
  return static_cast<int32_t>(id);
}

// OpenAI's logit_bias: {"token id": bias}, each bias in [-100, 100] (OpenAI's range; vLLM clamps
// a value outside it, which hides a client's mistake: refused here).
void parse_logit_bias(const json& v, GenerationRequest& g) {
  if (!v.is_object())
    throw RequestError("logit_bias", fmt::format("'logit_bias' must be an object mapping token ids to biases, got {}",
                                                 v.type_name()));
  for (const auto& [key, value] : v.items()) {
    const int32_t id = bias_token(key);
    if (!value.is_number())
      throw RequestError("logit_bias", fmt::format("'logit_bias' maps token {} to {}; a bias must be a number in "
                                                   "[-100, 100]",
                                                   key, value.type_name()));
    const double b = value.get<double>();
    if (!(b >= -100 && b <= 100))
      throw RequestError("logit_bias", fmt::format("'logit_bias' gives token {} the bias {}, outside [-100, 100]", key,
                                                   value.dump()));
    g.logit_bias.emplace_back(id, static_cast<float>(b));
  }
  // Keys are distinct strings, but "7" and "07" name one token. Sorted to find such a pair (a
  // whole-vocabulary bias has 150,000 entries: a scan per key took seconds); the sampler keeps
  // them sorted anyway.
  std::sort(g.logit_bias.begin(), g.logit_bias.end());
  for (size_t i = 1; i < g.logit_bias.size(); ++i)
    if (g.logit_bias[i].first == g.logit_bias[i - 1].first)
      throw RequestError("logit_bias", fmt::format("'logit_bias' names token {} twice (spelled with leading zeros "
                                                   "once)",
                                                   g.logit_bias[i].first));
}

}  // namespace

void parse_sampling_fields(const json& j, GenerationRequest& g) {
  parse_penalties(j, g);
  if (const json* v = field(j, "logit_bias")) parse_logit_bias(*v, g);
  if (const json* v = field(j, "min_tokens")) {
    const int64_t n = integer(*v, "min_tokens");
    if (n < 0) throw RequestError("min_tokens", fmt::format("'min_tokens' must be >= 0, got {}", n));
    g.min_tokens = n;
  }
  if (const json* v = field(j, "stop_token_ids")) {
    if (!v->is_array())
      throw RequestError("stop_token_ids", fmt::format("'stop_token_ids' must be an array of token ids, got {}",
                                                       v->type_name()));
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string name = fmt::format("stop_token_ids[{}]", i);
      const int64_t id = integer((*v)[i], name.c_str());
      if (id < 0 || id > INT32_MAX)
        throw RequestError(name, fmt::format("'{}' is {}, not a token id", name, id));
      g.stop_token_ids.push_back(static_cast<int32_t>(id));
    }
  }
}

}  // namespace lg::server
