// StagedExecutor: a pull evaluator per stage. eval(v, idx) returns the value of node v at the
// multi-index idx: a load when v lives in a buffer (a source, or a value stored by an earlier
// stage), otherwise the op applied to its operands at the indices the op maps idx to. This is the
// same evaluation order the CUDA renderer emits (emit/cuda), so the CPU run checks that plan.
#include "lift/staged_executor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "ir/print.h"
#include "support/error.h"

namespace lg::lift {

namespace {

using Index = std::array<int64_t, 8>;

/// A value stored as i32, as the reference (ir/cpu_ops.cpp's to_int) and the emitted kernels store
/// it: truncated toward zero, NaN 0, and saturated at the i32 range's ends (+-inf included). A
/// plain trunc kept NaN, infinities and 3e9 as they were, which the reference never holds.
double to_i32(double r) {
  if (std::isnan(r)) return 0;
  if (r >= 2147483647.0) return 2147483647.0;
  if (r <= -2147483648.0) return -2147483648.0;
  return std::trunc(r);
}

struct Memo {
  std::vector<double> value;
  std::vector<char> done;
};

struct Eval {
  const StagedProgram& p;
  int32_t stage;
  const std::vector<std::vector<int64_t>>& dims;   // per node, concrete dims
  const std::vector<const float*>& buffer;         // per node, its buffer or nullptr
  std::unordered_map<ir::ValueId, Memo> memo;

  int64_t linear(ir::ValueId v, const Index& idx) const {
    const auto& d = dims[static_cast<size_t>(v)];
    int64_t off = 0;
    for (size_t k = 0; k < d.size(); ++k) off = off * d[k] + idx[k];
    return off;
  }
  void delinear(ir::ValueId v, int64_t off, Index& idx) const {
    const auto& d = dims[static_cast<size_t>(v)];
    for (size_t k = d.size(); k-- > 0;) {
      idx[k] = off % d[k];
      off /= d[k];
    }
  }
  // Index of operand o of a broadcasting elementwise node v (right-aligned ranks).
  Index bcast(ir::ValueId v, ir::ValueId o, const Index& idx) const {
    const auto& dv = dims[static_cast<size_t>(v)];
    const auto& dn = dims[static_cast<size_t>(o)];
    Index r{};
    size_t shift = dv.size() - dn.size();
    for (size_t k = 0; k < dn.size(); ++k) r[k] = dn[k] == 1 ? 0 : idx[k + shift];
    return r;
  }
  Memo& memo_of(ir::ValueId v) {
    auto [it, fresh] = memo.try_emplace(v);
    if (fresh) {
      int64_t n = 1;
      for (int64_t d : dims[static_cast<size_t>(v)]) n *= d;
      it->second.value.assign(static_cast<size_t>(n), 0.0);
      it->second.done.assign(static_cast<size_t>(n), 0);
    }
    return it->second;
  }

  double eval(ir::ValueId v, const Index& idx) {
    const float* buf = buffer[static_cast<size_t>(v)];
    bool computed_here = p.stage_of[static_cast<size_t>(v)] == stage || p.is_inline[static_cast<size_t>(v)];
    if (!computed_here) {
      if (!buf) throw Error("staged executor: internal error: value " + std::to_string(v) + " has no buffer");
      return buf[linear(v, idx)];
    }
    const ir::Node& n = p.graph.at(v);
    double r = compute(v, n, idx);
    if (n.dtype == DType::I32) r = to_i32(r);
    else if (n.dtype == DType::Bool) r = r != 0 ? 1 : 0;
    return r;
  }

