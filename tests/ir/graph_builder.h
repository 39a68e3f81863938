// A few lines of sugar for building IR graphs by hand in tests, standing in for the front end.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace lg::ir::test {

inline Dim C(int64_t v) { return Dim::constant(v); }
inline Dim Tsym(int64_t c = 1) { return Dim::symbol(0, c); }

struct Builder {
  Graph g;
  int line = 1;

  Builder() {
    g.model = "test";
    g.files = {"test.lg"};
    g.symbols = {{"T", 64}};
  }
  ValueId node(Op op, DType dt, Shape shape, std::vector<ValueId> operands, Attrs attrs = {}, std::string name = "") {
    Node n{op, dt, std::move(shape), std::move(operands), std::move(attrs), Span{0, line++, 3, 0, 0}, std::move(name)};
    return g.add(std::move(n));
  }
  ValueId input(const std::string& name, DType dt, Shape shape) {
    Attrs a;
    a.index = static_cast<int32_t>(g.inputs.size());
    g.inputs.push_back({name, dt, shape});
    return node(Op::Input, dt, shape, {}, a, name);
  }
  ValueId param(const std::string& name, DType dt, Shape shape) {
    Attrs a;
    a.index = static_cast<int32_t>(g.params.size());
    g.params.push_back({name, "w." + name, dt, shape, false});
    return node(Op::Param, dt, shape, {}, a, name);
  }
  ValueId state(const std::string& name, DType dt, Shape shape) {
    Attrs a;
    a.index = static_cast<int32_t>(g.states.size());
    g.states.push_back({name, dt, shape});
    return node(Op::State, dt, shape, {}, a, name);
  }
  const Node& at(ValueId v) const { return g.at(v); }
  ValueId un(Op op, ValueId x) { return node(op, at(x).dtype, at(x).shape, {x}); }
  ValueId bin(Op op, ValueId a, ValueId b, Shape shape) { return node(op, at(a).dtype, std::move(shape), {a, b}); }
  ValueId permute(ValueId x, std::vector<int32_t> perm) {
    Shape s;
    for (int32_t p : perm) s.push_back(at(x).shape[static_cast<size_t>(p)]);
    Attrs a;
    a.perm = std::move(perm);
    return node(Op::Permute, at(x).dtype, s, {x}, a);
  }
  ValueId reshape(ValueId x, Shape s) { return node(Op::Reshape, at(x).dtype, std::move(s), {x}); }
  ValueId matmul(ValueId a, ValueId b) {
    Shape s = at(a).shape;
    s.back() = at(b).shape.back();
    return node(Op::MatMul, DType::F32, s, {a, b});
  }
};

/// A one-layer attention model over a KV cache, the shape of a transformer layer without norms:
/// logits = (attention(x wq^T, cache(x wk^T), cache(x wv^T)) wo^T + x) embed^T, x = embed[tokens].
/// V=40, D=16, H=4, KV=2, Dh=8, S=32.
inline Graph tiny_attention_graph() {
  const int64_t V = 40, D = 16, H = 4, KV = 2, Dh = 8, S = 32;
  Builder b;
  const ValueId tokens = b.input("tokens", DType::I32, {Tsym()});
  const ValueId pos = b.input("pos", DType::I32, {Tsym()});
  const ValueId embed = b.param("embed", DType::BF16, {C(V), C(D)});
  const ValueId wq = b.param("wq", DType::F32, {C(H * Dh), C(D)});
  const ValueId wk = b.param("wk", DType::F32, {C(KV * Dh), C(D)});
  const ValueId wv = b.param("wv", DType::F32, {C(KV * Dh), C(D)});
  const ValueId wo = b.param("wo", DType::F32, {C(D), C(H * Dh)});
  const ValueId kc = b.state("kcache", DType::BF16, {C(1), C(KV), C(S), C(Dh)});
  const ValueId vc = b.state("vcache", DType::BF16, {C(1), C(KV), C(S), C(Dh)});
  const ValueId x = b.node(Op::Gather, DType::BF16, {Tsym(), C(D)}, {embed, tokens}, {}, "x");
  const ValueId q = b.reshape(b.matmul(x, b.permute(wq, {1, 0})), {Tsym(), C(H), C(Dh)});
  auto kv_of = [&](ValueId w) {
    return b.permute(b.reshape(b.matmul(x, b.permute(w, {1, 0})), {Tsym(), C(KV), C(Dh)}), {1, 0, 2});
  };
  Attrs wa;
  wa.fixed = {0};
  wa.axis = 1;
  const ValueId kc1 = b.node(Op::StateWrite, DType::BF16, b.at(kc).shape, {kc, kv_of(wk), pos}, wa, "kcache");
  const ValueId vc1 = b.node(Op::StateWrite, DType::BF16, b.at(vc).shape, {vc, kv_of(wv), pos}, wa, "vcache");
  auto layer0 = [&](ValueId c) {
    Attrs sa;
    sa.axis = 0;
    sa.start = 0;
    sa.stop = 1;
    const ValueId s = b.node(Op::Slice, DType::BF16, {C(1), C(KV), C(S), C(Dh)}, {c}, sa);
    return b.reshape(s, {C(KV), C(S), C(Dh)});
  };
  Attrs aa;
  aa.scale = 1 / std::sqrt(static_cast<double>(Dh));
  aa.gqa_group = static_cast<int32_t>(H / KV);
  const ValueId att = b.node(Op::Attention, DType::F32, {Tsym(), C(H), C(Dh)}, {q, layer0(kc1), layer0(vc1), pos}, aa, "att");
  const ValueId o = b.matmul(b.reshape(att, {Tsym(), C(H * Dh)}), b.permute(wo, {1, 0}));
  const ValueId xf = b.node(Op::Cast, DType::F32, {Tsym(), C(D)}, {x});
  const ValueId h = b.bin(Op::Add, o, xf, {Tsym(), C(D)});
  const ValueId logits = b.matmul(h, b.permute(embed, {1, 0}));
  b.g.outputs = {logits};
  b.g.final_states = {kc1, vc1};
  return b.g;
}

}  // namespace lg::ir::test
