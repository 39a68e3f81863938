// Bookkeeping over stages: readers, inputs, dependencies, ordering, merging. Every pass works
// through these so that the order of stages and the set of stored values stay consistent.
#include "lift/stage.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>

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
  }
  return "?";
}

int64_t numel(const ir::Shape& shape, int64_t T) {
  int64_t n = 1;
  for (const auto& d : shape) n *= dim_value(d, T);
  return n;
}

std::string span_text(const ir::Graph& g, const ir::Span& span) {
  std::string file = span.file >= 0 && static_cast<size_t>(span.file) < g.files.size()
                         ? g.files[static_cast<size_t>(span.file)]
                         : std::string("<unknown>");
  return file + ":" + std::to_string(span.line) + ":" + std::to_string(span.col);
}

namespace {

// Users of every node, built once per call (graphs are a few thousand nodes).
std::vector<std::vector<ir::ValueId>> users_of(const ir::Graph& g) {
  std::vector<std::vector<ir::ValueId>> users(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ir::ValueId o : g.nodes[i].operands) users[static_cast<size_t>(o)].push_back(static_cast<ir::ValueId>(i));
  return users;
}

void readers_rec(const StagedProgram& p, const std::vector<std::vector<ir::ValueId>>& users,
                 ir::ValueId v, std::set<int32_t>& out, std::vector<bool>& seen) {
  if (seen[static_cast<size_t>(v)]) return;
  seen[static_cast<size_t>(v)] = true;
  for (ir::ValueId o : p.graph.outputs)
    if (o == v) out.insert(-1);
  for (ir::ValueId u : users[static_cast<size_t>(v)]) {
    int32_t s = p.stage_of[static_cast<size_t>(u)];
    if (s >= 0) out.insert(s);
    else if (p.is_inline[static_cast<size_t>(u)]) readers_rec(p, users, u, out, seen);
  }
}

}  // namespace

std::vector<int32_t> reader_stages(const StagedProgram& p, ir::ValueId v) {
  auto users = users_of(p.graph);
  std::set<int32_t> out;
  std::vector<bool> seen(p.graph.nodes.size(), false);
  readers_rec(p, users, v, out, seen);
  return {out.begin(), out.end()};
}

std::vector<ir::ValueId> stage_inputs(const StagedProgram& p, int32_t s) {
  std::set<ir::ValueId> out;
  std::vector<bool> seen(p.graph.nodes.size(), false);
  std::function<void(ir::ValueId)> visit = [&](ir::ValueId v) {
    if (seen[static_cast<size_t>(v)]) return;
    seen[static_cast<size_t>(v)] = true;
    const ir::Node& n = p.graph.at(v);
    int32_t sv = p.stage_of[static_cast<size_t>(v)];
    if (sv == s || p.is_inline[static_cast<size_t>(v)]) {
      for (ir::ValueId o : n.operands) visit(o);
      return;
    }
    out.insert(v);  // a source buffer or another stage's value
  };
  for (ir::ValueId v : p.stages[static_cast<size_t>(s)].nodes) {
    seen[static_cast<size_t>(v)] = true;
    for (ir::ValueId o : p.graph.at(v).operands) visit(o);
  }
  return {out.begin(), out.end()};
}

// Dependencies of every stage at once: producers of inputs, and for a state write, every other
// stage that reads the version it overwrites (write-after-read: the write is in place).
static std::vector<std::set<int32_t>> all_deps(const StagedProgram& p) {
  auto users = users_of(p.graph);
  std::vector<std::set<int32_t>> deps(p.stages.size());
  for (size_t s = 0; s < p.stages.size(); ++s) {
    for (ir::ValueId in : stage_inputs(p, static_cast<int32_t>(s))) {
      int32_t ps = p.stage_of[static_cast<size_t>(in)];
      if (ps >= 0 && ps != static_cast<int32_t>(s)) deps[s].insert(ps);
    }
    for (ir::ValueId v : p.stages[s].nodes) {
      if (p.graph.at(v).op != ir::Op::StateWrite) continue;
      std::set<int32_t> readers;
      std::vector<bool> seen(p.graph.nodes.size(), false);
      seen[static_cast<size_t>(v)] = true;  // the write itself is not a reader of the old version
      readers_rec(p, users, p.graph.at(v).operands[0], readers, seen);
      for (int32_t r : readers)
        if (r >= 0 && r != static_cast<int32_t>(s)) deps[s].insert(r);
    }
  }
  return deps;
}

std::vector<int32_t> stage_deps(const StagedProgram& p, int32_t s) {
  auto deps = all_deps(p);
  return {deps[static_cast<size_t>(s)].begin(), deps[static_cast<size_t>(s)].end()};
}

