#include "ir/verify.h"

#include <cmath>
#include <map>
#include <string>

#include "ir/print.h"
#include "support/error.h"

namespace lg::ir {

namespace {

enum class Cls { Float, Int, Bool };
Cls cls(DType t) { return is_float(t) ? Cls::Float : t == DType::Bool ? Cls::Bool : Cls::Int; }

/// A product of dims as coeff * prod(symbol^power), so that reshapes between T*H and [T, H]
/// can be checked without knowing T.
struct Volume {
  int64_t coeff = 1;
  std::map<int32_t, int> powers;
  bool operator==(const Volume&) const = default;
};
Volume volume(const Shape& s) {
  Volume v;
  for (const Dim& d : s) {
    v.coeff *= d.coeff;
    if (!d.is_const()) ++v.powers[d.sym];
  }
  if (v.coeff == 0) v.powers.clear();
  return v;
}

bool is_one(const Dim& d) { return d.is_const() && d.coeff == 1; }

class Verifier {
 public:
  explicit Verifier(const Graph& g) : g_(g) {}

  void run() {
    for (size_t s = 0; s < g_.states.size(); ++s)
      for (const Dim& d : g_.states[s].shape)
        if (!d.is_const()) throw Error("IR: state " + g_.states[s].name + " has a runtime dim; states must have a fixed size");
    for (size_t p = 0; p < g_.params.size(); ++p)
      for (const Dim& d : g_.params[p].shape)
        if (!d.is_const()) throw Error("IR: param " + g_.params[p].name + " has a runtime dim");
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      id_ = static_cast<ValueId>(k);
      check_node(g_.nodes[k]);
    }
    for (ValueId o : g_.outputs)
      if (o < 0 || static_cast<size_t>(o) >= g_.nodes.size()) throw Error("IR: output %" + std::to_string(o) + " is not a node");
    if (g_.final_states.size() != g_.states.size())
      throw Error("IR: " + std::to_string(g_.final_states.size()) + " final states for " + std::to_string(g_.states.size()) + " states");
    for (size_t s = 0; s < g_.final_states.size(); ++s) {
      const ValueId f = g_.final_states[s];
      if (f < 0 || static_cast<size_t>(f) >= g_.nodes.size())
        throw Error("IR: final state of " + g_.states[s].name + " is not a node");
      ValueId root = f;  // follow the version chain back to its State node
      while (g_.at(root).op == Op::StateWrite) root = g_.at(root).operands[0];
      if (g_.at(root).op != Op::State || g_.at(root).attrs.index != static_cast<int32_t>(s))
        throw Error("IR: final state of " + g_.states[s].name + " (%" + std::to_string(f) + ") is not a version of that state");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    const Node& n = g_.at(id_);
    throw Error(span_string(g_, n.span) + ": IR node " + node_string(g_, id_) +
                (n.name.empty() ? "" : " (" + n.name + ")") + ": " + why);
  }
  const Node& operand(const Node& n, size_t k) const { return g_.at(n.operands[k]); }
  std::string type(const Node& n) const { return type_string(g_, n.dtype, n.shape); }

  void expect_operands(const Node& n, size_t count) const {
    if (n.operands.size() != count)
      fail("expects " + std::to_string(count) + " operands, has " + std::to_string(n.operands.size()));
  }
  /// `base` operands, or paged (ir.h): base + seq i32[T] + block_table i32[B, MB] and a block size.
  void expect_paging(const Node& n, size_t base) const {
    if (n.operands.size() == base) {
      if (n.attrs.block_size != 0) fail("a block size without the paging operands seq and block_table");
      return;
    }
    expect_operands(n, base + 2);
    const Node& pos = operand(n, base - 1);
    const Node& seq = operand(n, base);
    const Node& table = operand(n, base + 1);
    if (n.attrs.block_size < 1) fail("paged: the block size must be >= 1");
    if (seq.dtype != DType::I32 || seq.shape != pos.shape) fail("paged: seq must be i32 like pos " + type(pos));
    if (table.dtype != DType::I32 || table.shape.size() != 2 || !table.shape[1].is_const())
      fail("paged: the block table must be i32[B, MB]");
  }
  void expect_shape(const Node& n, const Shape& s) const {
    if (n.shape != s) fail("shape should be " + type_string(g_, n.dtype, s));
  }
  Shape broadcast(const Shape& a, const Shape& b) const {
    const size_t r = std::max(a.size(), b.size());
    Shape out(r);
    for (size_t k = 0; k < r; ++k) {
      const Dim da = k + a.size() >= r ? a[k + a.size() - r] : Dim::constant(1);
      const Dim db = k + b.size() >= r ? b[k + b.size() - r] : Dim::constant(1);
      if (!(da == db || is_one(da) || is_one(db)))
        fail("operand shapes " + type_string(g_, DType::F32, a) + " and " + type_string(g_, DType::F32, b) + " do not broadcast");
      out[k] = is_one(da) ? db : da;
    }
    return out;
  }
  int64_t axis_of(int32_t axis, size_t rank) const {
    const int64_t a = axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
    if (a < 0 || a >= static_cast<int64_t>(rank)) fail("axis " + std::to_string(axis) + " out of range");
    return a;
  }

