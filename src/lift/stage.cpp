// Bookkeeping over stages: readers, inputs, dependencies, ordering, merging. Every pass works
// through these so that the order of stages and the set of stored values stay consistent.
#include "lift/stage.h"

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_set>

#include "lift/stage_graph.h"
#include "support/error.h"

namespace lg::lift {

const char* stage_kind_name(StageKind k) {
  switch (k) {
    case StageKind::Map: return "map";
    case StageKind::Reduce: return "reduce";
    case StageKind::Gemm: return "gemm";
    case StageKind::Gather: return "gather";
    case StageKind::StateWrite: return "state_write";
    case StageKind::Attention: return "attention";
    case StageKind::TopK: return "topk";
    case StageKind::Experts: return "experts";
  }
  return "?";
}

int32_t stage_rows_symbol(const StagedProgram& p, int32_t s) {
  const ir::Graph& g = p.graph;
  int32_t sym = -1;
  for (ir::ValueId v : p.stages.at(static_cast<size_t>(s)).nodes) {
    const ir::Node& n = g.at(v);
    // A state write's own shape is the state's; its loop is over the value written.
    const ir::Shape& shape = n.op == ir::Op::StateWrite ? g.at(n.operands[1]).shape : n.shape;
    for (const ir::Dim& d : shape) {
      if (d.is_const()) continue;
      if (sym >= 0 && d.sym != sym)
        throw Error("lift: internal error: stage " + std::to_string(s) + " loops over two runtime dims (" +
                    g.symbols.at(static_cast<size_t>(sym)).name + " and " +
                    g.symbols.at(static_cast<size_t>(d.sym)).name + ")");
      sym = d.sym;
    }
  }
  return sym < 0 ? 0 : sym;
}

int64_t numel(const ir::Shape& shape, int64_t T) {
  int64_t n = 1;
  for (const auto& d : shape) n *= dim_value(d, T);
  return n;
}

int64_t numel(const ir::Shape& shape, const std::vector<int64_t>& symbols) {
  int64_t n = 1;
  for (const auto& d : shape) n *= dim_value(d, symbols);
  return n;
}

bool merge_races_on_state(const StagedProgram& p, int32_t a, int32_t b) {
  const ir::Graph& g = p.graph;
  std::set<ir::ValueId> read, overwritten;
  std::vector<bool> seen(g.nodes.size(), false);
  // State versions the stages' values read (through inline nodes). A write's own link to the
  // version it replaces (operand 0) is the write, not a read.
  std::vector<ir::ValueId> todo;
  auto reads = [&](ir::ValueId from) {
    todo.push_back(from);
    while (!todo.empty()) {
      const ir::ValueId v = todo.back();
      todo.pop_back();
      for (ir::ValueId o : g.at(v).operands) {
        if (seen[static_cast<size_t>(o)]) continue;
        seen[static_cast<size_t>(o)] = true;
        const ir::Op op = g.at(o).op;
        if (op == ir::Op::State || op == ir::Op::StateWrite) read.insert(o);
        if (p.is_inline[static_cast<size_t>(o)]) todo.push_back(o);
      }
    }
  };
  for (int32_t s : {a, b})
    for (ir::ValueId v : p.stages[static_cast<size_t>(s)].nodes) {
      const ir::Node& n = g.at(v);
      if (n.op != ir::Op::StateWrite) {
        reads(v);
        continue;
      }
      overwritten.insert(n.operands[0]);
      for (size_t i = 1; i < n.operands.size(); ++i) {
        const ir::ValueId o = n.operands[i];
        if (g.at(o).op == ir::Op::State || g.at(o).op == ir::Op::StateWrite) read.insert(o);
        if (p.is_inline[static_cast<size_t>(o)] && !seen[static_cast<size_t>(o)]) {
          seen[static_cast<size_t>(o)] = true;
          reads(o);
        }
      }
    }
  return std::any_of(overwritten.begin(), overwritten.end(), [&](ir::ValueId v) { return read.count(v) > 0; });
}

void merge_stages(StagedProgram& p, int32_t into, int32_t from) {
  auto& dst = p.stages[static_cast<size_t>(into)];
  auto& src = p.stages[static_cast<size_t>(from)];
  dst.nodes.insert(dst.nodes.end(), src.nodes.begin(), src.nodes.end());
  std::sort(dst.nodes.begin(), dst.nodes.end());
  src.nodes.clear();
  for (ir::ValueId v : dst.nodes) p.stage_of[static_cast<size_t>(v)] = into;
}

void normalize(StagedProgram& p) {
  // The index's reader sets are by node, not by stage: valid before and after the renumbering.
  NodeIndex index(p);
  normalize(p, index);
}

void normalize(StagedProgram& p, NodeIndex& index) {
  // Drop emptied stages, renumber.
  std::vector<Stage> kept;
  for (auto& s : p.stages)
    if (!s.nodes.empty()) kept.push_back(std::move(s));
  p.stages = std::move(kept);
  p.stage_of.assign(p.graph.nodes.size(), -1);
  for (size_t s = 0; s < p.stages.size(); ++s) {
    std::sort(p.stages[s].nodes.begin(), p.stages[s].nodes.end());
    for (ir::ValueId v : p.stages[s].nodes) p.stage_of[static_cast<size_t>(v)] = static_cast<int32_t>(s);
  }
  // Stores: stage nodes read outside their stage (state writes write their state instead).
  std::vector<int32_t> readers;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    auto& st = p.stages[s];
    st.stores.clear();
    for (ir::ValueId v : st.nodes) {
      if (p.graph.at(v).op == ir::Op::StateWrite) continue;
      readers.clear();
      index.reading_stages(v, readers);
      bool outside = std::any_of(readers.begin(), readers.end(),
                                 [&](int32_t r) { return r != static_cast<int32_t>(s); });
      if (outside) st.stores.push_back(v);
    }
  }
  StageGraph sg(p, &index);
  // Topological order of stages, ties broken by first node (keeps the source order readable),
  // except that stages depending on no other stage come first: what they compute from the inputs
  // alone (the embedding lookup, RoPE's cos/sin of pos) then shares the first launch
  // (pass_group_launches) instead of taking one of its own where it is first read.
  std::vector<int32_t> indeg(p.stages.size(), 0);
  std::vector<std::vector<int32_t>> succ(p.stages.size());
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const auto& deps = sg.deps(static_cast<int32_t>(s));
    indeg[s] = static_cast<int32_t>(deps.size());
    for (int32_t d : deps) succ[static_cast<size_t>(d)].push_back(static_cast<int32_t>(s));
  }
  auto first = [&](int32_t s) { return p.stages[static_cast<size_t>(s)].nodes.front(); };
  auto root = [&](int32_t s) { return sg.deps(s).empty(); };
  auto later = [&](int32_t a, int32_t b) { return root(a) != root(b) ? root(b) : first(a) > first(b); };
  std::priority_queue<int32_t, std::vector<int32_t>, decltype(later)> ready(later);
  for (size_t s = 0; s < p.stages.size(); ++s)
    if (indeg[s] == 0) ready.push(static_cast<int32_t>(s));
  std::vector<int32_t> order;
  while (!ready.empty()) {
    int32_t s = ready.top();
    ready.pop();
    order.push_back(s);
    for (int32_t n : succ[static_cast<size_t>(s)])
      if (--indeg[static_cast<size_t>(n)] == 0) ready.push(n);
  }
  if (order.size() != p.stages.size())
    throw Error("lift: internal error: stage dependencies form a cycle");
  // (sg described the stages in their old order: not used past this point.)
  std::vector<Stage> sorted;
  for (int32_t s : order) sorted.push_back(std::move(p.stages[static_cast<size_t>(s)]));
  p.stages = std::move(sorted);
  for (size_t s = 0; s < p.stages.size(); ++s)
    for (ir::ValueId v : p.stages[s].nodes) p.stage_of[static_cast<size_t>(v)] = static_cast<int32_t>(s);
  p.launches.clear();
  for (size_t s = 0; s < p.stages.size(); ++s) p.launches.push_back({{static_cast<int32_t>(s)}});
}

