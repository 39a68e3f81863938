#include "runtime/bind_params.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>

#include "ir/batch.h"
#include "ir/print.h"
#include "support/error.h"

namespace lg::runtime {

namespace {
std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? "," : "") + std::to_string(s[k]);
  return out + "]";
}
std::vector<int64_t> declared(const ir::ParamInfo& p) {
  std::vector<int64_t> s;
  for (const ir::Dim& d : p.shape) {
    if (!d.is_const()) throw Error("param " + p.name + " has a runtime dim; params must have a fixed shape");
    s.push_back(d.coeff);
  }
  return s;
}
// " at models/llama.lg:31:3": where the program declares p, for a problem a user fixes in either
// the checkpoint or the .lg; "" for a param no declaration made.
std::string declared_at(const ir::Graph& g, const ir::ParamInfo& p) {
  return p.span.file < 0 ? "" : " at " + ir::span_text(g, p.span);
}
}  // namespace

namespace {
// A tensor name with every run of digits made '#': "model.layers.#.mlp.up_proj.weight".
std::string name_form(const std::string& name) {
  std::string out;
  for (size_t k = 0; k < name.size(); ++k) {
    if (std::isdigit(static_cast<unsigned char>(name[k]))) {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += name[k];
    }
  }
  return out;
}
}  // namespace

namespace {
// The module a tensor's form sits beside: its form less the tensor's own name and its module's
// ("model.layers.#.self_attn.q_norm.weight" -> "model.layers.#.self_attn"); "" at the top.
std::string parent_module(const std::string& form) {
  size_t cut = form.rfind('.');
  if (cut == std::string::npos) return "";
  cut = form.rfind('.', cut - 1);
  return cut == std::string::npos ? "" : form.substr(0, cut);
}

// Buffers that older transformers saved beside the weights and that no forward reads as a weight:
// RoPE's inverse frequencies, GPT-2's causal-mask buffers (vLLM skips the same names).
bool saved_buffer(const std::string& name) {
  return name.ends_with("rotary_emb.inv_freq") || name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
}

// Checkpoint tensors that no param binds although the program binds a present tensor beside them
// (same parent module): a q_norm beside a bound q_proj, a q_proj.bias beside a bound
// q_proj.weight. The forward would run without them, a silently wrong answer (a Qwen3 checkpoint
// whose config.json says model_type "llama" ran as Llama without its q/k norms). Tensors under
// modules the program reads nothing of (an lm_head.weight kept beside a tied head, as transformers
// ties it) are left alone. One sentence per form.
std::vector<std::string> unread_siblings(const ir::Graph& graph, const model::Checkpoint& checkpoint,
                                         const std::set<std::string>& bound, const std::set<std::string>& bound_forms) {
  std::set<std::string> read_parents, reported;
  for (const std::string& name : bound)
    if (checkpoint.contains(name)) read_parents.insert(parent_module(name_form(name)));
  std::vector<std::string> out;
  for (const std::string& name : checkpoint.names()) {
    const std::string form = name_form(name);
    if (bound.count(name) || bound_forms.count(form) || saved_buffer(name)) continue;
    const std::string parent = parent_module(form);
    if (!read_parents.count(parent) || !reported.insert(form).second) continue;
    out.push_back("tensor \"" + name + "\" (form \"" + form + "\") is bound by no param, though the " + graph.model +
                  " program reads tensors beside it in \"" + parent +
                  "\": its forward would run without it (is config.json's model_type this checkpoint's architecture?)");
  }
  return out;
}
}  // namespace

std::vector<std::string> drop_absent_base_prefix(ir::Graph& graph, const model::Checkpoint& checkpoint) {
  auto leading = [](const std::string& name) {
    const size_t dot = name.find('.');
    return dot == std::string::npos ? std::string() : name.substr(0, dot + 1);
  };
  auto each_name = [&graph](auto&& f) {
    for (ir::ParamInfo& p : graph.params) {
      if (p.parts.empty()) f(p.tensor);
      for (std::string& part : p.parts) f(part);
    }
  };
  // The program's leading components, in the order its params first name them.
  std::vector<std::string> components;
  each_name([&](const std::string& name) {
    const std::string c = leading(name);
    if (!c.empty() && std::find(components.begin(), components.end(), c) == components.end()) components.push_back(c);
  });
  const std::vector<std::string> names = checkpoint.names();  // sorted
  std::vector<std::string> dropped;
  for (const std::string& prefix : components) {
    // transformers' test: the checkpoint has no key under the prefix at all (not merely the ones
    // the program names), so a checkpoint that holds the prefix and lacks some tensors keeps its
    // names and its missing-tensor errors.
    const auto at = std::lower_bound(names.begin(), names.end(), prefix);
    if (at != names.end() && at->starts_with(prefix)) continue;
    bool found = false;
    each_name([&](const std::string& name) {
      found = found || (name.starts_with(prefix) && checkpoint.contains(std::string_view(name).substr(prefix.size())));
    });
    if (!found) continue;
    each_name([&](std::string& name) {
      if (name.starts_with(prefix)) name.erase(0, prefix.size());
    });
    dropped.push_back(prefix);
  }
  return dropped;
}

