// The model behind lg serve: one lane, its tokenizer and generation defaults, serving one
// request at a time (batch 1: a mutex around the lane). Turns a prompt into text with the
// OpenAI semantics the endpoints need: stop strings, finish_reason "stop"/"length", token usage.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lanes/lane.h"
#include "model/model_dir.h"
#include "server/request.h"
#include "tokenizer/tokenizer.h"

namespace lg::server {

struct EngineOptions {
  std::string lane = "cpu";  ///< lane name (lanes/factory.h)
  int64_t max_seq = 0;       ///< context (KV cache) in tokens; 0: min(max_position_embeddings, 4096)
};

/// What one request produced.
struct EngineResult {
  std::string text;           ///< the generated text, cut before a stop string, without the eos token
  std::string finish_reason;  ///< "stop" (eos or stop string) or "length" (max_tokens or context full)
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  ///< tokens generated, the eos token included
};

class Engine {
 public:
  /// Opens the model directory and builds the lane. Throws lg::Error for a bad directory, a
  /// missing tokenizer.json, an unknown lane or a max_seq beyond max_position_embeddings.
  Engine(const std::filesystem::path& model_dir, const EngineOptions& options);

  /// The served model's id: the model directory's last component.
  const std::string& model_id() const { return model_id_; }
  /// Context length in tokens (prompt + completion).
  int64_t context() const { return context_; }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  /// The model directory (the chat template is read from it).
  const std::filesystem::path& model_dir() const { return dir_.dir; }

  /// Tokenizes `prompt`: with the special tokens the model expects around it (BOS; none for Qwen)
  /// when `add_special_tokens`, as for a completion prompt, else as written (a rendered chat
  /// template already holds them). Throws RequestError(param) if it encodes to nothing or to more
  /// tokens than the context (naming both lengths).
  std::vector<int32_t> encode_prompt(const std::string& prompt, const std::string& param,
                                     bool add_special_tokens = false) const;

  /// Generates after `prompt_ids` (from encode_prompt). `on_text` gets each piece of text as it
  /// becomes final and returns false to stop early (client gone). `default_max_tokens` applies
  /// when the request has none (the rest of the context when 0). `cancelled`, when set, is
  /// asked after every token and ends generation when true (a non-streaming client that hung
  /// up), so the lane goes to the next request. Serialised: one call runs at a time. Throws
  /// lg::Error from the lane.
  EngineResult generate(const std::vector<int32_t>& prompt_ids, const GenerationRequest& request,
                        int64_t default_max_tokens, const std::function<bool(const std::string&)>& on_text,
                        const std::function<bool()>& cancelled = {});

 private:
  model::ModelDir dir_;
  tokenizer::Tokenizer tokenizer_;
  std::string model_id_;
  int64_t context_ = 0;
  std::unique_ptr<Lane> lane_;
  std::mutex lane_mutex_;  // batch 1: the lane holds one sequence's KV cache
};

}  // namespace lg::server
