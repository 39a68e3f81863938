#include "runtime/bind_params.h"

#include <cstring>
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

void check_params(const ir::Graph& graph, const model::Checkpoint& checkpoint) {
  std::vector<std::string> problems;
  for (const ir::ParamInfo& p : graph.params) {
    const std::vector<int64_t> want = declared(p);
    if (!checkpoint.contains(p.tensor)) {
      std::string near;
      for (const auto& n : checkpoint.nearest_names(p.tensor)) near += (near.empty() ? "" : ", ") + n;
      problems.push_back("missing tensor \"" + p.tensor + "\" (param " + p.name + " " + shape_str(want) + ")" +
                         (near.empty() ? "" : "; nearest present: " + near));
      continue;
    }
    const auto& info = checkpoint.info(p.tensor);
    if (info.shape != want)
      problems.push_back("tensor \"" + p.tensor + "\" is " + shape_str(info.shape) + ", param " + p.name + " declares " +
                         shape_str(want));
    else if (!is_float(info.dtype) && info.dtype != DType::I32)
      problems.push_back("tensor \"" + p.tensor + "\" has dtype " + std::string(dtype_name(info.dtype)) +
                         ", which param " + p.name + " cannot be computed with");
  }
  if (problems.empty()) return;
  std::string msg = checkpoint.source().string() + ": the checkpoint does not fit the " + graph.model + " program (" +
                    std::to_string(problems.size()) + " problem" + (problems.size() > 1 ? "s" : "") + "):";
  for (const auto& p : problems) msg += "\n  " + p;
  throw Error(msg);
}

std::vector<ir::cpu::Tensor> bind_params(const ir::Graph& graph, const model::Checkpoint& checkpoint) {
  check_params(graph, checkpoint);
  std::map<std::string, ir::cpu::Tensor> loaded;
  std::vector<ir::cpu::Tensor> out;
  for (const ir::ParamInfo& p : graph.params) {
    auto it = loaded.find(p.tensor);
    if (it == loaded.end()) {
      const auto& info = checkpoint.info(p.tensor);
      ir::cpu::Tensor t;
      if (info.dtype == DType::I32) {
        const auto bytes = checkpoint.bytes(p.tensor);
        std::vector<int32_t> v(info.numel());
        std::memcpy(v.data(), bytes.data(), v.size() * sizeof(int32_t));
        t = ir::cpu::Tensor::from_i32(info.shape, std::move(v));
      } else {
        t = ir::cpu::Tensor::from_f32(info.shape, checkpoint.to_f32(p.tensor));
      }
      it = loaded.emplace(p.tensor, std::move(t)).first;
    }
    out.push_back(it->second);
  }
  return out;
}

}  // namespace lg::runtime
