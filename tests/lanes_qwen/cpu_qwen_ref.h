// A plain CPU forward of a Qwen2/Qwen3 dense model (header-only, for tests): fp32 weights and
// double accumulation, with switches that round to bf16 exactly where the hand-written lane does
// (weights, GEMM/GEMV inputs, the KV cache). With every switch off it is the fp32 reference the
// fixtures were made with; with them on it predicts the lane's numerics, which tells a bf16 effect
// from a lane bug.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lanes/qwen/qwen_shape.h"
#include "model/model_dir.h"
#include "support/dtype.h"

namespace lg::qwen::test {

class CpuQwen {
 public:
  CpuQwen(const model::ModelDir& md, bool bf16) : s_(qwen_shape_from_config(md.config)), bf16_(bf16) {
    auto get = [&](const std::string& n, bool matrix) {
      auto v = md.checkpoint.to_f32(n);
      if (bf16_ && matrix)
        for (auto& x : v) x = bf16_to_f32(f32_to_bf16(x));
      return v;
    };
    embed_ = get("model.embed_tokens.weight", true);
    head_ = s_.tied ? embed_ : get("lm_head.weight", true);
    norm_ = get("model.norm.weight", false);
    for (int64_t l = 0; l < s_.layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      Layer ly;
      ly.wq = get(p + "self_attn.q_proj.weight", true);
      ly.wk = get(p + "self_attn.k_proj.weight", true);
      ly.wv = get(p + "self_attn.v_proj.weight", true);
      ly.wo = get(p + "self_attn.o_proj.weight", true);
      ly.wg = get(p + "mlp.gate_proj.weight", true);
      ly.wu = get(p + "mlp.up_proj.weight", true);
      ly.wd = get(p + "mlp.down_proj.weight", true);
      ly.ln1 = get(p + "input_layernorm.weight", false);
      ly.ln2 = get(p + "post_attention_layernorm.weight", false);
      if (s_.qkv_bias) {
        ly.bq = get(p + "self_attn.q_proj.bias", false);
        ly.bk = get(p + "self_attn.k_proj.bias", false);
        ly.bv = get(p + "self_attn.v_proj.bias", false);
      }
      if (s_.qk_norm) {
        ly.qn = get(p + "self_attn.q_norm.weight", false);
        ly.kn = get(p + "self_attn.k_norm.weight", false);
      }
      layers_.push_back(std::move(ly));
    }
    kc_.assign(layers_.size(), {});
    vc_.assign(layers_.size(), {});
    inv_freq_ = rope_inv_freq(s_.head_dim, s_.rope_theta);
  }

