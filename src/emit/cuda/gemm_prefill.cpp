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
    // With a reduction in the operand (an RMSNorm prologue, a q-norm), warps walk row spans as an
    // element stage does, so that a row's reduction is read once per span, not once per element;
    // when the operand's reductions are all row reductions, a step of few rows (a decode batch)
    // gives each block a row and its reductions all the block's threads (element_loop's block
    // path). LG_COMPILED_PACK_BLOCK_ROWS=0 keeps the warp spans.
    const std::vector<ir::ValueId> operand = r.closure(s, {a});
    const bool reduces = std::any_of(operand.begin(), operand.end(), [&](ir::ValueId v) {
      return ir::is_reduce(p.graph.at(v).op) && (p.stage_of[static_cast<size_t>(v)] == s || p.is_inline[static_cast<size_t>(v)]);
    });
    const bool block_rows = reduces && !knob_off("LG_COMPILED_PACK_BLOCK_ROWS") && r.row_reductions_only(s, operand, shape);
    if (block_rows) body << "  __shared__ float lg_red[32]; bool lg_block_coop = false;\n";
    r.block_reductions_ = block_rows;
    auto name = r.lambdas(s, nodes, body, dots);
    GemmPrefillRender::Pack pk;
    pk.a = a;
    pk.K = 1;
    for (size_t k = 1; k < shape.size(); ++k) pk.K *= shape[k].coeff;
    // A row the stage stores for other stages too (pass_gemm_reduce_prologue_shared): written
    // here, in f32, as the decode GEMV's grid writes it.
    std::vector<std::pair<std::string, std::string>> writes = {
        {"packed[e]", "lg_to_bf16(" + call(name, a, idx_names(shape.size())) + ")"}};
    if (is_prologue_row(p, a))
      writes.push_back({"p" + std::to_string(r.arg(a, true)) + "[e]", call(name, a, idx_names(shape.size()))});
    r.element_loop(shape, writes, reduces, block_rows, body);
    pk.source = r.kernel("__launch_bounds__(256)", {"unsigned short* __restrict__ packed"}, comment, body.str());
    pk.args = r.args;
    pk.layer = r.layer();
    return pk;
  });
}

bool is_prologue_row(const lift::StagedProgram& p, ir::ValueId v) {
  const int32_t s = p.stage_of[static_cast<size_t>(v)];
  if (s < 0 || p.stages[static_cast<size_t>(s)].kind != lift::StageKind::Gemm) return false;
  const auto& st = p.stages[static_cast<size_t>(s)];
  if (std::find(st.stores.begin(), st.stores.end(), v) == st.stores.end()) return false;
  return std::any_of(st.nodes.begin(), st.nodes.end(), [&](ir::ValueId m) {
    return p.graph.at(m).op == ir::Op::MatMul && p.graph.at(m).operands[0] == v;
  });
}

namespace {

// For a stage of one matmul whose one output is `r + dot` for a stored f32 r of its shape
// (o_proj, down_proj: the residual add): {r, the output}, so that cuBLASLt adds r as its C
// operand and writes the output (no epilogue kernel). {-1, -1} otherwise.
std::pair<ir::ValueId, ir::ValueId> residual_sum(const lift::StagedProgram& p, int32_t s) {
  const ir::Graph& g = p.graph;
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  ir::ValueId mm = -1;
  int matmuls = 0;
  bool writes_state = false;
  for (ir::ValueId x : st.nodes) {
    writes_state = writes_state || g.at(x).op == ir::Op::StateWrite;
    if (g.at(x).op == ir::Op::MatMul) mm = x, ++matmuls;
  }
  if (matmuls != 1 || st.stores.size() != 1 || writes_state) return {-1, -1};
  const ir::ValueId v = *st.stores.begin();
  const ir::Node& vn = g.at(v);
  if (vn.op != ir::Op::Add || vn.dtype != DType::F32 || !(vn.shape == g.at(mm).shape)) return {-1, -1};
  for (int side = 0; side < 2; ++side) {
    const ir::ValueId d = vn.operands[static_cast<size_t>(side)], r = vn.operands[static_cast<size_t>(1 - side)];
    if (d == mm && p.stage_of[static_cast<size_t>(r)] != s && !p.is_inline[static_cast<size_t>(r)] &&
        g.at(r).shape == vn.shape && g.at(r).dtype == DType::F32)
      return {r, v};
  }
  return {-1, -1};
}

}  // namespace

