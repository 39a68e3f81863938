#include "lanes/qwen/handwritten_lane.h"

#include <algorithm>
#include <string>

#include "lanes/qwen/kernels.h"
#include "lanes/qwen/prefill_attention.h"
#include "lanes/qwen/weight_source.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/gemm_lt.h"

namespace lg::qwen {

namespace {

/// Prefill runs in chunks of at most this many tokens (bounds the activation buffers).
constexpr int64_t kMaxPrefillChunk = 2048;

/// Pinned host ints, mapped into the device's address space: the decode graph reads the token
/// and position from them and the LM head writes the argmax into one, so a decode step makes no
/// copy (kernels.h: launch_embed_decode). `dev` is the device's pointer to the same ints.
struct PinnedInts {
  int* p = nullptr;
  int* dev = nullptr;
  explicit PinnedInts(size_t n) {
    LG_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&p), n * sizeof(int), cudaHostAllocMapped));
    LG_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), p, 0));
  }
  ~PinnedInts() {
    if (p) cudaFreeHost(p);
  }
  PinnedInts(const PinnedInts&) = delete;
  PinnedInts& operator=(const PinnedInts&) = delete;
};

}  // namespace

struct HandwrittenQwenLane::State {
  struct Layer {
    cuda::DeviceBuffer wqkv, wo, wgu, wd;       // bf16
    cuda::DeviceBuffer ln1, ln2, qn, kn, bqkv;  // f32
  };
  cuda::Stream stream;
  cuda::LtGemm gemm;
  std::vector<Layer> layers;
  cuda::DeviceBuffer embed, head, final_norm, inv_freq;
  cuda::DeviceBuffer kcache, vcache;
  cuda::DeviceBuffer x, h, qkv, q, attn, gu, act, logits, attn_scratch;
  // Zero-filled once; the kernels that count in them (the decode attention's per-head split
  // counters, the LM head GEMV's argmax hand-off) leave them at zero after every launch.
  cuda::DeviceBuffer attn_counters, gemv_sync;
  cuda::DeviceBuffer d_tokens, d_pos;
  PinnedInts h_tokens{static_cast<size_t>(kMaxPrefillChunk)};
  PinnedInts h_pos{1};
  PinnedInts h_argmax{1};
  cuda::GraphExec decode_graph;
  int64_t chunk = 0;

  const __nv_bfloat16* head_w() const { return head.data() ? head.as<__nv_bfloat16>() : embed.as<__nv_bfloat16>(); }
};

HandwrittenQwenLane::~HandwrittenQwenLane() = default;

Provenance HandwrittenQwenLane::provenance() const { return HandWritten{shape_.family, "prefill+decode"}; }

