// The mixture-of-experts stages: topk (an element stage whose lambda keeps the k best of its row
// per thread) and the experts stages, moe_gate_up and moe_down (ops.def), which read only the
// rows of the experts each token was routed to.
//
// The experts kernels: one warp per output element, its lanes splitting the contraction, the
// expert's weight row found through the token's routed index, 16-byte loads of 8 bf16 weights
// (bypassing L1) when the weights are bf16 with a contraction a multiple of 8:
//   moe_gate_up  out[t, k, f] = silu(wg[e, f] . x[t]) * (wu[e, f] . x[t]), e = idx[t, k]:
//                one warp reads the gate and up rows f of token t's k-th expert;
//   moe_down     out[t, d] = sum_k w[t, k] * (wd[e_k, d] . act[t, k]): one warp per (t, d)
//                walks the token's k experts' rows d (the weighted sum needs no atomics, and
//                its order is the slots', as the CPU reference's).
// A decode token reads its k experts' rows and nothing else. What is left (docs/lifting.md): a
// batch reads each routed expert once per token that picked it rather than once per step, and
// prefill runs these GEMVs per token rather than grouping tokens by expert into tensor-core GEMMs.
#include "emit/cuda/expr.h"
#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

std::string Renderer::topk_body(ir::ValueId v, const std::vector<std::string>& ix, const LambdaNames& name,
                                std::string& memo_decl) {
  const ir::Node& n = g.at(v);
  const std::string& nm = name.at(v);
  const ir::ValueId o = n.operands[0];
  const auto& osh = g.at(o).shape;
  const size_t last = osh.size() - 1;  // the lifter takes the last axis only
  const int64_t K = n.shape[last].coeff;
  std::vector<std::string> oi(ix.begin(), ix.end());
  oi[last] = "r";
  ir::Shape rows(n.shape.begin(), n.shape.end() - 1);
  std::vector<std::string> ri(ix.begin(), ix.end() - 1);
  const std::string key = rows.empty() ? "0L" : linear(rows, ri);
  memo_decl = "long " + nm + "_key = -1; float " + nm + "_v[" + std::to_string(K) + "]; int " + nm + "_i[" +
              std::to_string(K) + "];\n";
  // Insertion into the k best so far: larger first, NaN largest (as torch.topk), ties keep the
  // lower index first (a later equal value does not pass an earlier one).
  return "long key = " + key + "; if (key != " + nm + "_key) { " +
         "for (int j = 0; j < " + std::to_string(K) + "; ++j) { " + nm + "_v[j] = __int_as_float(0xff800000); " + nm +
         "_i[j] = -1; } " +
         "for (long r = 0; r < " + dim(osh[last]) + "; ++r) { const float x = " + call(name, o, oi) + "; " +
         "int j = " + std::to_string(K) + "; " +
         "while (j > 0 && (" + nm + "_i[j - 1] < 0 || (x != x ? " + nm + "_v[j - 1] == " + nm + "_v[j - 1] : x > " + nm +
         "_v[j - 1]))) { if (j < " + std::to_string(K) + ") { " + nm + "_v[j] = " + nm + "_v[j - 1]; " + nm + "_i[j] = " +
         nm + "_i[j - 1]; } --j; } " +
         "if (j < " + std::to_string(K) + ") { " + nm + "_v[j] = x; " + nm + "_i[j] = (int)r; } } " + nm + "_key = key; } " +
         "return " + (n.op == ir::Op::ArgTopK ? "(float)" + nm + "_i[" + ix[last] + "]" : nm + "_v[" + ix[last] + "]") +
         ";";
}

namespace {

/// `acc += x(d) * w[row + d]` over d = the lane's share of [0, K), as statements; `x` maps an
/// index expression to the activation's value there.
template <class X>
std::string dot_loop(const std::string& acc, const std::string& w, const std::string& row, int64_t K, bool bf16, X&& x) {
  std::ostringstream os;
  if (bf16 && K % 8 == 0) {
    os << "        { const uint4* wr = reinterpret_cast<const uint4*>(" << w << " + " << row << ");\n"
       << "          #pragma unroll 4\n"
       << "          for (long c = lane; c < " << K / 8 << "L; c += 32) { const uint4 q = lg_ld_stream(wr + c); "
       << "const long d = c * 8;\n"
       << "            " << acc << " += " << x("d") << " * lg_bf16_lo(q.x) + " << x("d + 1") << " * lg_bf16_hi(q.x) + "
       << x("d + 2") << " * lg_bf16_lo(q.y) + " << x("d + 3") << " * lg_bf16_hi(q.y);\n"
       << "            " << acc << " += " << x("d + 4") << " * lg_bf16_lo(q.z) + " << x("d + 5") << " * lg_bf16_hi(q.z) + "
       << x("d + 6") << " * lg_bf16_lo(q.w) + " << x("d + 7") << " * lg_bf16_hi(q.w); } }\n";
  } else {
    const std::string load = bf16 ? "lg_bf16(" + w + "[" + row + " + d])" : w + "[" + row + " + d]";
    os << "        for (long d = lane; d < " << K << "L; d += 32) " << acc << " += " << x("d") << " * " << load << ";\n";
  }
  return os.str();
}

}  // namespace

