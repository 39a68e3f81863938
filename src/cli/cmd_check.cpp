// `lg check FILE.lg --config config.json`: checks an .lg program against a model's config and
// prints what it binds to (dims, params with their checkpoint tensors, state) and the type of
// every forward statement, and a note when the compiler's lifting would refuse a statement (or no
// lane could run the program in batched steps). Exit
// 1 with the diagnostics when the program does not check. A config beside a checkpoint whose
// tensors the params do not fit gets a note (runtime::param_problems).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/numeric_checks.h"
#include "cli/program_options.h"
#include "ir/batch.h"
#include "lang/lower.h"
#include "lang/value.h"
#include "lift/lift.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "runtime/bind_params.h"
#include "runtime/forward_graph.h"
#include "runtime/step.h"
#include "support/count_noun.h"
#include "support/error.h"
#include "support/text_input.h"

namespace {

namespace fs = std::filesystem;

size_t width(const std::vector<lg::lang::CheckReport::Named>& v) {
  size_t w = 0;
  for (const auto& n : v) w = std::max(w, n.name.size());
  return w;
}

}  // namespace

LG_COMMAND("check", [](CLI::App& app) {
  struct Opts {
    std::string file, config;
    int64_t max_seq = 0;
    bool quiet = false;
  };
  auto opts = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("check", "Check an .lg program against a model's config.json and print its bound "
                                          "dims, params, state and the type of every forward statement");
  lg::cli::add_program_options(sub, opts->file, opts->config);
  sub->add_option("--max-seq", opts->max_seq, "S, the KV-cache capacity (default: config max_position_embeddings)")
      ->check(lg::cli::context_length());
  sub->add_flag("--quiet,-q", opts->quiet, "print nothing when the program checks");
  return [opts]() -> int {
    nlohmann::json config = lg::model::read_config_json(opts->config);
    lg::lang::BindOptions bind;
    bind.max_seq = opts->max_seq;
    // Said as lg compile says it, before the program's own errors (even with -q: a warning, on stderr).
    if (const std::string w = lg::cli::max_seq_past_context(config, bind.max_seq); !w.empty())
      std::cerr << "lg check: warning: " << w << "\n";
    lg::lang::CheckOutcome out;
    {
      std::ifstream in(opts->file, std::ios::binary);
      if (!in) throw lg::Error("cannot read " + opts->file);
      out = lg::lang::check_source(opts->file, lg::read_text_input(in, opts->file), config, bind);
    }
    if (!out.ok) {
      std::cerr << out.rendered << lg::cli::config_note(opts->config) << "\n";
      return 1;
    }
    if (opts->quiet) return 0;
    const auto& r = out.report;
    const auto& names = r.graph.symbols;
    std::vector<std::string> sym;
    for (const auto& s : names) sym.push_back(s.name);
    fmt::print("model {}: {} checks against {}\n", r.model, opts->file, opts->config);
    fmt::print("\ndims:\n");
    size_t w = width(r.dims);
    for (const auto& d : r.dims) fmt::print("  {:<{}} = {}\n", d.name, w, d.value);
    for (const auto& s : r.symbols) fmt::print("  {} (runtime)\n", s);
    if (!r.consts.empty()) {
      fmt::print("\nconsts:\n");
      w = width(r.consts);
      for (const auto& c : r.consts) fmt::print("  {:<{}} = {}\n", c.name, w, c.value);
    }
    fmt::print("\nparams ({} declared, {} checkpoint tensors):\n", r.params.size(), r.graph.params.size());
    size_t nw = 0, tw = 0;
    std::vector<std::string> types;
    for (const auto& p : r.params) {
      nw = std::max(nw, p.name.size());
      types.push_back(lg::lang::format_type(p.dtype, p.shape, sym));
      tw = std::max(tw, types.back().size());
    }
    for (size_t k = 0; k < r.params.size(); ++k) {
      const auto& p = r.params[k];
      fmt::print("  {:<{}}  {:<{}}  {}\n", p.name, nw, types[k], tw, p.tensor.empty() ? "(absent)" : p.tensor);
    }
    if (!r.states.empty()) {
      fmt::print("\nstate:\n");
      w = width(r.states);
      for (const auto& s : r.states) fmt::print("  {:<{}}  {}\n", s.name, w, s.value);
    }
    fmt::print("\nforward (statements inside `for` shown for the first layer):\n");
    size_t sw = 0;
    for (const auto& s : r.statements) sw = std::max(sw, s.target.size());
    for (const auto& s : r.statements)
      fmt::print("  {:>4}:{:<3} {:<{}}  {}\n", s.span.line, s.span.col, s.target, sw, s.type);
    const auto count = [](size_t n, const char* noun) { return lg::count_noun(static_cast<int64_t>(n), noun); };
    fmt::print("\nIR: {}, {}, {}, {}\n", count(r.graph.nodes.size(), "node"), count(r.graph.params.size(), "param"),
               count(r.graph.states.size(), "state"), count(r.graph.outputs.size(), "output"));
    // A statement whose value nothing the forward returns or keeps reads (left over while editing):
    // the cpu lane computes it, the compiler leaves it out; as a compiler's unused variable, said.
    const std::vector<char> live = lg::ir::live_nodes(r.graph);
    for (const auto& s : r.statements) {
      bool seen = false, used = false;
      for (size_t i = 0; i < r.graph.nodes.size() && !used; ++i) {
        const lg::ir::Node& n = r.graph.nodes[i];
        if (n.span.line != s.span.line || n.name != s.target) continue;
        seen = true;
        used = live[i] != 0;
      }
      if (seen && !used)
        fmt::print("\nnote: line {}: `{}` is never used (nothing the forward returns or keeps reads it)\n",
                   s.span.line, s.target);
    }
    // Every lane runs batched steps (docs/language.md, "Batched steps"), so a program the batching
    // rewrite cannot page (a state read other than whole by attention, a state never written) is
    // refused by lg run, serve and batch at load, on the cpu lane too: say so here, where it
    // checked clean and said nothing, as the refusal of a statement the compiler cannot lift is.
    bool batches = true;
    for (const auto& problem : {lg::runtime::forward_inputs_problem(r.graph), lg::runtime::forward_logits_problem(r.graph)})
      if (problem && batches) {
        batches = false;
        fmt::print("\nnote: no lane would run this program as a model (lg run, serve and batch refuse it at load):\n  "
                   "the forward {}\n", *problem);
      }
    // Logits one column per token id of this config, as lg run requires (a program returning a
    // slice of them, or sized by another key, checked clean here and was refused only there).
    if (const auto v = config.find("vocab_size"); batches && v != config.end() && v->is_number_integer())
      if (const auto problem = lg::runtime::forward_vocab_problem(r.graph, v->get<int64_t>(),
                                                                  lg::model::config_json_path(opts->config).string())) {
        batches = false;
        fmt::print("\nnote: no lane would run this program as a model (lg run, serve and batch refuse it at load):\n  "
                   "the forward {}\n", *problem);
      }
    if (batches) {
      try {
        lg::ir::Graph batched = r.graph;
        const int64_t S = r.graph.symbols.empty() ? 0 : r.graph.symbols[0].max;
        const lg::LaneLimits l = lg::resolve_limits({}, S, S);
        lg::ir::make_batched(batched, {l.block_size, l.num_blocks, l.max_batch, l.max_tokens});
      } catch (const lg::Error& e) {
        batches = false;
        fmt::print("\nnote: no lane would run this program (lg run, serve and batch refuse it at load):\n  {}\n",
                   e.what());
      }
    }
    // A program can be well typed and still have a statement no stage kind expresses (a matmul
    // over the tokens of a step): say so here rather than only at `lg compile`. The CPU lane
    // runs it either way (when it batches), so the check itself passes.
    try {
      (void)lg::lift::lift(r.graph);
    } catch (const lg::Error& e) {
      fmt::print("\nnote: the compiled lane would refuse this program{}:\n  {}\n", batches ? " (the cpu lane runs it)" : "",
                 e.what());
    }
    // A config beside a checkpoint (a model directory): whether the params' tensors are in it, as
    // `lg run` will require (a misspelt tensor name checked clean here and failed only there).
    // A note, not a failure: the check is of the program against the config.
    const fs::path cfg(opts->config), dir = fs::is_directory(cfg) ? cfg : cfg.parent_path();
    // Weights declared and never read, or a checkpoint's tensors no param binds: what `lg run`
    // warns of at load (unused_weight_warnings), said here too.
    std::vector<std::string> unused;
    const std::string program = fs::path(opts->file).filename().string();
    if (fs::exists(dir / "model.safetensors") || fs::exists(dir / "model.safetensors.index.json")) {
      const lg::model::Checkpoint checkpoint = lg::model::Checkpoint::open(dir);
      const auto problems = lg::runtime::param_problems_as_loaded(r.graph, checkpoint);
      if (!problems.empty()) {
        fmt::print("\nnote: the params do not fit the checkpoint in {} (`lg run` would refuse it):\n", dir.string());
        for (const auto& p : lg::runtime::group_by_layer(problems)) fmt::print("  {}\n", p);
      } else {
        lg::ir::Graph loaded = r.graph;
        lg::runtime::drop_absent_base_prefix(loaded, checkpoint);
        const auto tie = config.find("tie_word_embeddings");
        const bool tied = tie != config.end() && tie->is_boolean() && tie->get<bool>();
        unused = lg::runtime::unused_weight_warnings(loaded, &checkpoint, tied, program);
      }
    } else {
      unused = lg::runtime::unused_weight_warnings(r.graph, nullptr, false, program);
    }
    for (const std::string& note : unused) fmt::print("\nnote: {}\n", note);
    return 0;
  };
});
