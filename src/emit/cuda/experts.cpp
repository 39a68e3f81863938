// The mixture-of-experts stages moe_gate_up and moe_down (ops.def), which read only the rows of
// the experts each token was routed to (the router's top-k that routes them: topk.cpp).
//
// The experts kernels: one warp per output element, its lanes splitting the contraction, the
// expert's weight row found through the token's routed index, 16-byte loads of 8 bf16 weights
// (bypassing L1) when the weights are bf16 with a contraction a multiple of 8:
//   moe_gate_up  out[t, k, f] = silu(wg[e, f] . x[t]) * (wu[e, f] . x[t]), e = idx[t, k]:
//                one warp reads the gate and up rows f of token t's k-th expert;
//   moe_down     out[t, d] = sum_k w[t, k] * (wd[e_k, d] . act[t, k]): one warp per (t, d)
//                walks the token's k experts' rows d (the weighted sum needs no atomics, and
//                its order is the slots', as the CPU reference's).
// That is the form of a step of one token (T = 1): it reads its k experts' rows and nothing else.
// At T > 1 (batched decode, prefill) the same kernel groups the (token, slot) pairs by expert
// (grouped_experts below), so each routed expert's rows are read once per step. Steps of many
// tokens run the tensor-core form instead (experts_prefill.cpp; docs/lifting.md).
#include <algorithm>

#include "emit/cuda/expr.h"
#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

namespace {

/// `acc += x(d) * w[row + d]` over d = the lane's share of [0, K), as statements; `x` maps an
/// index expression to the activation's value there.
template <class X>
std::string dot_loop(const std::string& acc, const std::string& w, const std::string& row, int64_t K, bool bf16, X&& x) {
  std::ostringstream os;
  if (bf16 && K % 8 == 0) {
    os << "        { const uint4* wr = reinterpret_cast<const uint4*>(" << w << " + " << row << ");\n"
       << "          #pragma unroll 4\n"
       << "          for (long c = lane; c < " << K / 8 << "L; c += 32) { const uint4 w8 = lg_ld_stream(wr + c); "
       << "const long d = c * 8;\n"
       << "            " << acc << " += " << x("d") << " * lg_bf16_lo(w8.x) + " << x("d + 1") << " * lg_bf16_hi(w8.x) + "
       << x("d + 2") << " * lg_bf16_lo(w8.y) + " << x("d + 3") << " * lg_bf16_hi(w8.y);\n"
       << "            " << acc << " += " << x("d + 4") << " * lg_bf16_lo(w8.z) + " << x("d + 5") << " * lg_bf16_hi(w8.z) + "
       << x("d + 6") << " * lg_bf16_lo(w8.w) + " << x("d + 7") << " * lg_bf16_hi(w8.w); } }\n";
  } else {
    const std::string load = bf16 ? "lg_bf16(" + w + "[" + row + " + d])" : w + "[" + row + " + d]";
    os << "        for (long d = lane; d < " << K << "L; d += 32) " << acc << " += " << x("d") << " * " << load << ";\n";
  }
  return os.str();
}

/// A weight row held in registers for the grouped form: `uint4 NAME[C / 256]` (8 bf16 a lane per
/// 256 columns) when the row is bf16 with C % 256 == 0; empty (the dot then reads the row from
/// memory, L1/L2-hot across the pairs) otherwise.
bool row_in_registers(bool bf16, int64_t C) { return bf16 && C % 256 == 0 && C / 256 <= 16; }

std::string load_row(const std::string& name, const std::string& w, const std::string& row, int64_t C) {
  return "        uint4 " + name + "[" + std::to_string(C / 256) + "];\n        #pragma unroll\n        for (int c = 0; c < " +
         std::to_string(C / 256) + "; ++c) " + name + "[c] = lg_ld_stream(reinterpret_cast<const uint4*>(" + w + " + " +
         row + ") + c * 32 + lane);\n";
}

/// Whether moe_down's one-token form holds a token's k rows of C terms in registers: each a row
/// in registers, at most 32 uint4 a lane in all (128 registers).
bool down_rows_in_registers(bool bf16, int64_t C, int64_t K) { return row_in_registers(bf16, C) && K * (C / 256) <= 32; }

/// The activation row an experts stage's dot products read, when an earlier stage stored it: the
/// pointer expression of the row of (t) (moe_gate_up) or (t, kk) (moe_down) (f32, row-major, at a
/// 256-byte aligned arena offset, so every row of C % 4 == 0 floats is 16-byte aligned:
/// dot_registers reads it as float4); empty otherwise.
std::string activation_row(Renderer& r, int32_t s, ir::ValueId x, bool up, int64_t K, int64_t C) {
  const ir::ValueId xb = r.stored_row(s, x);
  if (xb < 0 || C % 4 != 0) return "";
  return "p" + std::to_string(r.arg(xb, false)) + " + " + (up ? "t" : "(t * " + std::to_string(K) + "L + kk)") + " * " +
         std::to_string(C) + "L";
}

/// The dot products of rows held in registers (load_row; `rows`: accumulator, register array)
/// with one activation row: through `x`'s lambda, one element at a time, or, when `xrow` names
/// the activation row's first float (a buffer an earlier stage stored), as two float4 loads per
/// 8 weights, shared by the rows. The lambda form costs 8 scalar loads per 8 weights, each
/// touching 8 cache lines across the warp (a lane's 8 values are 32 bytes from its neighbour's).
template <class X>
std::string dot_registers(const std::vector<std::pair<std::string, std::string>>& rows, int64_t C, X&& x,
                          const std::string& xrow) {
  std::ostringstream os;
  os << "          #pragma unroll\n          for (int c = 0; c < " << C / 256 << "; ++c) {";
  if (!xrow.empty()) {
    os << " const float4* xr = reinterpret_cast<const float4*>(" << xrow << ") + (c * 32 + lane) * 2; const float4 x0 = "
       << "__ldg(xr), x1 = __ldg(xr + 1);\n";
    for (const auto& [acc, name] : rows) os << bf16x8_dot(acc, name + "[c]", "            ");
    os << "          }\n";
    return os.str();
  }
  os << " const long d = (c * 32L + lane) * 8;\n";
  for (const auto& [acc, name] : rows) {
    const std::string w8 = name + "[c]";
    os << "            " << acc << " += " << x("d") << " * lg_bf16_lo(" << w8 << ".x) + " << x("d + 1") << " * lg_bf16_hi("
       << w8 << ".x) + " << x("d + 2") << " * lg_bf16_lo(" << w8 << ".y) + " << x("d + 3") << " * lg_bf16_hi(" << w8
       << ".y);\n"
       << "            " << acc << " += " << x("d + 4") << " * lg_bf16_lo(" << w8 << ".z) + " << x("d + 5")
       << " * lg_bf16_hi(" << w8 << ".z) + " << x("d + 6") << " * lg_bf16_lo(" << w8 << ".w) + " << x("d + 7")
       << " * lg_bf16_hi(" << w8 << ".w);\n";
  }
  os << "          }\n";
  return os.str();
}

}  // namespace

