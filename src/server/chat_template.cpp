#include "server/chat_template.h"

namespace lg::server {

std::string render_chatml(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace lg::server
