// pass_gemm_reduce_prologue: a row reduction that only feeds a GEMM's activation becomes that
// GEMM's prologue, so RMSNorm before q/k/v, gate/up and the LM head is no launch of its own
// (llama.cpp and the hand-written lane fuse the norm into the GEMV the same way). The GEMM then
// reduces each activation row before it uses it: a decode GEMV once per block over the row it
// stages anyway, a prefill pack kernel once per row span (emit/cuda/render.cpp). A reduction that
// other stages read too joins one GEMM reader, which stores the rows for the rest
// (pass_gemm_reduce_prologue_shared; emit/cuda/gemm_stage.cpp, GemmGroups::prologue_outs).
#include <algorithm>
#include <map>
#include <set>

#include "lift/passes.h"
#include "lift/passes/helpers.h"

namespace lg::lift {

namespace {

// The nodes stage g evaluates to form MatMul operand `a`: `a` and the inline or g-stage nodes it
// reaches (buffers are loaded, not followed). False if a node that is not elementwise (a view, a
// reduction of g's own) has an operand depending on reduction stage r: element (t, k) of the
// operand must need row t of r and nothing else.
bool operand_closure(const StagedProgram& p, ir::ValueId a, int32_t r, int32_t g, std::set<ir::ValueId>& out) {
  // Nodes the walk expands: inline nodes and g's own; r's nodes and other buffers are leaves.
  auto expands = [&](ir::ValueId v) {
    const auto vi = static_cast<size_t>(v);
    return p.stage_of[vi] != r && (p.is_inline[vi] || p.stage_of[vi] == g);
  };
  // Does v depend on r (through evaluated nodes)? Operands first, explicit stack, memoised.
  std::map<ir::ValueId, bool> dep;
  auto depends = [&](ir::ValueId root) -> bool {
    std::vector<ir::ValueId> todo{root};
    while (!todo.empty()) {
      const ir::ValueId v = todo.back();
      if (p.stage_of[static_cast<size_t>(v)] == r || !expands(v) || dep.count(v)) {
        todo.pop_back();
        continue;
      }
      bool ready = true, d = false;
      for (ir::ValueId o : p.graph.at(v).operands) {
        if (p.stage_of[static_cast<size_t>(o)] == r) {
          d = true;
        } else if (expands(o)) {
          auto it = dep.find(o);
          if (it == dep.end()) {
            todo.push_back(o);
            ready = false;
          } else {
            d = d || it->second;
          }
        }
      }
      if (!ready) continue;
      dep[v] = d;
      todo.pop_back();
    }
    if (p.stage_of[static_cast<size_t>(root)] == r) return true;
    return expands(root) && dep[root];
  };
  std::vector<ir::ValueId> todo{a};
  while (!todo.empty()) {
    const ir::ValueId v = todo.back();
    todo.pop_back();
    if (!out.insert(v).second || !expands(v)) continue;
    const ir::Node& n = p.graph.at(v);
    const bool elementwise = ir::is_elementwise(n.op);
    for (ir::ValueId o : n.operands) {
      if (!elementwise && depends(o)) return false;
      todo.push_back(o);
    }
  }
  return true;
}

// True if stage g reads reduction stage r only inside the activation operands of its MatMuls, and
// each such operand is a [rows, K] matrix whose rows are r's rows: every reduction of r reduces the
// last axis of an operand shaped like that activation.
bool feeds_only_activation_rows(const StagedProgram& p, int32_t r, int32_t g) {
  const ir::Graph& gr = p.graph;
  std::set<ir::ValueId> act;  // nodes evaluated for the activation operands
  std::vector<ir::ValueId> acts;
  for (ir::ValueId v : p.stages[static_cast<size_t>(g)].nodes) {
    const ir::Node& n = gr.at(v);
    if (n.op != ir::Op::MatMul) continue;
    std::set<ir::ValueId> a, b;
    if (!operand_closure(p, n.operands[0], r, g, a)) return false;
    if (!operand_closure(p, n.operands[1], r, g, b)) return false;
    auto in_r = [&](ir::ValueId x) { return p.stage_of[static_cast<size_t>(x)] == r; };
    if (std::any_of(b.begin(), b.end(), in_r)) return false;  // the weight side must not need it
    if (std::any_of(a.begin(), a.end(), in_r)) {
      act.insert(a.begin(), a.end());
      acts.push_back(n.operands[0]);
    }
  }
  if (acts.empty()) return false;
  for (ir::ValueId a : acts) {
    const ir::Shape& sa = gr.at(a).shape;
    if (sa.size() != 2 || !sa[1].is_const()) return false;
    for (ir::ValueId v : p.stages[static_cast<size_t>(r)].nodes) {
      const ir::Node& n = gr.at(v);
      if (n.op == ir::Op::StateWrite) return false;
      if (!ir::is_reduce(n.op)) continue;
      const ir::Shape& so = gr.at(n.operands[0]).shape;
      if (!(so == sa) || ir::positive_axis(n.attrs.axis, so.size()) != 1) return false;
    }
  }
  // Nothing else of g (its epilogue, its stores) may read r's values.
  std::set<ir::ValueId> seen;
  std::vector<ir::ValueId> todo(p.stages[static_cast<size_t>(g)].nodes);
  while (!todo.empty()) {
    const ir::ValueId v = todo.back();
    todo.pop_back();
    if (!seen.insert(v).second || act.count(v)) continue;
    const ir::Node& n = gr.at(v);
    for (ir::ValueId o : n.operands) {
      if (p.stage_of[static_cast<size_t>(o)] == r) {
        if (!(n.op == ir::Op::MatMul && o == n.operands[0])) return false;
      } else if (p.is_inline[static_cast<size_t>(o)]) {
        todo.push_back(o);
      }
    }
  }
  return true;
}

/// True if every value reduction stage r stores is the activation operand of a MatMul of g: the
/// values g's prologue computes whole (a decode GEMV stages the row, a prefill pack kernel packs
/// it), so g can store them for r's other readers as it goes.
bool stores_are_activations(const StagedProgram& p, int32_t r, int32_t g) {
  std::set<ir::ValueId> acts;
  for (ir::ValueId v : p.stages[static_cast<size_t>(g)].nodes)
    if (p.graph.at(v).op == ir::Op::MatMul) acts.insert(p.graph.at(v).operands[0]);
  const auto& stores = p.stages[static_cast<size_t>(r)].stores;
  return !stores.empty() && std::all_of(stores.begin(), stores.end(), [&](ir::ValueId v) { return acts.count(v) > 0; });
}

/// The Gemm reader g that reduction stage r joins, if any: with `shared`, r has other readers
/// too (none a Gemm stage) and g computes every row r stores; without, g is r's only reader.
detail::Merge gemm_for(const StagedProgram& p, StageGraph& sg, int32_t r, bool shared) {
  if (p.stages[static_cast<size_t>(r)].kind != StageKind::Reduce) return std::nullopt;
  const auto readers = sg.readers_of_stage(r);
  if (readers.empty() || (readers.size() > 1) != shared) return std::nullopt;
  if (std::any_of(readers.begin(), readers.end(), [](int32_t x) { return x < 0; })) return std::nullopt;
  const auto gemms = std::count_if(readers.begin(), readers.end(), [&](int32_t x) {
    return p.stages[static_cast<size_t>(x)].kind == StageKind::Gemm;
  });
  // A cache write reading the rows would later move into the GEMM (state_write_into_producer),
  // whose emitter wants every output but these rows to come from a matmul.
  const bool writes = std::any_of(readers.begin(), readers.end(), [&](int32_t x) {
    return p.stages[static_cast<size_t>(x)].kind == StageKind::StateWrite;
  });
  if (gemms != 1 || writes) return std::nullopt;
  for (int32_t g : readers) {
    if (p.stages[static_cast<size_t>(g)].kind != StageKind::Gemm || !feeds_only_activation_rows(p, r, g)) continue;
    if (shared && !stores_are_activations(p, r, g)) continue;
    if (sg.merge_is_safe(g, r)) return {{g, r}};
  }
  return std::nullopt;
}

}  // namespace

/// Merges a Reduce stage into the one Gemm stage that reads it, when it is read only as the
/// [rows, K] activation of that stage's MatMuls and reduces over K (RMSNorm -> q/k/v, gate/up,
/// LM head). Reductions with other readers are pass_gemm_reduce_prologue_shared's.
void pass_gemm_reduce_prologue(StagedProgram& prog, const FuseOptions& opts) {
  detail::merge_while(prog, opts.renormalize_every_merge,
                      [](const StagedProgram& p, StageGraph& sg, int32_t r) { return gemm_for(p, sg, r, false); });
}

/// The same for a reduction that other stages read too (Qwen3-MoE's post-attention RMSNorm: the
/// router GEMM and the experts): the Gemm stage also stores the activation rows it computes, and
/// the others read them from there. One launch fewer a sparse layer. Not when another reader is a
/// Gemm stage (each GEMM would rather take the reduction as its own prologue) or a cache write,
/// nor for a reduction that is a graph output.
void pass_gemm_reduce_prologue_shared(StagedProgram& prog, const FuseOptions& opts) {
  detail::merge_while(prog, opts.renormalize_every_merge,
                      [](const StagedProgram& p, StageGraph& sg, int32_t r) { return gemm_for(p, sg, r, true); });
}

}  // namespace lg::lift
