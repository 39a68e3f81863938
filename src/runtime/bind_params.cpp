#include "runtime/bind_params.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <map>
#include <string>

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

std::vector<std::string> param_problems(const ir::Graph& graph, const model::Checkpoint& checkpoint) {
  std::vector<std::string> problems;
  for (const ir::ParamInfo& p : graph.params) {
    std::vector<int64_t> want = declared(p);
    if (!p.parts.empty()) {
      // Stacked experts: every part is one slice [shape[1:]] of the param.
      const std::vector<int64_t> slice(want.begin() + 1, want.end());
      for (const std::string& part : p.parts) {
        if (!checkpoint.contains(part)) {
          std::string near;
          for (const auto& n : checkpoint.nearest_names(part)) near += (near.empty() ? "" : ", ") + n;
          problems.push_back("missing tensor \"" + part + "\" (an expert of param " + p.name + " " + shape_str(want) + ")" +
                             (near.empty() ? "" : "; nearest present: " + near));
          continue;
        }
        const auto& info = checkpoint.info(part);
        if (info.shape != slice)
          problems.push_back("tensor \"" + part + "\" is " + shape_str(info.shape) + ", an expert of param " + p.name +
                             " " + shape_str(want) + " is " + shape_str(slice));
        else if (!is_float(info.dtype))
          problems.push_back("tensor \"" + part + "\" has dtype " + std::string(dtype_name(info.dtype)) +
                             ", which param " + p.name + " cannot be computed with");
      }
      continue;
    }
    if (p.transposed) std::reverse(want.begin(), want.end());  // stored [in, out]
    if (!checkpoint.contains(p.tensor)) {
      std::string near;
      for (const auto& n : checkpoint.nearest_names(p.tensor)) near += (near.empty() ? "" : ", ") + n;
      // A checkpoint whose head is tied to its embedding stores no lm_head.weight.
      const std::vector<std::string> names = checkpoint.names();
      const bool untied_head = p.tensor.ends_with("lm_head.weight") &&
                               std::any_of(names.begin(), names.end(),
                                           [](const std::string& n) { return n.ends_with("embed_tokens.weight"); });
      problems.push_back("missing tensor \"" + p.tensor + "\" (param " + p.name + " " + shape_str(want) + ")" +
                         (near.empty() ? "" : "; nearest present: " + near) +
                         (untied_head ? "; a checkpoint with its LM head tied to the embedding has none: is config.json's "
                                        "tie_word_embeddings false where it should be true?"
                                      : ""));
      continue;
    }
    const auto& info = checkpoint.info(p.tensor);
    if (info.shape != want)
      problems.push_back("tensor \"" + p.tensor + "\" is " + shape_str(info.shape) + ", param " + p.name + " declares " +
                         shape_str(want) + (p.transposed ? " (stored transposed)" : ""));
    else if (!is_float(info.dtype) && info.dtype != DType::I32)
      problems.push_back("tensor \"" + p.tensor + "\" has dtype " + std::string(dtype_name(info.dtype)) +
                         ", which param " + p.name + " cannot be computed with");
  }
  // Tensors of a bound form that no param binds: the layers of a deeper model of the family (a
  // config.json with fewer layers than the checkpoint). One sentence per form.
  std::set<std::string> bound, forms, reported;
  for (const ir::ParamInfo& p : graph.params) {
    for (const std::string& name : p.parts.empty() ? std::vector<std::string>{p.tensor} : p.parts) {
      bound.insert(name);
      forms.insert(name_form(name));
    }
  }
  for (const auto& name : checkpoint.names()) {
    const std::string form = name_form(name);
    if (bound.count(name) || !forms.count(form) || !reported.insert(form).second) continue;
    problems.push_back("tensor \"" + name + "\" is bound by no param, though the program binds others of its form \"" +
                       form + "\" (a config.json from a shallower model: num_hidden_layers?)");
  }
  return problems;
}

void check_params(const ir::Graph& graph, const model::Checkpoint& checkpoint) {
  const std::vector<std::string> problems = param_problems(graph, checkpoint);
  if (problems.empty()) return;
  std::string msg = checkpoint.source().string() + ": the checkpoint does not fit the " + graph.model + " program (" +
                    std::to_string(problems.size()) + " problem" + (problems.size() > 1 ? "s" : "") + "):";
  for (const auto& p : problems) msg += "\n  " + p;
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
