#include "ir/batch.h"

#include <map>
#include <string>
#include <vector>

#include "ir/print.h"
#include "ir/verify.h"
#include "support/error.h"

namespace lg::ir {

namespace {

std::vector<std::vector<ValueId>> users_of(const Graph& g) {
  std::vector<std::vector<ValueId>> users(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (ValueId o : g.nodes[k].operands) users[static_cast<size_t>(o)].push_back(static_cast<ValueId>(k));
  return users;
}

[[noreturn]] void refuse(const Graph& g, ValueId v, const std::string& why) {
  const Node& n = g.at(v);
  throw Error(span_string(g, n.span) + ": cannot make batched steps of " + node_string(g, v) +
              (n.name.empty() ? "" : " (" + n.name + ")") + ": " + why);
}

bool has_symbol(const Shape& s) {
  for (const Dim& d : s)
    if (!d.is_const()) return true;
  return false;
}

int64_t product(const Shape& s, size_t end) {
  int64_t p = 1;
  for (size_t k = 0; k < end; ++k) p *= s[k].coeff;
  return p;
}

/// The state a version node (State or StateWrite) belongs to.
int32_t state_of(const Graph& g, ValueId v) {
  while (g.at(v).op == Op::StateWrite) v = g.at(v).operands[0];
  return g.at(v).attrs.index;
}

/// Which states are paged along which axis, and every node that sees a state's position axis
/// (views of a state version on the way to attention) with the axis it has there.
class StatePaging {
 public:
  explicit StatePaging(const Graph& g) : g_(g), users_(users_of(g)) {}

  void run() {
    axis_.assign(g_.states.size(), -1);
    std::map<size_t, ValueId> first_write;  // per state
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const Node& n = g_.nodes[k];
      if (n.op != Op::StateWrite) continue;
      const auto s = static_cast<size_t>(state_of(g_, static_cast<ValueId>(k)));
      const size_t rank = g_.states[s].shape.size(), nf = n.attrs.fixed.size();
      const int32_t axis = static_cast<int32_t>(nf) + positive_axis(n.attrs.axis, rank - nf);
      if (axis_[s] >= 0 && axis_[s] != axis)
        refuse(g_, static_cast<ValueId>(k), "state " + g_.states[s].name + " is written along two different axes");
      if (axis_[s] < 0) first_write.emplace(s, static_cast<ValueId>(k));
      axis_[s] = axis;
      writes_.push_back(static_cast<ValueId>(k));
    }
    for (size_t s = 0; s < g_.states.size(); ++s) {
      if (axis_[s] < 0)
        throw Error("cannot make batched steps: state " + g_.states[s].name +
                    " is never written (a state holds each sequence's positions, written by a state write)");
      const int64_t rows = g_.states[s].shape[static_cast<size_t>(axis_[s])].coeff;
      // The pages hold positions 0 .. S-1 of each sequence (S: T's bound); an axis of another size
      // would be paged with a block table sized for it, not for the sequences the runtime serves.
      if (rows != g_.symbols.at(0).max)
        refuse(g_, first_write.at(s),
               "state " + g_.states[s].name + " is written along an axis of " + std::to_string(rows) +
                   " positions, not S = " + std::to_string(g_.symbols.at(0).max));
      if (max_seq_ && rows != max_seq_)
        throw Error("cannot make batched steps: states " + g_.states[0].name + " and " + g_.states[s].name +
                    " hold different numbers of positions (" + std::to_string(max_seq_) + " and " + std::to_string(rows) + ")");
      max_seq_ = rows;
    }
    // Every read of a version other than by the next write must reach attention's k or v
    // through views that keep the whole position axis.
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const Node& n = g_.nodes[k];
      if (n.op != Op::State && n.op != Op::StateWrite) continue;
      const auto v = static_cast<ValueId>(k);
      const int32_t axis = axis_[static_cast<size_t>(state_of(g_, v))];
      for (ValueId u : users_[k]) {
        const Node& un = g_.at(u);
        if (un.op == Op::StateWrite && un.operands[0] == v && un.operands[1] != v && un.operands[2] != v) continue;
        trace(u, v, axis);
      }
    }
    // A sequence's rows are addressed by its tokens' positions: a write at another index (pos +
    // 40, a token id) would land in other rows of the sequence's blocks or past its table, and
    // attention at other positions would see other keys than its token's (it failed mid-run with
    // "position 40 is past the block table's 1 blocks").
    auto is_pos = [&](ValueId x) {
      const Node& n = g_.at(x);
      return n.op == Op::Input && g_.inputs.at(static_cast<size_t>(n.attrs.index)).name == "pos";
    };
    for (ValueId w : writes_)
      if (!is_pos(g_.at(w).operands[2]))
        refuse(g_, w, "a state is written at the tokens' positions, `pos` itself (each sequence's KV cache is paged by "
                      "position), not at " + node_string(g_, g_.at(w).operands[2]));
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (g_.nodes[k].op == Op::Attention && !is_pos(g_.nodes[k].operands[3]))
        refuse(g_, static_cast<ValueId>(k), "attention runs at the tokens' positions, `pos` itself (query t sees "
                                            "positions 0 ..= pos[t] of its sequence), not at " +
                                                node_string(g_, g_.nodes[k].operands[3]));
    // Attention over k or v that no state holds (this step's projections, say) would let the
    // tokens of one sequence attend to another's in a step of several, a silently wrong answer.
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      if (g_.nodes[k].op != Op::Attention) continue;
      const auto it = attention_.find(static_cast<ValueId>(k));
      if (it == attention_.end() || it->second != 3)
        refuse(g_, static_cast<ValueId>(k), "its k and v must both be read from per-sequence states (the KV cache)");
    }
  }

