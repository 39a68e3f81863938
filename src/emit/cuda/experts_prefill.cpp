// The tensor-core form of the experts stages for steps of many tokens (render.h,
// ExpertsPrefillRender): the stage's own lambdas (its routing indices and weights, its epilogue
// and stores) around src/kernels/grouped_gemm.cuh's route and grouped GEMM. The decode form
// (experts.cpp) stays for steps of few tokens, where each routed expert's rows are read a few times
// and a GEMM tile would be mostly padding; the compiled lane picks per step (LaunchPlan::Prefill::
// min_t).
#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

namespace {

/// What the three kernels share: the moe node, its operands, sizes and the stored activation.
struct ExpertsShape {
  ir::ValueId v = -1, x = -1, idx = -1, xbuf = -1;
  bool up = false;
  int64_t E = 0, N = 0, C = 0, K = 0;
};

std::optional<ExpertsShape> experts_shape(const lift::StagedProgram& p, int32_t s) {
  const ir::Graph& g = p.graph;
  ExpertsShape es;
  es.v = experts_node(p, s);
  const ir::Node& n = g.at(es.v);
  es.up = n.op == ir::Op::MoeGateUp;
  es.x = n.operands[0];
  es.idx = n.operands[1];
  const std::vector<size_t> weights = es.up ? std::vector<size_t>{2, 3} : std::vector<size_t>{3};
  for (size_t i : weights)
    if (g.at(n.operands[i]).dtype != DType::BF16 || g.at(n.operands[i]).op != ir::Op::Param) return std::nullopt;
  const ir::Shape& ws = g.at(n.operands[weights[0]]).shape;  // [E, N, C]
  es.E = ws[0].coeff;
  es.N = ws[1].coeff;
  es.C = ws[2].coeff;
  es.K = g.at(es.idx).shape[1].coeff;
  if (es.C % 32 != 0 || es.E > 4095) return std::nullopt;
  // The GEMM reads the stored f32 row and rounds it to bf16 itself.
  es.xbuf = Renderer(p).stored_row_rounded_to_bf16(s, es.x);
  if (es.xbuf < 0) return std::nullopt;
  return es;
}

/// The stage's lambdas (the experts' own value as `lg_moe`); returns their names.
LambdaNames preamble(Renderer& r, int32_t s, const ExpertsShape& es, std::ostringstream& os) {
  os << "  float lg_moe = 0.0f;\n";
  return r.lambdas(s, r.closure(s), os, {{es.v, "lg_moe"}});
}

std::string weight(Renderer& r, const ir::Node& n, size_t i) {
  return "p" + std::to_string(r.arg(n.operands[i], false));
}

}  // namespace

