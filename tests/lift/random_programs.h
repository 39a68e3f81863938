// A seeded generator of small random but valid IR graphs for the differential tests of lifting,
// fusion and emission (random_programs_test.cpp, tests/emit/random_programs_emit_test.cpp).
// Values stay bounded on purpose (see the tolerance note in random_programs_test.cpp): exp, sin
// and cos only see tanh'd values, divisors are >= 1, log/sqrt/rsqrt/pow only see values >= 0.5.
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tiny_models.h"

namespace lg::lift::test {

struct RandomProgram {
  ir::Graph graph;
  std::vector<std::vector<int32_t>> steps;  ///< a prefill and two decode steps
  std::string recipe;                       ///< one line per generator step, for failure reports
  std::vector<ir::ValueId> values;          ///< the [T, D] values in generation order (diagnosis)
};

namespace detail {

class Gen {
 public:
  Gen(uint32_t seed, int more_steps) : rng_(seed), b_(16), more_steps_(more_steps) {}

  RandomProgram build() {
    D_ = pick_of<int64_t>({16, 24, 32});
    V_ = 20;
    tokens_ = b_.input("tokens", {T()});
    pos_ = b_.input("pos", {T()});
    n_attn_ = chance(0.35) ? 1 + pick(2) : 0;
    if (n_attn_ > 0) plan_attention();
    ValueId x = b_.gather(param({C(V_), C(D_)}), tokens_, "x");
    if (chance(0.2)) x = b_.binary(Op::Mul, x, b_.constant(static_cast<double>(D_) / 8, 2));  // a gather epilogue
    pool_.push_back(x);
    note("embed D=" + std::to_string(D_));
    int steps = 3 + pick(7) + more_steps_;
    int attn_left = n_attn_;
    for (int i = 0; i < steps || attn_left > 0; ++i) {
      if (attn_left > 0 && (i >= steps || chance(0.25))) {
        attention(n_attn_ - attn_left);
        --attn_left;
        continue;
      }
      switch (pick(9)) {
        case 0: unary_chain(); break;
        case 1: binary(); break;
        case 2: duplicate(); break;
        case 3: row_reduce(); break;
        case 4: middle_reduce(); break;
        case 5: case 6: gemms(); break;
        case 7: rope(); break;
        case 8: mlp(); break;
      }
    }
    b_.output(recent());
    for (int k = pick(3); k > 0; --k) extra_output();
    RandomProgram rp;
    rp.graph = b_.g;
    rp.steps = {{3, 1, 4, 1, 5}, {9}, {2}};
    if (chance(0.3)) rp.steps = {{7}, {0, 19, 2}, {5}};
    rp.recipe = recipe_;
    rp.values = pool_;
    return rp;
  }

 private:
  std::mt19937 rng_;
  Builder b_;
  int more_steps_ = 0;
  int64_t D_ = 0, V_ = 0;
  ValueId tokens_ = -1, pos_ = -1, kc_ = -1, vc_ = -1;
  int n_attn_ = 0;
  int64_t H_ = 0, KV_ = 0, Dh_ = 0, S_ = 16;
  int n_params_ = 0;
  std::vector<ValueId> pool_;  ///< f32 [T, D] values
  std::vector<ValueId> rows_;  ///< f32 [1, D] values of sources only (weights, maps of weights)
  std::vector<ValueId> extra_;  ///< other-shaped values worth returning (reductions, views)
  std::string recipe_;

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename X>
  X pick_of(std::vector<X> xs) { return xs[static_cast<size_t>(pick(static_cast<int>(xs.size())))]; }
  void note(const std::string& s) { recipe_ += "  " + s + "\n"; }