HandwrittenQwenLane::HandwrittenQwenLane(const QwenShape& shape, WeightSource& weights, int64_t max_seq)
    : OneSequenceLane(max_seq), shape_(shape), max_seq_(max_seq) {
  check_supported(shape_, weights.describe());
  if (max_seq < 1 || max_seq > (int64_t{1} << 20))
    throw Error("hand-written lane: max_seq " + std::to_string(max_seq) + " out of range 1..1048576");
  if (!cuda::cuda_device_available()) throw Error("hand-written lane: no CUDA device (the lane needs a GPU)");
  st_ = std::make_unique<State>();
  State& s = *st_;
  cudaStream_t cs = s.stream.get();
  const int64_t V = shape_.vocab, D = shape_.hidden, F = shape_.intermediate, H = shape_.heads,
                KV = shape_.kv_heads, Dh = shape_.head_dim, L = shape_.layers;
  const int64_t nq = H * Dh, nkv = KV * Dh, nqkv = nq + 2 * nkv;
  using bf16_t = __nv_bfloat16;
  auto bf16_buf = [](int64_t n) { return cuda::DeviceBuffer(static_cast<size_t>(n) * 2); };
  auto f32_buf = [](int64_t n) { return cuda::DeviceBuffer(static_cast<size_t>(n) * 4); };

  s.embed = bf16_buf(V * D);
  weights.load_bf16("model.embed_tokens.weight", {V, D}, s.embed.as<bf16_t>(), cs);
  if (!shape_.tied) {
    s.head = bf16_buf(V * D);
    weights.load_bf16("lm_head.weight", {V, D}, s.head.as<bf16_t>(), cs);
  }
  s.final_norm = f32_buf(D);
  weights.load_f32("model.norm.weight", {D}, s.final_norm.as<float>(), cs);
  const std::vector<float> inv = rope_inv_freq(Dh, shape_.rope_theta);
  s.inv_freq = f32_buf(Dh / 2);
  s.inv_freq.upload(inv.data(), inv.size() * sizeof(float));

  cuda::DeviceBuffer tmp_gate = bf16_buf(F * D), tmp_up = bf16_buf(F * D);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    State::Layer ly;
    ly.wqkv = bf16_buf(nqkv * D);
    bf16_t* wqkv = ly.wqkv.as<bf16_t>();
    weights.load_bf16(p + "self_attn.q_proj.weight", {nq, D}, wqkv, cs);
    weights.load_bf16(p + "self_attn.k_proj.weight", {nkv, D}, wqkv + nq * D, cs);
    weights.load_bf16(p + "self_attn.v_proj.weight", {nkv, D}, wqkv + (nq + nkv) * D, cs);
    if (shape_.qkv_bias) {
      ly.bqkv = f32_buf(nqkv);
      float* b = ly.bqkv.as<float>();
      weights.load_f32(p + "self_attn.q_proj.bias", {nq}, b, cs);
      weights.load_f32(p + "self_attn.k_proj.bias", {nkv}, b + nq, cs);
      weights.load_f32(p + "self_attn.v_proj.bias", {nkv}, b + nq + nkv, cs);
    }
    if (shape_.qk_norm) {
      ly.qn = f32_buf(Dh);
      ly.kn = f32_buf(Dh);
      weights.load_f32(p + "self_attn.q_norm.weight", {Dh}, ly.qn.as<float>(), cs);
      weights.load_f32(p + "self_attn.k_norm.weight", {Dh}, ly.kn.as<float>(), cs);
    }
    ly.wo = bf16_buf(D * nq);
    weights.load_bf16(p + "self_attn.o_proj.weight", {D, nq}, ly.wo.as<bf16_t>(), cs);
    ly.wgu = bf16_buf(2 * F * D);
    weights.load_bf16(p + "mlp.gate_proj.weight", {F, D}, tmp_gate.as<bf16_t>(), cs);
    weights.load_bf16(p + "mlp.up_proj.weight", {F, D}, tmp_up.as<bf16_t>(), cs);
    launch_interleave_rows(tmp_gate.as<bf16_t>(), tmp_up.as<bf16_t>(), static_cast<size_t>(F),
                           static_cast<size_t>(D), ly.wgu.as<bf16_t>(), cs);
    ly.wd = bf16_buf(D * F);
    weights.load_bf16(p + "mlp.down_proj.weight", {D, F}, ly.wd.as<bf16_t>(), cs);
    ly.ln1 = f32_buf(D);
    ly.ln2 = f32_buf(D);
    weights.load_f32(p + "input_layernorm.weight", {D}, ly.ln1.as<float>(), cs);
    weights.load_f32(p + "post_attention_layernorm.weight", {D}, ly.ln2.as<float>(), cs);
    s.layers.push_back(std::move(ly));
    // The interleave reads the temporaries: finish before the next layer overwrites them.
    s.stream.synchronize();
  }

  s.kcache = bf16_buf(L * KV * max_seq * Dh);
  s.vcache = bf16_buf(L * KV * max_seq * Dh);
  s.chunk = std::min(max_seq, kMaxPrefillChunk);
  const int64_t C = s.chunk;
  s.x = f32_buf(C * D);
  s.h = bf16_buf(C * D);
  s.qkv = f32_buf(C * nqkv);
  s.q = f32_buf(C * nq);
  s.attn = bf16_buf(C * nq);
  s.gu = f32_buf(C * 2 * F);
  s.act = bf16_buf(C * F);
  s.logits = f32_buf(V);
  s.attn_scratch = f32_buf(static_cast<int64_t>(decode_attention_scratch_floats(static_cast<int>(H), static_cast<int>(Dh))));
  s.attn_counters = cuda::DeviceBuffer(static_cast<size_t>(H) * sizeof(int));
  s.gemv_sync = cuda::DeviceBuffer(static_cast<size_t>(kGemvSyncInts) * sizeof(int));
  LG_CUDA_CHECK(cudaMemsetAsync(s.attn_counters.data(), 0, s.attn_counters.bytes(), cs));
  LG_CUDA_CHECK(cudaMemsetAsync(s.gemv_sync.data(), 0, s.gemv_sync.bytes(), cs));
  s.d_tokens = cuda::DeviceBuffer(static_cast<size_t>(C) * sizeof(int));
  s.d_pos = cuda::DeviceBuffer(sizeof(int));
  s.stream.synchronize();
}