std::vector<bool> constant_nodes(const ir::Graph& g) {
  // Operands come before their readers: one pass in graph order.
  std::vector<bool> constant(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    bool k = n.op == ir::Op::Const || n.op == ir::Op::Arange;
    if (!k && !n.operands.empty() && (ir::is_elementwise(n.op) || ir::is_movement(n.op)))
      k = std::all_of(n.operands.begin(), n.operands.end(), [&](ir::ValueId o) { return constant[static_cast<size_t>(o)]; });
    constant[i] = k;
  }
  return constant;
}

std::set<std::pair<int32_t, int32_t>> stage_line_set(const StagedProgram& p, const Stage& s,
                                                     const std::vector<bool>* constant) {
  // Constant expressions (an eps and its cast) say nothing about which statement a stage
  // computes, and one merged constant carries the line of its first use only.
  std::vector<bool> own;
  if (!constant) {
    own = constant_nodes(p.graph);
    constant = &own;
  }
  std::set<std::pair<int32_t, int32_t>> lines;
  // The stage's nodes and the inline nodes they reach: an explicit stack (inline chains are as
  // long as the program), a set rather than a vector over the graph (explain asks every stage).
  std::unordered_set<ir::ValueId> seen;
  std::vector<ir::ValueId> todo;
  for (ir::ValueId root : s.nodes) {
    todo.push_back(root);
    while (!todo.empty()) {
      const ir::ValueId v = todo.back();
      todo.pop_back();
      if (!seen.insert(v).second) continue;
      const ir::Node& n = p.graph.at(v);
      if (n.span.line > 0 && !(*constant)[static_cast<size_t>(v)]) lines.insert({n.span.file, n.span.line});
      for (ir::ValueId o : n.operands)
        if (p.is_inline[static_cast<size_t>(o)]) todo.push_back(o);
    }
  }
  return lines;
}

std::vector<std::string> stage_lines(const StagedProgram& p, const Stage& s, const std::vector<bool>* constant) {
  std::vector<std::string> out;
  for (auto [f, l] : stage_line_set(p, s, constant)) {
    std::string file = f >= 0 && static_cast<size_t>(f) < p.graph.files.size() ? p.graph.files[static_cast<size_t>(f)]
                                                                              : std::string("<unknown>");
    out.push_back(file + ":" + std::to_string(l));
  }
  return out;
}

}  // namespace lg::lift