// The grouped form (T > 1: a batch of decode tokens, or a prefill): the (token, slot) pairs are
// grouped by expert inside each block, so a block reads each routed expert's rows once for all
// the pairs routed to it (a batch reads the union of its experts once, not once per token). Eight
// warps, a row each.
//   moe_gate_up: item (tile of 8 rows f, group of 8 experts); warp 0 lists the pairs routed to
//     the group, in order, 1024 at a time; each warp then takes the group's experts in turn, holds
//     its gate and up rows in registers, and computes act[t, k, f] for the expert's pairs.
//   moe_down: item (tile of 8 rows d); for tokens in chunks, a counting sort of the chunk's pairs
//     by expert (shared memory), then per expert in ascending order its row d in registers against
//     the activations of its pairs, weighted, summed per token in shared memory: no atomics on the
//     output, the same order every run (experts ascending, not slot order as the GEMV).
// Steps of 64 tokens and more take the tensor-core form (experts_prefill.cpp) where it applies.
template <class Write>
void Renderer::grouped_experts(std::ostringstream& os, const ir::Node& n, bool up, const LambdaNames& name,
                               Write&& write, int64_t E, int64_t N, int64_t C, int64_t K, const std::string& xrow) {
  const ir::ValueId x = n.operands[0], idx = n.operands[1];
  const std::string Ks = std::to_string(K) + "L", Ns = std::to_string(N) + "L", Es = std::to_string(E) + "L";
  const int64_t tiles = (N + 7) / 8;
  auto IDX = [&](const std::string& j) { return "(long)" + call(name, idx, {"(" + j + ") / " + Ks, "(" + j + ") % " + Ks}); };
  const size_t wi = up ? 2 : 3;
  const std::string w1 = "p" + std::to_string(arg(n.operands[wi], false));
  const bool regs = row_in_registers(g.at(n.operands[wi]).dtype == DType::BF16, C);
  os << "    if (T > 1) {\n      const int warp = threadIdx.x >> 5;\n";
  if (up) {
    const int64_t G = 8, groups = (E + G - 1) / G;
    const std::string w2 = "p" + std::to_string(arg(n.operands[3], false));
    const std::string row = "(e * " + Ns + " + f) * " + std::to_string(C) + "L";
    auto xs = [&](const std::string& d) { return call(name, x, {"t", "(" + d + ")"}); };
    os << "      __shared__ int lg_pair[1024]; __shared__ int lg_pexp[1024]; __shared__ int lg_np;\n"
       << "      const long n_pairs = T * " << Ks << ";\n"
       << "      for (long item = blockIdx.x; item < " << tiles * groups << "L; item += gridDim.x) {\n"
       << "        const long f = (item % " << tiles << "L) * 8 + warp, e0 = (item / " << tiles << "L) * " << G << "L;\n"
       << "        for (long c0 = 0; c0 < n_pairs; c0 += 1024) {\n"
       << "          __syncthreads();\n"
       << "          if (warp == 0) {\n"
       << "            int np = 0; const long c1 = min(c0 + 1024L, n_pairs);\n"
       << "            for (long b = c0; b < c1; b += 32) {\n"
       << "              const long j = b + lane; const long e = j < c1 ? " << IDX("j") << " : -1L;\n"
       << "              const bool in = e >= e0 && e < e0 + " << G << "L;\n"
       << "              const unsigned m = __ballot_sync(0xffffffffu, in);\n"
       << "              if (in) { const int at = np + __popc(m & ((1u << lane) - 1u)); lg_pair[at] = (int)j; lg_pexp[at] = (int)e; }\n"
       << "              np += __popc(m);\n"
       << "            }\n"
       << "            if (lane == 0) lg_np = np;\n"
       << "          }\n"
       << "          __syncthreads();\n"
       << "          const int np = lg_np;\n"
       << "          if (f >= " << Ns << ") continue;\n"
       << "          for (long e = e0; e < min(e0 + " << G << "L, " << Es << "); ++e) {\n"
       << "            bool any = false;\n"
       << "            for (int q = lane; q < np; q += 32) any = any || lg_pexp[q] == (int)e;\n"
       << "            if (!__any_sync(0xffffffffu, any)) continue;\n";
    if (regs) os << load_row("rg", w1, row, C) << load_row("ru", w2, row, C);
    os << "            for (int q = 0; q < np; ++q) {\n"
       << "              if (lg_pexp[q] != (int)e) continue;\n"
       << "              const long j = lg_pair[q], t = j / " << Ks << ", kk = j % " << Ks << ", o = j * " << Ns << " + f;\n"
       << "              float g = 0.0f, u = 0.0f;\n";
    if (regs) os << dot_registers({{"g", "rg"}, {"u", "ru"}}, C, xs, xrow);
    else os << dot_loop("g", w1, row, C, g.at(n.operands[2]).dtype == DType::BF16, xs)
            << dot_loop("u", w2, row, C, g.at(n.operands[3]).dtype == DType::BF16, xs);
    os << "              g = lg_warp_sum(g); u = lg_warp_sum(u);\n"
       << "              if (lane == 0) " << write("g / (1.0f + expf(-g)) * u", {"t", "kk", "f"}) << "\n"
       << "            }\n          }\n        }\n      }\n    }\n";
  } else {
    const int64_t TC = std::min<int64_t>(256, std::max<int64_t>(1, 2048 / K));
    const std::string row = "(e * " + Ns + " + dd) * " + std::to_string(C) + "L";
    auto as = [&](const std::string& f) { return call(name, x, {"t", "kk", "(" + f + ")"}); };
    os << "      __shared__ int lg_cnt[" << E << "]; __shared__ int lg_start[" << E + 1 << "]; __shared__ int lg_list["
       << TC * K << "]; __shared__ float lg_acc[" << TC * 8 << "];\n"
       << "      for (long item = blockIdx.x; item < " << tiles << "L; item += gridDim.x) {\n"
       << "        const long dd = item * 8 + warp;\n"
       << "        for (long t0 = 0; t0 < T; t0 += " << TC << "L) {\n"
       << "          const long t1 = min(t0 + " << TC << "L, T);\n"
       << "          __syncthreads();\n"
       << "          for (int i = threadIdx.x; i < " << E << "; i += blockDim.x) lg_cnt[i] = 0;\n"
       << "          for (int i = threadIdx.x; i < " << TC * 8 << "; i += blockDim.x) lg_acc[i] = 0.0f;\n"
       << "          __syncthreads();\n"
       << "          for (long j = t0 * " << Ks << " + threadIdx.x; j < t1 * " << Ks << "; j += blockDim.x) { const long e = "
       << IDX("j") << "; if (e >= 0 && e < " << Es << ") atomicAdd(&lg_cnt[e], 1); }\n"
       << "          __syncthreads();\n"
       << "          if (threadIdx.x == 0) { int s = 0; for (int i = 0; i < " << E
       << "; ++i) { lg_start[i] = s; s += lg_cnt[i]; lg_cnt[i] = lg_start[i]; } lg_start[" << E << "] = s; }\n"
       << "          __syncthreads();\n"
       << "          for (long j = t0 * " << Ks << " + threadIdx.x; j < t1 * " << Ks << "; j += blockDim.x) { const long e = "
       << IDX("j") << "; if (e >= 0 && e < " << Es << ") lg_list[atomicAdd(&lg_cnt[e], 1)] = (int)(j - t0 * " << Ks
       << "); }\n"
       << "          __syncthreads();\n"
       << "          if (dd >= " << Ns << ") continue;\n"
       << "          for (long e = 0; e < " << Es << "; ++e) {\n"
       << "            const int q0 = lg_start[e], q1 = lg_start[e + 1];\n"
       << "            if (q0 == q1) continue;\n";
    if (regs) os << load_row("rd", w1, row, C);
    os << "            for (int q = q0; q < q1; ++q) {\n"
       << "              const long j = t0 * " << Ks << " + lg_list[q], t = j / " << Ks << ", kk = j % " << Ks << ";\n"
       << "              float s = 0.0f;\n";
    if (regs) os << dot_registers({{"s", "rd"}}, C, as, xrow);
    else os << dot_loop("s", w1, row, C, g.at(n.operands[3]).dtype == DType::BF16, as);
    os << "              s = lg_warp_sum(s);\n"
       << "              if (lane == 0) lg_acc[(t - t0) * 8 + warp] += " << call(name, n.operands[2], {"t", "kk"}) << " * s;\n"
       << "            }\n          }\n"
       << "          __syncwarp();\n"
       << "          for (long t = t0 + lane; t < t1; t += 32) { const long o = t * " << Ns << " + dd; "
       << write("lg_acc[(t - t0) * 8 + warp]", {"t", "dd"}) << " }\n"
       << "        }\n      }\n    }\n";
  }
}