namespace {

/// The layer-independent arguments of every launch, in ints as the kernels take them.
struct Dims {
  int V, D, F, H, KV, Dh, S, nq, nqkv;
  float eps;
};

}  // namespace

SeqResult HandwrittenQwenLane::step_one(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) {
  if (tokens.empty()) throw Error("hand-written lane: step with no tokens");
  if (start_pos < 0 || start_pos + static_cast<int64_t>(tokens.size()) > max_seq_)
    throw Error("hand-written lane: positions " + std::to_string(start_pos) + ".." +
                std::to_string(start_pos + static_cast<int64_t>(tokens.size()) - 1) + " exceed max_seq " +
                std::to_string(max_seq_));
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= shape_.vocab)
      throw Error("hand-written lane: token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                  " is outside the vocabulary of " + std::to_string(shape_.vocab));
  State& s = *st_;
  cudaStream_t cs = s.stream.get();
  using bf16_t = __nv_bfloat16;
  const Dims d{static_cast<int>(shape_.vocab), static_cast<int>(shape_.hidden), static_cast<int>(shape_.intermediate),
               static_cast<int>(shape_.heads), static_cast<int>(shape_.kv_heads), static_cast<int>(shape_.head_dim),
               static_cast<int>(max_seq_), static_cast<int>(shape_.heads * shape_.head_dim),
               static_cast<int>((shape_.heads + 2 * shape_.kv_heads) * shape_.head_dim), static_cast<float>(shape_.eps)};
  const size_t cache_layer = static_cast<size_t>(d.KV) * d.S * d.Dh;
  const int* pos = s.d_pos.as<int>();
  auto kc = [&](size_t l) { return s.kcache.as<bf16_t>() + l * cache_layer; };
  auto vc = [&](size_t l) { return s.vcache.as<bf16_t>() + l * cache_layer; };

  // Final RMSNorm + LM head on one row of the residual stream, with the device argmax fused.
  auto enqueue_head = [&](const float* x_row) {
    GemvArgs a;
    a.W = s.head_w();
    a.N = d.V;
    a.K = d.D;
    a.x_f32 = x_row;
    a.norm_w = s.final_norm.as<float>();
    a.eps = d.eps;
    a.out_f32 = s.logits.as<float>();
    a.argmax_out = s.h_argmax.dev;
    a.sync = s.gemv_sync.as<int>();
    launch_gemv(GemvInput::kRmsNorm, GemvOutput::kStoreArgmax, a, cs);
  };

  auto enqueue_decode = [&]() {
    launch_embed_decode(s.embed.as<bf16_t>(), s.h_tokens.dev, s.h_pos.dev, s.d_pos.as<int>(), d.D, s.x.as<float>(), cs);
    for (size_t l = 0; l < s.layers.size(); ++l) {
      const State::Layer& ly = s.layers[l];
      GemvArgs a;
      a.W = ly.wqkv.as<bf16_t>();
      a.N = d.nqkv;
      a.K = d.D;
      a.x_f32 = s.x.as<float>();
      a.norm_w = ly.ln1.as<float>();
      a.eps = d.eps;
      a.out_f32 = s.qkv.as<float>();
      launch_gemv(GemvInput::kRmsNorm, GemvOutput::kStore, a, cs);
      QkvRopeArgs rope;
      rope.bias = ly.bqkv.as<float>();
      rope.q_norm = ly.qn.as<float>();
      rope.k_norm = ly.kn.as<float>();
      rope.inv_freq = s.inv_freq.as<float>();
      rope.pos0 = pos;
      rope.H = d.H;
      rope.KV = d.KV;
      rope.Dh = d.Dh;
      rope.S = d.S;
      rope.q_out = s.q.as<float>();
      rope.k_cache = kc(l);
      rope.v_cache = vc(l);
      launch_attention_decode_rope(s.qkv.as<float>(), rope, d.eps, pos, s.attn_scratch.as<float>(),
                                   s.attn_counters.as<int>(), s.attn.as<bf16_t>(), cs);
      GemvArgs o;
      o.W = ly.wo.as<bf16_t>();
      o.N = d.D;
      o.K = d.nq;
      o.in_bf16 = s.attn.as<bf16_t>();
      o.out_f32 = s.x.as<float>();
      launch_gemv(GemvInput::kBf16, GemvOutput::kResidual, o, cs);
      GemvArgs g;
      g.W = ly.wgu.as<bf16_t>();
      g.N = 2 * d.F;
      g.K = d.D;
      g.x_f32 = s.x.as<float>();
      g.norm_w = ly.ln2.as<float>();
      g.eps = d.eps;
      g.out_bf16 = s.act.as<bf16_t>();
      launch_gemv(GemvInput::kRmsNorm, GemvOutput::kSwiGLU, g, cs);
      GemvArgs dn;
      dn.W = ly.wd.as<bf16_t>();
      dn.N = d.D;
      dn.K = d.F;
      dn.in_bf16 = s.act.as<bf16_t>();
      dn.out_f32 = s.x.as<float>();
      launch_gemv(GemvInput::kBf16, GemvOutput::kResidual, dn, cs);
    }
    enqueue_head(s.x.as<float>());
  };

  auto enqueue_prefill = [&](int T) {
    launch_embed(s.embed.as<bf16_t>(), s.d_tokens.as<int>(), T, d.D, s.x.as<float>(), cs);
    for (size_t l = 0; l < s.layers.size(); ++l) {
      const State::Layer& ly = s.layers[l];
      launch_rmsnorm_rows(s.x.as<float>(), ly.ln1.as<float>(), T, d.D, d.eps, s.h.as<bf16_t>(), cs);
      s.gemm.matmul(s.h.as<bf16_t>(), ly.wqkv.as<bf16_t>(), s.qkv.as<float>(), T, d.nqkv, d.D, false, cs);
      launch_rope_kv(s.qkv.as<float>(), ly.bqkv.as<float>(), ly.qn.as<float>(), ly.kn.as<float>(),
                     s.inv_freq.as<float>(), pos, d.eps, T, d.H, d.KV, d.Dh, d.S, s.q.as<float>(), kc(l), vc(l), cs);
      launch_attention_prefill_tc(s.q.as<float>(), kc(l), vc(l), pos, T, d.H, d.KV, d.Dh, d.S, s.attn.as<bf16_t>(), cs);
      s.gemm.matmul(s.attn.as<bf16_t>(), ly.wo.as<bf16_t>(), s.x.as<float>(), T, d.D, d.nq, true, cs);
      launch_rmsnorm_rows(s.x.as<float>(), ly.ln2.as<float>(), T, d.D, d.eps, s.h.as<bf16_t>(), cs);
      s.gemm.matmul(s.h.as<bf16_t>(), ly.wgu.as<bf16_t>(), s.gu.as<float>(), T, 2 * d.F, d.D, false, cs);
      launch_swiglu(s.gu.as<float>(), static_cast<size_t>(T) * d.F, s.act.as<bf16_t>(), cs);
      s.gemm.matmul(s.act.as<bf16_t>(), ly.wd.as<bf16_t>(), s.x.as<float>(), T, d.D, d.F, true, cs);
    }
    enqueue_head(s.x.as<float>() + static_cast<size_t>(T - 1) * d.D);
  };

  const int64_t n = static_cast<int64_t>(tokens.size());
  for (int64_t off = 0; off < n; off += s.chunk) {
    const int T = static_cast<int>(std::min(s.chunk, n - off));
    // The pinned staging is reused: the previous chunk's copies finished at its synchronize.
    std::copy(tokens.begin() + off, tokens.begin() + off + T, s.h_tokens.p);
    *s.h_pos.p = static_cast<int>(start_pos + off);
    // The decode step reads both from mapped host memory itself (launch_embed_decode).
    if (T > 1) {
      LG_CUDA_CHECK(cudaMemcpyAsync(s.d_tokens.data(), s.h_tokens.p, T * sizeof(int), cudaMemcpyHostToDevice, cs));
      LG_CUDA_CHECK(cudaMemcpyAsync(s.d_pos.data(), s.h_pos.p, sizeof(int), cudaMemcpyHostToDevice, cs));
    }
    if (T == 1) {
      if (!s.decode_graph.ready()) {
        s.decode_graph.begin_capture(cs);
        try {
          enqueue_decode();
        } catch (...) {
          cudaGraph_t g = nullptr;
          cudaStreamEndCapture(cs, &g);
          if (g) cudaGraphDestroy(g);
          throw;
        }
        s.decode_graph.end_capture(cs);
      }
      s.decode_graph.launch(cs);
    } else {
      enqueue_prefill(T);
    }
    // The LM head wrote the argmax straight into mapped host memory, visible once the stream is done.
    s.stream.synchronize();
  }
  SeqResult r;
  r.argmax = *static_cast<volatile int*>(s.h_argmax.p);
  if (want_logits) {
    r.logits.resize(static_cast<size_t>(shape_.vocab));
    s.logits.download(r.logits.data(), r.logits.size() * sizeof(float));
  }
  return r;
}

}  // namespace lg::qwen
