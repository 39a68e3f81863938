// The options that size a lane (runtime/step.h, LaneOptions) for the commands that make one to
// serve many sequences (`lg serve`, `lg batch`, `lg run`): the same names, checks and help
// text, after vLLM's (--max-num-seqs, --max-num-batched-tokens) where it has them.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

#include "cli/numeric_checks.h"
#include "model/model_dir.h"
#include "runtime/model_source.h"
#include "runtime/step.h"

namespace lg::cli {

/// The default of --program, for its help: which folders hold the <model_type>.lg files, named
/// as this lg resolves them. A bare "models/" read as the working directory's folder; it is the
/// source tree's the build was made from, compiled in (runtime/model_source.h).
inline std::string program_default_help() {
  std::string dirs;
  for (const auto& d : lg::runtime::builtin_model_source_dirs()) dirs += ", then " + d.string();
  return "(default: <model_type>.lg, model_type read from config.json, looked for in $LG_MODELS_DIR when set" + dirs + ")";
}

/// Adds --model,-m (an existing model directory; required unless `optional_model`, as `lg serve
/// --shape` serves random weights without one) and --program (an existing .lg file in place of
/// the one the model's config names) to `sub`.
inline void add_model_options(CLI::App* sub, std::string& model, std::string& program, bool optional_model = false) {
  // A file (llama.cpp's model.gguf) is named as one, with what to give instead: CLI11's
  // ExistingDirectory said "Directory is actually a file".
  const CLI::Validator model_directory(
      [](std::string& path) -> std::string {
        if (std::filesystem::is_directory(path)) return "";
        if (!std::filesystem::exists(path)) return lg::model::missing_model_directory(path);
        return lg::model::not_a_model_directory(path);
      },
      "DIR");
  auto* m = sub->add_option("--model,-m", model, "model directory (config.json, model.safetensors, tokenizer.json)")
                ->check(model_directory);
  if (!optional_model) m->required();
  sub->add_option("--program", program, "the .lg program to run the model with " + program_default_help())
      ->check(CLI::ExistingFile);
}

/// The check of a --lane value: `--lane "$LANE"` with LANE unset used to run lg run and lg serve
/// on their default lane without a word (cpu, or handwritten with --device cuda or --shape),
/// where lg batch, lock and bench refuse the empty name as an unknown lane.
inline CLI::Validator lane_name() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        return s.empty() ? "needs a lane name (cpu, compiled, handwritten), got an empty one; leave --lane out for the default" : "";
      },
      "LANE");
}

/// Adds --kv-tokens, --max-batch, --max-step-tokens and --block-size to `sub`, writing `o`.
/// `kv_default` is --kv-tokens' default as the help states it (lg compile has no lane to ask).
inline void add_lane_options(CLI::App* sub, LaneOptions& o,
                             const std::string& kv_default = "the lane's; cpu: two contexts") {
  sub->add_option("--kv-tokens", o.kv_tokens,
                  "KV cache size in tokens, all sequences together (default: " + kv_default + ")")
      ->check(at_least_one());
  sub->add_option("--max-batch,--max-num-seqs", o.max_batch, "most sequences in one step (default 256)")
      ->check(int_in_range(1, 65536));
  sub->add_option("--max-step-tokens,--max-num-batched-tokens", o.max_tokens,
                  "most tokens in one step, all sequences together: the prefill chunk (default: "
                  "max(min(context, 2048), max-batch))")
      ->check(at_least_one());
  sub->add_option("--block-size", o.block_size, "positions per KV-cache block")
      ->capture_default_str()
      ->check(int_in_range(1, 4096));
}

}  // namespace lg::cli
