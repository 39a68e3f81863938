// Fuzz target for the OpenAI request bodies lg serve and lg batch parse (server/request.h): the
// first byte picks the endpoint (even: /v1/completions, odd: /v1/chat/completions), the rest is
// the body. Parsing must give a request or throw RequestError, which the server answers 400
// naming the field; any other exception escaping (the server's 500), a crash, a hang or a
// sanitizer report is a bug. A parsed request must hold what request.h promises: a prompt, the
// sampling fields in their ranges (logit_bias, min_tokens, stop_token_ids and n too), at most 16
// non-empty stop strings, token ids in [0, 2^31).
// Seeds in fuzz/corpus/request_fuzz/ (valid bodies of both endpoints and near misses).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "server/request.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "request_fuzz: %s\n", what);
  std::abort();
}

void check(const lg::server::GenerationRequest& g) {
  if (g.max_tokens && *g.max_tokens < 1) fail("max_tokens below 1 accepted");
  if (g.temperature && !(*g.temperature >= 0)) fail("a negative or NaN temperature accepted");
  if (g.top_p && !(*g.top_p > 0 && *g.top_p <= 1)) fail("top_p outside (0, 1] accepted");
  if (g.top_k && *g.top_k < -1) fail("top_k below -1 accepted");
  if (g.stop.size() > 16) fail("more than 16 stop strings accepted");
  for (const auto& s : g.stop)
    if (s.empty()) fail("an empty stop string accepted");
  if (g.n < 1 || g.n > lg::server::kMaxChoices) fail("n outside [1, 128] accepted");
  if (g.min_tokens < 0) fail("a negative min_tokens accepted");
  for (const int32_t id : g.stop_token_ids)
    if (id < 0) fail("a negative stop token id accepted");
  for (size_t i = 0; i < g.logit_bias.size(); ++i) {
    const auto [id, bias] = g.logit_bias[i];
    if (id < 0) fail("a negative logit_bias id accepted");
    if (!(bias >= -100 && bias <= 100)) fail("a logit_bias outside [-100, 100] accepted");
    for (size_t k = 0; k < i; ++k)
      if (g.logit_bias[k].first == id) fail("a logit_bias id given twice accepted");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 64 * 1024) return 0;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] & 1) {
      const lg::server::ChatRequest r = lg::server::parse_chat_request(body);
      check(r.gen);
      if (!r.messages.is_array() || r.messages.empty()) fail("a chat request without messages accepted");
    } else {
      const lg::server::CompletionRequest r = lg::server::parse_completion_request(body);
      check(r.gen);
      if (r.prompt.empty() && r.prompt_ids.empty()) fail("an empty prompt accepted");
      for (const int32_t id : r.prompt_ids)
        if (id < 0) fail("a negative token id accepted");
    }
  } catch (const lg::server::RequestError&) {
  }
  return 0;
}