  template <class Info>
  void check_source(const Node& n, const std::vector<Info>& infos, const char* what) const {
    const auto i = static_cast<size_t>(n.attrs.index);
    if (n.attrs.index < 0 || i >= infos.size()) fail(std::string("refers to ") + what + " #" + std::to_string(n.attrs.index) + ", which does not exist");
    if (infos[i].dtype != n.dtype || infos[i].shape != n.shape)
      fail(std::string("type differs from ") + what + " " + infos[i].name + ": " + type_string(g_, infos[i].dtype, infos[i].shape));
  }

  /// Node id_: its operands precede it, its dims are valid, and its op's typing rule holds.
  void check_node(const Node& n) {
    for (ValueId o : n.operands)
      if (o < 0 || o >= id_) fail("operand %" + std::to_string(o) + " does not precede the node (graph not in topological order)");
    for (const Dim& d : n.shape) {
      if (!d.is_const() && (d.sym < 0 || static_cast<size_t>(d.sym) >= g_.symbols.size())) fail("dim refers to an unknown symbol");
      if (d.coeff < 0) fail("negative dim");
    }
    if (is_source(n.op)) return check_source_op(n);
    if (is_unary(n.op)) return check_unary(n);
    if (is_binary(n.op)) return check_binary(n);
    switch (n.op) {
      case Op::Where: return check_where(n);
      case Op::ReduceSum:
      case Op::ReduceMax: return check_reduce(n);
      case Op::MatMul: return check_matmul(n);
      case Op::Gather: return check_gather(n);
      case Op::Reshape: return check_reshape(n);
      case Op::Permute: return check_permute(n);
      case Op::Slice: return check_slice(n);
      case Op::Concat: return check_concat(n);
      case Op::StateWrite: return check_state_write(n);
      case Op::Attention: return check_attention(n);
      case Op::TopK:
      case Op::ArgTopK: return check_topk(n);
      case Op::MoeGateUp:
      case Op::MoeDown: return check_experts(n);
      default: fail("unknown op");
    }
  }

  /// A leaf: an input, param or state of the graph's type, a rank-0 constant, an i32[n] arange.
  void check_source_op(const Node& n) const {
    expect_operands(n, 0);
    switch (n.op) {
      case Op::Input: return check_source(n, g_.inputs, "input");
      case Op::Param: return check_source(n, g_.params, "param");
      case Op::State: return check_source(n, g_.states, "state");
      case Op::Const:
        if (!n.shape.empty()) fail("a constant must be rank 0");
        // An executor converts the scalar to the dtype; for an integer one that is only defined
        // within its range (the front end refuses a larger integer constant, as torch does).
        if (n.dtype == DType::I32 && !(n.attrs.scalar == std::trunc(n.attrs.scalar) && n.attrs.scalar >= -2147483648.0 &&
                                       n.attrs.scalar <= 2147483647.0))
          fail("an i32 constant must be an integer in the i32 range");
        if (n.dtype == DType::Bool && n.attrs.scalar != 0.0 && n.attrs.scalar != 1.0) fail("a bool constant must be 0 or 1");
        return;
      case Op::Arange:
        if (n.shape.size() != 1 || n.dtype != DType::I32) fail("arange must be i32[n]");
        return;
      default: return;
    }
  }

  /// Elementwise of one operand, its shape kept: a cast to the declared dtype, a float-only op
  /// (exp, rsqrt, ...) on floats, any other within one numeric dtype class.
  void check_unary(const Node& n) const {
    expect_operands(n, 1);
    const Node& x = operand(n, 0);
    expect_shape(n, x.shape);
    if (op_info(n.op).result == ResultDType::Declared) return;  // a cast
    if (!is_float_only(n.op)) {
      if (cls(n.dtype) != cls(x.dtype) || cls(x.dtype) == Cls::Bool) fail("needs a numeric operand of the result's dtype class");
      return;
    }
    if (cls(x.dtype) != Cls::Float || cls(n.dtype) != Cls::Float) fail("needs a float operand and result (cast first)");
  }