  ValueId param(Shape s) { return b_.param("w" + std::to_string(n_params_++), std::move(s)); }
  ValueId recent() { return pool_[pool_.size() - 1 - static_cast<size_t>(pick(std::min<int>(3, static_cast<int>(pool_.size()))))]; }
  ValueId any() { return pool_[static_cast<size_t>(pick(static_cast<int>(pool_.size())))]; }
  ValueId c(double v) { return b_.constant(v, 2); }
  ValueId tanh(ValueId v) { return b_.unary(Op::Tanh, v); }
  // A [1, D] weight row: a fresh param, a reused one, or a transcendental map of one (a map of
  // sources that several stages may read).
  ValueId row() {
    if (!rows_.empty() && chance(0.5)) return rows_[static_cast<size_t>(pick(static_cast<int>(rows_.size())))];
    ValueId r = b_.reshape(param({C(D_)}), {C(1), C(D_)});
    switch (pick(4)) {
      case 0: r = b_.unary(Op::Sigmoid, r); break;
      case 1: r = b_.unary(Op::Exp, b_.unary(Op::Tanh, r)); break;
      case 2: r = b_.unary(Op::Cos, r); break;
      default: break;
    }
    rows_.push_back(r);
    return r;
  }
  // A [T, 1] column of sin/cos of the positions (a map of an input read by the stages using it).
  ValueId pos_column() {
    ValueId pf = b_.reshape(b_.cast(pos_, DType::F32), {T(), C(1)});
    return b_.unary(chance(0.5) ? Op::Sin : Op::Cos, b_.binary(Op::Mul, pf, c(0.37)));
  }
  std::vector<std::pair<int64_t, int64_t>> splits(bool even_second) const {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int64_t a = 2; a < D_; ++a)
      if (D_ % a == 0 && D_ / a >= 2 && (!even_second || (D_ / a) % 2 == 0)) out.push_back({a, D_ / a});
    return out;
  }

  ValueId apply_unary(ValueId v, int which) {
    switch (which) {
      case 0: return b_.unary(Op::Neg, v);
      case 1: return b_.unary(Op::Abs, v);
      case 2: return tanh(v);
      case 3: return b_.unary(Op::Sigmoid, v);
      case 4: return b_.unary(Op::Exp, tanh(v));
      case 5: return b_.unary(Op::Log, b_.binary(Op::Add, b_.unary(Op::Abs, v), c(1.0)));
      case 6: return b_.unary(Op::Sqrt, b_.binary(Op::Add, b_.binary(Op::Mul, v, v), c(1.0)));
      case 7: return b_.unary(Op::Rsqrt, b_.binary(Op::Add, b_.unary(Op::Abs, v), c(0.5)));
      case 8: return b_.unary(Op::Recip, b_.binary(Op::Add, b_.binary(Op::Mul, v, v), c(1.0)));
      case 9: return b_.unary(Op::Sin, b_.binary(Op::Mul, tanh(v), c(2.0)));
      case 10: return b_.unary(Op::Cos, tanh(v));
      case 11: return b_.cast(v, DType::F32);
      default: return b_.silu(v);
    }
  }
  static constexpr int kUnaries = 13;

  void unary_chain() {
    ValueId v = recent();
    std::string s = "unary chain:";
    for (int k = 1 + pick(3); k > 0; --k) {
      int u = pick(kUnaries);
      v = apply_unary(v, u);
      s += " u" + std::to_string(u);
    }
    pool_.push_back(v);
    note(s);
  }

  ValueId apply_binary(ValueId a, int which) {
    switch (which) {
      case 0: return b_.binary(Op::Add, a, any());
      case 1: return b_.binary(Op::Sub, a, b_.binary(Op::Mul, any(), c(0.37)));  // not a - a' ~ 0
      case 2: return b_.binary(Op::Mul, a, tanh(any()));
      case 3: return b_.binary(Op::Add, a, row());
      case 4: return b_.binary(Op::Mul, a, row());
      case 5: return b_.binary(Op::Maximum, a, any());
      case 6: return b_.binary(Op::Minimum, a, row());
      case 7: {
        ValueId d = any();
        return b_.binary(Op::Div, a, b_.binary(Op::Add, b_.binary(Op::Mul, d, d), c(1.0)));
      }
      case 8: return b_.binary(Op::Pow, b_.binary(Op::Add, b_.unary(Op::Abs, a), c(0.5)), c(pick_of<double>({0.5, 2.0, 1.5})));
      case 9: {  // max(a, o) written as where(a > o, a, o): a comparison flip near a tie changes nothing
        ValueId o = any();
        ValueId cond = b_.binary(Op::Gt, a, o);
        return b_.add(Op::Where, DType::F32, b_.shape(a), {cond, a, o});
      }
      case 10: return b_.binary(Op::Mul, a, pos_column());
      default: return b_.binary(Op::Mul, a, c(0.5));
    }
  }
  static constexpr int kBinaries = 12;

