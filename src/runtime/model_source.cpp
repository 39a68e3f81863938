#include "runtime/model_source.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

#include "support/error.h"

#ifndef LG_REPO_MODELS_DIR
#define LG_REPO_MODELS_DIR ""
#endif

namespace lg::runtime {

namespace fs = std::filesystem;

std::vector<fs::path> builtin_model_source_dirs() {
  std::vector<fs::path> dirs;
  if (std::string(LG_REPO_MODELS_DIR).size()) dirs.emplace_back(LG_REPO_MODELS_DIR);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back(exe.parent_path().parent_path() / "share" / "lanegraph" / "models");
  return dirs;
}

std::vector<fs::path> model_source_dirs() {
  std::vector<fs::path> dirs, seen;
  const auto add = [&](fs::path d) {  // once each (LG_MODELS_DIR is often a built-in one)
    std::error_code ec;
    fs::path key = fs::weakly_canonical(d, ec);
    if (ec) key = d.lexically_normal();
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) return;
    seen.push_back(std::move(key));
    dirs.push_back(std::move(d));
  };
  if (const char* env = std::getenv("LG_MODELS_DIR"); env && *env) add(env);
  for (fs::path& d : builtin_model_source_dirs()) add(std::move(d));
  return dirs;
}

std::filesystem::path find_model_source(const model::ModelConfig& config) {
  const std::string& type = config.model_type;
  std::string archs;
  for (const auto& a : config.architectures) archs += (archs.empty() ? "" : ", ") + a;
  const std::string what = "model_type '" + type + "'" + (archs.empty() ? "" : " (" + archs + ")") + " in " + config.source;
  // model_type becomes a file name: refuse anything that could leave the folder.
  bool plain = !type.empty();
  for (char c : type) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  if (!plain) throw Error("no .lg program covers " + what + ": not a valid model_type");
  // A search path's missing folder is passed over, as PATH's are; but this one was set on purpose,
  // and the program then read is another than the user meant: said once, on stderr.
  if (const char* env = std::getenv("LG_MODELS_DIR"); env && *env) {
    static std::atomic<bool> warned = false;  // a library function: any thread may call it
    std::error_code ec;
    if (!fs::is_directory(env, ec) && !warned.exchange(true)) {
      std::fprintf(stderr, "lg: warning: LG_MODELS_DIR=%s is not a folder; looking for %s.lg in the built-in ones\n", env,
                   type.c_str());
    }
  }
  std::string searched;
  std::vector<std::string> known;  // the model_types the folders have a program for, said with the refusal
  for (const fs::path& dir : model_source_dirs()) {
    const fs::path file = dir / (type + ".lg");
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) return file;
    searched += "\n  " + file.string();
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".lg") known.push_back(e.path().stem().string());
  }
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  throw Error("no .lg program covers " + what + "; lanegraph knows the architectures with a <model_type>.lg file, looked for:" +
              searched + (list.empty() ? "" : "\n(those folders have programs for the model_types " + list + ")") +
              "\n(write one and pass it with --program FILE.lg, or set LG_MODELS_DIR to a folder holding " + type +
              ".lg)");
}

}  // namespace lg::runtime