  /// Elementwise of two operands of one dtype class, shapes broadcast: arithmetic keeps the
  /// class, a comparison gives bool.
  void check_binary(const Node& n) const {
    expect_operands(n, 2);
    const Node& a = operand(n, 0);
    const Node& b = operand(n, 1);
    expect_shape(n, broadcast(a.shape, b.shape));
    if (cls(a.dtype) != cls(b.dtype)) fail("operands " + type(a) + " and " + type(b) + " have different dtype classes (cast first)");
    const bool cmp = op_info(n.op).result == ResultDType::Bool;
    if (cmp && n.dtype != DType::Bool) fail("a comparison produces bool");
    if (!cmp && (cls(n.dtype) != cls(a.dtype) || cls(a.dtype) == Cls::Bool))
      fail("arithmetic needs numeric operands of the result's dtype class");
  }

  /// where(c, a, b): a bool condition, branches of the result's dtype class, shapes broadcast.
  void check_where(const Node& n) const {
    expect_operands(n, 3);
    const Node& c = operand(n, 0);
    const Node& a = operand(n, 1);
    const Node& b = operand(n, 2);
    if (c.dtype != DType::Bool) fail("the condition must be bool");
    if (cls(a.dtype) != cls(n.dtype) || cls(b.dtype) != cls(n.dtype)) fail("both branches must have the result's dtype class");
    expect_shape(n, broadcast(c.shape, broadcast(a.shape, b.shape)));
  }

  /// sum/max along one axis (kept as 1 with keepdim); bool sums count into i32.
  void check_reduce(const Node& n) const {
    expect_operands(n, 1);
    const Node& x = operand(n, 0);
    const auto ax = static_cast<size_t>(axis_of(n.attrs.axis, x.shape.size()));
    Shape s = x.shape;
    if (n.attrs.keepdim) s[ax] = Dim::constant(1);
    else s.erase(s.begin() + static_cast<int64_t>(ax));
    expect_shape(n, s);
    if (n.dtype != x.dtype && !(x.dtype == DType::Bool && n.dtype == DType::I32)) fail("a reduction keeps its operand's dtype");
  }

  /// a[..., M, K] @ b[..., K, N] over floats, batch dims broadcast.
  void check_matmul(const Node& n) const {
    expect_operands(n, 2);
    const Node& a = operand(n, 0);
    const Node& b = operand(n, 1);
    if (a.shape.size() < 2 || b.shape.size() < 2) fail("matmul needs operands of rank >= 2");
    if (!is_float(a.dtype) || !is_float(b.dtype) || !is_float(n.dtype)) fail("matmul is over floats");
    if (a.shape[a.shape.size() - 1] != b.shape[b.shape.size() - 2])
      fail("contraction dims differ: " + type(a) + " @ " + type(b));
    Shape s = broadcast(Shape(a.shape.begin(), a.shape.end() - 2), Shape(b.shape.begin(), b.shape.end() - 2));
    s.push_back(a.shape[a.shape.size() - 2]);
    s.push_back(b.shape.back());
    expect_shape(n, s);
  }

  /// rows of table[V, ...] at i32 indices: idx.shape + table.shape[1:].
  void check_gather(const Node& n) const {
    expect_operands(n, 2);
    const Node& table = operand(n, 0);
    const Node& idx = operand(n, 1);
    if (table.shape.empty()) fail("gather needs a table of rank >= 1");
    if (idx.dtype != DType::I32) fail("gather indices must be i32");
    if (cls(n.dtype) != cls(table.dtype)) fail("gather keeps the table's dtype");
    Shape s = idx.shape;
    s.insert(s.end(), table.shape.begin() + 1, table.shape.end());
    expect_shape(n, s);
  }

  /// the element count (as a product of symbols) and the dtype kept.
  void check_reshape(const Node& n) const {
    expect_operands(n, 1);
    const Node& x = operand(n, 0);
    if (volume(x.shape) != volume(n.shape)) fail("reshape of " + type(x) + " changes the element count");
    if (n.dtype != x.dtype) fail("a view keeps its operand's dtype");
  }

