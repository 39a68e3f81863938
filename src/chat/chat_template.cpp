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

  // Special tokens: tokenizer_config.json, gaps filled from special_tokens_map.json (older
  // checkpoints keep them there; transformers lets tokenizer_config.json win).
  // Read as every small JSON file is (support/json_file.h): key order does not matter here, and
  // nesting is bounded before a value is copied or printed into a message.
  const fs::path config_path = model_dir / "tokenizer_config.json";
  nlohmann::json config = nlohmann::json::object();
  if (fs::exists(config_path)) {
    const auto text = read_file(config_path);
    if (!text) {
      problems.push_back(fmt::format("{}: cannot be read", config_path.string()));
    } else {
      try {
        config = parse_json_text(*text, config_path.string());
        if (!config.is_object()) {
          problems.push_back(
              fmt::format("{}: must hold a JSON object, not {}", config_path.string(), config.type_name()));
          config = nlohmann::json::object();
        }
      } catch (const Error& e) {
        problems.push_back(e.what());
      }
    }
  }
  nlohmann::json fallback = nlohmann::json::object();
  if (const fs::path p = model_dir / "special_tokens_map.json"; fs::exists(p)) {
    try {
      const auto text = read_file(p);
      if (text) fallback = parse_json_text(*text, p.string());
    } catch (const Error&) {
      // transformers reads it only for tokens tokenizer_config.json lacks; a broken one is
      // reported if it is needed, below.
      fallback = nlohmann::json::object();
    }
    if (!fallback.is_object()) fallback = nlohmann::json::object();
  }
  for (const char* name : kSpecialTokenNames) {
    const nlohmann::json* v = nullptr;
    std::string from = config_path.string();
    if (config.contains(name) && !config[name].is_null())
      v = &config[name];
    else if (fallback.contains(name) && !fallback[name].is_null()) {
      v = &fallback[name];
      from = (model_dir / "special_tokens_map.json").string();
    }
    if (!v) continue;
    if (const auto s = token_text(*v))
      t.special_tokens_[name] = *s;
    else
      problems.push_back(
          fmt::format("{}: '{}' must be a string or an AddedToken object with a string 'content', got {}", from, name,
                      v->dump().substr(0, 80)));
  }

  // The template: an explicit file, else chat_template.jinja (+ additional_chat_templates/),
  // which transformers 5 prefers over tokenizer_config.json's field, else that field.
  auto read_template = [&](const fs::path& p, bool must) -> std::optional<std::string> {
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
  };
  if (template_file) {
    if (auto s = read_template(*template_file, true)) t.templates_["default"] = *s;
    t.origin_ = template_file->string();
  } else if (fs::exists(model_dir / "chat_template.jinja") ||
             fs::is_directory(model_dir / "additional_chat_templates")) {
    t.origin_ = (model_dir / "chat_template.jinja").string();
    if (fs::exists(model_dir / "chat_template.jinja")) {
      if (auto s = read_template(model_dir / "chat_template.jinja", false)) t.templates_["default"] = *s;
    }
    if (const fs::path extra = model_dir / "additional_chat_templates"; fs::is_directory(extra)) {
      t.named_ = true;
      t.origin_ = model_dir.string() + " (chat_template.jinja, additional_chat_templates/)";
      for (const auto& e : fs::directory_iterator(extra)) {
        if (e.path().extension() != ".jinja") continue;
        if (auto s = read_template(e.path(), false)) t.templates_[e.path().stem().string()] = *s;
      }
    }
  } else if (config.contains("chat_template") && !config["chat_template"].is_null()) {
    const nlohmann::json& ct = config["chat_template"];
    t.origin_ = config_path.string() + " (chat_template)";
    if (ct.is_string()) {
      t.templates_["default"] = ct.get<std::string>();
    } else if (ct.is_array()) {
      // transformers saves several templates as [{"name": ..., "template": ...}, ...].
      t.named_ = true;
      for (size_t i = 0; i < ct.size(); ++i) {
        const nlohmann::json& e = ct[i];
        if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("template") ||
            !e["template"].is_string()) {
          problems.push_back(fmt::format("{}: 'chat_template[{}]' must be an object with string 'name' and 'template'",
                                         config_path.string(), i));
          continue;
        }
        t.templates_[e["name"].get<std::string>()] = e["template"].get<std::string>();
      }
      if (t.templates_.empty()) t.templates_["default"] = "";  // it has one, broken: not "missing"
    } else {
      problems.push_back(
          fmt::format("{}: 'chat_template' must be a string or a list of {{\"name\", \"template\"}} "
                      "objects, got {}",
                      config_path.string(), ct.type_name()));
      t.templates_["default"] = "";
    }
  }
  for (const auto& p : problems) t.problem_ += (t.problem_.empty() ? "" : "; ") + p;
  return t;
}

void ChatTemplate::throw_if_unusable() const {
  // A problem first: with tokenizer_config.json unreadable, "no template" may not be true.
  if (!problem_.empty()) throw ChatTemplateError(Kind::broken, "the model's chat template cannot be used: " + problem_);
  if (templates_.empty())
    throw ChatTemplateError(
        Kind::missing,
        fmt::format("this model has no chat template ({} has no 'chat_template' and there is no "
                    "{}): give one with --chat-template FILE, or send a prompt in the model's own format "
                    "(lg serve: to /v1/completions)",
                    (dir_ / "tokenizer_config.json").string(), (dir_ / "chat_template.jinja").string()));
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