  void binary() {
    int w = pick(kBinaries);
    pool_.push_back(apply_binary(recent(), w));
    note("binary b" + std::to_string(w));
  }

  // The same computation twice on the same operands (what two calls of one .lg function give):
  // the common-subexpression merge must make them one value.
  void duplicate() {
    ValueId v = recent();
    int kind = pick(6);
    ValueId e1, e2;
    if (kind == 0) {
      int u = pick(kUnaries);
      e1 = apply_unary(v, u), e2 = apply_unary(v, u);
    } else if (kind == 1) {
      ValueId r = row();
      e1 = b_.binary(Op::Mul, v, r), e2 = b_.binary(Op::Mul, v, r);
    } else if (kind == 2) {
      ValueId w = param({C(D_)});
      e1 = b_.rms_norm(v, w, 1e-6), e2 = b_.rms_norm(v, w, 1e-6);
    } else if (kind == 3) {
      ValueId w = param({C(D_), C(D_)});
      e1 = b_.matmul(v, b_.transpose(w)), e2 = b_.matmul(v, b_.transpose(w));
    } else if (kind == 4) {  // the embedding looked up again
      ValueId x0 = pool_.front();
      if (b_.g.at(x0).op == Op::Gather) {
        const ValueId table = b_.g.at(x0).operands[0];  // (adding nodes moves b_.g.nodes)
        e1 = b_.gather(table, tokens_), e2 = b_.gather(table, tokens_);
        e1 = b_.binary(Op::Add, e1, v);
      } else {
        e1 = tanh(v), e2 = tanh(v);
      }
    } else {
      e1 = b_.binary(Op::Div, v, b_.binary(Op::Add, b_.unary(Op::Abs, b_.reduce(Op::ReduceMax, v, -1, true)), c(1.0)));
      e2 = b_.binary(Op::Div, v, b_.binary(Op::Add, b_.unary(Op::Abs, b_.reduce(Op::ReduceMax, v, -1, true)), c(1.0)));
    }
    switch (pick(3)) {
      case 0: pool_.push_back(b_.binary(Op::Add, e1, e2)); break;
      case 1: pool_.push_back(e1), pool_.push_back(e2); break;
      default: pool_.push_back(b_.binary(Op::Mul, e1, tanh(e2))); break;
    }
    note("duplicate d" + std::to_string(kind));
  }

  // v + a fixed ramp over the row (0, 1/D, ..., (D-1)/D). Centring a row (LayerNorm, x - max)
  // cancels what its elements share; a near-constant row (tanh or sigmoid saturated) would leave
  // only the reference's f32 rounding, amplified, and fail the comparison for no compiler fault.
  ValueId spread(ValueId v) {
    ValueId ramp = b_.binary(Op::Mul, b_.cast(b_.arange(D_), DType::F32), b_.constant(1.0 / static_cast<double>(D_), 1));
    return b_.binary(Op::Add, v, b_.reshape(ramp, {C(1), C(D_)}));
  }

  ValueId layer_norm(ValueId v) {
    if (b_.shape(v).size() == 2) v = spread(v);
    double n = static_cast<double>(b_.shape(v).back().coeff);
    size_t r = b_.shape(v).size();
    ValueId mean = b_.binary(Op::Div, b_.reduce(Op::ReduceSum, v, -1, true), b_.constant(n, r));
    ValueId cen = b_.binary(Op::Sub, v, mean);
    ValueId var = b_.binary(Op::Div, b_.reduce(Op::ReduceSum, b_.binary(Op::Mul, cen, cen), -1, true), b_.constant(n, r));
    ValueId y = b_.binary(Op::Mul, cen, b_.unary(Op::Rsqrt, b_.binary(Op::Add, var, b_.constant(1e-5, r))));
    if (r == 2) y = b_.binary(Op::Add, b_.binary(Op::Mul, y, row()), row());
    return y;
  }
  // Softmax of tanh(v) * 4: logits as large as 20 would turn the reference's f32 rounding of them
  // (~1e-6 absolute) into that much relative error of every probability.
  ValueId softmax(ValueId v) {
    v = b_.binary(Op::Mul, tanh(v), b_.constant(4.0, b_.shape(v).size()));
    ValueId e = b_.unary(Op::Exp, b_.binary(Op::Sub, v, b_.reduce(Op::ReduceMax, v, -1, true)));
    return b_.binary(Op::Div, e, b_.reduce(Op::ReduceSum, e, -1, true));
  }
  // A row-wise normalisation of v (the reductions over its last axis).
  ValueId norm(ValueId v, int* kind = nullptr) {
    int k = pick(6);
    if (kind) *kind = k;
    switch (k) {
      case 0: return b_.rms_norm(v, param({b_.shape(v).back()}), 1e-6);
      case 1: return layer_norm(v);
      case 2: return b_.binary(Op::Mul, softmax(v), c(static_cast<double>(D_)));
      case 3: {  // centred by the row max
        v = spread(v);
        ValueId m = b_.reduce(Op::ReduceMax, v, -1, true);
        extra_.push_back(m);
        return b_.binary(Op::Sub, v, m);
      }
      case 4: {  // scaled by the row sum, reduced without keepdim and reshaped back (a view)
        ValueId s = b_.reduce(Op::ReduceSum, b_.unary(Op::Abs, v), -1, false);
        Shape sh = b_.shape(s);
        sh.push_back(C(1));
        return b_.binary(Op::Div, v, b_.binary(Op::Add, b_.reshape(s, sh), c(1.0)));
      }
      default: return b_.rms_norm(v, param({b_.shape(v).back()}), 1e-6);
    }
  }

