// A model's own chat template (Jinja2) and the special tokens transformers gives it, rendered as
// transformers' `tokenizer.apply_chat_template(messages, tools=..., add_generation_prompt=...,
// tokenize=False, **kwargs)` renders it (transformers 5: tokenization_utils_base.py and
// utils/chat_template_utils.py). The rendering itself is Jinja2's, through JinjaRenderer.
//
// Where the template comes from, as transformers 5 loads it: DIR/chat_template.jinja (with named
// extras in DIR/additional_chat_templates/NAME.jinja), else tokenizer_config.json's
// `chat_template`: a string, or a list of {"name", "template"} (then "tool_use" is chosen when
// tools are given and it exists, else "default"). The variables: `messages`, `tools` and
// `documents` (None when not given, as transformers passes them), `add_generation_prompt`, the
// named special tokens (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
// mask_token: tokenizer_config.json, gaps filled from special_tokens_map.json), then the caller's
// kwargs, which override special tokens (`{**special_tokens_map, **kwargs}`).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_error.h"
#include "chat/jinja_renderer.h"

namespace lg::chat {

/// What one rendering gets, as apply_chat_template's arguments.
struct ChatInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  ///< the conversation, each message as given
  nlohmann::ordered_json tools;                                       ///< null (None) or an array of tool schemas
  nlohmann::ordered_json documents;                                   ///< null (None) or an array of documents
  bool add_generation_prompt = true;
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  ///< further variables (enable_thinking, ...)
};

/// The template variables apply_chat_template sets itself; kwargs may not name them.
bool is_reserved_variable(const std::string& name);

/// True when `value` nests arrays/objects more than `levels` deep. Messages travel to Python's
/// json and Jinja2, which recurse per level (Python's limit is ~1000): callers refuse deeper input
/// with a clear error first. Stops looking at depth levels + 1, so it is cheap on any input.
bool nested_deeper_than(const nlohmann::ordered_json& value, size_t levels);

class ChatTemplate {
 public:
  /// Reads the template and special tokens of `model_dir` (see the file comment); `template_file`,
  /// when given, is the template instead (like vLLM's --chat-template). Throws lg::Error only for
  /// an unreadable or non-UTF-8 `template_file` (the caller's explicit input). Anything wrong with
  /// the model's own files (tokenizer_config.json not JSON, a `chat_template` or special token of
  /// the wrong type) is kept as problem() and thrown by render(), so a server can still serve
  /// plain completions.
  static ChatTemplate load(const std::filesystem::path& model_dir,
                           const std::optional<std::filesystem::path>& template_file,
                           std::shared_ptr<JinjaRenderer> renderer);

  /// True when a template was found (it may still be broken: see problem()).
  bool has_template() const { return !templates_.empty(); }
  /// Where the template comes from ("DIR/tokenizer_config.json (chat_template)"); empty if none.
  const std::string& origin() const { return origin_; }
  /// Why the model's template or special tokens cannot be used; empty when they can.
  const std::string& problem() const { return problem_; }
  /// The special tokens passed to the template, name -> text.
  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }

  /// Renders `input`. Throws ChatTemplateError: missing (no template; the message names the
  /// files looked at), broken (problem(), or the template does not compile: origin, line,
  /// reason), failed (the template's own error, e.g. its raise_exception message), too_large,
  /// timeout, unavailable (see JinjaRenderer).
  std::string render(const ChatInput& input) const;

  /// Compiles every template once (a syntax check) and returns the renderer's version, e.g.
  /// "Jinja2 3.1.2 on Python 3.11.2 (python3)". Throws ChatTemplateError like render().
  std::string check() const;

 private:
  const std::string& select(const ChatInput& input, std::string* name) const;
  void throw_if_unusable() const;
  std::string where(const std::string& name) const;
  /// chat_template.jinja and additional_chat_templates/: transformers 5 prefers these files to
  /// tokenizer_config.json's field. An unreadable one is a problem, not an exception.
  void load_template_files(const std::filesystem::path& model_dir, std::vector<std::string>& problems);
  /// tokenizer_config.json's `chat_template`: a string, or the list of {"name", "template"}
  /// transformers saves several templates as; a malformed one still counts as a (broken) template.
  void load_config_template(const nlohmann::json& ct, const std::filesystem::path& config_path,
                            std::vector<std::string>& problems);

  std::filesystem::path dir_;
  std::map<std::string, std::string> templates_;  // name -> source; a single template is "default"
  bool named_ = false;                            // the source gave names (list, additional_chat_templates)
  std::string origin_;
  std::string problem_;
  nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();
  std::shared_ptr<JinjaRenderer> renderer_;
};

}  // namespace lg::chat