  /// Forward of `tokens` at positions start.., appending to the cache; returns the last logits.
  std::vector<double> step(const std::vector<int32_t>& tokens, int64_t start) {
    const int64_t D = s_.hidden, H = s_.heads, KV = s_.kv_heads, Dh = s_.head_dim, F = s_.intermediate;
    std::vector<double> x;
    for (size_t t = 0; t < tokens.size(); ++t) {
      x.assign(embed_.begin() + tokens[t] * D, embed_.begin() + (tokens[t] + 1) * D);
      const int64_t pos = start + static_cast<int64_t>(t);
      for (size_t l = 0; l < layers_.size(); ++l) {
        Layer& ly = layers_[l];
        auto h = rms(x, ly.ln1, true);
        auto q = matvec(ly.wq, h, H * Dh), k = matvec(ly.wk, h, KV * Dh), v = matvec(ly.wv, h, KV * Dh);
        if (s_.qkv_bias)
          for (int64_t i = 0; i < H * Dh; ++i) q[i] += ly.bq[i];
        if (s_.qkv_bias)
          for (int64_t i = 0; i < KV * Dh; ++i) k[i] += ly.bk[i], v[i] += ly.bv[i];
        for (int64_t hd = 0; hd < H + KV; ++hd) {
          double* e = hd < H ? &q[hd * Dh] : &k[(hd - H) * Dh];
          if (s_.qk_norm) {
            std::vector<double> seg(e, e + Dh);
            auto nrm = rms(seg, hd < H ? ly.qn : ly.kn, false);
            std::copy(nrm.begin(), nrm.end(), e);
          }
          rope(e, pos);
        }
        auto& kc = kc_[l];
        auto& vc = vc_[l];
        kc.resize(static_cast<size_t>((pos + 1) * KV * Dh));
        vc.resize(static_cast<size_t>((pos + 1) * KV * Dh));
        for (int64_t i = 0; i < KV * Dh; ++i) {
          kc[pos * KV * Dh + i] = r16(k[i]);
          vc[pos * KV * Dh + i] = r16(v[i]);
        }
        std::vector<double> att(H * Dh);
        for (int64_t hh = 0; hh < H; ++hh) {
          const int64_t g = hh / (H / KV);
          std::vector<double> sc(pos + 1);
          double m = -INFINITY;
          for (int64_t j = 0; j <= pos; ++j) {
            double a = 0;
            for (int64_t d = 0; d < Dh; ++d) a += q[hh * Dh + d] * kc[(j * KV + g) * Dh + d];
            sc[j] = a / std::sqrt(double(Dh));
            m = std::max(m, sc[j]);
          }
          double z = 0;
          for (auto& e : sc) z += (e = std::exp(e - m));
          for (int64_t d = 0; d < Dh; ++d) {
            double o = 0;
            for (int64_t j = 0; j <= pos; ++j) o += sc[j] * vc[(j * KV + g) * Dh + d];
            att[hh * Dh + d] = o / z;
          }
        }
        for (auto& e : att) e = r16(e);
        auto o = matvec(ly.wo, att, D);
        for (int64_t i = 0; i < D; ++i) x[i] += o[i];
        h = rms(x, ly.ln2, true);
        auto gt = matvec(ly.wg, h, F), up = matvec(ly.wu, h, F);
        std::vector<double> act(F);
        for (int64_t i = 0; i < F; ++i) act[i] = r16(gt[i] / (1 + std::exp(-gt[i])) * up[i]);
        auto dn = matvec(ly.wd, act, D);
        for (int64_t i = 0; i < D; ++i) x[i] += dn[i];
      }
    }
    return matvec(head_, rms(x, norm_, true), s_.vocab);
  }

 private:
  struct Layer {
    std::vector<float> wq, wk, wv, wo, wg, wu, wd, ln1, ln2, bq, bk, bv, qn, kn;
  };
  double r16(double v) const { return bf16_ ? bf16_to_f32(f32_to_bf16(static_cast<float>(v))) : v; }
  std::vector<double> rms(const std::vector<double>& x, const std::vector<float>& w, bool round) const {
    double ss = 0;
    for (double e : x) ss += e * e;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + s_.eps);
    std::vector<double> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) h[i] = round ? r16(x[i] * inv * w[i]) : x[i] * inv * w[i];
    return h;
  }
  static std::vector<double> matvec(const std::vector<float>& W, const std::vector<double>& x, int64_t n) {
    std::vector<double> y(n);
    const size_t K = x.size();
    for (int64_t r = 0; r < n; ++r) {
      double a = 0;
      for (size_t k = 0; k < K; ++k) a += double(W[r * K + k]) * x[k];
      y[r] = a;
    }
    return y;
  }
  void rope(double* e, int64_t pos) const {
    const int64_t half = s_.head_dim / 2;
    for (int64_t i = 0; i < half; ++i) {
      const double ang = double(float(pos) * inv_freq_[i]);
      const double c = std::cos(ang), sn = std::sin(ang), a = e[i], b = e[i + half];
      e[i] = a * c - b * sn;
      e[i + half] = b * c + a * sn;
    }
  }
  QwenShape s_;
  bool bf16_;
  std::vector<float> embed_, head_, norm_, inv_freq_;
  std::vector<Layer> layers_;
  std::vector<std::vector<double>> kc_, vc_;
};

}  // namespace lg::qwen::test
