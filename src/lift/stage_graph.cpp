#include "lift/stage_graph.h"

#include <algorithm>

#include "support/error.h"

namespace lg::lift {

namespace {
template <class T>
void sort_unique(std::vector<T>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}
}  // namespace

NodeIndex::NodeIndex(const StagedProgram& p) : p_(p) {
  const size_t n = p.graph.nodes.size();
  // Users in compressed rows: two passes over the operands, no vector per node.
  user_start_.assign(n + 1, 0);
  for (const ir::Node& node : p.graph.nodes)
    for (ir::ValueId o : node.operands) ++user_start_[static_cast<size_t>(o) + 1];
  for (size_t i = 0; i < n; ++i) user_start_[i + 1] += user_start_[i];
  users_.resize(user_start_[n]);
  std::vector<size_t> fill(user_start_.begin(), user_start_.end() - 1);
  for (size_t i = 0; i < n; ++i)
    for (ir::ValueId o : p.graph.nodes[i].operands) users_[fill[static_cast<size_t>(o)]++] = static_cast<ir::ValueId>(i);
  is_output_.assign(n, false);
  for (ir::ValueId o : p.graph.outputs) is_output_[static_cast<size_t>(o)] = true;
  reach_state_.assign(n, 0);
  reach_.resize(n);
  mark_.assign(n, 0);
}

// reach(v): for each user u, u itself if it is a stage node, reach(u) if it is inline; output if
// v or an inline user is a graph output. Users come after their operands (the graph is in
// topological order), so the unknown inline nodes downstream of v are collected first and
// computed from the last one backwards.
const NodeIndex::Reach& NodeIndex::reach(ir::ValueId v) {
  const auto vi = static_cast<size_t>(v);
  if (reach_state_[vi] == 2) return reach_[vi];
  auto is_inline_user = [&](size_t u) { return p_.stage_of[u] < 0 && p_.is_inline[u]; };
  std::vector<ir::ValueId> todo{v}, order;
  reach_state_[vi] = 1;
  while (!todo.empty()) {
    const ir::ValueId x = todo.back();
    todo.pop_back();
    order.push_back(x);
    for (const ir::ValueId* u = users_begin(x); u != users_end(x); ++u) {
      const auto ui = static_cast<size_t>(*u);
      if (is_inline_user(ui) && reach_state_[ui] == 0) {
        reach_state_[ui] = 1;
        todo.push_back(*u);
      }
    }
  }
  std::sort(order.begin(), order.end(), std::greater<>());
  for (ir::ValueId x : order) {
    const auto xi = static_cast<size_t>(x);
    Reach r;
    r.output = is_output_[xi];
    for (const ir::ValueId* u = users_begin(x); u != users_end(x); ++u) {
      const auto ui = static_cast<size_t>(*u);
      if (p_.stage_of[ui] >= 0) {
        r.nodes.push_back(*u);
      } else if (p_.is_inline[ui]) {
        r.nodes.insert(r.nodes.end(), reach_[ui].nodes.begin(), reach_[ui].nodes.end());
        r.output = r.output || reach_[ui].output;
      }
    }
    sort_unique(r.nodes);
    reach_[xi] = std::move(r);
    reach_state_[xi] = 2;
  }
  return reach_[vi];
}

void NodeIndex::reading_stages(ir::ValueId v, std::vector<int32_t>& out) {
  const Reach& r = reach(v);
  if (r.output) out.push_back(-1);
  std::vector<ir::ValueId> dissolved;
  for (ir::ValueId u : r.nodes) {
    const int32_t s = p_.stage_of[static_cast<size_t>(u)];
    if (s >= 0) out.push_back(s);
    else dissolved.push_back(u);
  }
  // Rare (inline_maps dissolving a stage of several nodes whose reader sets it had asked):
  // each dissolved node's own readers stand for it, each node once.
  if (dissolved.empty()) return;
  const uint32_t walk = new_walk();
  while (!dissolved.empty()) {
    const ir::ValueId u = dissolved.back();
    dissolved.pop_back();
    if (mark(u) == walk) continue;
    mark(u) = walk;
    const Reach& ru = reach(u);
    if (ru.output) out.push_back(-1);
    for (ir::ValueId w : ru.nodes) {
      const int32_t s = p_.stage_of[static_cast<size_t>(w)];
      if (s >= 0) out.push_back(s);
      else dissolved.push_back(w);
    }
  }
}

const std::vector<ir::ValueId>* NodeIndex::known_inputs(const Stage& s) const {
  auto it = inputs_by_first_.find(s.nodes.front());
  return it != inputs_by_first_.end() && it->second.count == s.nodes.size() ? &it->second.inputs : nullptr;
}

const std::vector<ir::ValueId>* NodeIndex::remember_inputs(const Stage& s, std::vector<ir::ValueId> inputs) {
  KnownInputs& k = inputs_by_first_[s.nodes.front()];
  k = {s.nodes.size(), std::move(inputs)};
  return &k.inputs;
}

StageGraph::StageGraph(const StagedProgram& p, NodeIndex* index)
    : p_(p), own_(index ? nullptr : std::make_unique<NodeIndex>(p)), idx_(index ? *index : *own_) {
  inputs_.assign(p.stages.size(), nullptr);
}

std::vector<int32_t> StageGraph::readers(ir::ValueId v) {
  std::vector<int32_t> out;
  idx_.reading_stages(v, out);
  sort_unique(out);
  return out;
}

std::vector<int32_t> StageGraph::readers_of_stage(int32_t s) {
  std::vector<int32_t> out;
  for (ir::ValueId v : p_.stages[static_cast<size_t>(s)].nodes) idx_.reading_stages(v, out);
  out.erase(std::remove(out.begin(), out.end(), s), out.end());
  sort_unique(out);
  return out;
}

std::vector<ir::ValueId> StageGraph::inputs_now(int32_t s) {
  const uint32_t walk = idx_.new_walk();
  std::vector<ir::ValueId> out, todo;
  const auto& nodes = p_.stages[static_cast<size_t>(s)].nodes;
  for (ir::ValueId v : nodes) idx_.mark(v) = walk;
  for (ir::ValueId v : nodes)
    for (ir::ValueId o : p_.graph.at(v).operands) todo.push_back(o);
  while (!todo.empty()) {
    const ir::ValueId v = todo.back();
    todo.pop_back();
    if (idx_.mark(v) == walk) continue;
    idx_.mark(v) = walk;
    const auto vi = static_cast<size_t>(v);
    if (p_.stage_of[vi] == s || p_.is_inline[vi]) {
      for (ir::ValueId o : p_.graph.at(v).operands) todo.push_back(o);
      continue;
    }
    out.push_back(v);  // a source buffer or another stage's value
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<ir::ValueId>& StageGraph::inputs(int32_t s) {
  const auto si = static_cast<size_t>(s);
  if (!inputs_[si]) {
    const Stage& st = p_.stages[si];
    if (st.nodes.empty()) throw Error("lift: internal error: inputs of an empty stage");
    inputs_[si] = idx_.known_inputs(st);
    if (!inputs_[si]) inputs_[si] = idx_.remember_inputs(st, inputs_now(s));
  }
  return *inputs_[si];
}

// Producers of inputs, and for a state write, every other stage that reads the version it
// overwrites (write-after-read: the write is in place).
void StageGraph::compute_deps() {
  const size_t n = p_.stages.size();
  deps_.assign(n, {});
  succ_.assign(n, {});
  stage_mark_.assign(n, 0);
  for (size_t s = 0; s < n; ++s) {
    if (p_.stages[s].nodes.empty()) continue;  // emptied by a merge (StageMerger): no stage
    auto& d = deps_[s];
    for (ir::ValueId in : inputs(static_cast<int32_t>(s))) {
      int32_t ps = p_.stage_of[static_cast<size_t>(in)];
      if (ps >= 0 && ps != static_cast<int32_t>(s)) d.push_back(ps);
    }
    for (ir::ValueId v : p_.stages[s].nodes) {
      if (p_.graph.at(v).op != ir::Op::StateWrite) continue;
      std::vector<int32_t> readers;
      idx_.reading_stages(p_.graph.at(v).operands[0], readers);
      for (int32_t r : readers)
        if (r >= 0 && r != static_cast<int32_t>(s)) d.push_back(r);
    }
    sort_unique(d);
    for (int32_t x : d) succ_[static_cast<size_t>(x)].push_back(static_cast<int32_t>(s));
  }
  deps_known_ = true;
}

const std::vector<int32_t>& StageGraph::deps(int32_t s) {
  if (!deps_known_) compute_deps();
  return deps_[static_cast<size_t>(s)];
}

const std::vector<int32_t>& StageGraph::dependents(int32_t s) {
  if (!deps_known_) compute_deps();
  return succ_[static_cast<size_t>(s)];
}

void StageGraph::merged(int32_t z, int32_t w) {
  if (!deps_known_) compute_deps();
  const auto zi = static_cast<size_t>(z), wi = static_cast<size_t>(w);
  // In the list of `s`, w becomes z (and neither names s itself).
  auto renamed = [&](std::vector<int32_t>& list, int32_t s) {
    std::replace(list.begin(), list.end(), w, z);
    list.erase(std::remove(list.begin(), list.end(), s), list.end());
    sort_unique(list);
  };
  for (int32_t t : deps_[wi]) {
    if (t == z) continue;
    deps_[zi].push_back(t);
    renamed(succ_[static_cast<size_t>(t)], t);
  }
  for (int32_t s : succ_[wi]) {
    if (s == z) continue;
    succ_[zi].push_back(s);
    renamed(deps_[static_cast<size_t>(s)], s);
  }
  renamed(deps_[zi], z);
  renamed(succ_[zi], z);
  deps_[wi].clear();
  succ_[wi].clear();
  inputs_[zi] = inputs_[wi] = nullptr;
}

bool StageGraph::merge_makes_cycle(int32_t a, int32_t b) {
  if (!deps_known_) compute_deps();
  // A path x -> c -> ... -> y with c outside {a, b} becomes a cycle once x and y are one stage.
  // The stages are in an execution order, so a path only climbs: there is none from x to y when
  // y comes first, and one runs through stages between x and y only. (Walking every stage after
  // x instead made each question cost the rest of the program.)
  auto through_third = [&](int32_t x, int32_t y) {
    if (x > y) return false;
    const uint32_t walk = ++stage_walk_;
    std::vector<int32_t> stack;
    for (int32_t c : succ_[static_cast<size_t>(x)])
      if (c < y) stack.push_back(c);
    while (!stack.empty()) {
      const int32_t c = stack.back();
      stack.pop_back();
      if (stage_mark_[static_cast<size_t>(c)] == walk) continue;
      stage_mark_[static_cast<size_t>(c)] = walk;
      for (int32_t n : succ_[static_cast<size_t>(c)]) {
        if (n == y) return true;
        if (n < y) stack.push_back(n);
      }
    }
    return false;
  };
  return through_third(a, b) || through_third(b, a);
}

bool StageGraph::merge_is_safe(int32_t a, int32_t b) {
  return !merge_makes_cycle(a, b) && !merge_races_on_state(p_, a, b);
}

}  // namespace lg::lift