  double compute(ir::ValueId v, const ir::Node& n, const Index& idx) {
    using ir::Op;
    auto x = [&](size_t i) { return eval(n.operands[i], bcast(v, n.operands[i], idx)); };
    if (ir::is_unary(n.op)) return ir::host_eval(n.op, x(0));  // a cast's rounding is in eval()
    if (ir::is_binary(n.op)) {
      const double a = x(0), b = x(1);
      // Integer operands (exact in a double) take the op's integer form: i32 division truncates.
      if (!is_float(p.graph.at(n.operands[0]).dtype) && !is_float(p.graph.at(n.operands[1]).dtype))
        return static_cast<double>(ir::host_eval_int(n.op, static_cast<int64_t>(a), static_cast<int64_t>(b)));
      return ir::host_eval(n.op, a, b);
    }
    switch (n.op) {
      case Op::Const: return n.attrs.scalar;
      case Op::Arange: return static_cast<double>(idx[0]);
      // A select evaluates only the branch it takes (the other may gather out of range).
      case Op::Where: return x(0) != 0 ? x(1) : x(2);
      case Op::ReduceSum:
      case Op::ReduceMax: return reduce(v, n, idx);
      case Op::MatMul: return matmul(v, n, idx);
      case Op::Gather: {
        ir::ValueId tab = n.operands[0], ix = n.operands[1];
        size_t ri = dims[static_cast<size_t>(ix)].size();
        Index ii{}, ti{};
        for (size_t k = 0; k < ri; ++k) ii[k] = idx[k];
        double row = eval(ix, ii);
        int64_t rows = dims[static_cast<size_t>(tab)][0];
        if (row < 0 || row >= static_cast<double>(rows))
          throw Error("staged executor: gather index " + std::to_string(static_cast<int64_t>(row)) +
                      " outside the table of " + std::to_string(rows) + " rows (" + span_text(p.graph, n.span) + ")");
        ti[0] = static_cast<int64_t>(row);
        for (size_t k = 1; k < dims[static_cast<size_t>(tab)].size(); ++k) ti[k] = idx[ri + k - 1];
        return eval(tab, ti);
      }
      case Op::Reshape: {
        Index oi{};
        delinear(n.operands[0], linear(v, idx), oi);
        return eval(n.operands[0], oi);
      }
      case Op::Permute: {
        Index oi{};
        for (size_t k = 0; k < n.attrs.perm.size(); ++k) oi[static_cast<size_t>(n.attrs.perm[k])] = idx[k];
        return eval(n.operands[0], oi);
      }
      case Op::Slice: {
        Index oi = idx;
        auto axis = static_cast<size_t>(n.attrs.axis < 0 ? n.attrs.axis + static_cast<int32_t>(n.shape.size()) : n.attrs.axis);
        oi[axis] = n.attrs.start + idx[axis] * n.attrs.step;
        return eval(n.operands[0], oi);
      }
      case Op::Concat: {
        auto axis = static_cast<size_t>(n.attrs.axis < 0 ? n.attrs.axis + static_cast<int32_t>(n.shape.size()) : n.attrs.axis);
        Index oi = idx;
        for (ir::ValueId o : n.operands) {
          int64_t len = dims[static_cast<size_t>(o)][axis];
          if (oi[axis] < len) return eval(o, oi);
          oi[axis] -= len;
        }
        throw Error("staged executor: internal error: concat index out of range");
      }
      case Op::Attention: return attention(v, n, idx);
      case Op::TopK:
      case Op::ArgTopK: return topk(v, n, idx);
      case Op::MoeGateUp: return moe_gate_up(v, n, idx);
      case Op::MoeDown: return moe_down(v, n, idx);
      default:
        throw Error("staged executor: internal error: " + std::string(ir::op_name(n.op)) + " evaluated as a value");
    }
  }

  double reduce(ir::ValueId v, const ir::Node& n, const Index& idx) {
    Memo& m = memo_of(v);
    int64_t at = linear(v, idx);
    if (m.done[static_cast<size_t>(at)]) return m.value[static_cast<size_t>(at)];
    ir::ValueId o = n.operands[0];
    size_t rank = dims[static_cast<size_t>(o)].size();
    auto axis = static_cast<size_t>(n.attrs.axis < 0 ? n.attrs.axis + static_cast<int32_t>(rank) : n.attrs.axis);
    Index oi{};
    for (size_t k = 0, j = 0; k < rank; ++k) {
      if (k == axis) { oi[k] = 0; if (n.attrs.keepdim) ++j; continue; }
      oi[k] = idx[j++];
    }
    bool is_max = n.op == ir::Op::ReduceMax;
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t r = 0; r < dims[static_cast<size_t>(o)][axis]; ++r) {
      oi[axis] = r;
      double e = eval(o, oi);
      acc = is_max ? std::max(acc, e) : acc + e;
    }
    m.done[static_cast<size_t>(at)] = 1;
    return m.value[static_cast<size_t>(at)] = acc;
  }

