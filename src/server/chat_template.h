// The Qwen ChatML prompt: each message as `<|im_start|>{role}\n{content}<|im_end|>\n`, then
// `<|im_start|>assistant\n` so the model writes the reply (add_generation_prompt=True in the
// Hugging Face template). The tokenizer matches the special tokens written in this text.
#pragma once

#include <string>
#include <vector>

namespace lg::server {

struct ChatMessage {
  std::string role;     ///< "system", "user", "assistant" or "tool"
  std::string content;  ///< UTF-8 text
};

/// Renders `messages` with the ChatML template, ending with the assistant's generation prompt.
std::string render_chatml(const std::vector<ChatMessage>& messages);

}  // namespace lg::server
