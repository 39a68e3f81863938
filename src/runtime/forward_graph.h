// The forward graph of a model directory: the .lg program chosen by its config's model_type,
// checked and lowered against its config.json, with every param checked against the checkpoint.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "ir/ir.h"
#include "model/model_dir.h"

namespace lg::runtime {

struct ForwardGraph {
  std::filesystem::path source;  ///< the .lg file it was lowered from
  ir::Graph graph;               ///< verified; one step of T tokens (prefill or decode)
  int64_t max_seq = 0;           ///< KV-cache capacity S the graph was bound with
};

/// Why the runtime cannot feed `g` (a lowered forward of one sequence): its inputs are not
/// `tokens: i32[T], pos: i32[T]`, which every lane gives a model's forward. nullopt when they are.
/// The message starts "is declared forward(...)", to follow the program's name.
std::optional<std::string> forward_inputs_problem(const ir::Graph& g);
/// Why the runtime cannot sample from `g`'s output: it is not one f32[T, V] (V a positive
/// constant), the logits a row per token every lane reads. nullopt when it is. The message starts
/// "returns ...", to follow "the forward".
std::optional<std::string> forward_logits_problem(const ir::Graph& g);
/// Why `g`'s logits (one f32[T, V] output, forward_logits_problem nullopt) do not fit a config:
/// V is not its `vocab_size` (`config_source` names the config in the message), so sampled ids
/// would mean other tokens. nullopt when they fit or vocab_size <= 0 (not stated). The message
/// starts "returns logits ...", to follow "the forward".
std::optional<std::string> forward_vocab_problem(const ir::Graph& g, int64_t vocab_size, const std::string& config_source);

/// The .lg program of `dir`: dir.program when set (`--program`), else the one its model_type names.
std::filesystem::path program_source(const model::ModelDir& dir);

/// Sets dir.program (when `program` is not empty) and lowers the program once with no max
/// sequence length to fill dir.context (its S) and dir.vocab (the width of its logits), checking
/// every param against the checkpoint: the early, clear refusal of a checkpoint that does not fit
/// (a config from another size names the tensor, its shape and the param's). A program that does
/// not check at its own context but does at `max_seq` (the run's --max-seq; phi3.lg with a
/// sliding_window below max_position_embeddings, a config without max_position_embeddings) is
/// lowered at `max_seq`, which is then dir.context. Throws lg::Error as forward_graph, and for a
/// forward that does not return one [T, V] output with V = config.json's vocab_size (the logits
/// the runtime samples from; the message names the program and the shape). Params the forward
/// never reads and checkpoint tensors no param binds are warnings on stderr (unused_weight_warnings).
void resolve_program(model::ModelDir& dir, const std::filesystem::path& program = {}, int64_t max_seq = 0);

/// Where dir.context (after resolve_program) comes from, for a message about it: "max_position_embeddings
/// in config.json", or "the S that gpt2.lg declares" for a program whose own `S = ...` gives it
/// (GPT-2's n_positions: a message naming max_position_embeddings sent the user to a key its
/// config does not have).
std::string context_origin(const model::ModelDir& dir);

/// Lowers the model's .lg program (program_source) with `max_seq` as the KV-cache capacity (0: the
/// program's S, as resolve_program; a program that checks only at `max_seq` is lowered there, as
/// resolve_program lowers it), verifies the graph, and checks every param against the checkpoint
/// (one lg::Error listing all missing/mismatched tensors), after renaming its params to a checkpoint
/// saved without the model's base prefix (drop_absent_base_prefix: GPT-2's "wte.weight" for the
/// program's "transformer.wte.weight"), as resolve_program checks them. Throws lg::Error when no .lg file
/// covers the model_type, for a max_seq above the program's S, and for a program that
/// does not check against the config (the message carries the rendered diagnostics).
ForwardGraph forward_graph(const model::ModelDir& dir, int64_t max_seq);

/// The same from a config alone, without a checkpoint to check the params against (a random-
/// weight run at a real shape, `lg bench --shape qwen3-8b --lane compiled`). Same errors, less the
/// checkpoint's.
ForwardGraph forward_graph(const model::ModelConfig& config, int64_t max_seq);
/// The same for the program `source`.
ForwardGraph forward_graph(const model::ModelConfig& config, int64_t max_seq, const std::filesystem::path& source);

}  // namespace lg::runtime
