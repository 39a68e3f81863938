#include "lift/stage_merger.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace lg::lift {

StageMerger::StageMerger(StagedProgram& p)
    : p_(p), index_(p), graph_(std::make_unique<StageGraph>(p, &index_)) {}

// Kahn's algorithm taking the least key gives the order O in which, for every i < j, key(O[i]) <
// key(O[j]) whenever O[j] was ready at step i (its dependencies all in O[0..i)). After the merge,
// every stage but the merged one, m, keeps its key, and its dependencies but for z and w becoming
// m; m's key is the least of z's and w's first nodes, after every stage depending on none if m
// depends on some. Where O's stages, with m in one of the two places and the other left out, keep
// that property, they are the merged program's order:
//   - m in z's place, when m's dependencies all come before z: m must have z's key (then m is
//     ready no sooner than z was, and there the least ready), and no dependent d of w, ready now
//     once m and its other dependencies have run, may come before a stage O takes between then
//     and w's place: each of those keys below d;
//   - m in w's place, when one of w's dependencies comes after z: from the step after m's last
//     dependency, every stage O takes before w keys below m; no dependent of z comes before w
//     (it would wait for m); m keys no higher than w (then it is the least ready in w's place).
//     Every other stage is ready where it was, or later for z's dependents, which come after w.
int32_t StageMerger::place(int32_t z, int32_t w) {
  StageGraph& g = *graph_;
  auto live = [&](int32_t s) { return !p_.stages[static_cast<size_t>(s)].nodes.empty(); };
  auto first = [&](int32_t s) { return p_.stages[static_cast<size_t>(s)].nodes.front(); };
  auto key = [&](int32_t s) { return std::pair(!g.deps(s).empty(), first(s)); };
  int32_t last_dep = -1;  // m's last dependency
  for (int32_t t : g.deps(z))
    if (t != w) last_dep = std::max(last_dep, t);
  for (int32_t t : g.deps(w))
    if (t != z) last_dep = std::max(last_dep, t);
  const auto km = std::pair(last_dep >= 0, std::min(first(z), first(w)));
  if (last_dep < z) {
    if (km != key(z)) return -1;
    for (int32_t d : g.dependents(w)) {
      int32_t ready = z;  // the last of d's dependencies after the merge
      for (int32_t t : g.deps(d))
        if (t != w) ready = std::max(ready, t);
      const auto kd = key(d);
      for (int32_t i = ready + 1; i < w; ++i)
        if (live(i) && !(key(i) < kd)) return -1;
    }
    return z;
  }
  if (key(w) < km) return -1;
  for (int32_t d : g.dependents(z))
    if (d != w && d < w) return -1;
  for (int32_t i = last_dep + 1; i < w; ++i)
    if (live(i) && !(key(i) < km)) return -1;
  return w;
}

StageMerger::Merged StageMerger::merge(int32_t into, int32_t from) {
  const int32_t z = std::min(into, from), w = std::max(into, from);
  const int32_t at = place(z, w);
  const int32_t keep = at < 0 ? z : at, gone = keep == z ? w : z;
  const Stage& a = p_.stages[static_cast<size_t>(into)];
  const Stage& b = p_.stages[static_cast<size_t>(from)];
  std::vector<ir::ValueId> nodes(a.nodes.size() + b.nodes.size());
  std::merge(a.nodes.begin(), a.nodes.end(), b.nodes.begin(), b.nodes.end(), nodes.begin());
  const StageKind kind = a.kind;
  Stage& dst = p_.stages[static_cast<size_t>(keep)];
  dst.kind = kind;
  dst.nodes = std::move(nodes);
  p_.stages[static_cast<size_t>(gone)].nodes.clear();
  p_.stages[static_cast<size_t>(gone)].stores.clear();
  for (ir::ValueId v : dst.nodes) p_.stage_of[static_cast<size_t>(v)] = keep;
  if (at < 0) {
    const ir::ValueId node = dst.nodes.front();
    normalize(p_, index_);
    graph_ = std::make_unique<StageGraph>(p_, &index_);
    return {p_.stage_of[static_cast<size_t>(node)], true};
  }
  graph_->merged(keep, gone);
  // Stores: only the merged stage's change (another stage's nodes are read outside it as before).
  dst.stores.clear();
  std::vector<int32_t> readers;
  for (ir::ValueId v : dst.nodes) {
    if (p_.graph.at(v).op == ir::Op::StateWrite) continue;
    readers.clear();
    index_.reading_stages(v, readers);
    if (std::any_of(readers.begin(), readers.end(), [&](int32_t r) { return r != keep; })) dst.stores.push_back(v);
  }
  return {keep, false};
}

void StageMerger::finish() { normalize(p_, index_); }

}  // namespace lg::lift