std::vector<std::string> param_problems_as_loaded(ir::Graph graph, const model::Checkpoint& checkpoint) {
  drop_absent_base_prefix(graph, checkpoint);
  return param_problems(graph, checkpoint);
}

namespace {
/// Digits as an index; -1 past int64 (a checkpoint may name "layers.99999999999999999999.").
int64_t index_of(const std::string& digits) {
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return ec == std::errc() && end == digits.data() + digits.size() ? v : -1;
}

/// The layer index of a tensor name's "layers.N." (GPT-2's "h.N."); -1 where it names none.
int64_t tensor_layer(const std::string& name) {
  static const std::regex layer(R"((?:^|\.)(?:layers|h)\.(\d+)\.)");
  std::smatch m;
  return std::regex_search(name, m, layer) ? index_of(m[1].str()) : -1;
}

/// Layer indices as people write them: "36-39" where they run on, else "1, 4, 9".
std::string layer_list(const std::vector<int64_t>& layers) {
  if (layers.size() > 1 && std::is_sorted(layers.begin(), layers.end()) &&
      layers.back() - layers.front() + 1 == static_cast<int64_t>(layers.size()))
    return std::to_string(layers.front()) + "-" + std::to_string(layers.back());
  std::string list;
  for (int64_t l : layers) list += (list.empty() ? "" : ", ") + std::to_string(l);
  return list;
}
}  // namespace

