// Test helper: a temporary model directory made of links to another's files, for a test that
// changes one or two of them (a tokenizer_config.json's eos_token, a token of tokenizer.json)
// without copying the weights.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace lg::test {

/// Links to every file of `source` in a fresh temp directory, removed at the end. A file the test
/// writes replaces its link; the original is never touched.
struct ModelCopy {
  std::filesystem::path dir;

  explicit ModelCopy(const std::filesystem::path& source) {
    dir = std::filesystem::temp_directory_path() / ("lg_model_copy_" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir);
    for (const auto& e : std::filesystem::directory_iterator(source))
      std::filesystem::create_symlink(std::filesystem::absolute(e.path()), dir / e.path().filename());
  }
  ~ModelCopy() { std::filesystem::remove_all(dir); }
  ModelCopy(const ModelCopy&) = delete;
  ModelCopy& operator=(const ModelCopy&) = delete;

  /// Makes `name` a file of the copy holding `text` (in place of its link, if any).
  void write(const std::string& name, const std::string& text) const {
    std::filesystem::remove(dir / name);
    std::ofstream(dir / name, std::ios::binary) << text;
  }
  /// Rewrites the JSON file `name` (read through its link) with `edit` applied.
  void edit_json(const std::string& name, const std::function<void(nlohmann::json&)>& edit) const {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(dir / name));
    edit(j);
    write(name, j.dump());
  }
  /// Makes the first of `among` whose tokenizer.json form holds a byte-level "Ġ" (space) or "Ċ"
  /// (newline) an added token marked "special", as Llama 2's <s> is one inside its vocabulary, and
  /// returns its id (-1: none). No prompt text spells such a form (added tokens are matched in the
  /// raw text), so prompts keep their ids while generated text that holds the token changes with
  /// skip_special_tokens: a model that never generates its own special tokens can show it.
  int32_t mark_special_token(const std::vector<int32_t>& among) const {
    int32_t marked = -1;
    edit_json("tokenizer.json", [&](nlohmann::json& j) {
      std::map<int32_t, std::string> forms;
      for (const auto& [form, id] : j["model"]["vocab"].items())
        if (std::find(among.begin(), among.end(), id.get<int32_t>()) != among.end()) forms[id.get<int32_t>()] = form;
      for (const int32_t id : among) {
        const auto it = forms.find(id);
        if (it == forms.end() || (it->second.find("Ġ") == std::string::npos && it->second.find("Ċ") == std::string::npos))
          continue;
        j["added_tokens"].push_back({{"id", id}, {"content", it->second}, {"single_word", false}, {"lstrip", false},
                                     {"rstrip", false}, {"normalized", false}, {"special", true}});
        marked = id;
        return;
      }
    });
    return marked;
  }
};

}  // namespace lg::test
