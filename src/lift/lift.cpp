// Lifting IR nodes into unfused stages, and the refusals (see lift.h, docs/lifting.md).
#include "lift/lift.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "lift/stage_merger.h"
#include "ir/batch.h"
#include "ir/print.h"
#include "support/error.h"

namespace lg::lift {

namespace {

std::string node_label(const ir::Graph& g, ir::ValueId v) {
  const ir::Node& n = g.at(v);
  return "`" + (n.name.empty() ? std::string(ir::op_name(n.op)) : n.name) + "` (" + ir::op_name(n.op) + ")";
}

[[noreturn]] void refuse(const ir::Graph& g, ir::ValueId v, const std::string& why) {
  throw Error(span_text(g, g.at(v).span) + ": cannot lift " + node_label(g, v) + ": " + why);
}

// The shape and op checks that do not depend on other nodes.
void check_node(const ir::Graph& g, ir::ValueId v) {
  const ir::Node& n = g.at(v);
  if (n.shape.size() > kMaxRank)
    refuse(g, v, "rank " + std::to_string(n.shape.size()) + " exceeds the " + std::to_string(kMaxRank) +
                     " axes a stage indexes");
  // A batched graph (ir/batch.h) has B, the sequences of the step, as symbol 1: the rows its
  // result is gathered to.
  const int32_t max_sym = g.batching.on() ? 1 : 0;
  for (const auto& d : n.shape)
    if (d.sym > max_sym) {
      std::string name = static_cast<size_t>(d.sym) < g.symbols.size() ? g.symbols[static_cast<size_t>(d.sym)].name
                                                                        : "#" + std::to_string(d.sym);
      refuse(g, v, "its shape has the runtime dim `" + name +
                       "`; kernels are specialised on every dim but T, the tokens of the step (and B, its "
                       "sequences)");
    }
  auto operand = [&](size_t i) -> const ir::Node& { return g.at(n.operands.at(i)); };
  if (ir::is_float_only(n.op) && !is_float(operand(0).dtype))
    refuse(g, v, std::string(ir::op_name(n.op)) + " of a " + std::string(dtype_name(operand(0).dtype)) +
                     " value has no kernel form (cast it to a float type first)");
  if (ir::is_reduce(n.op)) {
    const auto& in = operand(0).shape;
    int32_t axis = ir::positive_axis(n.attrs.axis, in.size());
    if (axis < 0 || static_cast<size_t>(axis) >= in.size()) refuse(g, v, "reduction axis out of range");
    if (!in[static_cast<size_t>(axis)].is_const())
      refuse(g, v, "it reduces over the runtime dim T: a reduction across tokens would make a token's "
                   "result depend on the other tokens of the step (prefill and decode would disagree)");
  }
  if (n.op == ir::Op::MatMul) {
    const auto& a = operand(0).shape;
    if (a.empty() || !a.back().is_const())
      refuse(g, v, "it contracts over the runtime dim T: a GEMM's K must be known at compile time, and a "
                   "sum across tokens would mix the tokens of the step");
  }
  if (n.op == ir::Op::Slice) {
    const auto& in = operand(0).shape;
    int32_t axis = ir::positive_axis(n.attrs.axis, in.size());
    if (axis >= 0 && static_cast<size_t>(axis) < in.size() && !in[static_cast<size_t>(axis)].is_const())
      refuse(g, v, "it slices the runtime dim T with constant bounds: its extent would depend on how many "
                   "tokens the step has");
  }
  if (n.op == ir::Op::Gather && operand(1).dtype != DType::I32)
    refuse(g, v, "gather index is " + std::string(dtype_name(operand(1).dtype)) + ", the gather stage takes i32");
  if (n.op == ir::Op::TopK || n.op == ir::Op::ArgTopK) {
    const auto& in = operand(0).shape;
    if (ir::positive_axis(n.attrs.axis, in.size()) + 1 != static_cast<int32_t>(in.size()))
      refuse(g, v, "the topk stage selects along the last axis (move the axis last first)");
    if (n.shape.back().coeff > kMaxTopK)
      refuse(g, v, "k = " + std::to_string(n.shape.back().coeff) + " exceeds the topk stage's " +
                       std::to_string(kMaxTopK) + " (a thread keeps the k best of its row)");
  }
  if (n.op == ir::Op::MoeGateUp || n.op == ir::Op::MoeDown) {
    for (size_t i = n.op == ir::Op::MoeGateUp ? 2 : 3; i < 4; ++i)
      if (operand(i).op != ir::Op::Param)
        refuse(g, v, "the experts stage reads its expert weights [E, N, K] straight from params (declared in an "
                     "experts block)");
    if (!operand(0).shape.back().is_const() || !operand(1).shape.back().is_const())
      refuse(g, v, "the experts' K and the expert slots must be bound at compile time");
  }
  if (n.op == ir::Op::Attention) {
    const auto& q = operand(0).shape;
    const auto& k = operand(1).shape;
    const auto& vv = operand(2).shape;
    if (q.size() != 3 || k.size() != 3 || vv.size() != 3)
      refuse(g, v, "the attention stage takes q[T, H, Dh], k[KV, S, Dh], v[KV, S, Dh]");
    if (!q[2].is_const() || !k[1].is_const() || !k[0].is_const() || !q[1].is_const())
      refuse(g, v, "attention heads, head_dim and cache length must be bound at compile time");
    if (q[2].coeff > kMaxHeadDim)
      refuse(g, v, "head_dim " + std::to_string(q[2].coeff) + " exceeds the attention stage's " +
                       std::to_string(kMaxHeadDim));
    if (n.attrs.gqa_group < 1 || k[0].coeff * n.attrs.gqa_group != q[1].coeff)
      refuse(g, v, "query heads must be KV heads times gqa_group");
  }
}

bool is_inline_op(ir::Op op) {
  return ir::is_movement(op) || op == ir::Op::Const || op == ir::Op::Arange;
}

StageKind kind_of(ir::Op op) {
  if (ir::is_reduce(op)) return StageKind::Reduce;
  switch (op) {
    case ir::Op::MatMul: return StageKind::Gemm;
    case ir::Op::Gather: return StageKind::Gather;
    case ir::Op::StateWrite: return StageKind::StateWrite;
    case ir::Op::Attention: return StageKind::Attention;
    case ir::Op::TopK:
    case ir::Op::ArgTopK: return StageKind::TopK;
    case ir::Op::MoeGateUp:
    case ir::Op::MoeDown: return StageKind::Experts;
    default: return StageKind::Map;
  }
}

// A state version must not be read by a compute node after a write has replaced it: the write is
// in place (the cache is never copied per step). Views of the old version are followed.
void check_state_hazards(const ir::Graph& g) {
  std::vector<std::vector<ir::ValueId>> users(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ir::ValueId o : g.nodes[i].operands) users[static_cast<size_t>(o)].push_back(static_cast<ir::ValueId>(i));
  for (size_t w = 0; w < g.nodes.size(); ++w) {
    if (g.nodes[w].op != ir::Op::StateWrite) continue;
    // Depth first through the views of the old version, in the order of users (the first
    // offending reader is the one reported); each view once (views may share views: concat(x, x)).
    std::vector<bool> seen(g.nodes.size(), false);
    std::vector<std::pair<ir::ValueId, size_t>> stack{{g.nodes[w].operands.at(0), 0}};
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      const auto& us = users[static_cast<size_t>(v)];
      if (next == us.size()) {
        stack.pop_back();
        continue;
      }
      const ir::ValueId u = us[next++];
      if (static_cast<size_t>(u) == w) continue;
      if (ir::is_movement(g.at(u).op)) {
        if (!seen[static_cast<size_t>(u)]) {
          seen[static_cast<size_t>(u)] = true;
          stack.push_back({u, 0});
        }
        continue;
      }
      if (static_cast<size_t>(u) > w || g.at(u).op == ir::Op::StateWrite)
        refuse(g, u, "it reads the state as it was before the write at " + span_text(g, g.nodes[w].span) +
                         ", but state writes happen in place");
    }
  }
}

// The identity of a pure node's value: op, type, shape, attributes and operands. Two nodes with
// the same key compute the same value.
std::string value_key(const ir::Node& n) {
  std::string k;
  auto put = [&](const void* p, size_t bytes) { k.append(static_cast<const char*>(p), bytes); };
  auto put_i = [&](int64_t v) { put(&v, sizeof v); };
  auto put_d = [&](double v) { put(&v, sizeof v); };
  put_i(static_cast<int64_t>(n.op));
  put_i(static_cast<int64_t>(n.dtype));
  put_i(static_cast<int64_t>(n.shape.size()));
  for (const auto& d : n.shape) put_i(d.coeff), put_i(d.sym);
  put_i(static_cast<int64_t>(n.operands.size()));
  for (ir::ValueId o : n.operands) put_i(o);
  const ir::Attrs& a = n.attrs;
  put_i(a.index), put_d(a.scalar), put_i(a.axis), put_i(a.keepdim), put_i(a.start), put_i(a.stop), put_i(a.step);
  put_i(static_cast<int64_t>(a.perm.size()));
  for (int32_t x : a.perm) put_i(x);
  put_i(static_cast<int64_t>(a.fixed.size()));
  for (int64_t x : a.fixed) put_i(x);
  put_d(a.scale), put_i(a.gqa_group), put_i(a.block_size), put_i(a.window), put_d(a.softcap);
  return k;
}

// Common subexpressions: every pure node equal to an earlier one (value_key, operands already
// merged) is replaced by it in its readers, the outputs and the final states, and left unread.
// What .lg code computes again and again from the same inputs is then one value: RoPE's cos and
// sin of pos, which every q and k of every layer recomputes (prelude.lg's rope). Returns, per
// node, whether it is such a duplicate. Sources keep their identity (one node per index), state
// writes are never merged (each is a write).
std::vector<bool> merge_common_subexpressions(ir::Graph& g) {
  std::vector<bool> dup(g.nodes.size(), false);
  std::vector<ir::ValueId> canon(g.nodes.size());
  std::map<std::string, ir::ValueId> seen;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    canon[i] = static_cast<ir::ValueId>(i);
    for (ir::ValueId& o : n.operands)
      if (o >= 0 && static_cast<size_t>(o) < i) o = canon[static_cast<size_t>(o)];
    const bool pure = n.op != ir::Op::StateWrite && n.op != ir::Op::Input && n.op != ir::Op::Param &&
                      n.op != ir::Op::State;
    if (!pure) continue;
    auto [it, fresh] = seen.emplace(value_key(n), static_cast<ir::ValueId>(i));
    if (!fresh) {
      canon[i] = it->second;
      dup[i] = true;
      // One value for several bindings or statements (l0.q's and l5.k's cos): it belongs to
      // none of them, so it keeps neither a name nor a line (explain's "lines:" of a stage are
      // those of the statements it computes).
      ir::Node& kept = g.nodes[static_cast<size_t>(it->second)];
      if (kept.name != n.name) kept.name.clear();
      if (kept.span.file != n.span.file || kept.span.line != n.span.line) kept.span.line = 0;
    }
  }
  for (ir::ValueId& o : g.outputs) o = canon[static_cast<size_t>(o)];
  for (ir::ValueId& o : g.final_states)
    if (o >= 0) o = canon[static_cast<size_t>(o)];
  return dup;
}