GemmPrefillPlan plan_gemm_prefills(const lift::StagedProgram& p) {
  GemmPrefillPlan out;
  const ir::Graph& g = p.graph;
  if (!knob_off("LG_COMPILED_GEMM_STACK")) {
    std::vector<int32_t> users(g.nodes.size(), 0);
    for (const ir::Node& n : g.nodes)
      for (ir::ValueId o : n.operands) ++users[static_cast<size_t>(o)];
    for (size_t v = 0; v < g.nodes.size(); ++v)
      if (g.nodes[v].op == ir::Op::Param && g.nodes[v].dtype == DType::BF16 && users[v] == 1)
        out.stackable_weights.insert(static_cast<ir::ValueId>(v));
  }
  if (knob_off("LG_COMPILED_EPILOGUE_PACK")) return out;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const auto s32 = static_cast<int32_t>(s);
    if (!has_gemm_prefill_form(p, s32)) continue;
    for (ir::ValueId m : p.stages[s].nodes) {
      if (g.at(m).op != ir::Op::MatMul) continue;
      const ir::ValueId v = Renderer(p).stored_row_rounded_to_bf16(s32, g.at(m).operands[0]);
      if (v < 0) continue;
      // A row its stage's prologue computes for other stages (pass_gemm_reduce_prologue_shared)
      // is written by that stage's pack kernel or decode GEMV, never by an epilogue.
      if (is_prologue_row(p, v)) continue;
      // Its producer must run its prefill epilogue whenever this stage runs its prefill form: a
      // GEMM stage with that form and an epilogue, over the same rows.
      const int32_t sv = p.stage_of[static_cast<size_t>(v)];
      if (has_gemm_prefill_form(p, sv) && residual_sum(p, sv).first < 0 &&
          lift::stage_rows_symbol(p, sv) == lift::stage_rows_symbol(p, s32))
        out.epilogue_copies.insert(v);
    }
  }
  return out;
}

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

std::optional<GemmPrefillRender> render_gemm_prefill(const lift::StagedProgram& p, int32_t s,
                                                     const GemmPrefillPlan& plan) {
  const ir::Graph& g = p.graph;
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  if (!has_gemm_prefill_form(p, s)) return std::nullopt;
  GemmPrefillRender out;
  std::map<ir::ValueId, size_t> pack_of;
  std::map<ir::ValueId, std::string> zero_dots;
  std::map<ir::ValueId, Renderer::ScratchDot> dot_of;
  std::map<size_t, size_t> stack_of;  // pack -> the GEMM that stacks the weights over it
  for (ir::ValueId v : st.nodes) {
    const ir::Node& n = g.at(v);
    if (n.op != ir::Op::MatMul) continue;
    zero_dots[v] = "0.0f";
    ir::ValueId a = n.operands[0];
    const ir::Shape& sa = g.at(a).shape;
    ir::ValueId w = transposed_bf16_weight(p, a, n.operands[1]);
    const int64_t N = g.at(w).shape[0].coeff;
    auto [it, fresh] = pack_of.emplace(a, out.packs.size());
    if (fresh) out.packs.push_back({{}, {}, a, sa[1].coeff});
    // A weight only this matmul reads joins the GEMM of the weights before it over the same
    // activation: one launch and a wider N (Qwen3-0.6B, 16 sequences: 2.29 -> 1.92 ms a step;
    // bench/RESULTS.md, sixteenth session).
    const bool stackable = plan.stackable_weights.count(w) > 0;
    const auto st_it = stack_of.find(it->second);
    if (stackable && st_it != stack_of.end()) {
      auto& gm = out.gemms[st_it->second];
      dot_of[v] = {st_it->second, 0, gm.N};
      gm.weights.push_back(w);
      gm.N += N;
      continue;
    }
    if (stackable) stack_of.emplace(it->second, out.gemms.size());
    dot_of[v] = {out.gemms.size(), 0, 0};
    out.gemms.push_back({it->second, {w}, N, sa[1].coeff});
  }
  for (auto& [m, d] : dot_of) d.ld = out.gemms[d.param].N;
  std::tie(out.gemms[0].residual, out.gemms[0].out) = residual_sum(p, s);
  // Pack kernels: the activation as bf16 [T, K], evaluated through the stage's own lambdas; none
  // for a stored value whose producer's epilogue writes it as bf16 too.
  for (auto& pk : out.packs) {
    if (const ir::ValueId v = Renderer(p).stored_row_rounded_to_bf16(s, pk.a); v >= 0 && plan.epilogue_copies.count(v)) {
      pk.copy_of = v;
      continue;
    }
    const ir::ValueId a = pk.a;
    pk = render_pack(p, s, a, zero_dots, "pack a GEMM activation as bf16 for cuBLASLt");
  }
  if (out.gemms[0].residual >= 0) return out;
  // The epilogue: the stage's GEMM kernel with the dot products read back.
  std::vector<std::string> dot_params;
  for (size_t j = 0; j < out.gemms.size(); ++j) dot_params.push_back("const float* __restrict__ d" + std::to_string(j));
  std::map<ir::ValueId, std::string> copy_param;
  for (ir::ValueId v : st.stores)
    if (plan.epilogue_copies.count(v)) {
      copy_param[v] = "c" + std::to_string(out.epilogue_copies.size());
      dot_params.push_back("unsigned short* __restrict__ " + copy_param[v]);
      out.epilogue_copies.push_back(v);
    }
  std::tie(out.epilogue_source, out.epilogue_args, out.epilogue_layer) = with_layer_lifting(p, [&](Renderer& r) {
    r.scratch_dots = true;
    r.scratch_dot_of = dot_of;
    r.epilogue_copy = copy_param;
    std::ostringstream body;
    out.work_const.clear();
    out.work_t_power.clear();
    r.gemm_stage(s, body, out.work_const, out.work_t_power);
    return std::make_tuple(r.kernel("__launch_bounds__(256)", dot_params, "", body.str()), r.args, r.layer());
  });
  return out;
}

}  // namespace lg::emit::cuda