std::optional<ExpertsPrefillRender> render_experts_prefill(const lift::StagedProgram& p, int32_t s) {
  if (knob_off("LG_COMPILED_MOE_MMA")) return std::nullopt;
  const auto shape = experts_shape(p, s);
  if (!shape) return std::nullopt;
  const ExpertsShape& es = *shape;
  const ir::Node& n = p.graph.at(es.v);
  ExpertsPrefillRender out;
  out.experts = es.E;
  out.slots = es.K;
  out.outputs = es.N;
  out.contraction = es.C;
  const std::string Ks = std::to_string(es.K) + "L", Ns = std::to_string(es.N) + "L", Cs = std::to_string(es.C) + "L",
                    Es = std::to_string(es.E);
  const std::string pairs = "T * " + Ks;
  auto render = [&](const std::string& bounds, const std::vector<std::string>& extra, const std::string& comment,
                    auto&& body) {
    return with_layer_lifting(p, [&](Renderer& r) {
      std::ostringstream os;
      const LambdaNames name = preamble(r, s, es, os);
      body(r, name, os);
      return ExpertsPrefillRender::Kernel{r.kernel(bounds, extra, comment, os.str()), r.args, r.layer()};
    });
  };
  out.route = render("__launch_bounds__(1024)", {"int* __restrict__ lg_route"}, "experts: group the pairs by expert",
                     [&](Renderer&, const LambdaNames& name, std::ostringstream& os) {
                       // Pair j = t * K + k's expert, or E for an index out of range (its outputs
                       // become NaN, as in the decode form).
                       os << "  auto lg_expert = [&](long j) -> int { const long e = (long)"
                          << call(name, es.idx, {"j / " + Ks, "j % " + Ks}) << "; return e >= 0 && e < " << Es
                          << "L ? (int)e : " << Es << "; };\n"
                          << "  lg_moe::route(lg_expert, " << pairs << ", " << Es << ", lg_route);\n";
                     });
  // The grouped GEMM: pair j's activation row (the token's for gate/up, the pair's own SwiGLU row
  // for down) and expert e's weight matrices.
  if (es.up) {
    out.gemm = render(
        "__launch_bounds__(128)", {"const int* __restrict__ lg_route"}, "experts: gate and up on the tensor cores",
        [&](Renderer& r, const LambdaNames& name, std::ostringstream& os) {
          const std::string xb = "p" + std::to_string(r.arg(es.xbuf, false));
          os << "  auto lg_arow = [&](int j) -> const float* { return " << xb << " + (long)(j / " << Ks << ") * " << Cs
             << "; };\n"
             << "  auto lg_w = [&](int m, int e) -> const unsigned short* { return (m == 0 ? " << weight(r, n, 2) << " : "
             << weight(r, n, 3) << ") + (long)e * " << es.N * es.C << "L; };\n"
             << "  auto lg_store = [&](int, int j, int n, const float (&d)[2]) {\n"
             << "    const long t = j / " << Ks << ", kk = j % " << Ks << ", f = n, o = (long)j * " << Ns << " + n;\n"
             << "    const float g = d[0], u = d[1];\n"
             << "    " << r.experts_write(s, es.v, name, "g / (1.0f + expf(-g)) * u", {"t", "kk", "f"}) << "\n  };\n"
             << "  lg_moe::grouped_gemm<2>(lg_arow, lg_w, lg_store, lg_route, " << Es << ", " << pairs << ", " << es.N
             << ", " << es.C << ");\n";
        });
    return out;
  }
  out.gemm = render("__launch_bounds__(128)", {"const int* __restrict__ lg_route", "float* __restrict__ lg_y"},
                    "experts: down on the tensor cores, to lg_y at the pairs' sorted positions",
                    [&](Renderer& r, const LambdaNames&, std::ostringstream& os) {
                      const std::string xb = "p" + std::to_string(r.arg(es.xbuf, false));
                      os << "  auto lg_arow = [&](int j) -> const float* { return " << xb << " + (long)j * " << Cs
                         << "; };\n"
                         << "  auto lg_w = [&](int, int e) -> const unsigned short* { return " << weight(r, n, 3)
                         << " + (long)e * " << es.N * es.C << "L; };\n"
                         << "  auto lg_store = [&](int q, int, int n, const float (&d)[1]) { lg_y[(long)q * " << Ns
                         << " + n] = d[0]; };\n"
                         << "  lg_moe::grouped_gemm<1>(lg_arow, lg_w, lg_store, lg_route, " << Es << ", " << pairs
                         << ", " << es.N << ", " << es.C << ");\n";
                    });
  out.combine = render(
      "__launch_bounds__(256)", {"const int* __restrict__ lg_route", "const float* __restrict__ lg_y"},
      "experts: the routing-weighted sum of the expert outputs, in slot order, and the epilogue",
      [&](Renderer& r, const LambdaNames& name, std::ostringstream& os) {
        os << "  const int* lg_pos = lg_moe::route_view(const_cast<int*>(lg_route), " << Es << ", " << pairs << ").pos;\n"
           << "  for (long o = (long)blockIdx.x * blockDim.x + threadIdx.x; o < T * " << Ns
           << "; o += (long)gridDim.x * blockDim.x) {\n"
           << "    const long t = o / " << Ns << ", dd = o % " << Ns << ";\n"
           << "    float acc = 0.0f;\n"
           << "    for (long kk = 0; kk < " << Ks << "; ++kk) acc += " << call(name, n.operands[2], {"t", "kk"})
           << " * lg_y[(long)lg_pos[t * " << Ks << " + kk] * " << Ns << " + dd];\n"
           << "    " << r.experts_write(s, es.v, name, "acc", {"t", "dd"}) << "\n  }\n";
      });
  return out;
}

}  // namespace lg::emit::cuda