// topk's values and indices of one operand (two nodes) are one stage: one scan of the row.
//
// Defined as a walk over the stages in order that merges each with the first later partner and
// normalises, going on at the next index. StageMerger keeps that order without normalising the
// program per merge (at 96 MoE layers that was 0.4 s of lifting); where the merged stage takes
// the partner's place, the stage after the first one takes its index and the walk passes over it.
void join_topk_pairs(StagedProgram& p) {
  std::optional<StageMerger> merger;  // made at the first pair (most programs have none)
  auto single_topk = [&](int32_t s) -> const ir::Node* {
    const Stage& st = p.stages[static_cast<size_t>(s)];
    return st.kind == StageKind::TopK && st.nodes.size() == 1 ? &p.graph.at(st.nodes[0]) : nullptr;
  };
  auto next_live = [&](int32_t s) {
    do ++s;
    while (s < static_cast<int32_t>(p.stages.size()) && p.stages[static_cast<size_t>(s)].nodes.empty());
    return s;
  };
  for (int32_t a = 0; a < static_cast<int32_t>(p.stages.size()); a = next_live(a)) {
    const ir::Node* na = single_topk(a);
    if (!na) continue;
    for (int32_t b = next_live(a); b < static_cast<int32_t>(p.stages.size()); b = next_live(b)) {
      const ir::Node* nb = single_topk(b);
      if (!nb || nb->op == na->op || nb->operands != na->operands || nb->attrs.axis != na->attrs.axis ||
          !(nb->shape == na->shape))
        continue;
      const int32_t index = static_cast<int32_t>(std::count_if(
          p.stages.begin(), p.stages.begin() + a, [](const Stage& st) { return !st.nodes.empty(); }));
      if (!merger) merger.emplace(p);
      const StageMerger::Merged m = merger->merge(a, b);
      if (m.renumbered) a = index;  // no emptied stages left: index and place agree
      else if (m.stage != a) a = next_live(a);
      break;
    }
  }
  if (merger) merger->finish();
}

}  // namespace