ir::ValueId experts_node(const lift::StagedProgram& p, int32_t s) {
  ir::ValueId v = -1;
  for (ir::ValueId u : p.stages[static_cast<size_t>(s)].nodes)
    if (p.graph.at(u).op == ir::Op::MoeGateUp || p.graph.at(u).op == ir::Op::MoeDown) {
      if (v >= 0) throw Error("emit: an experts stage computes two expert ops");
      v = u;
    }
  if (v < 0) throw Error("emit: internal error: an experts stage without an expert op");
  return v;
}

std::string Renderer::experts_write(int32_t s, ir::ValueId v, const LambdaNames& name, const std::string& value,
                                    const std::vector<std::string>& ix) {
  std::string w = "{ lg_moe = " + value + ";";
  for (ir::ValueId u : p.stages[static_cast<size_t>(s)].stores)
    w += " p" + std::to_string(arg(u, true)) + "[o] = " + (u == v ? std::string("lg_moe") : call(name, u, ix)) + ";";
  return w + " }";
}

namespace {

/// What an experts stage's warp-per-output loop (its form at T = 1) reads: expert node v of stage
/// s, the stage's lambdas, the dims (E experts of N rows of C terms; K slots a token) and the
/// activation row's pointer when an earlier stage stored it (xrow, else empty).
struct ExpertsLoop {
  Renderer& r;
  int32_t s;
  ir::ValueId v;
  const LambdaNames& name;
  int64_t E, N, C, K;
  std::string xrow;
  const ir::Node& node() const { return r.g.at(v); }
  /// The kernel parameter of weight operand i.
  std::string weight(size_t i) const { return "p" + std::to_string(r.arg(node().operands[i], false)); }
  bool bf16(size_t i) const { return r.g.at(node().operands[i]).dtype == DType::BF16; }
  /// Lane 0's statement writing every store of the stage at the output's index (experts_write).
  std::string write(const std::string& value, const std::vector<std::string>& ix) const {
    return r.experts_write(s, v, name, value, ix);
  }
};

/// moe_gate_up's output (t, k, f): rows f of expert idx[t, k]'s gate and up weights against x[t],
/// silu(gate) * up; a NaN where the routed index is out of range.
void gate_up_output(const ExpertsLoop& el, std::ostringstream& os) {
  const ir::ValueId x = el.node().operands[0], idx = el.node().operands[1];
  const int64_t E = el.E, N = el.N, C = el.C, K = el.K;
  const std::string wg = el.weight(2), wu = el.weight(3);
  os << "      const long t = o / " << K * N << "L, kk = (o / " << N << "L) % " << K << "L, f = o % " << N << "L;\n"
     << "      const long e = (long)" << call(el.name, idx, {"t", "kk"}) << ";\n"
     << "      if (e < 0 || e >= " << E << "L) { if (lane == 0) " << el.write("__int_as_float(0x7fc00000)", {"t", "kk", "f"})
     << " continue; }\n"
     << "      float g = 0.0f, u = 0.0f;\n";
  auto xs = [&](const std::string& d) { return call(el.name, x, {"t", "(" + d + ")"}); };
  const std::string row = "(e * " + std::to_string(N) + "L + f) * " + std::to_string(C) + "L";
  // Both rows in registers first: every load of the warp in flight at once (the loop form
  // waited on its loads a few at a time and streamed ~1.4 TB/s at the 30B-A3B shape).
  if (row_in_registers(el.bf16(2) && el.bf16(3), C))
    os << load_row("rg", wg, row, C) << load_row("ru", wu, row, C) << dot_registers({{"g", "rg"}, {"u", "ru"}}, C, xs, el.xrow);
  else
    os << dot_loop("g", wg, row, C, el.bf16(2), xs) << dot_loop("u", wu, row, C, el.bf16(3), xs);
  os << "      g = lg_warp_sum(g); u = lg_warp_sum(u);\n"
     << "      if (lane == 0) " << el.write("g / (1.0f + expf(-g)) * u", {"t", "kk", "f"}) << "\n";
}

/// moe_down's output (t, d): the token's k experts' rows d against their activations, weighted,
/// summed in slot order (as the CPU reference); a NaN where a routed index is out of range.
/// `rows_in_registers`: the k rows loaded first (at most 32 uint4 a lane, 128 registers), else a
/// loop over the slots; `rows_early`: those loads issued before `wait`, the wait on the previous
/// launch (experts_stage).
void down_output(const ExpertsLoop& el, bool rows_in_registers, bool rows_early, const std::string& wait,
                 std::ostringstream& os) {
  const ir::ValueId x = el.node().operands[0], idx = el.node().operands[1], w = el.node().operands[2];
  const int64_t E = el.E, N = el.N, C = el.C, K = el.K;
  const std::string wd = el.weight(3);
  os << "      const long t = o / " << N << "L, dd = o % " << N << "L;\n"
     << "      float acc = 0.0f; bool bad = false;\n";
  const std::string row = "(e * " + std::to_string(N) + "L + dd) * " + std::to_string(C) + "L";
  auto as = [&](const std::string& f) { return call(el.name, x, {"t", "kk", "(" + f + ")"}); };
  if (rows_in_registers) {
    // The k experts' rows d all in registers first (an out-of-range index reads expert 0's row
    // and marks the output NaN), then the k dot products in slot order, as the loop form.
    os << "      uint4 rd[" << K << "][" << C / 256 << "];\n"
       << "      #pragma unroll\n"
       << "      for (long kk = 0; kk < " << K << "L; ++kk) {\n"
       << "        long e = (long)" << call(el.name, idx, {"t", "kk"}) << ";\n"
       << "        if (e < 0 || e >= " << E << "L) { bad = true; e = 0; }\n"
       << "        #pragma unroll\n"
       << "        for (int c = 0; c < " << C / 256 << "; ++c) rd[kk][c] = lg_ld_stream(reinterpret_cast<const uint4*>("
       << wd << " + " << row << ") + c * 32 + lane);\n"
       << "      }\n";
    if (rows_early) os << "      if (!lg_waited) { " << wait << " lg_waited = true; }  // the rows are in flight\n";
    os
       << "      #pragma unroll\n"
       << "      for (long kk = 0; kk < " << K << "L; ++kk) {\n"
       << "        float s = 0.0f;\n"
       << dot_registers({{"s", "rd[kk]"}}, C, as, el.xrow)
       << "        acc += " << call(el.name, w, {"t", "kk"}) << " * s;\n"
       << "      }\n";
  } else {
    os << "      for (long kk = 0; kk < " << K << "L; ++kk) {\n"
       << "        const long e = (long)" << call(el.name, idx, {"t", "kk"}) << ";\n"
       << "        if (e < 0 || e >= " << E << "L) { bad = true; continue; }\n"
       << "        float s = 0.0f;\n"
       << dot_loop("s", wd, row, C, el.bf16(3), as) << "        acc += " << call(el.name, w, {"t", "kk"}) << " * s;\n"
       << "      }\n";
  }
  os << "      acc = lg_warp_sum(acc);\n"
     << "      if (lane == 0) " << el.write("bad ? __int_as_float(0x7fc00000) : acc", {"t", "dd"})
     << "\n";
}

}  // namespace