  double matmul(ir::ValueId v, const ir::Node& n, const Index& idx) {
    Memo& m = memo_of(v);
    int64_t at = linear(v, idx);
    if (m.done[static_cast<size_t>(at)]) return m.value[static_cast<size_t>(at)];
    ir::ValueId a = n.operands[0], b = n.operands[1];
    const auto& dv = dims[static_cast<size_t>(v)];
    const auto& da = dims[static_cast<size_t>(a)];
    const auto& db = dims[static_cast<size_t>(b)];
    size_t rv = dv.size(), ra = da.size(), rb = db.size();
    Index ai{}, bi{};
    for (size_t k = 0; k + 2 < ra; ++k) ai[k] = da[k] == 1 ? 0 : idx[k + (rv - ra)];
    for (size_t k = 0; k + 2 < rb; ++k) bi[k] = db[k] == 1 ? 0 : idx[k + (rv - rb)];
    ai[ra - 2] = idx[rv - 2];
    bi[rb - 1] = idx[rv - 1];
    double acc = 0;
    for (int64_t k = 0; k < da[ra - 1]; ++k) {
      ai[ra - 1] = k;
      bi[rb - 2] = k;
      acc += eval(a, ai) * eval(b, bi);
    }
    m.done[static_cast<size_t>(at)] = 1;
    return m.value[static_cast<size_t>(at)] = acc;
  }

  // The k best of the row (the last axis), largest first, ties to the lower index: the whole row
  // at its first element's use, as the kernel's thread keeps it.
  double topk(ir::ValueId v, const ir::Node& n, const Index& idx) {
    Memo& m = memo_of(v);
    const int64_t at = linear(v, idx);
    if (m.done[static_cast<size_t>(at)]) return m.value[static_cast<size_t>(at)];
    const ir::ValueId o = n.operands[0];
    const size_t last = dims[static_cast<size_t>(o)].size() - 1;
    const int64_t N = dims[static_cast<size_t>(o)][last], K = dims[static_cast<size_t>(v)][last];
    std::vector<std::pair<double, int64_t>> row;
    Index oi = idx;
    for (int64_t r = 0; r < N; ++r) {
      oi[last] = r;
      row.push_back({eval(o, oi), r});
    }
    auto before = [](const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) {
      if (std::isnan(a.first) != std::isnan(b.first)) return std::isnan(a.first);
      if (!std::isnan(a.first) && a.first != b.first) return a.first > b.first;
      return a.second < b.second;
    };
    std::partial_sort(row.begin(), row.begin() + K, row.end(), before);
    Index ri = idx;
    for (int64_t j = 0; j < K; ++j) {
      ri[last] = j;
      const auto r = static_cast<size_t>(linear(v, ri));
      m.value[r] = n.op == ir::Op::ArgTopK ? static_cast<double>(row[static_cast<size_t>(j)].second)
                                           : row[static_cast<size_t>(j)].first;
      m.done[r] = 1;
    }
    return m.value[static_cast<size_t>(at)];
  }

  int64_t expert_of(const ir::Node& n, int64_t t, int64_t k) {
    const double e = eval(n.operands[1], Index{t, k});
    const int64_t E = dims[static_cast<size_t>(n.operands[n.op == ir::Op::MoeGateUp ? 2 : 3])][0];
    if (e < 0 || e >= static_cast<double>(E))
      throw Error("staged executor: expert index " + std::to_string(static_cast<int64_t>(e)) + " outside the " +
                  std::to_string(E) + " experts (" + span_text(p.graph, n.span) + ")");
    return static_cast<int64_t>(e);
  }

