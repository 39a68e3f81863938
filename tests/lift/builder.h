// Builds IR graphs by hand for the lifting tests (before and beside the .lg front end): each
// helper appends one node with the shape ir.h defines for its op, on its own source line so that
// stage listings and refusals can be checked line by line.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace lg::lift::test {

using ir::Dim;
using ir::Op;
using ir::Shape;
using ir::ValueId;

inline Dim T() { return Dim::symbol(0); }
inline Dim C(int64_t v) { return Dim::constant(v); }

class Builder {
 public:
  explicit Builder(int64_t max_t = 16) {
    g.model = "test";
    g.files = {"test.lg"};
    g.symbols = {{"T", max_t}};
  }
  ir::Graph g;
  int32_t line = 1;  ///< the source line the next node is attributed to
  bool same_line = false;  ///< when true, nodes do not advance the line (one statement)

  ValueId add(Op op, DType dt, Shape shape, std::vector<ValueId> operands, ir::Attrs attrs = {},
              std::string name = "") {
    ir::Node n{op, dt, std::move(shape), std::move(operands), std::move(attrs), {0, line, 1, line, 80}, std::move(name)};
    if (!same_line) ++line;
    return g.add(std::move(n));
  }
  const Shape& shape(ValueId v) const { return g.at(v).shape; }

  ValueId input(const std::string& name, Shape s) {
    g.inputs.push_back({name, DType::I32, s});
    ir::Attrs a;
    a.index = static_cast<int32_t>(g.inputs.size() - 1);
    return add(Op::Input, DType::I32, s, {}, a, name);
  }
  ValueId param(const std::string& name, Shape s, DType dt = DType::F32) {
    g.params.push_back({name, name, dt, s, false});
    ir::Attrs a;
    a.index = static_cast<int32_t>(g.params.size() - 1);
    return add(Op::Param, dt, s, {}, a, name);
  }
  ValueId state(const std::string& name, Shape s) {
    g.states.push_back({name, DType::F32, s});
    ir::Attrs a;
    a.index = static_cast<int32_t>(g.states.size() - 1);
    ValueId v = add(Op::State, DType::F32, s, {}, a, name);
    g.final_states.push_back(v);
    return v;
  }
  /// A scalar constant as a rank-`rank` tensor of ones-dims (binary ops need equal rank).
  ValueId constant(double v, size_t rank, DType dt = DType::F32) {
    ir::Attrs a;
    a.scalar = v;
    bool keep = same_line;
    same_line = true;
    ValueId c = add(Op::Const, dt, {}, {}, a);
    ValueId r = rank == 0 ? c : add(Op::Reshape, dt, Shape(rank, C(1)), {c});
    same_line = keep;
    if (!same_line) ++line;
    return r;
  }
  ValueId unary(Op op, ValueId x, std::string name = "") {
    return add(op, g.at(x).dtype, shape(x), {x}, {}, std::move(name));
  }
  ValueId cast(ValueId x, DType dt) { return add(Op::Cast, dt, shape(x), {x}); }
  ValueId binary(Op op, ValueId a, ValueId b, std::string name = "") {
    Shape s = shape(a);
    for (size_t k = 0; k < s.size(); ++k)
      if (s[k] == C(1)) s[k] = shape(b)[k];
    bool cmp = op >= Op::Lt && op <= Op::Ne;
    return add(op, cmp ? DType::Bool : g.at(a).dtype, s, {a, b}, {}, std::move(name));
  }
  ValueId reduce(Op op, ValueId x, int32_t axis, bool keepdim, std::string name = "") {
    Shape s = shape(x);
    auto ax = static_cast<size_t>(axis < 0 ? axis + static_cast<int32_t>(s.size()) : axis);
    if (keepdim) s[ax] = C(1);
    else s.erase(s.begin() + static_cast<std::ptrdiff_t>(ax));
    ir::Attrs a;
    a.axis = axis;
    a.keepdim = keepdim;
    return add(op, g.at(x).dtype, s, {x}, a, std::move(name));
  }
  ValueId matmul(ValueId a, ValueId b, std::string name = "") {
    Shape s = shape(a);
    s.back() = shape(b).back();
    return add(Op::MatMul, DType::F32, s, {a, b}, {}, std::move(name));
  }
  ValueId transpose(ValueId w) {
    ir::Attrs a;
    a.perm = {1, 0};
    return add(Op::Permute, g.at(w).dtype, {shape(w)[1], shape(w)[0]}, {w}, a);
  }
  ValueId permute(ValueId x, std::vector<int32_t> perm) {
    Shape s;
    for (int32_t p : perm) s.push_back(shape(x)[static_cast<size_t>(p)]);
    ir::Attrs a;
    a.perm = std::move(perm);
    return add(Op::Permute, g.at(x).dtype, s, {x}, a);
  }
  ValueId reshape(ValueId x, Shape s) { return add(Op::Reshape, g.at(x).dtype, std::move(s), {x}); }
  ValueId slice(ValueId x, int32_t axis, int64_t start, int64_t stop) {
    Shape s = shape(x);
    s[static_cast<size_t>(axis)] = C(stop - start);
    ir::Attrs a;
    a.axis = axis;
    a.start = start;
    a.stop = stop;
    return add(Op::Slice, g.at(x).dtype, s, {x}, a);
  }
  ValueId concat(std::vector<ValueId> xs, int32_t axis) {
    Shape s = shape(xs[0]);
    int64_t total = 0;
    for (ValueId x : xs) total += shape(x)[static_cast<size_t>(axis)].coeff;
    s[static_cast<size_t>(axis)] = C(total);
    ir::Attrs a;
    a.axis = axis;
    DType dt = g.at(xs[0]).dtype;
    return add(Op::Concat, dt, s, std::move(xs), a);
  }
  ValueId gather(ValueId table, ValueId idx, std::string name = "") {
    Shape s = shape(idx);
    for (size_t k = 1; k < shape(table).size(); ++k) s.push_back(shape(table)[k]);
    return add(Op::Gather, g.at(table).dtype, s, {table, idx}, {}, std::move(name));
  }
  ValueId arange(int64_t n) { return add(Op::Arange, DType::I32, {C(n)}, {}); }
  ValueId state_write(ValueId st, ValueId value, ValueId pos, std::vector<int64_t> fixed, int32_t axis) {
    ir::Attrs a;
    a.fixed = std::move(fixed);
    a.axis = axis;
    ValueId w = add(Op::StateWrite, g.at(st).dtype, shape(st), {st, value, pos}, a);
    for (auto& f : g.final_states)
      if (f == st) f = w;
    return w;
  }
  ValueId attention(ValueId q, ValueId k, ValueId v, ValueId pos, double scale, int32_t group, int64_t window = 0,
                    double softcap = 0) {
    ir::Attrs a;
    a.scale = scale;
    a.gqa_group = group;
    a.window = window;
    a.softcap = softcap;
    return add(Op::Attention, DType::F32, shape(q), {q, k, v, pos}, a, "attn");
  }
  void output(ValueId v) { g.outputs.push_back(v); }

