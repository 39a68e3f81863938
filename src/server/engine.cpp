#include "server/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "lanes/factory.h"
#include "runtime/generate.h"
#include "server/stop_strings.h"
#include "support/error.h"

namespace lg::server {

namespace {

tokenizer::Tokenizer load_tokenizer(const model::ModelDir& dir) {
  if (!dir.tokenizer_json) throw Error(dir.dir.string() + ": no tokenizer.json; lg serve needs one to read prompts");
  return tokenizer::Tokenizer::from_file(*dir.tokenizer_json);
}

// The KV cache is allocated once for the server's life, so the default context is capped:
// a 32K-128K max_position_embeddings would reserve gigabytes for requests that rarely need it.
constexpr int64_t kDefaultContextCap = 4096;

}  // namespace

Engine::Engine(const std::filesystem::path& model_dir, const EngineOptions& options)
    : dir_(model::ModelDir::open(model_dir)), tokenizer_(load_tokenizer(dir_)) {
  const auto norm = model_dir.lexically_normal();
  model_id_ = (norm.has_filename() ? norm.filename() : norm.parent_path().filename()).string();
  const int64_t model_max = dir_.config.max_position_embeddings;
  context_ = options.max_seq > 0 ? options.max_seq : std::min(model_max, kDefaultContextCap);
  if (context_ > model_max)
    throw Error(fmt::format("--max-seq {} exceeds the model's context of {} tokens (max_position_embeddings)", context_,
                            model_max));
  lane_ = make_lane(options.lane, dir_, context_);
}

std::vector<int32_t> Engine::encode_prompt(const std::string& prompt, const std::string& param,
                                           bool add_special_tokens) const {
  std::vector<int32_t> ids;
  try {
    ids = add_special_tokens ? tokenizer_.encode_with_special_tokens(prompt) : tokenizer_.encode(prompt);
  } catch (const Error& e) {
    throw RequestError(param, fmt::format("'{}' cannot be tokenized: {}", param, e.what()));
  }
  if (ids.empty()) throw RequestError(param, fmt::format("'{}' encodes to no tokens", param));
  if (const auto id = runtime::first_out_of_vocab(ids, dir_.config.vocab_size))
    throw RequestError(param, fmt::format("'{}' has token id {}, outside the model's vocabulary of {} ids: the model "
                                          "directory's tokenizer.json does not belong to its checkpoint",
                                          param, *id, dir_.config.vocab_size));
  if (static_cast<int64_t>(ids.size()) > context_)
    throw RequestError(param, fmt::format("'{}' has {} tokens, more than the context of {} tokens", param, ids.size(),
                                          context_));
  return ids;
}

EngineResult Engine::generate(const std::vector<int32_t>& prompt_ids, const GenerationRequest& request,
                              int64_t default_max_tokens, const std::function<bool(const std::string&)>& on_text,
                              const std::function<bool()>& cancelled) {
  const auto& gc = dir_.generation;
  runtime::GenerateOptions gen;
  const auto room = context_ - static_cast<int64_t>(prompt_ids.size());
  gen.max_new_tokens = request.max_tokens.value_or(default_max_tokens > 0 ? default_max_tokens : std::max<int64_t>(room, 1));
  gen.eos_ids = gc.eos_token_ids;
  // Absent fields take generation_config.json's defaults, as vLLM does and as `lg run` does.
  gen.sampling.temperature = request.temperature.value_or(gc.do_sample ? gc.temperature : 0.0);
  gen.sampling.top_k = request.top_k.value_or(gc.top_k);
  gen.sampling.top_p = request.top_p.value_or(gc.top_p);
  gen.sampling.seed = request.seed ? *request.seed : std::random_device{}();

  EngineResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt_ids.size());
  tokenizer::StreamDecoder decoder(tokenizer_);
  decoder.prime(prompt_ids);  // the completion continues the prompt's text (a SentencePiece "▁" keeps its space)
  StopMatcher stops(request.stop);
  bool client_gone = false;
  auto emit = [&](const std::string& piece) {
    if (piece.empty() || client_gone) return;
    result.text += piece;
    if (on_text && !on_text(piece)) client_gone = true;
  };
  gen.on_token = [&](int32_t id) {
    if (std::find(gen.eos_ids.begin(), gen.eos_ids.end(), id) != gen.eos_ids.end()) return;
    emit(stops.push(decoder.push(id)));
  };
  gen.should_stop = [&] {
    if (!client_gone && cancelled && cancelled()) client_gone = true;
    return stops.stopped() || client_gone;
  };

  std::lock_guard<std::mutex> lock(lane_mutex_);
  const runtime::Generation g = runtime::generate(*lane_, prompt_ids, gen);
  if (!stops.stopped()) emit(stops.push(decoder.finish()));
  emit(stops.finish());
  result.completion_tokens = static_cast<int64_t>(g.tokens.size());
  result.finish_reason = (g.stats.stop == "eos" || stops.stopped()) ? "stop" : "length";
  return result;
}

}  // namespace lg::server