  /// a permutation of the axes, the dtype kept.
  void check_permute(const Node& n) const {
    expect_operands(n, 1);
    const Node& x = operand(n, 0);
    const auto& perm = n.attrs.perm;
    if (perm.size() != x.shape.size()) fail("perm has the wrong length");
    std::vector<bool> seen(perm.size(), false);
    Shape s;
    for (int32_t p : perm) {
      if (p < 0 || static_cast<size_t>(p) >= perm.size() || seen[static_cast<size_t>(p)]) fail("perm is not a permutation");
      seen[static_cast<size_t>(p)] = true;
      s.push_back(x.shape[static_cast<size_t>(p)]);
    }
    expect_shape(n, s);
    if (n.dtype != x.dtype) fail("a view keeps its operand's dtype");
  }

  /// start:stop:step along one axis within a constant dim, the dtype kept.
  void check_slice(const Node& n) const {
    expect_operands(n, 1);
    const Node& x = operand(n, 0);
    const auto ax = static_cast<size_t>(axis_of(n.attrs.axis, x.shape.size()));
    const Attrs& a = n.attrs;
    if (a.step < 1 || a.start < 0 || a.start > a.stop) fail("bad slice bounds");
    if (x.shape[ax].is_const() && a.stop > x.shape[ax].coeff) fail("slice stop beyond the dim");
    Shape s = x.shape;
    s[ax] = Dim::constant(slice_length(a.start, a.stop, a.step));
    expect_shape(n, s);
    if (n.dtype != x.dtype) fail("a view keeps its operand's dtype");
  }

  /// operands equal off the axis; the axis's dims sum when they share a symbol.
  void check_concat(const Node& n) const {
    if (n.operands.empty()) fail("concat needs operands");
    const Node& x0 = operand(n, 0);
    const auto ax = static_cast<size_t>(axis_of(n.attrs.axis, x0.shape.size()));
    Dim total = Dim::constant(0);
    for (size_t k = 0; k < n.operands.size(); ++k) {
      const Node& x = operand(n, k);
      if (x.shape.size() != x0.shape.size() || cls(x.dtype) != cls(n.dtype)) fail("concat operands differ in rank or dtype");
      for (size_t d = 0; d < x.shape.size(); ++d)
        if (d != ax && x.shape[d] != x0.shape[d]) fail("concat operands differ off the concat axis");
      const Dim& d = x.shape[ax];
      if (total.coeff == 0) total = d;
      else if (d.sym == total.sym) {
        if (__builtin_add_overflow(total.coeff, d.coeff, &total.coeff)) fail("concat dims overflow");
      }
      else return;  // mixed symbols: the sum is not a Dim; checked at run time
    }
    Shape s = x0.shape;
    s[ax] = total;
    expect_shape(n, s);
  }

  /// rows of val written into a state version at pos (optionally paged), after the fixed leading indices.
  void check_state_write(const Node& n) const {
    expect_paging(n, 3);
    const Node& st = operand(n, 0);
    const Node& val = operand(n, 1);
    const Node& pos = operand(n, 2);
    if (st.op != Op::State && st.op != Op::StateWrite) fail("operand 0 must be a version of a state");
    if (n.dtype != st.dtype || n.shape != st.shape) fail("a state write keeps the state's type " + type(st));
    if (pos.dtype != DType::I32 || pos.shape.size() != 1) fail("positions must be i32[T]");
    const size_t nf = n.attrs.fixed.size();
    if (nf > st.shape.size()) fail("more fixed indices than state axes");
    for (size_t k = 0; k < nf; ++k)
      if (n.attrs.fixed[k] < 0 || n.attrs.fixed[k] >= st.shape[k].coeff) fail("fixed index out of range");
    Shape s(st.shape.begin() + static_cast<int64_t>(nf), st.shape.end());
    if (s.empty()) fail("no axis left to write rows into");
    s[static_cast<size_t>(axis_of(n.attrs.axis, s.size()))] = pos.shape[0];
    if (val.shape != s) fail("value " + type(val) + " should be " + type_string(g_, val.dtype, s));
    if (cls(val.dtype) != cls(st.dtype)) fail("value and state dtype classes differ");
  }