  // silu(wg[e] . x[t]) * (wu[e] . x[t]) at (t, k, f), e = idx[t, k].
  double moe_gate_up(ir::ValueId v, const ir::Node& n, const Index& idx) {
    Memo& m = memo_of(v);
    const auto at = static_cast<size_t>(linear(v, idx));
    if (m.done[at]) return m.value[at];
    const int64_t t = idx[0], k = idx[1], f = idx[2], e = expert_of(n, t, k);
    const int64_t D = dims[static_cast<size_t>(n.operands[0])][1];
    double gs = 0, us = 0;
    for (int64_t d = 0; d < D; ++d) {
      const double x = eval(n.operands[0], Index{t, d});
      gs += x * eval(n.operands[2], Index{e, f, d});
      us += x * eval(n.operands[3], Index{e, f, d});
    }
    m.done[at] = 1;
    return m.value[at] = gs / (1.0 + std::exp(-gs)) * us;
  }

  // sum_k w[t, k] * (wd[e] . act[t, k]) at (t, d).
  double moe_down(ir::ValueId v, const ir::Node& n, const Index& idx) {
    Memo& m = memo_of(v);
    const auto at = static_cast<size_t>(linear(v, idx));
    if (m.done[at]) return m.value[at];
    const int64_t t = idx[0], d = idx[1];
    const auto& da = dims[static_cast<size_t>(n.operands[0])];
    double acc = 0;
    for (int64_t k = 0; k < da[1]; ++k) {
      const int64_t e = expert_of(n, t, k);
      double s = 0;
      for (int64_t f = 0; f < da[2]; ++f) s += eval(n.operands[0], Index{t, k, f}) * eval(n.operands[3], Index{e, d, f});
      acc += eval(n.operands[2], Index{t, k}) * s;
    }
    m.done[at] = 1;
    return m.value[at] = acc;
  }

  // The row of position `p` of token `t` in a paged state of `rows` rows (ir.h): through the
  // block table, operands `first` (seq) and `first + 1` (block_table) of node n.
  int64_t paged_row(const ir::Node& n, size_t first, int64_t t, int64_t p_, int64_t rows) {
    const ir::ValueId seq = n.operands[first], table = n.operands[first + 1];
    const int64_t bs = n.attrs.block_size, mb = dims[static_cast<size_t>(table)][1];
    const int64_t b = static_cast<int64_t>(eval(seq, Index{t}));
    const int64_t nseq = dims[static_cast<size_t>(table)][0];
    if (b < 0 || b >= nseq || p_ / bs >= mb)
      throw Error("staged executor: token " + std::to_string(t) + " (sequence " + std::to_string(b) + ", position " +
                  std::to_string(p_) + ") is outside the block table (" + span_text(p.graph, n.span) + ")");
    const int64_t block = static_cast<int64_t>(eval(table, Index{b, p_ / bs}));
    if (block < 0 || (block + 1) * bs > rows)
      throw Error("staged executor: block " + std::to_string(block) + " of token " + std::to_string(t) +
                  " is outside the KV pool (" + span_text(p.graph, n.span) + ")");
    return block * bs + p_ % bs;
  }

