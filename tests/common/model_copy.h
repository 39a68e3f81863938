// Test helper: a temporary model directory made of links to another's files, for a test that
// changes one or two of them (a tokenizer_config.json's eos_token, a token of tokenizer.json)
// without copying the weights.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
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
  /// Rewrites model.safetensors (read through its link) with each tensor renamed by `rename`, as a
  /// checkpoint saved under other names would hold it; a tensor renamed to "" is left out. The
  /// header is written anew and the data repacked in the order of the original offsets.
  void rename_tensors(const std::function<std::string(const std::string&)>& rename) const {
    std::ifstream in(dir / "model.safetensors", std::ios::binary);
    uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, '\0');
    in.read(header.data(), static_cast<std::streamsize>(n));
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const nlohmann::json old = nlohmann::json::parse(header);
    std::vector<std::pair<uint64_t, std::string>> order;  // original offset, name
    for (const auto& [name, t] : old.items())
      if (name != "__metadata__") order.emplace_back(t.at("data_offsets")[0].get<uint64_t>(), name);
    std::sort(order.begin(), order.end());
    nlohmann::json out = nlohmann::json::object();
    if (old.contains("__metadata__")) out["__metadata__"] = old["__metadata__"];
    std::string packed;
    for (const auto& [begin, name] : order) {
      const std::string to = rename(name);
      if (to.empty()) continue;
      nlohmann::json t = old.at(name);
      const uint64_t end = t["data_offsets"][1].get<uint64_t>();
      t["data_offsets"] = {packed.size(), packed.size() + (end - begin)};
      packed.append(data, begin, end - begin);
      out[to] = t;
    }
    const std::string text = out.dump();
    std::filesystem::remove(dir / "model.safetensors");
    std::ofstream f(dir / "model.safetensors", std::ios::binary);
    const uint64_t len = text.size();
    f.write(reinterpret_cast<const char*>(&len), 8);
    f << text << packed;
  }
  /// Adds to model.safetensors the tensor `to`: the F32 tensor `from` with every element times
  /// `scale` (an untied LM head made from the embedding, whose logits are then `scale` times the
  /// tied ones). The data is appended, so the other tensors' offsets stay as they are.
  void add_scaled_copy(const std::string& from, const std::string& to, float scale) const {
    std::ifstream in(dir / "model.safetensors", std::ios::binary);
    uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, '\0');
    in.read(header.data(), static_cast<std::streamsize>(n));
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    nlohmann::json h = nlohmann::json::parse(header);
    nlohmann::json t = h.at(from);
    if (t.at("dtype") != "F32") throw std::runtime_error("add_scaled_copy: " + from + " is not F32");
    const uint64_t begin = t["data_offsets"][0].get<uint64_t>(), end = t["data_offsets"][1].get<uint64_t>();
    std::vector<float> values((end - begin) / sizeof(float));
    std::memcpy(values.data(), data.data() + begin, end - begin);
    for (float& v : values) v *= scale;
    t["data_offsets"] = {data.size(), data.size() + (end - begin)};
    data.append(reinterpret_cast<const char*>(values.data()), end - begin);
    h[to] = t;
    const std::string text = h.dump();
    in.close();
    std::filesystem::remove(dir / "model.safetensors");
    std::ofstream f(dir / "model.safetensors", std::ios::binary);
    const uint64_t len = text.size();
    f.write(reinterpret_cast<const char*>(&len), 8);
    f << text << data;
  }
  /// rename_tensors dropping `prefix` from every tensor name that has it ("transformer." for a
  /// checkpoint saved without its base prefix, as openai-community/gpt2's is), leaving out the
  /// tensor `leave_out` names (original name; "" keeps all). Returns how many names it shortened.
  size_t drop_tensor_prefix(const std::string& prefix, const std::string& leave_out = "") const {
    size_t dropped = 0;
    rename_tensors([&](const std::string& name) {
      if (!leave_out.empty() && name == leave_out) return std::string();
      if (!name.starts_with(prefix)) return name;
      ++dropped;
      return name.substr(prefix.size());
    });
    return dropped;
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