  const std::vector<int32_t>& axes() const { return axis_; }
  int64_t max_seq() const { return max_seq_; }
  const std::vector<ValueId>& writes() const { return writes_; }
  const std::map<ValueId, int32_t>& views() const { return views_; }
  std::vector<ValueId> attentions() const {
    std::vector<ValueId> out;
    for (auto& [att, seen] : attention_) out.push_back(att);
    return out;
  }

 private:
  /// `u` reads `x`, whose position axis is `axis`.
  void trace(ValueId u, ValueId x, int32_t axis) {
    const Node& n = g_.at(u);
    const Shape& in = g_.at(x).shape;
    const std::string why = "a per-sequence state (the KV cache) is read only whole, through views, by attention";
    int32_t out_axis = -1;
    switch (n.op) {
      case Op::Slice: {
        const int32_t a = positive_axis(n.attrs.axis, in.size());
        if (a == axis && (n.attrs.start != 0 || n.attrs.step != 1 || n.attrs.stop != in[static_cast<size_t>(a)].coeff))
          refuse(g_, u, "it slices the position axis of a state; " + why);
        out_axis = axis;
        break;
      }
      case Op::Cast: out_axis = axis; break;
      case Op::Permute:
        for (size_t i = 0; i < n.attrs.perm.size(); ++i)
          if (n.attrs.perm[i] == axis) out_axis = static_cast<int32_t>(i);
        break;
      case Op::Reshape: {
        // The output axis with the same elements before it and the same size. Only a position
        // axis of size 1 (S = 1: `lg run` of a one-token prompt and -n 1) can match several, a run
        // of size-1 axes ([1, 1, 1, Dh] of kcache[l] with one KV head, viewed as [1, 1, Dh]); any
        // of them lays the pool out alike, and the one as far from the run's right end as the
        // axis is from its own run's end keeps attention's [KV, S, Dh] reading it (the first
        // matching one refused the one-KV-head models at S = 1).
        const int64_t before = product(in, static_cast<size_t>(axis));
        const Dim size = in[static_cast<size_t>(axis)];
        auto matches = [&](const Shape& s, size_t k) { return product(s, k) == before && s[k] == size; };
        size_t in_end = static_cast<size_t>(axis);
        while (in_end + 1 < in.size() && matches(in, in_end + 1)) ++in_end;
        for (size_t k = 0; k < n.shape.size(); ++k) {
          if (!matches(n.shape, k)) continue;
          size_t end = k;
          while (end + 1 < n.shape.size() && matches(n.shape, end + 1)) ++end;
          const size_t from_end = in_end - static_cast<size_t>(axis);
          out_axis = static_cast<int32_t>(end - k >= from_end ? end - from_end : k);
          break;
        }
        if (out_axis < 0) refuse(g_, u, "it reshapes the position axis of a state; " + why);
        break;
      }
      case Op::Attention: {
        const bool k_or_v = n.operands[1] == x || n.operands[2] == x;
        if (!k_or_v || n.operands[0] == x || n.operands[3] == x || axis != 1) refuse(g_, u, why);
        attention_[u] |= (n.operands[1] == x ? 1 : 0) | (n.operands[2] == x ? 2 : 0);
        return;
      }
      default: refuse(g_, u, why);
    }
    auto [it, fresh] = views_.emplace(u, out_axis);
    if (!fresh) return;
    for (ValueId w : users_[static_cast<size_t>(u)]) trace(w, u, out_axis);
  }

