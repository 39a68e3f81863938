#include "runtime/forward_graph.h"

#include <fmt/format.h>

#include <string>

#include "ir/print.h"
#include "ir/verify.h"
#include "lang/lower.h"
#include "runtime/bind_params.h"
#include "runtime/model_source.h"
#include "support/error.h"

namespace lg::runtime {

std::filesystem::path program_source(const model::ModelDir& dir) {
  return dir.program.empty() ? find_model_source(dir.config) : dir.program;
}

namespace {

ir::Graph lower(const std::filesystem::path& source, const model::ModelConfig& config, int64_t max_seq) {
  lang::BindOptions opts;
  opts.max_seq = max_seq;
  ir::Graph g = lang::lower_file(source, config.raw, opts);
  ir::verify(g);
  return g;
}

// S: the bound of the step's token count, symbol 0 (lang/lower.h).
int64_t context_of(const ir::Graph& g) { return g.symbols.empty() ? 0 : g.symbols[0].max; }

// The program lowered at its own context (max_seq 0: its S, or config max_position_embeddings),
// or, where that does not check and the run gives a max sequence length, at that length. Some
// programs bind only below their config's context and say so: phi3.lg refuses an S past
// config.sliding_window (Phi-3-mini-4k: a window of 2047 of its 4096 positions) and asks for
// --max-seq, and a config without max_position_embeddings asks for one; lowering at the
// native context alone refused lg run, serve and batch whatever --max-seq they were given.
// `native` (when not null) says which of the two the graph is.
ir::Graph lower_at_context(const std::filesystem::path& source, const model::ModelConfig& config, int64_t max_seq,
                           bool* native = nullptr) {
  if (native) *native = true;
  try {
    return lower(source, config, 0);
  } catch (const Error&) {
    if (max_seq <= 0) throw;
  }
  // The run's length either checks, or its own error (a --max-seq past the window) is the one to say.
  if (native) *native = false;
  return lower(source, config, max_seq);
}

// The runtime feeds a forward T tokens per step and samples from one row of logits per token, so
// a program that runs a model must return one f32[T, V] output with V = config.json's vocab_size:
// without this a program returning [T, D] (or a fixed T) ran, sampled ids from the wrong row width
// and blamed the tokenizer, or reported a context of 0 tokens.
void check_logits_output(const ir::Graph& g, const std::filesystem::path& source, const model::ModelConfig& config) {
  const std::string where = source.string() + ": the forward";
  if (g.symbols.empty())
    throw Error(where + " has no runtime token count T: a model's forward takes tokens: i32[T], pos: i32[T]");
  if (const auto problem = forward_inputs_problem(g)) throw Error(where + " " + *problem);
  if (const auto problem = forward_logits_problem(g)) throw Error(where + " " + *problem);
  if (const auto problem = forward_vocab_problem(g, config.vocab_size, config.source)) throw Error(where + " " + *problem);
}

}  // namespace

std::optional<std::string> forward_logits_problem(const ir::Graph& g) {
  if (g.outputs.size() != 1)
    return "returns " + std::to_string(g.outputs.size()) + " values; a model's forward returns one, the logits f32[T, V]";
  const ir::Shape& shape = g.at(g.outputs[0]).shape;
  const bool t_rows = shape.size() == 2 && shape[0] == ir::Dim::symbol(0) && shape[1].is_const() && shape[1].coeff > 0;
  // Every lane reads the logits as f32 (an i32 or bool output was read as floats past its end).
  if (t_rows && g.at(g.outputs[0]).dtype == DType::F32) return std::nullopt;
  return "returns " + ir::type_string(g, g.at(g.outputs[0]).dtype, shape) +
         "; a model's forward returns the logits f32[T, V], one row per token";
}

std::optional<std::string> forward_vocab_problem(const ir::Graph& g, int64_t vocab_size, const std::string& config_source) {
  const int64_t width = g.at(g.outputs.at(0)).shape.at(1).coeff;
  if (vocab_size <= 0 || width == vocab_size) return std::nullopt;
  return "returns logits [T, " + std::to_string(width) + "], but " + config_source + " has vocab_size " +
         std::to_string(vocab_size) + ": the logits must have one column per token id";
}

std::optional<std::string> forward_inputs_problem(const ir::Graph& g) {
  const ir::Dim T = ir::Dim::symbol(0);
  bool ok = g.inputs.size() == 2 && g.inputs[0].name != g.inputs[1].name;
  for (const ir::InputInfo& in : g.inputs)
    ok = ok && (in.name == "tokens" || in.name == "pos") && in.dtype == DType::I32 && in.shape == ir::Shape{T};
  if (ok) return std::nullopt;
  std::string declared;
  for (const ir::InputInfo& in : g.inputs)
    declared += (declared.empty() ? "" : ", ") + in.name + ": " + ir::type_string(g, in.dtype, in.shape);
  return "is declared forward(" + declared +
         "); every lane feeds a model's forward(tokens: i32[T], pos: i32[T]), the step's token ids and their positions";
}

void resolve_program(model::ModelDir& dir, const std::filesystem::path& program, int64_t max_seq) {
  if (!program.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(program, ec))
      throw Error(program.string() + ": no such .lg program (--program)");
    if (!std::filesystem::is_regular_file(program, ec))
      throw Error(program.string() + ": not a regular file, not a .lg program (--program)");
    dir.program = program;
  }
  const std::filesystem::path source = program_source(dir);
  ir::Graph g = lower_at_context(source, dir.config, max_seq);
  check_logits_output(g, source, dir.config);
  drop_absent_base_prefix(g, dir.checkpoint);
  check_params(g, dir.checkpoint);
  // Weights loaded and never read, or never loaded: the program runs, and answers without them.
  const std::string name = source.filename().string();
  for (const std::string& w : unused_weight_warnings(g, &dir.checkpoint, dir.config.tie_word_embeddings, name))
    fmt::print(stderr, "lg: warning: {}\n", w);
  dir.context = context_of(g);
  dir.vocab = g.at(g.outputs.at(0)).shape.back().coeff;
}