std::vector<std::string> param_problems(const ir::Graph& graph, const model::Checkpoint& checkpoint) {
  std::vector<std::string> problems;
  // Layers the program reads and the checkpoint holds no tensor of (a config.json from a deeper
  // model) are one problem, not one a tensor of each such layer.
  // The checkpoint's layers are read at the first missing tensor only: a checkpoint that fits (every
  // load) runs no regex over its names (Qwen3-30B-A3B: 48 layers x 128 experts x 3, ~19,000).
  std::set<int64_t> held_layers, absent_layers;
  bool held_read = false;
  auto in_absent_layer = [&](const std::string& tensor) {
    if (!held_read) {
      for (const std::string& name : checkpoint.names())
        if (const int64_t l = tensor_layer(name); l >= 0) held_layers.insert(l);
      held_read = true;
    }
    const int64_t l = tensor_layer(tensor);
    if (l < 0 || held_layers.empty() || held_layers.count(l)) return false;
    absent_layers.insert(l);
    return true;
  };
  for (const ir::ParamInfo& p : graph.params) {
    std::vector<int64_t> want = declared(p);
    if (!p.parts.empty()) {
      // Stacked experts: every part is one slice [shape[1:]] of the param.
      const std::vector<int64_t> slice(want.begin() + 1, want.end());
      for (const std::string& part : p.parts) {
        if (!checkpoint.contains(part) && in_absent_layer(part)) continue;
        if (!checkpoint.contains(part)) {
          std::string near;
          for (const auto& n : checkpoint.nearest_names(part)) near += (near.empty() ? "" : ", ") + n;
          problems.push_back("missing tensor \"" + part + "\" (an expert of param " + p.name + " " + shape_str(want) +
                             declared_at(graph, p) + ")" +
                             (near.empty() ? "" : "; nearest present: " + near));
          continue;
        }
        const auto& info = checkpoint.info(part);
        if (info.shape != slice)
          problems.push_back("tensor \"" + part + "\" is " + shape_str(info.shape) + ", an expert of param " + p.name + " " +
                             shape_str(want) + declared_at(graph, p) + ", is " + shape_str(slice));
        else if (!is_float(info.dtype))
          problems.push_back("tensor \"" + part + "\" has dtype " + std::string(dtype_name(info.dtype)) +
                             ", which param " + p.name + declared_at(graph, p) + " cannot be computed with");
      }
      continue;
    }
    if (p.transposed) std::reverse(want.begin(), want.end());  // stored [in, out]
    if (!checkpoint.contains(p.tensor) && in_absent_layer(p.tensor)) continue;
    if (!checkpoint.contains(p.tensor)) {
      std::string near;
      for (const auto& n : checkpoint.nearest_names(p.tensor)) near += (near.empty() ? "" : ", ") + n;
      // A checkpoint whose head is tied to its embedding stores no lm_head.weight.
      const std::vector<std::string> names = checkpoint.names();
      const bool untied_head = p.tensor.ends_with("lm_head.weight") &&
                               std::any_of(names.begin(), names.end(),
                                           [](const std::string& n) { return n.ends_with("embed_tokens.weight"); });
      problems.push_back("missing tensor \"" + p.tensor + "\" (param " + p.name + " " + shape_str(want) +
                         declared_at(graph, p) + ")" +
                         (near.empty() ? "" : "; nearest present: " + near) +
                         (untied_head ? "; a checkpoint with its LM head tied to the embedding has none: is config.json's "
                                        "tie_word_embeddings false where it should be true?"
                                      : ""));
      continue;
    }
    const auto& info = checkpoint.info(p.tensor);
    if (info.shape != want)
      problems.push_back("tensor \"" + p.tensor + "\" is " + shape_str(info.shape) + ", param " + p.name +
                         declared_at(graph, p) + " declares " + shape_str(want) +
                         (p.transposed ? " (stored transposed)" : ""));
    else if (!is_float(info.dtype) && info.dtype != DType::I32)
      problems.push_back("tensor \"" + p.tensor + "\" has dtype " + std::string(dtype_name(info.dtype)) +
                         ", which param " + p.name + declared_at(graph, p) + " cannot be computed with");
    else if ((info.dtype == DType::I32) != (p.dtype == DType::I32))  // integers for a float param or floats for i32
      problems.push_back("tensor \"" + p.tensor + "\" has dtype " + std::string(dtype_name(info.dtype)) + ", param " +
                         p.name + declared_at(graph, p) + " declares " + std::string(dtype_name(p.dtype)));
  }
  // Tensors of a bound form that no param binds. Past the program's last layer: the layers of a
  // deeper model of the family (a config.json with fewer layers than the checkpoint); within its
  // layers: a config that gives those layers another form (Qwen3-MoE's mlp_only_layers). One
  // sentence per form, with its count and layers.
  std::set<std::string> bound, forms;
  for (const ir::ParamInfo& p : graph.params) {
    for (const std::string& name : p.parts.empty() ? std::vector<std::string>{p.tensor} : p.parts) {
      bound.insert(name);
      forms.insert(name_form(name));
    }
  }
  struct Unbound {
    std::string first;
    int64_t count = 0;
    std::set<int64_t> layers;
  };
  std::map<std::string, Unbound> unbound;
  std::vector<std::string> order;
  for (const auto& name : checkpoint.names()) {
    const std::string form = name_form(name);
    if (bound.count(name) || !forms.count(form)) continue;
    Unbound& u = unbound[form];
    if (u.count++ == 0) {
      u.first = name;
      order.push_back(form);
    }
    if (const int64_t l = tensor_layer(name); l >= 0) u.layers.insert(l);
  }
  int64_t last_layer = -1;  // the program's (a regex a name: only where something is unbound)
  if (!order.empty())
    for (const std::string& name : bound) last_layer = std::max(last_layer, tensor_layer(name));
  for (const std::string& form : order) {
    const Unbound& u = unbound[form];
    const std::vector<int64_t> layers(u.layers.begin(), u.layers.end());
    const bool deeper = !layers.empty() && layers.front() > last_layer;
    std::string where = u.count > 1 ? std::to_string(u.count) + " of this form" : "";
    if (!layers.empty())
      where += std::string(where.empty() ? "" : ", ") + "layer" + (layers.size() > 1 ? "s " : " ") + layer_list(layers);
    problems.push_back("tensor \"" + u.first + "\" is bound by no param, though the program binds others of its form \"" +
                       form + "\" (" + (where.empty() ? "" : where + ": ") +
                       (deeper ? "a config.json from a shallower model: num_hidden_layers?"
                               : std::string("a config.json that gives ") + (layers.size() > 1 ? "these layers" : "this layer") +
                                     " another form than the checkpoint's?") +
                       ")");
  }
  for (std::string& p : unread_siblings(graph, checkpoint, bound, forms)) problems.push_back(std::move(p));
  if (!absent_layers.empty()) {
    const std::vector<int64_t> absent(absent_layers.begin(), absent_layers.end()),
        held(held_layers.begin(), held_layers.end());
    problems.push_back("layer" + std::string(absent.size() > 1 ? "s " : " ") + layer_list(absent) +
                       " of the program: the checkpoint holds no tensor of " + (absent.size() > 1 ? "them" : "it") +
                       " (its layers are " + layer_list(held) +
                       "; a config.json from a deeper model: num_hidden_layers, GPT-2's n_layer?)");
  }
  return problems;
}