  const Graph& g_;
  std::vector<std::vector<ValueId>> users_;
  std::vector<int32_t> axis_;
  int64_t max_seq_ = 0;
  std::vector<ValueId> writes_;
  std::map<ValueId, int32_t> views_;
  std::map<ValueId, int> attention_;  ///< 1: k seen, 2: v seen
};

/// The axes of `s` whose size is a runtime dim (T, or a multiple of it after a reshape).
std::vector<size_t> token_axes(const Shape& s) {
  std::vector<size_t> out;
  for (size_t k = 0; k < s.size(); ++k)
    if (!s[k].is_const()) out.push_back(k);
  return out;
}

/// Refuses a node whose value at one token reads other tokens of the step (states and attention
/// aside, which StatePaging pages per sequence): a reduction, contraction, gather, slice, concat,
/// top-k or reshape along the token axis, or a shape holding it twice ([T, T]). In a step of many
/// sequences such a value mixes sequences, and a prompt prefilled in chunks (or from the prefix
/// cache) would see other tokens than prefilled whole: answers that change with the batch. The
/// compiled lane refuses these too (lift.cpp); the cpu lane ran them and answered differently at
/// every --max-step-tokens.
void check_tokens_stay_apart(const Graph& g) {
  const std::string why = ": the tokens of a step belong to many sequences and to chunks of one prompt, so a "
                          "value that mixes them changes with the batch (the KV cache, through attention, is how "
                          "a token reads the others)";
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const auto v = static_cast<ValueId>(k);
    if (n.op == Op::State || n.op == Op::StateWrite || n.op == Op::Attention) continue;
    if (token_axes(n.shape).size() > 1) refuse(g, v, "its shape holds the token axis twice" + why);
    if (n.operands.empty()) continue;
    const Shape& in = g.at(n.operands[0]).shape;
    auto along_tokens = [&](int32_t axis) {
      const int32_t a = positive_axis(axis, in.size());
      return a >= 0 && static_cast<size_t>(a) < in.size() && !in[static_cast<size_t>(a)].is_const();
    };
    switch (n.op) {
      case Op::ReduceSum:
      case Op::ReduceMax:
        if (along_tokens(n.attrs.axis)) refuse(g, v, "it reduces over the token axis" + why);
        break;
      case Op::TopK:
      case Op::ArgTopK:
        if (along_tokens(n.attrs.axis)) refuse(g, v, "it selects along the token axis" + why);
        break;
      case Op::MatMul:
        if (!in.empty() && !in.back().is_const()) refuse(g, v, "it contracts over the token axis" + why);
        break;
      case Op::Gather:
        if (along_tokens(0)) refuse(g, v, "it gathers rows of the token axis by index" + why);
        break;
      case Op::Slice:
        if (along_tokens(n.attrs.axis)) refuse(g, v, "it slices the token axis" + why);
        break;
      case Op::Concat:
        if (along_tokens(n.attrs.axis)) refuse(g, v, "it joins values along the token axis" + why);
        break;
      case Op::Reshape: {
        // Splitting or merging other axes keeps each token's elements its own; moving the token
        // axis into another (a [T, D] viewed as [D, T] or [T * D]) does not.
        const auto a = token_axes(in), b = token_axes(n.shape);
        if (a.size() == 1 && (b.size() != 1 || n.shape[b[0]] != in[a[0]] || product(n.shape, b[0]) != product(in, a[0])))
          refuse(g, v, "it reshapes the token axis into others" + why);
        break;
      }
      default: break;
    }
  }
}

/// Inserts `count` nodes before node 0 (ids shift by `count`).
void shift_nodes(Graph& g, const std::vector<Node>& front) {
  const auto count = static_cast<ValueId>(front.size());
  for (Node& n : g.nodes)
    for (ValueId& o : n.operands) o += count;
  for (ValueId& o : g.outputs) o += count;
  for (ValueId& o : g.final_states) o += count;
  g.nodes.insert(g.nodes.begin(), front.begin(), front.end());
}

