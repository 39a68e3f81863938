// POST /tokenize and /detokenize, as vLLM's server has them (vllm/entrypoints/openai/
// serving_tokenization.py, protocol.py's TokenizeRequest and DetokenizeRequest): the token ids the
// model would be given for a prompt or a chat's messages (to count them against the context, or
// to send them as a token-id prompt), and the text of ids. Neither waits on generation.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "chat/chat_template.h"
#include "server/engine.h"

namespace lg::server {

/// The answer to a /tokenize body, {"count", "max_model_len", "tokens", "token_strs"}. The body
/// is vLLM's completion form, {"prompt": TEXT, "add_special_tokens": true} (the ids a completion
/// of TEXT is given), or its chat form, {"messages": [...], "add_generation_prompt": true,
/// "add_special_tokens": false, "tools", "chat_template_kwargs", ...} (the chat endpoint's
/// prompt, rendered by `tmpl`); "return_token_strs": true adds each id's token in its
/// tokenizer.json form ("Ġthe", HF's convert_ids_to_tokens), else null. A prompt longer than the
/// context is counted, not refused (max_model_len is the context). Throws RequestError (400) for a
/// malformed body, a field of the wrong type, what the chat endpoint refuses in its messages, or a
/// model served without a tokenizer; ModelNotFound (404) when `model` names another model; and
/// what render_chat throws.
nlohmann::ordered_json tokenize_body(const Engine& engine, const chat::ChatTemplate& tmpl, const std::string& body);

/// The answer to a /detokenize body {"tokens": [ids]}: {"prompt": TEXT}, the ids decoded as HF's
/// tokenizer.decode(ids) (special tokens kept, vLLM's). Throws RequestError (400) for a malformed
/// body, `tokens` missing or not an array of integers, an id outside the model's vocabulary
/// (naming `tokens[i]`), or a model served without a tokenizer; ModelNotFound (404) as
/// tokenize_body.
nlohmann::ordered_json detokenize_body(const Engine& engine, const std::string& body);

}  // namespace lg::server