std::vector<size_t> unread_params(const ir::Graph& graph) {
  const std::vector<char> live = ir::live_nodes(graph);
  std::vector<char> read(graph.params.size(), 0);
  for (size_t k = 0; k < graph.nodes.size(); ++k)
    if (live[k] && graph.nodes[k].op == ir::Op::Param) read[static_cast<size_t>(graph.nodes[k].attrs.index)] = 1;
  std::vector<size_t> out;
  for (size_t p = 0; p < read.size(); ++p)
    if (!read[p]) out.push_back(p);
  return out;
}

std::vector<std::string> unbound_tensors(const ir::Graph& graph, const model::Checkpoint& checkpoint, bool tied_head) {
  std::set<std::string> bound;
  for (const ir::ParamInfo& p : graph.params) {
    if (p.parts.empty()) bound.insert(p.tensor);
    for (const std::string& part : p.parts) bound.insert(part);
  }
  // Buffers, not weights: RoPE's inverse frequencies and GPT-2's causal-mask constants, which old
  // checkpoints saved and transformers' models drop on load (_keys_to_ignore_on_load_unexpected).
  static const std::regex buffer(R"((^|\.)(inv_freq|masked_bias)$|(^|\.)h\.\d+\.attn\.bias$)");
  std::vector<std::string> out;
  for (const std::string& name : checkpoint.names())
    if (!bound.count(name) && !std::regex_search(name, buffer) && !(tied_head && name == "lm_head.weight"))
      out.push_back(name);
  return out;
}

std::vector<std::string> unused_weight_warnings(const ir::Graph& graph, const model::Checkpoint* checkpoint,
                                                bool tied_head, const std::string& source) {
  std::vector<std::string> out;
  // One entry per declaration (a `for` body's param is one declaration for every layer).
  std::vector<std::pair<std::string, std::string>> groups;  // names, where declared
  size_t unread = 0;
  for (const size_t k : unread_params(graph)) {
    const ir::ParamInfo& p = graph.params[k];
    const std::string at = declared_at(graph, p);
    ++unread;
    if (!groups.empty() && groups.back().second == at) groups.back().first += ", " + p.name;
    else groups.emplace_back(p.name, at);
  }
  if (unread > 0) {
    std::string list;
    for (const auto& [names, at] : groups) list += (list.empty() ? "" : "; ") + names + at;
    out.push_back(source + ": the forward never reads param" + (unread > 1 ? "s " : " ") + list +
                  " (declared and loaded, but no statement that reaches the logits uses " +
                  (unread > 1 ? "them" : "it") + ")");
  }
  const std::vector<std::string> unbound =
      checkpoint ? unbound_tensors(graph, *checkpoint, tied_head) : std::vector<std::string>{};
  if (!unbound.empty()) {
    std::string list;
    for (size_t k = 0; k < unbound.size() && k < 8; ++k) list += (k ? ", " : "") + unbound[k];
    if (unbound.size() > 8) list += ", and " + std::to_string(unbound.size() - 8) + " more";
    out.push_back(source + " binds no param to " + std::to_string(unbound.size()) + " of the checkpoint's " +
                  std::to_string(checkpoint->names().size()) + " tensors: " + list + " (the model runs without " +
                  (unbound.size() > 1 ? "them" : "it") +
                  ", as transformers warns: \"Some weights of the model checkpoint were not used\")");
  }
  return out;
}