/// The result keeps the rows `rows` of every output. Whatever is row-local (elementwise, a
/// reduction over a later axis, the A side of a matmul by a weight) and read only by such rows is
/// computed for those rows alone; the values it starts from are gathered.
void select_rows(Graph& g, ValueId rows, const Dim& B) {
  const Dim T = Dim::symbol(0);
  const size_t n = g.nodes.size();
  const auto users = users_of(g);
  auto t_rowed = [&](ValueId v) { return !g.at(v).shape.empty() && g.at(v).shape[0] == T; };
  auto matmul_by_weight = [&](const Node& m) {
    return g.at(m.operands[0]).shape.size() == 2 && g.at(m.operands[1]).shape.size() == 2 &&
           !has_symbol(g.at(m.operands[1]).shape);
  };
  auto row_local = [&](ValueId v) {
    const Node& m = g.at(v);
    if (!t_rowed(v)) return false;
    if (is_elementwise(m.op)) return true;
    if (is_reduce(m.op) || m.op == Op::TopK || m.op == Op::ArgTopK)
      return positive_axis(m.attrs.axis, g.at(m.operands[0]).shape.size()) != 0;
    // The routed experts: token t's result reads row t of x/act, idx and the routing weights.
    if (m.op == Op::MoeGateUp || m.op == Op::MoeDown) return true;
    return m.op == Op::MatMul && matmul_by_weight(m);
  };
  // Operand k of a row-local node u follows u's rows.
  auto follows_rows = [&](const Node& u, size_t k) {
    const bool experts_rows = (u.op == Op::MoeGateUp && k < 2) || (u.op == Op::MoeDown && k < 3);
    return t_rowed(u.operands[k]) && (is_elementwise(u.op) || k == 0 || experts_rows);
  };
  std::vector<char> in(n, 0);
  std::vector<char> pinned(n, 0);  // outputs and final states keep their T rows
  for (ValueId f : g.final_states) pinned[static_cast<size_t>(f)] = 1;
  for (ValueId o : g.outputs) {
    if (!t_rowed(o)) refuse(g, o, "the forward's result must have one row per token ([T, ...])");
    in[static_cast<size_t>(o)] = row_local(o) ? 1 : 0;
  }
  for (size_t k = n; k-- > 0;) {
    const auto v = static_cast<ValueId>(k);
    if (in[k] || pinned[k] || users[k].empty() || !row_local(v)) continue;
    bool all = true;
    for (ValueId u : users[k]) {
      const Node& un = g.at(u);
      if (!in[static_cast<size_t>(u)]) all = false;
      for (size_t j = 0; j < un.operands.size() && all; ++j)
        if (un.operands[j] == v && !follows_rows(un, j)) all = false;
      if (!all) break;
    }
    in[k] = all ? 1 : 0;
  }
  std::vector<ValueId> remap(n, -1);
  std::map<ValueId, ValueId> gathered;
  auto gather = [&](ValueId x) {
    auto it = gathered.find(x);
    if (it != gathered.end()) return it->second;
    Node gn;
    gn.op = Op::Gather;
    gn.dtype = g.at(x).dtype;
    gn.shape = g.at(x).shape;
    gn.shape[0] = B;
    gn.operands = {x, rows};
    gn.span = g.at(x).span;
    gn.name = g.at(x).name;
    const ValueId id = g.add(std::move(gn));
    gathered[x] = id;
    return id;
  };
  for (size_t k = 0; k < n; ++k) {
    if (!in[k]) continue;
    Node m = g.nodes[k];
    m.shape[0] = B;
    for (size_t j = 0; j < m.operands.size(); ++j) {
      const ValueId x = m.operands[j];
      if (in[static_cast<size_t>(x)]) m.operands[j] = remap[static_cast<size_t>(x)];
      else if (follows_rows(g.nodes[k], j)) m.operands[j] = gather(x);
    }
    remap[k] = g.add(std::move(m));
  }
  for (ValueId& o : g.outputs) o = in[static_cast<size_t>(o)] ? remap[static_cast<size_t>(o)] : gather(o);
}

}  // namespace

std::vector<char> live_nodes(const Graph& g) {
  const size_t n = g.nodes.size();
  std::vector<char> live(n, 0);
  for (ValueId o : g.outputs) live[static_cast<size_t>(o)] = 1;
  for (ValueId o : g.final_states) live[static_cast<size_t>(o)] = 1;
  for (size_t k = 0; k < n; ++k)
    if (g.nodes[k].op == Op::Input) live[k] = 1;
  for (size_t k = n; k-- > 0;)
    if (live[k])
      for (ValueId o : g.nodes[k].operands) live[static_cast<size_t>(o)] = 1;
  return live;
}