  void row_reduce() {
    int k = 0;
    ValueId v = recent();
    ValueId y = norm(v, &k);
    if (chance(0.3)) y = b_.binary(Op::Add, v, y);  // residual
    pool_.push_back(y);
    note("row reduction r" + std::to_string(k));
  }

  // A reduction over the middle axis of a [T, a, b] view (or the last axis of it: a per-head norm).
  void middle_reduce() {
    auto [a, bb] = pick_of(splits(false));
    ValueId v3 = b_.reshape(spread(recent()), {T(), C(a), C(bb)});
    ValueId y3;
    int k = pick(4);
    if (k == 0) {
      ValueId s = b_.reduce(Op::ReduceSum, b_.binary(Op::Mul, v3, v3), 1, true);
      y3 = b_.binary(Op::Mul, v3, b_.unary(Op::Rsqrt, b_.binary(Op::Add, b_.binary(Op::Div, s, b_.constant(static_cast<double>(a), 3)), b_.constant(1e-6, 3))));
    } else if (k == 1) {
      y3 = b_.binary(Op::Sub, v3, b_.reduce(Op::ReduceMax, v3, 1, true));
    } else if (k == 2) {  // without keepdim, broadcast back through a reshape
      ValueId s = b_.reduce(Op::ReduceSum, tanh(v3), 1, false);
      y3 = b_.binary(Op::Add, v3, b_.reshape(s, {T(), C(1), C(bb)}));
    } else {  // per-head RMSNorm over the last axis
      y3 = b_.rms_norm(v3, param({C(bb)}), 1e-6);
    }
    if (chance(0.3)) extra_.push_back(y3);
    pool_.push_back(b_.reshape(y3, {T(), C(D_)}));
    note("middle-axis reduction m" + std::to_string(k) + " [T," + std::to_string(a) + "," + std::to_string(bb) + "]");
  }

  // y = h @ W^T (or h @ W for a [K, N] weight), optionally + bias.
  ValueId proj(ValueId h, int64_t N) {
    int64_t K = b_.shape(h).back().coeff;
    ValueId y = chance(0.85) ? b_.matmul(h, b_.transpose(param({C(N), C(K)}))) : b_.matmul(h, param({C(K), C(N)}));
    if (chance(0.25)) y = b_.binary(Op::Add, y, b_.reshape(param({C(N)}), {C(1), C(N)}));
    return y;
  }

