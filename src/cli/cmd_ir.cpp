// `lg ir FILE.lg --config config.json [--max-seq N]`: lowers an .lg program against a model's
// config and prints the tensor IR, one line per node with its binding name and source line.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/numeric_checks.h"
#include "cli/program_options.h"
#include "ir/print.h"
#include "ir/verify.h"
#include "lang/lower.h"
#include "model/config.h"
#include "support/error.h"

LG_COMMAND("ir", [](CLI::App& app) {
  struct Opts {
    std::string file, config;
    int64_t max_seq = 0;
  };
  auto opts = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("ir", "Lower an .lg program against a model's config.json and print the tensor IR");
  lg::cli::add_program_options(sub, opts->file, opts->config);
  sub->add_option("--max-seq", opts->max_seq, "S, the KV-cache capacity (default: config max_position_embeddings)")
      ->check(lg::cli::context_length());
  return [opts]() -> int {
    const nlohmann::json config = lg::model::read_config_json(opts->config);
    lg::lang::BindOptions bind;
    bind.max_seq = opts->max_seq;
    if (const std::string w = lg::cli::max_seq_past_context(config, bind.max_seq); !w.empty())
      std::cerr << "lg ir: warning: " << w << "\n";  // as lg check and lg compile say it
    const lg::ir::Graph g =
        lg::cli::lower_naming_config(opts->config, [&] { return lg::lang::lower_file(opts->file, config, bind); });
    lg::ir::verify(g);
    std::cout << lg::ir::print(g);
    return 0;
  };
});
