// The options of the commands that answer OpenAI requests (`lg serve`, `lg batch`): the names a
// request's "model" may give and the chat template, with the same names, checks and help text
// (a batch file written for a server names the model as the server does).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "server/engine.h"

namespace lg::cli {

/// Adds --served-model-name NAME... (vLLM's) to `sub`; call check_served_model_names from the
/// subcommand's callback.
inline void add_served_model_names(CLI::App* sub, std::vector<std::string>& names) {
  sub->add_option("--served-model-name", names,
                  "the names requests may give as 'model', each listed by /v1/models (the first is the id answers "
                  "carry; each name once); default: the model directory's name, and the directory as given")
      ->expected(1, -1);
}

/// A usage error (exit 2) while parsing, before the model loads, for names the engine would refuse
/// (`--served-model-name a a` listed `a` twice in GET /v1/models).
inline void check_served_model_names(const std::vector<std::string>& names) {
  if (const auto problem = lg::server::served_names_problem(names))
    throw CLI::ValidationError("--served-model-name: " + *problem);
}

/// Adds --chat-template FILE (an existing Jinja2 file, vLLM's) to `sub`.
inline void add_chat_template(CLI::App* sub, std::string& file) {
  sub->add_option("--chat-template", file,
                  "Jinja2 chat template file to use instead of the model's own (tokenizer_config.json)")
      ->check(CLI::ExistingFile);
}

}  // namespace lg::cli
