// Binding a forward graph's params to a checkpoint: every `param` of the .lg program names a
// checkpoint tensor, which must exist with the declared shape. The CPU executor gets each tensor
// widened to fp32 once; params naming the same tensor (tied embeddings) share one buffer.
#pragma once

#include <vector>

#include "ir/cpu_tensor.h"
#include "ir/ir.h"
#include "model/checkpoint.h"

namespace lg::runtime {

/// A checkpoint saved without its model's base prefix: transformers' `base_model_prefix`
/// ("transformer" for GPT-2, "model" for Llama-style families) is the module that wraps the base
/// model in the *ForCausalLM class, and a checkpoint of the base model alone, or one written
/// before the wrapper existed (openai-community/gpt2's model.safetensors: "wte.weight",
/// "h.0.attn.c_attn.weight"), names its tensors without it; transformers strips or adds the prefix
/// at load, as vLLM does. A .lg program names the wrapper's tensors. For each leading component
/// `P.` of the program's tensor names: when the checkpoint holds no tensor under `P.` at all and
/// does hold at least one of those names with `P.` dropped, every program name under `P.` is
/// rewritten without it, so binding, the lanes' uploads and param_problems all see the
/// checkpoint's names (a tensor still missing then is reported under its checkpoint name, with
/// the nearest names present). Returns the prefixes dropped, in order ("transformer."); none when
/// the checkpoint already names the program's tensors. Reads no weight bytes.
std::vector<std::string> drop_absent_base_prefix(ir::Graph& graph, const model::Checkpoint& checkpoint);

/// Where `checkpoint` does not fit `graph`'s params, one sentence each: a missing tensor (with the
/// nearest names present), a shape other than the param declares, a dtype that cannot be computed
/// with, and tensors of a bound name form ("model.layers.#.mlp.up_proj.weight") that no param
/// binds (a config with fewer layers than the checkpoint), layers the checkpoint holds no tensor of
/// (a config with more: one problem naming them, not one a tensor), and tensors no param binds beside tensors
/// the program does read (a q_norm or a bias the forward would run without: a config.json whose
/// model_type names another architecture). Empty when it fits. Shapes only: no weight bytes are read.
std::vector<std::string> param_problems(const ir::Graph& graph, const model::Checkpoint& checkpoint);

/// param_problems of a copy of `graph` renamed as loading renames it (drop_absent_base_prefix):
/// what `lg run` would refuse, for the commands that only report it (lg check's note, lg inspect).
std::vector<std::string> param_problems_as_loaded(ir::Graph graph, const model::Checkpoint& checkpoint);

/// The params of `graph` that no output or final state depends on: declared (their tensors bound
/// and loaded) but never read by the forward. A `return x @ head.T` that skipped the final norm, an
/// `h = x` where a layer norm was meant: the program runs and answers without them. Indices into
/// graph.params.
std::vector<size_t> unread_params(const ir::Graph& graph);

/// The checkpoint's tensors that no param binds (its names as the params name them after
/// drop_absent_base_prefix), sorted; left out: buffers transformers itself never loads as weights
/// (`*.inv_freq`, GPT-2's `h.N.attn.bias` / `attn.masked_bias`), and with `tied_head` (config.json's
/// tie_word_embeddings) a saved `lm_head.weight`, which transformers ties to the embedding.
/// transformers warns of the others ("Some weights of the model checkpoint were not used"): a
/// program that binds its head to the embedding of an untied checkpoint runs, and answers without
/// the checkpoint's LM head.
std::vector<std::string> unbound_tensors(const ir::Graph& graph, const model::Checkpoint& checkpoint, bool tied_head);

/// What unread_params and (with a checkpoint) unbound_tensors find, one warning sentence each
/// (none when the program and the checkpoint fit exactly). `source` names the program in them.
std::vector<std::string> unused_weight_warnings(const ir::Graph& graph, const model::Checkpoint* checkpoint,
                                                bool tied_head, const std::string& source);

/// `problems` (param_problems') one line each, where the same problem in each of several layers
/// is one line naming them: "in layers 0-7: tensor \"model.layers.{l}.self_attn.q_proj.weight\" is
/// [512,128], param l{l}.wq declares [1024,128]" (a wrong head_dim listed 6 lines a layer). In
/// first-seen order.
std::vector<std::string> group_by_layer(const std::vector<std::string>& problems);

/// Throws one lg::Error listing all param_problems, grouped by group_by_layer (naming the params,
/// their tensors and the checkpoint). The params' dtypes in the .lg are storage hints for the GPU lanes: any float dtype
/// in the checkpoint is accepted, widened exactly to fp32.
void check_params(const ir::Graph& graph, const model::Checkpoint& checkpoint);

/// The param's tensor widened to fp32 in the param's layout (transposed when p.transposed), row-major.
std::vector<float> param_f32(const model::Checkpoint& checkpoint, const ir::ParamInfo& p);

/// check_params, then the fp32 tensors indexed like graph.params (shared between params that
/// name the same checkpoint tensor).
std::vector<ir::cpu::Tensor> bind_params(const ir::Graph& graph, const model::Checkpoint& checkpoint);

}  // namespace lg::runtime
