// State writes (the KV cache): the cache element a StateWrite writes for an element of its value,
// with the layer index lifted to lg_l; done by an element stage's loop over the value, or by a
// GEMM stage's epilogue when the value is a GEMM result seen through views (V straight from the
// q/k/v GEMM).
#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

std::string Renderer::state_element(ir::ValueId w, const std::vector<std::string>& vi, const LambdaNames& name) {
  const ir::Node& n = g.at(w);
  ir::ValueId st = buffer_node(g, w);
  const auto& ssh = g.at(st).shape;
  size_t nfixed = n.attrs.fixed.size();
  auto axis = static_cast<size_t>(n.attrs.axis);
  std::vector<std::string> si;
  for (size_t k = 0; k < nfixed; ++k)
    si.push_back(k == 0 ? layer_index(n.attrs.fixed[k]) : std::to_string(n.attrs.fixed[k]) + "L");
  for (size_t k = 0; k < vi.size(); ++k) si.push_back(vi[k]);
  const std::string pos = "(long)" + call(name, n.operands[2], {vi[axis]});
  // Paged (ir.h): position p of token t is row block_table[seq[t], p / bs] * bs + p % bs.
  si[nfixed + axis] = n.operands.size() == 5 ? paged_row(n, 3, vi[axis], pos, name) : pos;
  return "p" + std::to_string(arg(st, true)) + "[" + linear(ssh, si) + "]";
}

std::string Renderer::paged_row(const ir::Node& n, size_t first, const std::string& t, const std::string& pos,
                                const LambdaNames& name) {
  const std::string bs = std::to_string(n.attrs.block_size) + "L";
  const std::string seq = "(long)" + call(name, n.operands[first], {t});
  const std::string block = "(long)" + call(name, n.operands[first + 1], {seq, "(" + pos + ") / " + bs});
  return "(" + block + " * " + bs + " + (" + pos + ") % " + bs + ")";
}

std::string Renderer::state_store(ir::ValueId w, const std::vector<std::string>& vi, const std::string& val,
                                  const LambdaNames& name) {
  const bool bf16 = bf16_state(g.at(buffer_node(g, w)));
  return state_element(w, vi, name) + " = " + (bf16 ? "lg_to_bf16(" + val + ")" : val) + ";";
}

std::string Renderer::gemm_cache_write(int32_t s, ir::ValueId w, const ir::Shape& shape,
                                       const std::vector<std::string>& ix, const LambdaNames& name) {
  // Map this element's index forward through the views between the GEMM result and the written
  // value.
  std::vector<ir::ValueId> chain;
  ir::ValueId cur = g.at(w).operands[1];
  while (p.stage_of[static_cast<size_t>(cur)] != s) {
    chain.push_back(cur);
    cur = g.at(cur).operands[0];
  }
  if (!(g.at(cur).shape == shape))
    throw Error("emit: stage " + std::to_string(s) + ": a cache write's value is not GEMM-shaped");
  std::string out;
  std::vector<std::string> ci = ix;
  const ir::Shape* csh = &shape;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const ir::Node& vn = g.at(*it);
    std::vector<std::string> ni;
    if (vn.op == ir::Op::Permute) {
      for (size_t k = 0; k < vn.attrs.perm.size(); ++k) ni.push_back(ci[static_cast<size_t>(vn.attrs.perm[k])]);
    } else {
      for (size_t k = 0; k < vn.shape.size(); ++k) ni.push_back(fresh("w"));
      out += "        " + delinear(vn.shape, linear(*csh, ci), ni, fresh("l")) + "\n";
    }
    ci = ni;
    csh = &vn.shape;
  }
  return out + "        " + state_store(w, ci, call(name, cur, ix), name) + "\n";
}

}  // namespace lg::emit::cuda