void Renderer::experts_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  const ir::ValueId v = experts_node(p, s);
  const ir::Node& n = g.at(v);
  for (ir::ValueId u : st.stores)
    if (!(g.at(u).shape == n.shape))
      throw Error("emit: an experts stage stores a value of another shape than its experts' (" + std::string(g.at(u).name) + ")");
  const bool up = n.op == ir::Op::MoeGateUp;
  os << "  {  // experts stage: " << ir::op_name(n.op) << "\n    float lg_moe = 0.0f;\n";
  auto nodes = closure(s);
  auto name = lambdas(s, nodes, os, {{v, "lg_moe"}});
  // Lane 0 of the output's warp writes every store at the output's index.
  auto write = [&](const std::string& value, const std::vector<std::string>& ix) {
    return experts_write(s, v, name, value, ix);
  };
  const ir::ValueId x = n.operands[0], idx = n.operands[1];
  const int64_t K = g.at(idx).shape[1].coeff;
  const auto bf16 = [&](size_t i) { return g.at(n.operands[i]).dtype == DType::BF16; };
  const ir::Shape& ws = g.at(n.operands[up ? 2 : 3]).shape;  // [E, N, C]: N outputs of C terms per expert
  const int64_t E = ws[0].coeff, N = ws[1].coeff, C = ws[2].coeff;
  const std::string outputs = "(T * " + std::to_string(up ? K * N : N) + "L)";
  os << "    const int lane = threadIdx.x & 31;\n";
  if (E > 4096) throw Error("emit: the experts stage takes at most 4096 experts, found " + std::to_string(E));
  const std::string xrow = activation_row(*this, s, x, up, K, C);
  // moe_down at T = 1 holds its k rows of each output in registers (below). Where the routed
  // indices are settled before this launch starts (the topk stage two launches back, not the
  // moe_gate_up stage just before), the rows are loaded before the wait on that launch, so their
  // stream starts while moe_gate_up's last blocks run. LG_COMPILED_MOE_EARLY_ROWS=0: after it.
  // (Its weights must be settled too: params, which no launch writes.)
  const bool rows_in_registers = !up && down_rows_in_registers(bf16(3), C, K);
  const bool rows_early = rows_in_registers && p.stage_of[static_cast<size_t>(idx)] != s &&
                          !p.is_inline[static_cast<size_t>(idx)] && settled(idx) && settled(n.operands[3]) &&
                          !knob_off("LG_COMPILED_MOE_EARLY_ROWS");
  const std::string wait = std::string("lg_wait_previous_launch();") + (early_launch() ? " lg_launch_dependents();" : "");
  if (rows_early) {
    body_waits = true;
    // Two blocks an SM, as before (the rows held across the wait took ptxas to 170 registers and
    // one block an SM: the 30B-A3B step 2.85 -> 2.90 ms, 15.8 -> 19.9 ms at 16 sequences).
    min_blocks_per_sm = 2;
    os << "    bool lg_waited = false;\n    if (T > 1) { " << wait << " lg_waited = true; }\n";
  }
  grouped_experts(os, n, up, name, write, E, N, C, K, xrow);
  os << "    else\n"
     << "    for (long o = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; o < " << outputs
     << "; o += ((long)gridDim.x * blockDim.x) >> 5) {\n";
  const ExpertsLoop el{*this, s, v, name, E, N, C, K, xrow};
  if (up)
    gate_up_output(el, os);
  else
    down_output(el, rows_in_registers, rows_early, wait, os);
  os << "    }\n  }\n";
  wc.push_back((up ? K * N : N) * 32);  // a warp per output: threads of work per T
  wp.push_back(1);
}

}  // namespace lg::emit::cuda