  // ---- composite helpers as a .lg prelude would lower them ----

  /// x * rsqrt(mean(x*x, -1, keepdim) + eps) * w, one statement.
  ValueId rms_norm(ValueId x, ValueId w, double eps, std::string name = "") {
    same_line = true;
    size_t r = shape(x).size();
    ValueId sq = binary(Op::Mul, x, x);
    ValueId s = reduce(Op::ReduceSum, sq, -1, true);
    ValueId m = binary(Op::Div, s, constant(static_cast<double>(shape(x).back().coeff), r));
    ValueId a = binary(Op::Add, m, constant(eps, r));
    ValueId rs = unary(Op::Rsqrt, a);
    ValueId y = binary(Op::Mul, x, rs);
    Shape ws(r, C(1));
    ws.back() = shape(w)[0];
    ValueId out = binary(Op::Mul, y, reshape(w, ws), std::move(name));
    same_line = false;
    ++line;
    return out;
  }
  /// x * sigmoid(x).
  ValueId silu(ValueId x) {
    same_line = true;
    ValueId out = binary(Op::Mul, x, unary(Op::Sigmoid, x));
    same_line = false;
    ++line;
    return out;
  }
  /// Rotate-half RoPE of x[T, Hn, Dh] at positions pos[T] (HF's rotate_half convention).
  ValueId rope(ValueId x, ValueId pos, double theta) {
    same_line = true;
    int64_t Dh = shape(x)[2].coeff, half = Dh / 2;
    ValueId ar = cast(arange(half), DType::F32);
    ValueId expo = binary(Op::Div, binary(Op::Mul, ar, constant(-2.0, 1)), constant(static_cast<double>(Dh), 1));
    ValueId inv = binary(Op::Pow, constant(theta, 1), expo);                          // [half]
    ValueId pf = reshape(cast(pos, DType::F32), {T(), C(1)});                        // [T, 1]
    ValueId fr = binary(Op::Mul, pf, reshape(inv, {C(1), C(half)}));                 // [T, half]
    ValueId emb = concat({fr, fr}, 1);                                                // [T, Dh]
    ValueId cs = reshape(unary(Op::Cos, emb), {T(), C(1), C(Dh)});
    ValueId sn = reshape(unary(Op::Sin, emb), {T(), C(1), C(Dh)});
    ValueId x1 = slice(x, 2, 0, half), x2 = slice(x, 2, half, Dh);
    ValueId rot = concat({unary(Op::Neg, x2), x1}, 2);
    ValueId out = binary(Op::Add, binary(Op::Mul, x, cs), binary(Op::Mul, rot, sn));
    same_line = false;
    ++line;
    return out;
  }
};

}  // namespace lg::lift::test
