// `lg template --model DIR --messages FILE.json [--no-generation-prompt] [--chat-template FILE]`:
// prints the prompt the model's chat template makes of a conversation, byte for byte what
// transformers' `tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=...)`
// returns (rendered by Jinja2 itself: src/chat/). The same template serves lg serve's chat
// endpoint, which first normalizes what clients send (docs/server.md); this command renders the
// messages exactly as the file holds them, as apply_chat_template does, or with --as-served reads
// the file as a chat request body and prints the prompt lg serve renders for it.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "chat/ordered_json.h"
#include "cli/command.h"
#include "server/openai.h"
#include "server/request.h"
#include "support/error.h"
#include "support/json_file.h"
#include "support/text_input.h"

namespace {

using json = nlohmann::ordered_json;  // key order kept, as Python reads the file

struct TemplateArgs {
  std::string model, messages, chat_template;
  bool no_generation_prompt = false;
  bool as_served = false;
};

// Python's json and Jinja2 recurse per level; deeper input is refused before them.
constexpr size_t kMaxNesting = 200;

std::string read_text(const std::string& path) {
  if (path == "-") return lg::read_text_input(std::cin, "standard input");
  std::ifstream f = lg::open_text_input(path, "messages file");
  return lg::read_text_input(f, path);
}

json read_json(const std::string& path) {
  const std::string text = read_text(path);
  try {
    return lg::chat::parse_ordered_json(text);
  } catch (const json::exception& e) {
    throw lg::Error(fmt::format("{}: not valid JSON: {}", path, lg::json_error_text(e)));
  }
}

// The file: an array of messages, or an object {"messages": [...], "tools": [...], "documents":
// [...], NAME: VALUE...} whose other keys are template kwargs (apply_chat_template(**kwargs)).
lg::chat::ChatInput read_input(const std::string& path, bool add_generation_prompt) {
  const json j = read_json(path);
  // Checked before anything copies the document: nlohmann's copy recurses per level, so copying
  // 100,000 nested arrays overflows the stack.
  if (lg::chat::nested_deeper_than(j, kMaxNesting))
    throw lg::Error(fmt::format("{}: nests arrays/objects more than {} levels deep", path, kMaxNesting));
  lg::chat::ChatInput in;
  in.add_generation_prompt = add_generation_prompt;
  if (j.is_array()) {
    in.messages = j;
  } else if (j.is_object()) {
    if (!j.contains("messages")) throw lg::Error(fmt::format("{}: has no 'messages'", path));
    for (const auto& [key, value] : j.items()) {
      if (key == "messages")
        in.messages = value;
      else if (key == "tools")
        in.tools = value;
      else if (key == "documents")
        in.documents = value;
      else if (key == "add_generation_prompt")
        throw lg::Error(
            fmt::format("{}: 'add_generation_prompt' is the command's choice (on unless "
                        "--no-generation-prompt), not the file's",
                        path));
      else
        in.kwargs[key] = value;
    }
  } else {
    throw lg::Error(
        fmt::format("{}: must hold an array of messages or an object with 'messages', not {}", path, j.type_name()));
  }
  if (!in.messages.is_array()) throw lg::Error(fmt::format("{}: 'messages' must be an array", path));
  // As lg serve answers it (templates index messages[0] and fail with their own words).
  if (in.messages.empty()) throw lg::Error(fmt::format("{}: 'messages' is empty", path));
  for (size_t i = 0; i < in.messages.size(); ++i) {
    if (!in.messages[i].is_object())
      throw lg::Error(fmt::format("{}: messages[{}] must be an object, not {}", path, i, in.messages[i].type_name()));
  }
  if (!in.tools.is_null() && !in.tools.is_array()) throw lg::Error(fmt::format("{}: 'tools' must be an array", path));
  if (!in.documents.is_null() && !in.documents.is_array())
    throw lg::Error(fmt::format("{}: 'documents' must be an array", path));
  return in;
}

// --as-served: the prompt lg serve renders for the chat request body in `path` (an array alone is
// its messages), after the server's checks and normalization (server/request.h: developer as
// system, text parts joined, tool_calls' arguments parsed, tools as vLLM passes them).
std::string render_as_served(const lg::chat::ChatTemplate& tmpl, const std::string& path, bool no_generation_prompt) {
  std::string body = read_text(path);
  if (const size_t first = body.find_first_not_of(" \t\r\n"); first != std::string::npos && body[first] == '[')
    body = "{\"messages\": " + body + "\n}";
  try {
    lg::server::ChatRequest r = lg::server::parse_chat_request(body);
    if (no_generation_prompt) r.add_generation_prompt = false;
    return lg::server::render_chat(tmpl, r);
  } catch (const lg::server::RequestError& e) {
    throw lg::Error(fmt::format("{}: lg serve would answer 400: {}", path, e.what()));
  }
}

}  // namespace

LG_COMMAND("template", [](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<TemplateArgs>();
  auto* sub = app.add_subcommand("template",
                                 "Print the prompt a model's chat template makes of a conversation "
                                 "(as transformers' apply_chat_template)");
  sub->add_option("--model,-m", args->model, "model directory (tokenizer_config.json or chat_template.jinja)")
      ->required()
      ->check(CLI::ExistingDirectory);
  sub->add_option("--messages", args->messages,
                  "JSON file: an array of messages, or {\"messages\": [...], \"tools\": [...], other template "
                  "variables}; - reads stdin")
      ->required();
  sub->add_flag("--no-generation-prompt", args->no_generation_prompt,
                "render without the assistant's generation prompt (add_generation_prompt=False)");
  sub->add_option("--chat-template", args->chat_template, "Jinja2 template file to use instead of the model's own")
      ->check(CLI::ExistingFile);
  sub->add_flag("--as-served", args->as_served,
                "read the file as a /v1/chat/completions body (or its messages array) and print the prompt lg serve "
                "renders for it (messages normalized as vLLM does: developer as system, text parts joined, tool "
                "call arguments parsed)");
  return [args] {
    std::optional<std::filesystem::path> file;
    if (!args->chat_template.empty()) file = args->chat_template;
    const auto tmpl = lg::chat::ChatTemplate::load(
        args->model, file, std::make_shared<lg::chat::JinjaRenderer>(lg::chat::RendererOptions{}));
    if (args->as_served) {
      std::cout << render_as_served(tmpl, args->messages, args->no_generation_prompt) << std::flush;
      return 0;
    }
    const lg::chat::ChatInput in = read_input(args->messages, !args->no_generation_prompt);
    std::string text;
    try {
      text = tmpl.render(in);
    } catch (const lg::chat::ChatTemplateError& e) {
      if (e.kind() == lg::chat::ChatTemplateError::Kind::failed)
        throw lg::Error(fmt::format("the chat template ({}) failed on {}: {}", tmpl.origin(), args->messages, e.what()));
      throw;
    }
    // Exactly the rendered text: no newline added, so the output compares byte for byte.
    std::cout << text << std::flush;
    return 0;
  };
});