std::string context_origin(const model::ModelDir& dir) {
  if (dir.config.max_position_embeddings > 0 && dir.config.max_position_embeddings == dir.context)
    return "max_position_embeddings in config.json";
  return "the S that " + program_source(dir).filename().string() + " declares";
}

ForwardGraph forward_graph(const model::ModelDir& dir, int64_t max_seq) {
  ForwardGraph fg = forward_graph(dir.config, max_seq, program_source(dir));
  drop_absent_base_prefix(fg.graph, dir.checkpoint);  // the names every lane then reads
  check_params(fg.graph, dir.checkpoint);
  return fg;
}

ForwardGraph forward_graph(const model::ModelConfig& config, int64_t max_seq) {
  return forward_graph(config, max_seq, find_model_source(config));
}

ForwardGraph forward_graph(const model::ModelConfig& config, int64_t max_seq, const std::filesystem::path& source) {
  if (max_seq < 0) throw Error("max sequence length must be >= 0, got " + std::to_string(max_seq));
  ForwardGraph fg;
  fg.source = source;
  // The program's own context (config max_position_embeddings, or its `S = ...`) bounds max_seq,
  // unless the program binds only at the length given (lower_at_context).
  bool at_own_context = true;
  ir::Graph native = lower_at_context(source, config, max_seq, &at_own_context);
  if (!at_own_context) {
    fg.max_seq = max_seq;
    fg.graph = std::move(native);
    return fg;
  }
  const int64_t context = context_of(native);
  if (max_seq > context)
    throw Error("max sequence length " + std::to_string(max_seq) + " exceeds the model's context (" +
                std::to_string(context) + " positions: max_position_embeddings in " + config.source + ", or the S of " +
                source.string() + ")");
  if (max_seq == 0 || max_seq == context) {
    fg.max_seq = context;
    fg.graph = std::move(native);
  } else {
    fg.max_seq = max_seq;
    fg.graph = lower(source, config, max_seq);
  }
  return fg;
}

}  // namespace lg::runtime
