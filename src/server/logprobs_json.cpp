#include "server/logprobs_json.h"

#include <algorithm>

namespace lg::server {

// Ordered: a top_logprobs object keeps the chosen token first, then the likeliest in rank order,
// as vLLM's dict does (nlohmann::json would sort the texts).
using nlohmann::ordered_json;

TokenText token_text(const tokenizer::Tokenizer* tokenizer, int32_t id) {
  TokenText t;
  std::string raw;
  if (tokenizer) {
    const int32_t one[] = {id};
    t.text = tokenizer->decode(one, /*skip_special_tokens=*/false);
    const auto bytes = tokenizer->token_bytes(id);
    raw = bytes ? std::string(*bytes) : t.text;
  } else {
    t.text = "token_id:" + std::to_string(id);
    raw = t.text;
  }
  t.bytes.reserve(raw.size());
  for (const char c : raw) t.bytes.push_back(static_cast<unsigned char>(c));
  return t;
}

double json_logprob(float logprob) { return std::max(static_cast<double>(logprob), -9999.0); }

namespace {
// Characters (code points) of valid UTF-8: the bytes that do not continue a character.
int64_t code_points(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}
}  // namespace

ordered_json completion_logprobs(const tokenizer::Tokenizer* tokenizer, std::span<const runtime::TokenLogprobs> tokens,
                                 bool skip_special, int64_t& text_offset) {
  ordered_json texts = ordered_json::array(), values = ordered_json::array(), tops = ordered_json::array(),
               offsets = ordered_json::array();
  for (const runtime::TokenLogprobs& lp : tokens) {
    const TokenText chosen = token_text(tokenizer, lp.chosen.id);
    texts.push_back(chosen.text);
    values.push_back(json_logprob(lp.chosen.logprob));
    ordered_json top = ordered_json::object();
    top[chosen.text] = json_logprob(lp.chosen.logprob);
    for (const runtime::TokenLogprob& alt : lp.top) {
      const std::string text = token_text(tokenizer, alt.id).text;
      if (!top.contains(text)) top[text] = json_logprob(alt.logprob);
    }
    tops.push_back(std::move(top));
    offsets.push_back(text_offset);
    if (!(skip_special && tokenizer && tokenizer->is_special(lp.chosen.id))) text_offset += code_points(chosen.text);
  }
  return {{"tokens", std::move(texts)},
          {"token_logprobs", std::move(values)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

ordered_json chat_logprobs(const tokenizer::Tokenizer* tokenizer, std::span<const runtime::TokenLogprobs> tokens) {
  auto entry = [&](const runtime::TokenLogprob& t) {
    TokenText text = token_text(tokenizer, t.id);
    return ordered_json{
        {"token", std::move(text.text)}, {"logprob", json_logprob(t.logprob)}, {"bytes", std::move(text.bytes)}};
  };
  ordered_json content = ordered_json::array();
  for (const runtime::TokenLogprobs& lp : tokens) {
    ordered_json e = entry(lp.chosen);
    ordered_json top = ordered_json::array();
    for (const runtime::TokenLogprob& alt : lp.top) top.push_back(entry(alt));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return {{"content", std::move(content)}};
}

}  // namespace lg::server