  /// q[T, H, Dh] over k, v [KV, S, Dh] at pos (optionally paged); H = KV * gqa_group; f32 out.
  void check_attention(const Node& n) const {
    expect_paging(n, 4);
    const Node& q = operand(n, 0);
    const Node& k = operand(n, 1);
    const Node& v = operand(n, 2);
    const Node& pos = operand(n, 3);
    if (q.shape.size() != 3 || k.shape.size() != 3 || v.shape != k.shape)
      fail("expects q[T,H,Dh], k[KV,S,Dh], v[KV,S,Dh]");
    if (q.shape[2] != k.shape[2]) fail("q and k head dims differ");
    if (pos.dtype != DType::I32 || pos.shape.size() != 1 || pos.shape[0] != q.shape[0]) fail("positions must be i32[T] for q's T");
    if (n.attrs.gqa_group < 1) fail("gqa_group must be >= 1");
    if (q.shape[1].is_const() && k.shape[0].is_const() && q.shape[1].coeff != k.shape[0].coeff * n.attrs.gqa_group)
      fail("query heads != KV heads * gqa_group");
    if (!(n.attrs.scale > 0)) fail("the softmax scale must be positive");
    if (n.attrs.window < 0) fail("the sliding window must be >= 0 (0: none)");
    if (!(n.attrs.softcap >= 0) || !std::isfinite(n.attrs.softcap)) fail("the soft-cap must be finite and >= 0 (0: none)");
    if (!is_float(q.dtype) || !is_float(k.dtype) || !is_float(v.dtype) || n.dtype != DType::F32) fail("attention is over floats and produces f32");
    expect_shape(n, q.shape);
  }

  /// k of a constant axis: values (topk) or i32 indices (argtopk), the other axes kept.
  void check_topk(const Node& n) const {
    expect_operands(n, 1);
    const Node& x = operand(n, 0);
    if (x.shape.size() != n.shape.size()) fail("must keep the rank of its operand " + type(x));
    const auto axis = static_cast<size_t>(axis_of(n.attrs.axis, x.shape.size()));
    for (size_t k = 0; k < x.shape.size(); ++k)
      if (k != axis && !(x.shape[k] == n.shape[k])) fail("may change only the axis it selects along");
    if (!x.shape[axis].is_const() || !n.shape[axis].is_const() || n.shape[axis].coeff < 1 ||
        n.shape[axis].coeff > x.shape[axis].coeff)
      fail("selects 1 .. " + std::to_string(x.shape[axis].coeff) + " of a constant axis");
    if (n.op == Op::TopK ? n.dtype != x.dtype : n.dtype != DType::I32)
      fail(n.op == Op::TopK ? "values keep the operand's dtype" : "indices are i32");
    if (cls(x.dtype) == Cls::Bool) fail("needs a numeric operand");
  }

  /// moe_gate_up(x[T, D], idx[T, K], gate, up [E, F, D]) -> [T, K, F]; moe_down(act[T, K, F], idx, w[T, K], down[E, D, F]) -> [T, D].
  void check_experts(const Node& n) const {
    expect_operands(n, 4);
    const Node& x = operand(n, 0);
    const Node& idx = operand(n, 1);
    const bool up = n.op == Op::MoeGateUp;
    const Node& w1 = operand(n, up ? 2 : 3);
    if (idx.dtype != DType::I32 || idx.shape.size() != 2) fail("expert indices must be i32[T, K]");
    if (w1.shape.size() != 3 || !is_float(w1.dtype)) fail("expert weights must be float [E, N, K]");
    if (!is_float(x.dtype) || n.dtype != DType::F32) fail("experts compute floats and produce f32");
    if (up) {
      const Node& w2 = operand(n, 3);
      if (x.shape.size() != 2 || !(x.shape[0] == idx.shape[0])) fail("x must be [T, D] for idx's T");
      if (w2.shape != w1.shape || !is_float(w2.dtype)) fail("gate and up weights must be float and of one shape");
      if (!(w1.shape[2] == x.shape[1])) fail("expert weights [E, F, D] must match x's D");
      expect_shape(n, {x.shape[0], idx.shape[1], w1.shape[1]});
    } else {
      const Node& w = operand(n, 2);
      if (x.shape.size() != 3 || !(x.shape[0] == idx.shape[0]) || !(x.shape[1] == idx.shape[1]))
        fail("act must be [T, K, F] for idx's [T, K]");
      if (w.shape != idx.shape || !is_float(w.dtype)) fail("routing weights must be float like idx " + type(idx));
      if (!(w1.shape[2] == x.shape[2])) fail("expert weights [E, D, F] must match act's F");
      expect_shape(n, {x.shape[0], w1.shape[1]});
    }
  }

  const Graph& g_;
  ValueId id_ = 0;
};

}  // namespace

void verify(const Graph& g) { Verifier(g).run(); }

}  // namespace lg::ir