void Renderer::experts_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  ir::ValueId v = -1;  // its one moe node; the rest are its epilogue (and prologue reductions)
  for (ir::ValueId u : st.nodes)
    if (g.at(u).op == ir::Op::MoeGateUp || g.at(u).op == ir::Op::MoeDown) {
      if (v >= 0) throw Error("emit: an experts stage computes two expert ops");
      v = u;
    }
  if (v < 0) throw Error("emit: internal error: an experts stage without an expert op");
  const ir::Node& n = g.at(v);
  for (ir::ValueId u : st.stores)
    if (!(g.at(u).shape == n.shape))
      throw Error("emit: an experts stage stores a value of another shape than its experts' (" + std::string(g.at(u).name) + ")");
  const bool up = n.op == ir::Op::MoeGateUp;
  os << "  {  // experts stage: " << ir::op_name(n.op) << "\n    float lg_moe = 0.0f;\n";
  auto nodes = closure(s);
  auto name = lambdas(s, nodes, os, {{v, "lg_moe"}});
  // Lane 0 of the output's warp writes every store at the output's index: the experts' value
  // itself, or what an epilogue (the residual add) makes of it.
  auto write = [&](const std::string& value, const std::vector<std::string>& ix) {
    std::string w = "{ lg_moe = " + value + ";";
    for (ir::ValueId u : st.stores)
      w += " p" + std::to_string(arg(u, true)) + "[o] = " + (u == v ? std::string("lg_moe") : call(name, u, ix)) + ";";
    return w + " }";
  };
  const ir::ValueId x = n.operands[0], idx = n.operands[1];
  const int64_t K = g.at(idx).shape[1].coeff;
  const auto weight = [&](size_t i) { return "p" + std::to_string(arg(n.operands[i], false)); };
  const auto bf16 = [&](size_t i) { return g.at(n.operands[i]).dtype == DType::BF16; };
  const ir::Shape& ws = g.at(n.operands[up ? 2 : 3]).shape;  // [E, N, C]: N outputs of C terms per expert
  const int64_t E = ws[0].coeff, N = ws[1].coeff, C = ws[2].coeff;
  const std::string outputs = "(T * " + std::to_string(up ? K * N : N) + "L)";
  os << "    const int lane = threadIdx.x & 31;\n"
     << "    for (long o = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; o < " << outputs
     << "; o += ((long)gridDim.x * blockDim.x) >> 5) {\n";
  if (up) {
    // Output (t, k, f): rows f of expert idx[t, k]'s gate and up weights against x[t].
    const std::string wg = weight(2), wu = weight(3);
    os << "      const long t = o / " << K * N << "L, kk = (o / " << N << "L) % " << K << "L, f = o % " << N << "L;\n"
       << "      const long e = (long)" << call(name, idx, {"t", "kk"}) << ";\n"
       << "      if (e < 0 || e >= " << E << "L) { if (lane == 0) " << write("__int_as_float(0x7fc00000)", {"t", "kk", "f"})
       << " continue; }\n"
       << "      float g = 0.0f, u = 0.0f;\n";
    auto xs = [&](const std::string& d) { return call(name, x, {"t", "(" + d + ")"}); };
    os << dot_loop("g", wg, "(e * " + std::to_string(N) + "L + f) * " + std::to_string(C) + "L", C, bf16(2), xs)
       << dot_loop("u", wu, "(e * " + std::to_string(N) + "L + f) * " + std::to_string(C) + "L", C, bf16(3), xs)
       << "      g = lg_warp_sum(g); u = lg_warp_sum(u);\n"
       << "      if (lane == 0) " << write("g / (1.0f + expf(-g)) * u", {"t", "kk", "f"}) << "\n";
  } else {
    // Output (t, d): the token's k experts' rows d against their activations, weighted.
    const std::string wd = weight(3);
    const ir::ValueId w = n.operands[2];
    os << "      const long t = o / " << N << "L, dd = o % " << N << "L;\n"
       << "      float acc = 0.0f; bool bad = false;\n"
       << "      for (long kk = 0; kk < " << K << "L; ++kk) {\n"
       << "        const long e = (long)" << call(name, idx, {"t", "kk"}) << ";\n"
       << "        if (e < 0 || e >= " << E << "L) { bad = true; continue; }\n"
       << "        float s = 0.0f;\n";
    auto as = [&](const std::string& f) { return call(name, x, {"t", "kk", "(" + f + ")"}); };
    os << dot_loop("s", wd, "(e * " + std::to_string(N) + "L + dd) * " + std::to_string(C) + "L", C, bf16(3), as)
       << "        acc += " << call(name, w, {"t", "kk"}) << " * s;\n"
       << "      }\n"
       << "      acc = lg_warp_sum(acc);\n"
       << "      if (lane == 0) " << write("bad ? __int_as_float(0x7fc00000) : acc", {"t", "dd"}) << "\n";
  }
  os << "    }\n  }\n";
  wc.push_back((up ? K * N : N) * 32);  // a warp per output: threads of work per T
  wp.push_back(1);
}

}  // namespace lg::emit::cuda
