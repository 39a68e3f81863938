#include "lift/passes/helpers.h"

#include <algorithm>
#include <set>

namespace lg::lift::detail {

bool reads_state(const StagedProgram& p, const std::vector<ir::ValueId>& inputs) {
  for (ir::ValueId in : inputs) {
    ir::Op op = p.graph.at(in).op;
    if (op == ir::Op::State || op == ir::Op::StateWrite) return true;
  }
  return false;
}

bool all_elementwise(const StagedProgram& p, int32_t s) {
  const auto& nodes = p.stages[static_cast<size_t>(s)].nodes;
  return std::all_of(nodes.begin(), nodes.end(), [&](ir::ValueId v) { return ir::is_elementwise(p.graph.at(v).op); });
}

bool costly_math(const StagedProgram& p, int32_t s) {
  std::set<ir::ValueId> seen;
  std::vector<ir::ValueId> todo(p.stages[static_cast<size_t>(s)].nodes);
  while (!todo.empty()) {
    ir::ValueId v = todo.back();
    todo.pop_back();
    if (!seen.insert(v).second) continue;
    const ir::Node& n = p.graph.at(v);
    if (ir::is_costly(n.op)) return true;
    for (ir::ValueId o : n.operands)
      if (p.is_inline[static_cast<size_t>(o)]) todo.push_back(o);
  }
  return false;
}

bool inline_maps(StagedProgram& p, bool into_gemm) {
  bool any = false;
  for (bool changed = true; changed;) {
    changed = false;
    // Last stage first: a dissolved consumer makes its producer's reader set smaller.
    //
    // One NodeIndex serves the whole sweep although stages dissolve during it: a reader set it
    // remembers names the stage nodes of its time, and a node dissolved since is followed to its
    // own readers (NodeIndex::reading_stages). Inputs are walked afresh (inputs_now): a stage
    // after s may have grown by the stages dissolved into it.
    NodeIndex index(p);
    StageGraph g(p, &index);
    for (int32_t s = static_cast<int32_t>(p.stages.size()) - 1; s >= 0; --s) {
      Stage& st = p.stages[static_cast<size_t>(s)];
      if (st.kind != StageKind::Map || st.nodes.empty() || !all_elementwise(p, s)) continue;
      const auto inputs = g.inputs_now(s);
      if (reads_state(p, inputs)) continue;
      auto readers = g.readers_of_stage(s);
      if (readers.empty() || readers.front() == -1) continue;
      bool gemm_reader = std::any_of(readers.begin(), readers.end(), [&](int32_t r) {
        return p.stages[static_cast<size_t>(r)].kind == StageKind::Gemm;
      });
      // Recomputing in several readers is only cheap when the inputs are sources (e.g. RoPE's
      // cos/sin from pos): recomputing a chain that reads other stages would grow with depth.
      bool from_sources = std::all_of(inputs.begin(), inputs.end(), [&](ir::ValueId v) {
        return ir::is_source(p.graph.at(v).op);
      });
      // A map of sources only (a weight's bf16 -> f32 cast) is a GEMM operand's load, not an
      // activation epilogue: it goes in at once so that GEMMs of the same input can merge.
      if (gemm_reader && !into_gemm && !from_sources) continue;
      if (readers.size() != 1 && !from_sources) continue;
      // ... but transcendental math of sources read by several stages (RoPE's cos and sin of
      // pos, one value for every layer once common subexpressions are merged) is computed once
      // and stored: each reader would otherwise evaluate it per element of its own, larger,
      // iteration space (every head of every layer).
      // (A map that only feeds such maps, like RoPE's angles feeding cos and sin, still goes
      // into them: they are computed once either way.)
      // (Asked only of several readers: a reader's inputs are a walk over all it recomputes.)
      const auto feeds_source_maps = [&] {
        return std::all_of(readers.begin(), readers.end(), [&](int32_t r) {
          if (p.stages[static_cast<size_t>(r)].kind != StageKind::Map) return false;
          auto in = g.inputs_now(r);
          return std::all_of(in.begin(), in.end(), [&](ir::ValueId v) {
            return ir::is_source(p.graph.at(v).op) || p.stage_of[static_cast<size_t>(v)] == s;
          });
        });
      };
      if (readers.size() != 1 && !feeds_source_maps() && costly_math(p, s)) continue;
      for (ir::ValueId v : st.nodes) {
        p.is_inline[static_cast<size_t>(v)] = true;
        p.stage_of[static_cast<size_t>(v)] = -1;
      }
      st.nodes.clear();
      changed = any = true;
    }
    if (changed) normalize(p);
  }
  return any;
}

}  // namespace lg::lift::detail
