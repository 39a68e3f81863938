#include "chat/chat_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <vector>

#include "support/error.h"
#include "support/json_file.h"
#include "support/text_input.h"

namespace lg::chat {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;  // key order kept, as in Python dicts (tojson, items())
using Kind = ChatTemplateError::Kind;

namespace {

// transformers 5's SPECIAL_TOKENS_ATTRIBUTES: special_tokens_map holds these, as strings.
constexpr std::array<const char*, 7> kSpecialTokenNames = {"bos_token", "eos_token", "unk_token", "sep_token",
                                                           "pad_token", "cls_token", "mask_token"};

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::string text = read_text_input(f, path.string());
  if (f.bad()) return std::nullopt;
  return text;
}

bool valid_utf8(const std::string& s) {
  try {
    (void)json(s).dump();  // the strict handler throws on a byte sequence that is not UTF-8
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

// A special token as tokenizer_config.json writes it: a string, or an AddedToken object
// ({"__type": "AddedToken", "content": "<s>", ...}); null means unset.
std::optional<std::string> token_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

// tokenizer_config.json, or an empty object when it is absent or unusable. Its faults go to
// `problems`, not thrown: the model can still serve plain completions without a template.
nlohmann::json read_tokenizer_config(const fs::path& path, std::vector<std::string>& problems) {
  if (!fs::exists(path)) return nlohmann::json::object();
  // Read as every small JSON file is (support/json_file.h): key order does not matter here, and
  // nesting is bounded before a value is copied or printed into a message.
  const auto text = read_file(path);
  if (!text) {
    problems.push_back(fmt::format("{}: cannot be read", path.string()));
    return nlohmann::json::object();
  }
  try {
    nlohmann::json config = parse_json_text(*text, path.string());
    if (config.is_object()) return config;
    problems.push_back(fmt::format("{}: must hold a JSON object, not {}", path.string(), config.type_name()));
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  return nlohmann::json::object();
}

// special_tokens_map.json, or an empty object: transformers reads it only for the tokens
// tokenizer_config.json lacks, so a broken one counts as absent rather than as a problem.
nlohmann::json read_special_tokens_map(const fs::path& path) {
  nlohmann::json map = nlohmann::json::object();
  if (!fs::exists(path)) return map;
  try {
    const auto text = read_file(path);
    if (text) map = parse_json_text(*text, path.string());
  } catch (const Error&) {
    map = nlohmann::json::object();
  }
  if (!map.is_object()) map = nlohmann::json::object();
  return map;
}

// The special tokens, name -> text, in kSpecialTokenNames' order: tokenizer_config.json's, gaps
// filled from special_tokens_map.json (older checkpoints keep them there; transformers lets
// tokenizer_config.json win). A token of the wrong type goes to `problems`, naming its file.
json special_tokens_from(const nlohmann::json& config, const fs::path& config_path, const nlohmann::json& fallback,
                         const fs::path& fallback_path, std::vector<std::string>& problems) {
  json tokens = json::object();
  for (const char* name : kSpecialTokenNames) {
    const nlohmann::json* v = nullptr;
    std::string from = config_path.string();
    if (config.contains(name) && !config[name].is_null())
      v = &config[name];
    else if (fallback.contains(name) && !fallback[name].is_null()) {
      v = &fallback[name];
      from = fallback_path.string();
    }
    if (!v) continue;
    if (const auto s = token_text(*v))
      tokens[name] = *s;
    else
      problems.push_back(
          fmt::format("{}: '{}' must be a string or an AddedToken object with a string 'content', got {}", from, name,
                      v->dump().substr(0, 80)));
  }
  return tokens;
}

// A template file's text. Only the caller's own --chat-template file (`must`) throws: a fault in
// the model's files goes to `problems`, so that the model can still serve plain completions.
std::optional<std::string> read_template(const fs::path& p, bool must, std::vector<std::string>& problems) {
  auto text = read_file(p);
  std::string why;
  if (!text)
    why = fmt::format("{}: cannot be read", p.string());
  else if (!valid_utf8(*text))
    why = fmt::format("{}: not valid UTF-8", p.string());
  else
    return text;
  if (must) throw Error(why);
  problems.push_back(why);
  return std::nullopt;
}

}  // namespace

bool is_reserved_variable(const std::string& name) {
  return name == "messages" || name == "tools" || name == "documents" || name == "add_generation_prompt";
}

bool nested_deeper_than(const json& value, size_t levels) {
  if (!value.is_structured()) return false;
  if (levels == 0) return true;
  for (const auto& child : value) {
    if (nested_deeper_than(child, levels - 1)) return true;
  }
  return false;
}

ChatTemplate ChatTemplate::load(const fs::path& model_dir, const std::optional<fs::path>& template_file,
                                std::shared_ptr<JinjaRenderer> renderer) {
  ChatTemplate t;
  t.dir_ = model_dir;
  t.renderer_ = std::move(renderer);
  std::vector<std::string> problems;
  const fs::path config_path = model_dir / "tokenizer_config.json";
  const nlohmann::json config = read_tokenizer_config(config_path, problems);
  const fs::path map_path = model_dir / "special_tokens_map.json";
  t.special_tokens_ = special_tokens_from(config, config_path, read_special_tokens_map(map_path), map_path, problems);

  // The template: an explicit file, else chat_template.jinja (+ additional_chat_templates/),
  // which transformers 5 prefers over tokenizer_config.json's field, else that field.
  if (template_file) {
    if (auto s = read_template(*template_file, true, problems)) t.templates_["default"] = *s;
    t.origin_ = template_file->string();
  } else if (fs::exists(model_dir / "chat_template.jinja") ||
             fs::is_directory(model_dir / "additional_chat_templates")) {
    t.load_template_files(model_dir, problems);
  } else if (config.contains("chat_template") && !config["chat_template"].is_null()) {
    t.load_config_template(config["chat_template"], config_path, problems);
  }
  for (const auto& p : problems) t.problem_ += (t.problem_.empty() ? "" : "; ") + p;
  return t;
}

void ChatTemplate::load_template_files(const fs::path& model_dir, std::vector<std::string>& problems) {
  origin_ = (model_dir / "chat_template.jinja").string();
  if (fs::exists(model_dir / "chat_template.jinja")) {
    if (auto s = read_template(model_dir / "chat_template.jinja", false, problems)) templates_["default"] = *s;
  }
  if (const fs::path extra = model_dir / "additional_chat_templates"; fs::is_directory(extra)) {
    named_ = true;
    origin_ = model_dir.string() + " (chat_template.jinja, additional_chat_templates/)";
    for (const auto& e : fs::directory_iterator(extra)) {
      if (e.path().extension() != ".jinja") continue;
      if (auto s = read_template(e.path(), false, problems)) templates_[e.path().stem().string()] = *s;
    }
  }
}

void ChatTemplate::load_config_template(const nlohmann::json& ct, const fs::path& config_path,
                                        std::vector<std::string>& problems) {
  origin_ = config_path.string() + " (chat_template)";
  if (ct.is_string()) {
    templates_["default"] = ct.get<std::string>();
  } else if (ct.is_array()) {
    // transformers saves several templates as [{"name": ..., "template": ...}, ...].
    named_ = true;
    for (size_t i = 0; i < ct.size(); ++i) {
      const nlohmann::json& e = ct[i];
      if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("template") ||
          !e["template"].is_string()) {
        problems.push_back(fmt::format("{}: 'chat_template[{}]' must be an object with string 'name' and 'template'",
                                       config_path.string(), i));
        continue;
      }
      templates_[e["name"].get<std::string>()] = e["template"].get<std::string>();
    }
    if (templates_.empty()) templates_["default"] = "";  // it has one, broken: not "missing"
  } else {
    problems.push_back(
        fmt::format("{}: 'chat_template' must be a string or a list of {{\"name\", \"template\"}} "
                    "objects, got {}",
                    config_path.string(), ct.type_name()));
    templates_["default"] = "";
  }
}

void ChatTemplate::throw_if_unusable() const {
  // A problem first: with tokenizer_config.json unreadable, "no template" may not be true.
  if (!problem_.empty()) throw ChatTemplateError(Kind::broken, "the model's chat template cannot be used: " + problem_);
  if (!templates_.empty()) return;
  std::error_code ec;
  const fs::path config = dir_ / "tokenizer_config.json";
  throw ChatTemplateError(
      Kind::missing,
      fmt::format("this model has no chat template ({} {} and there is no {}): give one with --chat-template "
                  "FILE, or send a prompt in the model's own format (lg serve: to /v1/completions)",
                  config.string(), fs::exists(config, ec) ? "has no 'chat_template'" : "does not exist",
                  (dir_ / "chat_template.jinja").string()));
}

const std::string& ChatTemplate::select(const ChatInput& input, std::string* name) const {
  // transformers' choice among named templates: "tool_use" when tools are given, else "default".
  if (!input.tools.is_null() && templates_.count("tool_use"))
    *name = "tool_use";
  else if (templates_.count("default"))
    *name = "default";
  else {
    std::string names;
    for (const auto& [n, _] : templates_) names += (names.empty() ? "" : ", ") + n;
    throw ChatTemplateError(
        Kind::broken, fmt::format("{} has several chat templates ({}) and none is named 'default'", origin_, names));
  }
  return templates_.at(*name);
}

std::string ChatTemplate::where(const std::string& name) const {
  return named_ ? fmt::format("{}, template '{}'", origin_, name) : origin_;
}

std::string ChatTemplate::render(const ChatInput& input) const {
  throw_if_unusable();
  std::string name;
  const std::string& source = select(input, &name);
  // {**special_tokens_map, **kwargs}, then apply_chat_template's own arguments.
  json vars = special_tokens_;
  if (input.kwargs.is_object()) {
    for (const auto& [k, v] : input.kwargs.items()) vars[k] = v;
  }
  vars["messages"] = input.messages;
  vars["tools"] = input.tools;
  vars["documents"] = input.documents;
  vars["add_generation_prompt"] = input.add_generation_prompt;
  try {
    return renderer_->render(source, vars);
  } catch (const ChatTemplateError& e) {
    if (e.kind() == Kind::broken) throw ChatTemplateError(Kind::broken, fmt::format("{}: {}", where(name), e.what()));
    throw;
  }
}

std::string ChatTemplate::check() const {
  throw_if_unusable();
  for (const auto& [name, source] : templates_) {
    try {
      renderer_->check_syntax(source);
    } catch (const ChatTemplateError& e) {
      if (e.kind() == Kind::broken) throw ChatTemplateError(Kind::broken, fmt::format("{}: {}", where(name), e.what()));
      throw;
    }
  }
  return renderer_->engine_version();
}

}  // namespace lg::chat
