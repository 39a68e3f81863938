// The prefill form of a GEMM stage (T > 1) on the tensor cores: a pack kernel per distinct
// activation writes it as bf16 [T, K] (evaluated through the stage's own lambdas, prologue
// included), cuBLASLt computes the dot products in f32 (planned by program.cpp, run by the
// compiled lane), and an epilogue kernel (the GEMM stage's kernel with the dot products read back,
// one thread per output element) finishes the stage. A lone GEMM whose output is `residual + dot`
// needs no epilogue: cuBLASLt adds the residual as its C operand.
#include <algorithm>
#include <tuple>

#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

GemmPrefillRender::Pack render_pack(const lift::StagedProgram& p, int32_t s, ir::ValueId a,
                                    const std::map<ir::ValueId, std::string>& dots, const std::string& comment) {
  return with_layer_lifting(p, [&](Renderer& r) {
    const ir::Shape& shape = p.graph.at(a).shape;
    std::ostringstream body;
    auto nodes = r.closure(s);
    auto name = r.lambdas(s, nodes, body, dots);
    GemmPrefillRender::Pack pk;
    pk.a = a;
    pk.K = 1;
    for (size_t k = 1; k < shape.size(); ++k) pk.K *= shape[k].coeff;
    // With a reduction in the operand (an RMSNorm prologue, a q-norm), warps walk row spans as an
    // element stage does, so that a row's reduction is read once per span, not once per element.
    const bool reduces = std::any_of(nodes.begin(), nodes.end(), [&](ir::ValueId v) {
      return ir::is_reduce(p.graph.at(v).op) && (p.stage_of[static_cast<size_t>(v)] == s || p.is_inline[static_cast<size_t>(v)]);
    });
    r.element_loop(shape, {{"packed[e]", "lg_to_bf16(" + call(name, a, idx_names(shape.size())) + ")"}}, reduces, false,
                   body);
    pk.source = r.kernel("__launch_bounds__(256)", {"unsigned short* __restrict__ packed"}, comment, body.str());
    pk.args = r.args;
    pk.layer = r.layer();
    return pk;
  });
}

namespace {

// For a lone GEMM whose one output is `r + dot` for a stored f32 r of its shape (o_proj,
// down_proj: the residual add): sets the GEMM's residual and out, so that cuBLASLt adds r as its C
// operand and writes the output (no epilogue kernel).
void find_residual(const lift::StagedProgram& p, int32_t s, GemmPrefillRender& out) {
  const ir::Graph& g = p.graph;
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  if (out.gemms.size() != 1 || st.stores.size() != 1) return;
  const ir::ValueId v = *st.stores.begin();
  const ir::Node& vn = g.at(v);
  bool writes_state = false;
  for (ir::ValueId x : st.nodes) writes_state = writes_state || g.at(x).op == ir::Op::StateWrite;
  ir::ValueId mm = -1;
  for (ir::ValueId x : st.nodes)
    if (g.at(x).op == ir::Op::MatMul) mm = x;
  if (writes_state || vn.op != ir::Op::Add || vn.dtype != DType::F32 || !(vn.shape == g.at(mm).shape)) return;
  for (int side = 0; side < 2; ++side) {
    const ir::ValueId d = vn.operands[static_cast<size_t>(side)], r = vn.operands[static_cast<size_t>(1 - side)];
    if (d == mm && p.stage_of[static_cast<size_t>(r)] != s && !p.is_inline[static_cast<size_t>(r)] &&
        g.at(r).shape == vn.shape && g.at(r).dtype == DType::F32) {
      out.gemms[0].residual = r;
      out.gemms[0].out = v;
    }
  }
}

}  // namespace

bool has_gemm_prefill_form(const lift::StagedProgram& p, int32_t s) {
  const ir::Graph& g = p.graph;
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  if (st.kind != lift::StageKind::Gemm) return false;
  bool any = false;
  for (ir::ValueId v : st.nodes) {
    const ir::Node& n = g.at(v);
    if (n.op != ir::Op::MatMul) continue;
    const ir::Shape& sa = g.at(n.operands[0]).shape;
    // cuBLASLt takes [T, K] x [K, N]: the activation's rows are the tokens.
    if (transposed_bf16_weight(p, n.operands[0], n.operands[1]) < 0 || sa.size() != 2 || sa[0].is_const() ||
        sa[0].coeff != 1)
      return false;
    any = true;
  }
  return any;
}

std::optional<GemmPrefillRender> render_gemm_prefill(const lift::StagedProgram& p, int32_t s) {
  const ir::Graph& g = p.graph;
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  if (!has_gemm_prefill_form(p, s)) return std::nullopt;
  GemmPrefillRender out;
  std::map<ir::ValueId, size_t> pack_of;
  std::map<ir::ValueId, std::string> zero_dots;
  for (ir::ValueId v : st.nodes) {
    const ir::Node& n = g.at(v);
    if (n.op != ir::Op::MatMul) continue;
    zero_dots[v] = "0.0f";
    ir::ValueId a = n.operands[0];
    const ir::Shape& sa = g.at(a).shape;
    ir::ValueId w = transposed_bf16_weight(p, a, n.operands[1]);
    auto [it, fresh] = pack_of.emplace(a, out.packs.size());
    if (fresh) out.packs.push_back({{}, {}, a, sa[1].coeff});
    out.gemms.push_back({it->second, w, g.at(w).shape[0].coeff, sa[1].coeff});
  }
  find_residual(p, s, out);
  // Pack kernels: the activation as bf16 [T, K], evaluated through the stage's own lambdas.
  for (auto& pk : out.packs) pk = render_pack(p, s, pk.a, zero_dots, "pack a GEMM activation as bf16 for cuBLASLt");
  if (out.gemms[0].residual >= 0) return out;
  // The epilogue: the stage's GEMM kernel with the dot products read back.
  std::vector<std::string> dot_params;
  for (size_t j = 0; j < out.gemms.size(); ++j) dot_params.push_back("const float* __restrict__ d" + std::to_string(j));
  std::tie(out.epilogue_source, out.epilogue_args, out.epilogue_layer) = with_layer_lifting(p, [&](Renderer& r) {
    r.scratch_dots = true;
    std::ostringstream body;
    out.work_const.clear();
    out.work_t_power.clear();
    r.gemm_stage(s, body, out.work_const, out.work_t_power);
    return std::make_tuple(r.kernel("__launch_bounds__(256)", dot_params, "", body.str()), r.args, r.layer());
  });
  return out;
}

}  // namespace lg::emit::cuda