  // One to three GEMMs reading the same activation: a pool value or a norm of one, the norm
  // sometimes read elsewhere too (a residual, the pool, an output).
  void gemms() {
    ValueId v = recent();
    std::string s = "gemms:";
    ValueId h = v;
    if (chance(0.6)) {
      int k = 0;
      h = norm(v, &k);
      s += " norm r" + std::to_string(k);
      if (chance(0.3)) {  // the activation is the norm combined with a weight row or another value
        h = chance(0.5) ? b_.binary(Op::Mul, h, row()) : b_.binary(Op::Add, h, any());
        s += " (combined)";
      }
    }
    int n = 1 + pick(3);
    s += " x" + std::to_string(n);
    std::vector<ValueId> ys;
    for (int i = 0; i < n; ++i) {
      int shape = pick(4);
      if (shape == 0) {  // N = 2D, its halves combined (SwiGLU through slices)
        ValueId y = proj(h, 2 * D_);
        ys.push_back(b_.binary(Op::Mul, b_.silu(b_.slice(y, 1, 0, D_)), b_.slice(y, 1, D_, 2 * D_)));
        s += " 2D";
      } else if (shape == 1 && D_ % 2 == 0) {  // N = D/2, concatenated with itself
        ValueId y = proj(h, D_ / 2);
        ys.push_back(b_.concat({y, b_.unary(Op::Neg, y)}, 1));
        s += " D/2";
      } else if (shape == 2) {  // a batched GEMM over a [T, a, b] view
        auto [a, bb] = pick_of(splits(false));
        ValueId y = b_.matmul(b_.reshape(h, {T(), C(a), C(bb)}), b_.transpose(param({C(bb), C(bb)})));
        ys.push_back(b_.reshape(y, {T(), C(D_)}));
        s += " batched";
      } else {
        ys.push_back(proj(h, D_));
        s += " D";
      }
    }
    if (n >= 2 && chance(0.5)) {
      pool_.push_back(b_.binary(Op::Mul, b_.silu(ys[0]), ys[1]));
      s += " swiglu";
    }
    for (ValueId y : ys) {
      int use = pick(4);
      if (use == 0 && h != v) y = b_.binary(Op::Add, h, y), s += " +h";       // the norm in the epilogue
      else if (use == 1) y = b_.binary(Op::Add, v, y), s += " +v";            // a residual
      pool_.push_back(y);
    }
    if (h != v && chance(0.2)) pool_.push_back(h), s += " h->pool";
    if (h != v && chance(0.15)) extra_.push_back(h), s += " h->out";
    note(s);
  }

  void mlp() {
    ValueId v = recent();
    int k = 0;
    ValueId h = chance(0.7) ? norm(v, &k) : v;
    int64_t F = pick_of<int64_t>({D_ + 8, 2 * D_, 3 * D_ / 2});
    ValueId g = b_.matmul(h, b_.transpose(param({C(F), C(D_)})));
    ValueId u = b_.matmul(h, b_.transpose(param({C(F), C(D_)})));
    ValueId m = b_.binary(Op::Mul, b_.silu(g), u);
    pool_.push_back(b_.binary(Op::Add, v, b_.matmul(m, b_.transpose(param({C(D_), C(F)})))));
    note("mlp F=" + std::to_string(F) + (h != v ? " norm r" + std::to_string(k) : ""));
  }

  void rope() {
    auto [H, Dh] = pick_of(splits(true));
    double theta = pick_of<double>({10000.0, 500.0});
    ValueId v3 = b_.reshape(recent(), {T(), C(H), C(Dh)});
    pool_.push_back(b_.reshape(b_.rope(v3, pos_, theta), {T(), C(D_)}));
    note("rope [T," + std::to_string(H) + "," + std::to_string(Dh) + "] theta " + std::to_string(static_cast<int>(theta)));
  }

  void plan_attention() {
    std::vector<std::tuple<int64_t, int64_t, int64_t>> shapes;  // H, KV, Dh with H * Dh = D, Dh even
    for (auto [H, Dh] : splits(true))
      for (int64_t KV = 1; KV <= H; ++KV)
        if (H % KV == 0) shapes.push_back({H, KV, Dh});
    std::tie(H_, KV_, Dh_) = pick_of(shapes);
    kc_ = b_.state("kcache", {C(n_attn_), C(KV_), C(S_), C(Dh_)});
    vc_ = b_.state("vcache", {C(n_attn_), C(KV_), C(S_), C(Dh_)});
  }