  // The whole attention output at first use (the stage computes all of it anyway).
  double attention(ir::ValueId v, const ir::Node& n, const Index& idx) {
    Memo& m = memo_of(v);
    if (!m.done[0]) {
      ir::ValueId q = n.operands[0], k = n.operands[1], vv = n.operands[2], pos = n.operands[3];
      const auto& dq = dims[static_cast<size_t>(q)];
      int64_t Tn = dq[0], H = dq[1], Dh = dq[2], S = dims[static_cast<size_t>(k)][1];
      std::vector<double> score, qrow(static_cast<size_t>(Dh));
      std::vector<int64_t> rows;  // cache row of each position of token t (paged: through its block table)
      for (int64_t t = 0; t < Tn; ++t) {
        Index pi{};
        pi[0] = t;
        double pd = eval(pos, pi);
        if (pd < 0 || (n.operands.size() == 4 && pd >= static_cast<double>(S)))
          throw Error("staged executor: position " + std::to_string(static_cast<int64_t>(pd)) +
                      " outside the KV cache of " + std::to_string(S) + " (" + span_text(p.graph, n.span) + ")");
        auto last = static_cast<int64_t>(pd);
        // Keys first .. last: a sliding window (attrs.window > 0) starts at last - window + 1.
        const int64_t first = n.attrs.window > 0 ? std::max<int64_t>(0, last - n.attrs.window + 1) : 0;
        const auto nk = static_cast<size_t>(last + 1 - first);
        rows.resize(nk);
        for (int64_t s = first; s <= last; ++s)
          rows[static_cast<size_t>(s - first)] = n.operands.size() == 4 ? s : paged_row(n, 4, t, s, S);
        for (int64_t h = 0; h < H; ++h) {
          int64_t kvh = h / n.attrs.gqa_group;
          for (int64_t d = 0; d < Dh; ++d) qrow[static_cast<size_t>(d)] = eval(q, Index{t, h, d});
          score.assign(nk, 0.0);
          double mx = -std::numeric_limits<double>::infinity();
          for (size_t s = 0; s < nk; ++s) {
            double acc = 0;
            for (int64_t d = 0; d < Dh; ++d) acc += qrow[static_cast<size_t>(d)] * eval(k, Index{kvh, rows[s], d});
            acc *= n.attrs.scale;
            if (n.attrs.softcap > 0) acc = n.attrs.softcap * std::tanh(acc / n.attrs.softcap);
            score[s] = acc;
            mx = std::max(mx, score[s]);
          }
          double denom = 0;
          for (auto& e : score) denom += (e = std::exp(e - mx));
          for (int64_t d = 0; d < Dh; ++d) {
            double acc = 0;
            for (size_t s = 0; s < nk; ++s) acc += score[s] * eval(vv, Index{kvh, rows[s], d});
            int64_t at = (t * H + h) * Dh + d;
            m.value[static_cast<size_t>(at)] = acc / denom;
          }
        }
      }
      m.done[0] = 1;
    }
    return m.value[static_cast<size_t>(linear(v, idx))];
  }
};

// The State source a state version (State or StateWrite chain) lives in.
int32_t state_index(const ir::Graph& g, ir::ValueId v) {
  while (g.at(v).op != ir::Op::State) {
    const ir::Node& n = g.at(v);
    if (n.op != ir::Op::StateWrite) return -1;
    v = n.operands[0];
  }
  return g.at(v).attrs.index;
}

// Calls f(idx) for every multi-index of `dims`.
template <typename F>
void for_each_index(const std::vector<int64_t>& dims, F&& f) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  Index idx{};
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace

StagedExecutor::StagedExecutor(const StagedProgram& program, std::vector<std::vector<float>> params)
    : p_(program), params_(std::move(params)) {
  const auto& g = p_.graph;
  if (params_.size() != g.params.size())
    throw Error("staged executor: " + std::to_string(params_.size()) + " weights given, the program has " +
                std::to_string(g.params.size()));
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].size() != static_cast<size_t>(numel(g.params[i].shape, 1)))
      throw Error("staged executor: weight `" + g.params[i].tensor + "` has " + std::to_string(params_[i].size()) +
                  " elements, its shape needs " + std::to_string(numel(g.params[i].shape, 1)));
  reset();
}

void StagedExecutor::set_state(size_t i, std::vector<float> values) {
  if (values.size() != states_.at(i).size())
    throw Error("staged executor: state `" + p_.graph.states.at(i).name + "` has " + std::to_string(states_[i].size()) +
                " elements, " + std::to_string(values.size()) + " given");
  states_[i] = std::move(values);
}

void StagedExecutor::reset() {
  states_.clear();
  for (const auto& s : p_.graph.states) states_.emplace_back(static_cast<size_t>(numel(s.shape, 1)), 0.0f);
}

std::vector<std::vector<float>> StagedExecutor::step(const std::vector<std::vector<int32_t>>& inputs, int64_t T) {
  return step(inputs, std::vector<int64_t>{T});
}