bool merge_races_on_state(const StagedProgram& p, int32_t a, int32_t b) {
  const ir::Graph& g = p.graph;
  std::set<ir::ValueId> read, overwritten;
  std::vector<bool> seen(g.nodes.size(), false);
  // State versions the stages' values read (through inline nodes). A write's own link to the
  // version it replaces (operand 0) is the write, not a read.
  std::function<void(ir::ValueId)> reads = [&](ir::ValueId v) {
    for (ir::ValueId o : g.at(v).operands) {
      if (seen[static_cast<size_t>(o)]) continue;
      seen[static_cast<size_t>(o)] = true;
      const ir::Op op = g.at(o).op;
      if (op == ir::Op::State || op == ir::Op::StateWrite) read.insert(o);
      if (p.is_inline[static_cast<size_t>(o)]) reads(o);
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

bool merge_makes_cycle(const StagedProgram& p, int32_t a, int32_t b) {
  auto deps = all_deps(p);
  std::vector<std::vector<int32_t>> succ(p.stages.size());
  for (size_t s = 0; s < deps.size(); ++s)
    for (int32_t d : deps[s]) succ[static_cast<size_t>(d)].push_back(static_cast<int32_t>(s));
  // A path x -> c -> ... -> y with c outside {a, b} becomes a cycle once x and y are one stage.
  auto through_third = [&](int32_t x, int32_t y) {
    std::vector<bool> seen(p.stages.size(), false);
    std::vector<int32_t> stack;
    for (int32_t c : succ[static_cast<size_t>(x)])
      if (c != y) stack.push_back(c);
    while (!stack.empty()) {
      int32_t c = stack.back();
      stack.pop_back();
      if (seen[static_cast<size_t>(c)]) continue;
      seen[static_cast<size_t>(c)] = true;
      for (int32_t n : succ[static_cast<size_t>(c)]) {
        if (n == y) return true;
        if (n != x) stack.push_back(n);
      }
    }
    return false;
  };
  return through_third(a, b) || through_third(b, a);
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
  auto users = users_of(p.graph);
  for (size_t s = 0; s < p.stages.size(); ++s) {
    auto& st = p.stages[s];
    st.stores.clear();
    for (ir::ValueId v : st.nodes) {
      if (p.graph.at(v).op == ir::Op::StateWrite) continue;
      std::set<int32_t> readers;
      std::vector<bool> seen(p.graph.nodes.size(), false);
      readers_rec(p, users, v, readers, seen);
      bool outside = std::any_of(readers.begin(), readers.end(),
                                 [&](int32_t r) { return r != static_cast<int32_t>(s); });
      if (outside) st.stores.push_back(v);
    }
  }
  // Topological order of stages, ties broken by first node (keeps the source order readable),
  // except that stages depending on no other stage come first: what they compute from the inputs
  // alone (the embedding lookup, RoPE's cos/sin of pos) then shares the first launch
  // (pass_group_launches) instead of taking one of its own where it is first read.
  auto deps = all_deps(p);
  std::vector<int32_t> indeg(p.stages.size(), 0);
  std::vector<std::vector<int32_t>> succ(p.stages.size());
  for (size_t s = 0; s < deps.size(); ++s) {
    indeg[s] = static_cast<int32_t>(deps[s].size());
    for (int32_t d : deps[s]) succ[static_cast<size_t>(d)].push_back(static_cast<int32_t>(s));
  }
  auto first = [&](int32_t s) { return p.stages[static_cast<size_t>(s)].nodes.front(); };
  auto root = [&](int32_t s) { return deps[static_cast<size_t>(s)].empty(); };
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
  std::vector<Stage> sorted;
  for (int32_t s : order) sorted.push_back(std::move(p.stages[static_cast<size_t>(s)]));
  p.stages = std::move(sorted);
  for (size_t s = 0; s < p.stages.size(); ++s)
    for (ir::ValueId v : p.stages[s].nodes) p.stage_of[static_cast<size_t>(v)] = static_cast<int32_t>(s);
  p.launches.clear();
  for (size_t s = 0; s < p.stages.size(); ++s) p.launches.push_back({{static_cast<int32_t>(s)}});
}

std::set<std::pair<int32_t, int32_t>> stage_line_set(const StagedProgram& p, const Stage& s) {
  std::set<std::pair<int32_t, int32_t>> lines;
  std::vector<bool> seen(p.graph.nodes.size(), false);
  // Constant expressions (an eps and its cast) say nothing about which statement a stage
  // computes, and one merged constant carries the line of its first use only.
  std::vector<int8_t> constant(p.graph.nodes.size(), -1);
  std::function<bool(ir::ValueId)> is_constant = [&](ir::ValueId v) -> bool {
    int8_t& c = constant[static_cast<size_t>(v)];
    if (c >= 0) return c != 0;
    const ir::Node& n = p.graph.at(v);
    bool k = n.op == ir::Op::Const || n.op == ir::Op::Arange;
    if (!k && !n.operands.empty() && (ir::is_elementwise(n.op) || ir::is_movement(n.op)))
      k = std::all_of(n.operands.begin(), n.operands.end(), is_constant);
    c = k ? 1 : 0;
    return k;
  };
  std::function<void(ir::ValueId)> visit = [&](ir::ValueId v) {
    if (seen[static_cast<size_t>(v)]) return;
    seen[static_cast<size_t>(v)] = true;
    const ir::Node& n = p.graph.at(v);
    if (n.span.line > 0 && !is_constant(v)) lines.insert({n.span.file, n.span.line});
    for (ir::ValueId o : n.operands)
      if (p.is_inline[static_cast<size_t>(o)]) visit(o);
  };
  for (ir::ValueId v : s.nodes) visit(v);
  return lines;
}

std::vector<std::string> stage_lines(const StagedProgram& p, const Stage& s) {
  std::vector<std::string> out;
  for (auto [f, l] : stage_line_set(p, s)) {
    std::string file = f >= 0 && static_cast<size_t>(f) < p.graph.files.size() ? p.graph.files[static_cast<size_t>(f)]
                                                                              : std::string("<unknown>");
    out.push_back(file + ":" + std::to_string(l));
  }
  return out;
}

}  // namespace lg::lift
