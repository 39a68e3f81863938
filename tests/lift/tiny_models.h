// Hand-built IR graphs of small models for the lifting tests, and the comparison of the staged
// executor with the IR's CPU reference executor on random weights.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "builder.h"
#include "ir/cpu_executor.h"
#include "lift/lift.h"
#include "lift/passes.h"
#include "lift/staged_executor.h"

namespace lg::lift::test {

struct QwenShape {
  int64_t L = 2, D = 32, H = 4, KV = 2, Dh = 16, F = 48, V = 40, S = 16;
  bool qk_norm = true, qkv_bias = false;
};

/// A Qwen2/Qwen3-style decoder built node by node, one .lg-like statement per line.
inline ir::Graph qwen_like(const QwenShape& c) {
  Builder b(c.S);
  ValueId tokens = b.input("tokens", {T()});
  ValueId pos = b.input("pos", {T()});
  ValueId embed = b.param("embed", {C(c.V), C(c.D)});
  ValueId kc = b.state("kcache", {C(c.L), C(c.KV), C(c.S), C(c.Dh)});
  ValueId vc = b.state("vcache", {C(c.L), C(c.KV), C(c.S), C(c.Dh)});
  ValueId x = b.gather(embed, tokens, "x");
  int32_t body = b.line;
  for (int64_t l = 0; l < c.L; ++l) {
    b.line = body;  // every layer lowers from the same source lines
    std::string p = "l" + std::to_string(l) + ".";
    auto w = [&](const std::string& n, Shape s) { return b.param(p + n, std::move(s)); };
    ValueId ln1 = w("ln1", {C(c.D)}), wq = w("wq", {C(c.H * c.Dh), C(c.D)}), wk = w("wk", {C(c.KV * c.Dh), C(c.D)});
    ValueId wv = w("wv", {C(c.KV * c.Dh), C(c.D)}), wo = w("wo", {C(c.D), C(c.H * c.Dh)});
    ValueId ln2 = w("ln2", {C(c.D)}), wg = w("wg", {C(c.F), C(c.D)}), wu = w("wu", {C(c.F), C(c.D)});
    ValueId wd = w("wd", {C(c.D), C(c.F)});
    ValueId h = b.rms_norm(x, ln1, 1e-6, p + "h");
    auto proj = [&](ValueId wt, const std::string& bias, int64_t n) {
      ValueId y = b.matmul(h, b.transpose(wt));
      if (c.qkv_bias) y = b.binary(Op::Add, y, b.reshape(w(bias, {C(n)}), {C(1), C(n)}));
      return y;
    };
    ValueId q = b.reshape(proj(wq, "bq", c.H * c.Dh), {T(), C(c.H), C(c.Dh)});
    if (c.qk_norm) q = b.rms_norm(q, w("qn", {C(c.Dh)}), 1e-6);
    q = b.rope(q, pos, 10000.0);
    ValueId k = b.reshape(proj(wk, "bk", c.KV * c.Dh), {T(), C(c.KV), C(c.Dh)});
    if (c.qk_norm) k = b.rms_norm(k, w("kn", {C(c.Dh)}), 1e-6);
    k = b.rope(k, pos, 10000.0);
    kc = b.state_write(kc, b.permute(k, {1, 0, 2}), pos, {l}, 1);
    ValueId v = b.reshape(proj(wv, "bv", c.KV * c.Dh), {T(), C(c.KV), C(c.Dh)});
    vc = b.state_write(vc, b.permute(v, {1, 0, 2}), pos, {l}, 1);
    ValueId kl = b.reshape(b.slice(kc, 0, l, l + 1), {C(c.KV), C(c.S), C(c.Dh)});
    ValueId vl = b.reshape(b.slice(vc, 0, l, l + 1), {C(c.KV), C(c.S), C(c.Dh)});
    ValueId a = b.attention(q, kl, vl, pos, 1.0 / std::sqrt(static_cast<double>(c.Dh)),
                            static_cast<int32_t>(c.H / c.KV));
    x = b.binary(Op::Add, x, b.matmul(b.reshape(a, {T(), C(c.H * c.Dh)}), b.transpose(wo)), p + "x1");
    ValueId h2 = b.rms_norm(x, ln2, 1e-6);
    ValueId mlp = b.binary(Op::Mul, b.silu(b.matmul(h2, b.transpose(wg))), b.matmul(h2, b.transpose(wu)));
    x = b.binary(Op::Add, x, b.matmul(mlp, b.transpose(wd)), p + "x2");
  }
  ValueId norm = b.param("norm", {C(c.D)});
  ValueId head = b.param("head", {C(c.V), C(c.D)});
  b.output(b.matmul(b.rms_norm(x, norm, 1e-6), b.transpose(head), "logits"));
  return b.g;
}

/// Random weights in [-scale, scale] (norm weights around 1), one vector per Graph::params.
inline std::vector<std::vector<float>> random_params(const ir::Graph& g, uint32_t seed, float scale = 0.3f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<std::vector<float>> out;
  for (const auto& p : g.params) {
    std::vector<float> v(static_cast<size_t>(numel(p.shape, 1)));
    bool is_norm = p.shape.size() == 1;
    for (auto& e : v) e = is_norm ? 1.0f + u(rng) : u(rng);
    out.push_back(std::move(v));
  }
  return out;
}

/// max |a - b| / max |b|: the error relative to the reference's scale (logits near 0 would make an
/// elementwise relative error meaningless). Infinite when either side holds a NaN or infinity
/// (std::max would skip a NaN and report agreement).
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(a.at(i)) || !std::isfinite(b[i])) return std::numeric_limits<double>::infinity();
    num = std::max(num, std::fabs(static_cast<double>(a.at(i)) - b[i]));
    den = std::max(den, std::fabs(static_cast<double>(b[i])));
  }
  return den > 0 ? num / den : num;
}

/// Runs `steps` (token lists, positions continuing) through the CPU reference and through the
/// lifted + fused program; returns the largest relative error over every step's outputs.
inline double staged_vs_reference(const ir::Graph& g, const std::vector<std::vector<float>>& params,
                                  const std::vector<std::vector<int32_t>>& steps, const FuseOptions& opts = {}) {
  std::vector<ir::cpu::Tensor> tp;
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<int64_t> shape;
    for (const auto& d : g.params[i].shape) shape.push_back(d.coeff);
    tp.push_back(ir::cpu::Tensor::from_f32(shape, params[i]));
  }
  ir::CpuExecutor ref(g, tp);
  StagedProgram prog = lift(g);
  fuse(prog, opts);
  StagedExecutor staged(prog, params);
  double worst = 0;
  int32_t pos0 = 0;
  for (const auto& toks : steps) {
    auto Tn = static_cast<int64_t>(toks.size());
    std::vector<int32_t> pos(toks.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = pos0 + static_cast<int32_t>(i);
    pos0 += static_cast<int32_t>(toks.size());
    std::vector<ir::cpu::Tensor> in = {ir::cpu::Tensor::from_i32({Tn}, toks), ir::cpu::Tensor::from_i32({Tn}, pos)};
    auto want = ref.run(in);
    auto got = staged.step({toks, pos}, Tn);
    for (size_t o = 0; o < want.size(); ++o) worst = std::max(worst, rel_err(got.at(o), want[o].to_f32()));
  }
  return worst;
}

}  // namespace lg::lift::test