namespace {

/// A problem with its layer index written as {l} (in "layers.N." of a tensor name and the "lN."
/// of a param name), and the index; -1 for a problem of no layer or of several.
std::pair<std::string, int64_t> layer_form(const std::string& problem) {
  static const std::regex layer(R"((layers\.|\bl)(\d+)\.)");
  std::string form;
  int64_t index = -1;
  bool one = true;
  auto it = std::sregex_iterator(problem.begin(), problem.end(), layer);
  size_t at = 0;
  for (; it != std::sregex_iterator(); ++it) {
    const int64_t n = index_of((*it)[2].str());
    if (n < 0) return {problem, -1};
    one = one && (index < 0 || index == n);
    index = n;
    form += problem.substr(at, static_cast<size_t>(it->position(2)) - at) + "{l}";
    at = static_cast<size_t>(it->position(2) + it->length(2));
  }
  if (index < 0 || !one) return {problem, -1};
  return {form + problem.substr(at), index};
}

}  // namespace

std::vector<std::string> group_by_layer(const std::vector<std::string>& problems) {
  struct Group {
    std::string form, first;      // the problem with {l}, and as first met
    std::vector<int64_t> layers;  // empty: a problem of no one layer
  };
  std::vector<Group> groups;  // in first-seen order
  std::map<std::string, size_t> at;
  for (const std::string& p : problems) {
    auto [form, index] = layer_form(p);
    if (index < 0) {
      groups.push_back({p, p, {}});
      continue;
    }
    auto [it, fresh] = at.emplace(form, groups.size());
    if (fresh) groups.push_back({form, p, {}});
    groups[it->second].layers.push_back(index);
  }
  std::vector<std::string> out;
  for (const Group& g : groups) {
    if (g.layers.size() < 2) {
      out.push_back(g.first);
      continue;
    }
    out.push_back("in layers " + layer_list(g.layers) + ": " + g.form);
  }
  return out;
}

void check_params(const ir::Graph& graph, const model::Checkpoint& checkpoint) {
  const std::vector<std::string> problems = param_problems(graph, checkpoint);
  if (problems.empty()) return;
  std::string msg = checkpoint.source().string() + ": the checkpoint does not fit the " + graph.model + " program (" +
                    std::to_string(problems.size()) + " problem" + (problems.size() > 1 ? "s" : "") + "):";
  for (const auto& p : group_by_layer(problems)) msg += "\n  " + p;
  throw Error(msg);
}

std::vector<float> param_f32(const model::Checkpoint& checkpoint, const ir::ParamInfo& p) {
  if (!p.parts.empty()) {  // stacked experts: the parts one after the other along axis 0
    std::vector<float> all;
    for (const std::string& part : p.parts) {
      const std::vector<float> f = checkpoint.to_f32(part);
      all.insert(all.end(), f.begin(), f.end());
    }
    return all;
  }
  std::vector<float> f = checkpoint.to_f32(p.tensor);
  if (!p.transposed) return f;
  const auto& s = checkpoint.info(p.tensor).shape;  // [rows, cols] as stored
  const auto rows = static_cast<size_t>(s.at(0)), cols = static_cast<size_t>(s.at(1));
  std::vector<float> t(f.size());
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) t[c * rows + r] = f[r * cols + c];
  return t;
}

std::vector<ir::cpu::Tensor> bind_params(const ir::Graph& graph, const model::Checkpoint& checkpoint) {
  check_params(graph, checkpoint);
  std::map<std::string, ir::cpu::Tensor> loaded;
  std::vector<ir::cpu::Tensor> out;
  for (const ir::ParamInfo& p : graph.params) {
    const std::string key = p.transposed ? p.tensor + "\n.T" : p.tensor;
    auto it = loaded.find(key);
    if (it == loaded.end()) {
      ir::cpu::Tensor t;
      if (!p.parts.empty()) {
        t = ir::cpu::Tensor::from_f32(declared(p), param_f32(checkpoint, p));
      } else if (const auto& info = checkpoint.info(p.tensor); info.dtype == DType::I32) {
        const auto bytes = checkpoint.bytes(p.tensor);
        std::vector<int32_t> v(info.numel());
        std::memcpy(v.data(), bytes.data(), v.size() * sizeof(int32_t));
        t = ir::cpu::Tensor::from_i32(info.shape, std::move(v));
      } else {
        t = ir::cpu::Tensor::from_f32(declared(p), param_f32(checkpoint, p));
      }
      it = loaded.emplace(key, std::move(t)).first;
    }
    out.push_back(it->second);
  }
  return out;
}

}  // namespace lg::runtime