StagedProgram lift(const ir::Graph& g) {
  StagedProgram p;
  p.graph = g;
  p.is_inline.assign(g.nodes.size(), false);
  p.stage_of.assign(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto v = static_cast<ir::ValueId>(i);
    const ir::Node& n = g.nodes[i];
    for (ir::ValueId o : n.operands)
      if (o < 0 || o >= v) throw Error(span_text(g, n.span) + ": cannot lift " + node_label(g, v) +
                                       ": operand is not an earlier node (graph is not in topological order)");
    check_node(g, v);
  }
  const std::vector<bool> dup = merge_common_subexpressions(p.graph);
  // What no output or final state reads (a statement left unused, a duplicate) gets no stage.
  const std::vector<char> live = ir::live_nodes(p.graph);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto v = static_cast<ir::ValueId>(i);
    const ir::Node& n = p.graph.nodes[i];
    if (dup[i] || !live[i]) {  // unread: never evaluated, no stage
      p.is_inline[i] = true;
      continue;
    }
    if (ir::is_source(n.op) && n.op != ir::Op::Const && n.op != ir::Op::Arange) continue;
    bool is_output = std::find(p.graph.outputs.begin(), p.graph.outputs.end(), v) != p.graph.outputs.end();
    if (is_inline_op(n.op) && !is_output) {
      p.is_inline[i] = true;
      continue;
    }
    p.stages.push_back({kind_of(n.op), {v}, {}});
  }
  for (ir::ValueId o : g.outputs)
    if (ir::is_source(g.at(o).op) && g.at(o).op != ir::Op::Const && g.at(o).op != ir::Op::Arange)
      refuse(g, o, "the forward returns an input, weight or state unchanged; return a computed value");
  check_state_hazards(g);
  normalize(p);
  join_topk_pairs(p);
  return p;
}

}  // namespace lg::lift