std::vector<std::vector<float>> StagedExecutor::step(const std::vector<std::vector<int32_t>>& inputs,
                                                     const std::vector<int64_t>& symbols) {
  const auto& g = p_.graph;
  if (inputs.size() != g.inputs.size())
    throw Error("staged executor: " + std::to_string(inputs.size()) + " inputs given, the program has " +
                std::to_string(g.inputs.size()));
  if (symbols.size() != g.symbols.size())
    throw Error("staged executor: " + std::to_string(symbols.size()) + " runtime dims given, the program has " +
                std::to_string(g.symbols.size()));
  std::vector<std::vector<int64_t>> dims(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& d : g.nodes[i].shape) dims[i].push_back(dim_value(d, symbols));
  std::vector<std::vector<float>> input_f(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].size() != static_cast<size_t>(numel(g.inputs[i].shape, symbols)))
      throw Error("staged executor: input `" + g.inputs[i].name + "` has " + std::to_string(inputs[i].size()) +
                  " elements for its runtime dims");
    input_f[i].assign(inputs[i].begin(), inputs[i].end());
  }
  std::vector<const float*> buffer(g.nodes.size(), nullptr);
  stored_.assign(g.nodes.size(), {});
  auto& stored = stored_;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    auto at = static_cast<size_t>(n.attrs.index);
    if (n.op == ir::Op::Input) buffer[i] = input_f.at(at).data();
    if (n.op == ir::Op::Param) buffer[i] = params_.at(at).data();
    if (n.op == ir::Op::State || n.op == ir::Op::StateWrite) {
      int32_t s = state_index(g, static_cast<ir::ValueId>(i));
      buffer[i] = states_.at(static_cast<size_t>(s)).data();
    }
  }
  for (const Launch& launch : p_.launches) {
    for (int32_t s : launch.stages) {
      const Stage& st = p_.stages[static_cast<size_t>(s)];
      Eval ev{p_, s, dims, buffer, {}};
      for (ir::ValueId v : st.stores) {
        auto& out = stored[static_cast<size_t>(v)];
        out.assign(static_cast<size_t>(numel(g.at(v).shape, symbols)), 0.0f);
        for_each_index(dims[static_cast<size_t>(v)], [&](const Index& idx) {
          out[static_cast<size_t>(ev.linear(v, idx))] = static_cast<float>(ev.eval(v, idx));
        });
        buffer[static_cast<size_t>(v)] = out.data();
      }
      for (ir::ValueId w : st.nodes) {
        const ir::Node& n = g.at(w);
        if (n.op != ir::Op::StateWrite) continue;
        ir::ValueId value = n.operands[1], pos = n.operands[2];
        auto& state = states_.at(static_cast<size_t>(state_index(g, w)));
        const auto& sdims = dims[static_cast<size_t>(n.operands[0])];
        size_t nfixed = n.attrs.fixed.size();
        auto axis = static_cast<size_t>(n.attrs.axis);
        // Evaluate first, write after: the value may read the state being written (old rows).
        std::vector<std::pair<int64_t, float>> writes;
        for_each_index(dims[static_cast<size_t>(value)], [&](const Index& idx) {
          Index si{};
          for (size_t k = 0; k < nfixed; ++k) si[k] = n.attrs.fixed[k];
          for (size_t k = 0; k < dims[static_cast<size_t>(value)].size(); ++k) si[nfixed + k] = idx[k];
          Index pi{};
          pi[0] = idx[axis];
          double pd = ev.eval(pos, pi);
          const int64_t rows = sdims[nfixed + axis];
          if (n.operands.size() == 5 && pd >= 0) pd = static_cast<double>(ev.paged_row(n, 3, idx[axis], static_cast<int64_t>(pd), rows));
          if (pd < 0 || pd >= static_cast<double>(rows))
            throw Error("staged executor: position " + std::to_string(static_cast<int64_t>(pd)) + " outside state `" +
                        g.states.at(static_cast<size_t>(state_index(g, w))).name + "` (" + span_text(g, n.span) + ")");
          si[nfixed + axis] = static_cast<int64_t>(pd);
          int64_t off = 0;
          for (size_t k = 0; k < sdims.size(); ++k) off = off * sdims[k] + si[k];
          writes.emplace_back(off, static_cast<float>(ev.eval(value, idx)));
        });
        for (auto [off, val] : writes) state[static_cast<size_t>(off)] = val;
      }
    }
  }
  std::vector<std::vector<float>> outs;
  for (ir::ValueId o : g.outputs) outs.push_back(stored[static_cast<size_t>(o)]);
  return outs;
}

}  // namespace lg::lift
