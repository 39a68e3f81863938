// Test helper: a temporary model directory made of links to another's files, for a test that
// changes one or two of them (a tokenizer_config.json's eos_token, a token of tokenizer.json)
// without copying the weights.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

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
};

}  // namespace lg::test