void remove_dead_nodes(Graph& g) {
  const size_t n = g.nodes.size();
  const std::vector<char> live = live_nodes(g);
  std::vector<ValueId> id(n, -1);
  std::vector<Node> kept;
  for (size_t k = 0; k < n; ++k) {
    if (!live[k]) continue;
    id[k] = static_cast<ValueId>(kept.size());
    kept.push_back(std::move(g.nodes[k]));
    for (ValueId& o : kept.back().operands) o = id[static_cast<size_t>(o)];
  }
  g.nodes = std::move(kept);
  for (ValueId& o : g.outputs) o = id[static_cast<size_t>(o)];
  for (ValueId& o : g.final_states) o = id[static_cast<size_t>(o)];
}

void make_batched(Graph& g, const BatchOptions& opts) {
  if (g.batching.on()) throw Error("internal: the graph is already batched");
  if (opts.block_size < 1 || opts.num_blocks < 1 || opts.max_batch < 1 || opts.max_tokens < 0)
    throw Error("batched steps need a block size, a pool of blocks and a batch size >= 1");
  if (g.symbols.size() != 1) throw Error("cannot make batched steps of a forward with runtime dims other than T");
  check_tokens_stay_apart(g);
  StatePaging paging(g);
  paging.run();
  const int64_t S = g.states.empty() ? g.symbols[0].max : paging.max_seq();
  const int64_t rows = opts.block_size * opts.num_blocks;
  const Dim pool = Dim::constant(rows);
  // The pool replaces each state's position axis, in the state and in every view of it.
  for (size_t s = 0; s < g.states.size(); ++s) g.states[s].shape[static_cast<size_t>(paging.axes()[s])] = pool;
  for (Node& m : g.nodes)
    if (m.op == Op::State) m.shape = g.states[static_cast<size_t>(m.attrs.index)].shape;
  for (ValueId w : paging.writes()) g.nodes[static_cast<size_t>(w)].shape = g.states[static_cast<size_t>(state_of(g, w))].shape;
  for (auto [v, axis] : paging.views()) {
    Node& m = g.nodes[static_cast<size_t>(v)];
    if (m.op == Op::Slice && positive_axis(m.attrs.axis, m.shape.size()) == axis) m.attrs.stop = rows;
    m.shape[static_cast<size_t>(axis)] = pool;
  }
  // The batch inputs go first, so every node may read them.
  const int32_t bsym = 1;
  const Dim T = Dim::symbol(0), B = Dim::symbol(bsym);
  g.symbols[0].max = opts.max_tokens ? opts.max_tokens : S;
  g.symbols.push_back({"B", opts.max_batch});
  const int64_t MB = (S + opts.block_size - 1) / opts.block_size;
  const std::vector<InputInfo> added = {{"seq", DType::I32, {T}},
                                        {"block_table", DType::I32, {B, Dim::constant(MB)}},
                                        {"rows", DType::I32, {B}}};
  std::vector<Node> front;
  for (const InputInfo& in : added) {
    Node m;
    m.op = Op::Input;
    m.dtype = in.dtype;
    m.shape = in.shape;
    m.attrs.index = static_cast<int32_t>(g.inputs.size());
    m.name = in.name;
    g.inputs.push_back(in);
    front.push_back(std::move(m));
  }
  shift_nodes(g, front);
  const auto shift = static_cast<ValueId>(front.size());
  const ValueId seq = 0, table = 1, out_rows = 2;
  for (ValueId w : paging.writes()) {
    Node& m = g.nodes[static_cast<size_t>(w + shift)];
    m.operands.push_back(seq);
    m.operands.push_back(table);
    m.attrs.block_size = opts.block_size;
  }
  for (ValueId a : paging.attentions()) {
    Node& m = g.nodes[static_cast<size_t>(a + shift)];
    m.operands.push_back(seq);
    m.operands.push_back(table);
    m.attrs.block_size = opts.block_size;
  }
  // A value no output needs (an unused statement) must not count as a reader that keeps the
  // rows it reads from being selected; select_rows leaves the nodes it replaced dead in turn.
  remove_dead_nodes(g);
  select_rows(g, out_rows, B);
  remove_dead_nodes(g);
  g.batching = {opts.block_size, opts.num_blocks, S};
  verify(g);
}

}  // namespace lg::ir