  // A qwen_like attention block on layer l of the caches: q/k/v GEMMs (from a norm or not),
  // optional q/k-norm, RoPE, the cache writes, attention, o-proj and a residual.
  void attention(int l) {
    ValueId x = recent();
    std::string s = "attention l" + std::to_string(l) + " H=" + std::to_string(H_) + " KV=" + std::to_string(KV_) +
                    " Dh=" + std::to_string(Dh_);
    ValueId h = x;
    if (chance(0.7)) h = b_.rms_norm(x, param({C(D_)}), 1e-6), s += " norm";
    ValueId q = b_.reshape(proj(h, H_ * Dh_), {T(), C(H_), C(Dh_)});
    ValueId k = b_.reshape(proj(h, KV_ * Dh_), {T(), C(KV_), C(Dh_)});
    ValueId v = chance(0.8) ? b_.reshape(proj(h, KV_ * Dh_), {T(), C(KV_), C(Dh_)})
                            : b_.reshape(b_.slice(tanh(x), 1, 0, KV_ * Dh_), {T(), C(KV_), C(Dh_)});
    if (chance(0.5)) {
      q = b_.rms_norm(q, param({C(Dh_)}), 1e-6);
      k = b_.rms_norm(k, param({C(Dh_)}), 1e-6);
      s += " qk-norm";
    }
    if (chance(0.8)) q = b_.rope(q, pos_, 10000.0), k = b_.rope(k, pos_, 10000.0), s += " rope";
    if (chance(0.2)) {  // a read of the cache as it was before this step's write
      ValueId old = b_.reshape(b_.slice(kc_, 0, l, l + 1), {C(KV_), C(S_), C(Dh_)});
      extra_.push_back(b_.reduce(Op::ReduceSum, old, 2, false));
      s += " old-read";
    }
    kc_ = b_.state_write(kc_, b_.permute(k, {1, 0, 2}), pos_, {l}, 1);
    vc_ = b_.state_write(vc_, b_.permute(v, {1, 0, 2}), pos_, {l}, 1);
    ValueId kl = b_.reshape(b_.slice(kc_, 0, l, l + 1), {C(KV_), C(S_), C(Dh_)});
    ValueId vl = b_.reshape(b_.slice(vc_, 0, l, l + 1), {C(KV_), C(S_), C(Dh_)});
    if (chance(0.2)) {  // a read-back of the written cache
      extra_.push_back(b_.reduce(Op::ReduceMax, vl, 2, true));
      s += " read-back";
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(Dh_));
    // Sliding windows and soft-capping from what is drawn already, not by new draws (the seeds keep
    // their programs): a window of 3 on the second layer (shorter than the steps' sequences of 7),
    // a cap of 0.5 (small enough to bend the scores it meets) where H + l is even.
    const int64_t window = l % 2 == 1 ? 3 : 0;
    const double softcap = (H_ + l) % 2 == 0 ? 0.5 : 0.0;
    if (window) s += " window=" + std::to_string(window);
    if (softcap > 0) s += " softcap";
    ValueId a = b_.attention(q, kl, vl, pos_, scale, static_cast<int32_t>(H_ / KV_), window, softcap);
    if (chance(0.2)) {  // the same attention twice (merged into one value)
      a = b_.binary(Op::Add, a, b_.attention(q, kl, vl, pos_, scale, static_cast<int32_t>(H_ / KV_), window, softcap));
      s += " twice";
    }
    ValueId o = b_.matmul(b_.reshape(a, {T(), C(D_)}), b_.transpose(param({C(D_), C(D_)})));
    pool_.push_back(b_.binary(Op::Add, x, o));
    note(s);
  }

  void extra_output() {
    if (!extra_.empty() && chance(0.5)) {
      b_.output(extra_[static_cast<size_t>(pick(static_cast<int>(extra_.size())))]);
      note("output: an extra value");
    } else if (chance(0.3)) {
      auto [a, bb] = pick_of(splits(false));
      b_.output(b_.reshape(any(), {T(), C(a), C(bb)}));  // a view as an output
      note("output: a view");
    } else if (chance(0.2)) {  // the same view twice, and the same map of a pool value as one
      ValueId v = any();
      auto [a, bb] = pick_of(splits(false));
      b_.output(b_.reshape(v, {T(), C(a), C(bb)}));
      b_.output(b_.reshape(v, {T(), C(a), C(bb)}));
      b_.output(tanh(v));
      note("output: duplicated views and a map");
    } else {
      b_.output(any());
      note("output: a pool value");
    }
  }
};

}  // namespace detail

/// The random program of `seed` (deterministic: the same seed gives the same graph everywhere).
/// `more_steps` adds that many generator steps (a longer program; the first draws are the same).
inline RandomProgram random_program(uint32_t seed, int more_steps = 0) { return detail::Gen(seed, more_steps).build(); }

}  // namespace lg::lift::test
