// The hand-written lane's batched decode path (docs/handwritten_lane.md, "Batched decode"):
// several sequences with one decode token each, one CUDA graph per (batch bucket, split count).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>

#include "lanes/qwen/handwritten_state.h"
#include "lanes/qwen/launch_pdl.h"
#include "lanes/launch_skip.h"
#include "runtime/cuda/launch_profile.h"

namespace lg::qwen {

namespace {

/// The batch-size bucket a decode step of B sequences is padded to: the next power of two, at
/// most max_batch (vLLM's CUDA-graph batch sizes, coarser: each bucket is one graph per split count).
int decode_bucket(int B, int max_batch) {
  int b = 2;
  while (b < B) b *= 2;
  return std::min(b, max_batch);
}

/// Whether a batched decode graph of Bp sequences takes the row GEMVs (enqueue_layer_rows): Bp
/// within gemv_rows_batch_limit (the card's default or the knob's) and every projection's shape
/// one launch_gemv_rows takes.
bool use_gemv_rows(const Dims& d, int Bp) {
  return Bp <= gemv_rows_batch_limit() && gemv_rows_supports(d.nqkv, d.D) &&
         gemv_rows_supports(d.D, d.nq) && gemv_rows_supports(2 * d.F, d.D) && gemv_rows_supports(d.D, d.F);
}

/// Knob LG_QWEN_ROWS_HEAD=1 (lab, default 0): on the row GEMVs' path the LM head is one too (a
/// vocabulary a multiple of 16), not a cuBLASLt GEMM; it then starts by PDL, its weights before
/// the final norm ends.
bool rows_head(int V, int D) {
  static const bool on = lab_knob("LG_QWEN_ROWS_HEAD", 0) == 1;
  return on && gemv_rows_supports(V, D);
}

/// LG_QWEN_SKIP=REGEX (measurements): the launches of the cuBLASLt path whose label (mark's:
/// "rmsnorm", the final one too, "gemm qkv", "attention", "gemm o", "gemm gate/up", "swiglu",
/// "gemm down") matches are left out of the graph. Its results are then wrong; its time bounds
/// what fusing those launches away could save (the compiled lane's LG_COMPILED_SKIP).
bool skipped(const char* what) {
  static const std::optional<std::regex> re = launch_skip_from_env("LG_QWEN_SKIP", "batched decode graphs");
  return re && std::regex_search(what, *re);
}

}  // namespace

// Two or more sequences with one decode token each: a CUDA graph per (bucket, attention plan), the batch
// padded to its bucket with rows of token 0 at position 0 in the pool's extra block (their results
// are dropped).
void HandwrittenQwenLane::run_decode_batch(const FlatBatch& f, std::span<const SeqStep> batch) {
  State& s = *st_;
  cudaStream_t cs = s.stream.get();
  const Dims d = dims_of(shape_, limits_);
  const int Bp = decode_bucket(static_cast<int>(f.B), static_cast<int>(limits_.max_batch));
  const int max_len = stage_decode_batch(f, batch, Bp);
  // Splits from the longest sequence rounded up to a power of two: a few graphs per bucket.
  int len_bucket = 1;
  while (len_bucket < max_len) len_bucket *= 2;
  const BatchAttnPlan attn = decode_attention_batch_plan(d.H, d.KV, d.Dh, Bp, len_bucket, max_len);
  cuda::GraphExec& graph = s.batch_graphs[{Bp, attn}];
  // On the row GEMVs the QKV projection accumulates into qkv (split-K): zeroed here, outside the
  // graph (ahead of it in the stream), for layer 0, and by each layer's o_proj for the next (after
  // its PDL wait the attention that read qkv is done).
  auto zero_qkv_for_rows = [&] {
    if (use_gemv_rows(d, Bp))
      LG_CUDA_CHECK(cudaMemsetAsync(s.qkv.data(), 0, static_cast<size_t>(Bp) * d.nqkv * sizeof(float), cs));
  };
  if (!graph.ready()) {
    // LG_PROFILE_LAUNCHES=1: the step runs eagerly once more with events between its launches
    // (the graph replay then computes it again: same inputs, same K/V rows, same argmaxes).
    if (std::getenv("LG_PROFILE_LAUNCHES")) {
      zero_qkv_for_rows();
      cuda::LaunchProfile p(cs);
      enqueue_decode_batch(Bp, attn, [&](const char* what) { p.mark(what); });
      std::fputs(p.report("hand-written batched decode, bucket " + std::to_string(Bp) + ", " +
                          std::to_string(attn.splits) + " splits").c_str(), stderr);
    }
    capture(graph, cs, [&] { enqueue_decode_batch(Bp, attn, [](const char*) {}); });
  }
  zero_qkv_for_rows();
  graph.launch(cs);
}

// The step's tokens, positions and the used width of its block tables, copied into the graphs'
// fixed buffers (rows B..Bp-1: token 0 at position 0, tables of the extra block).
int HandwrittenQwenLane::stage_decode_batch(const FlatBatch& f, std::span<const SeqStep> batch, int Bp) {
  State& s = *st_;
  cudaStream_t cs = s.stream.get();
  const int B = static_cast<int>(f.B);
  const int64_t bs = limits_.block_size, MB = limits_.blocks_per_seq();
  int max_len = 1;
  for (int b = 0; b < B; ++b) max_len = std::max(max_len, f.pos[static_cast<size_t>(b)] + 1);
  const int W = static_cast<int>((max_len + bs - 1) / bs);  // block-table entries any sequence needs
  int* h = s.h_dec.p;  // the previous step's copies finished at its synchronize
  int* table = s.h_dec_table.p;
  for (int b = 0; b < Bp; ++b) {
    const bool real = b < B;
    h[b] = real ? f.tokens[static_cast<size_t>(b)] : 0;
    h[Bp + b] = real ? f.pos[static_cast<size_t>(b)] : 0;
    int* row = table + static_cast<size_t>(b) * W;
    std::fill(row, row + W, s.trash_block);
    if (real) {
      const SeqStep& q = batch[static_cast<size_t>(b)];
      const auto n = std::min<int64_t>(W, static_cast<int64_t>(q.blocks.size()));
      std::copy(q.blocks.begin(), q.blocks.begin() + n, row);
    }
  }
  LG_CUDA_CHECK(cudaMemcpyAsync(s.d_dec.data(), h, static_cast<size_t>(2 * Bp) * sizeof(int), cudaMemcpyHostToDevice, cs));
  LG_CUDA_CHECK(cudaMemcpy2DAsync(s.d_dec_table.data(), static_cast<size_t>(MB) * sizeof(int), table,
                                  static_cast<size_t>(W) * sizeof(int), static_cast<size_t>(W) * sizeof(int),
                                  static_cast<size_t>(Bp), cudaMemcpyHostToDevice, cs));
  return max_len;
}

// The launches of one batched decode step (captured into its graph, or run eagerly under
// LG_PROFILE_LAUNCHES): embed, the layers on the row GEMVs or cuBLASLt, final norm, LM head, argmax.
void HandwrittenQwenLane::enqueue_decode_batch(int Bp, const BatchAttnPlan& attn,
                                               const std::function<void(const char*)>& mark) {
  State& s = *st_;
  cudaStream_t cs = s.stream.get();
  using bf16_t = __nv_bfloat16;
  const Dims d = dims_of(shape_, limits_);
  const int table_stride = static_cast<int>(limits_.blocks_per_seq());
  const int* d_tokens = s.d_dec.as<int>();
  const int* d_pos = d_tokens + Bp;
  // Small buckets take the tensor-core row GEMV (gemv_rows_batch_limit, kernels.h).
  const bool rows = use_gemv_rows(d, Bp);
  launch_embed(s.embed.as<bf16_t>(), d_tokens, Bp, d.D, s.x.as<float>(), cs);
  mark("embed");
  int x_slices = 0;  // the last down projection's slices, for the next RMSNorm to add into x
  for (size_t l = 0; l < s.layers.size(); ++l)
    x_slices = rows ? enqueue_layer_rows(l, Bp, table_stride, attn, d_pos, mark, x_slices)
                    : enqueue_layer_lt(l, Bp, table_stride, attn, d_pos, mark, x_slices);
  if (!skipped("rmsnorm")) {
    enqueue_rmsnorm(Bp, s.final_norm.as<float>(), rows ? s.rows_partials.as<float>() : s.dec_parts.as<float>(),
                    x_slices);
    mark("rmsnorm");
  }
  if (rows && rows_head(d.V, d.D)) {
    GemvRowsArgs head;
    head.W = s.head_w();
    head.N = d.V;
    head.K = d.D;
    head.T = Bp;
    head.x = s.h.as<bf16_t>();
    head.out_f32 = s.logits.as<float>();
    launch_gemv_rows(GemvRowsOutput::kStore, head, cs);
    mark("row gemv lm head");
  } else {
    s.gemm.matmul(s.h.as<bf16_t>(), s.head_w(), s.logits.as<float>(), Bp, d.V, d.D, false, cs);
    mark("gemm lm head");
  }
  launch_argmax_rows(s.logits.as<float>(), Bp, d.V, s.h_argmax.dev, cs);
  mark("argmax");
}

// One layer of a batched decode step on cuBLASLt: RMSNorm (adding the down slices of the layer
// before) -> QKV GEMM -> decode attention with RoPE and the K/V write -> o_proj -> RMSNorm ->
// gate/up GEMM -> SwiGLU -> down. o_proj and down add into the residual x: as a plain GEMM (beta =
// 1), or as split-K slices into dec_parts that the RMSNorm after each sums into x
// (decode_gemm_slices). Eight launches; LG_QWEN_SKIP leaves out those it names.
int HandwrittenQwenLane::enqueue_layer_lt(size_t l, int Bp, int table_stride, const BatchAttnPlan& attn,
                                          const int* d_pos, const std::function<void(const char*)>& mark,
                                          int x_slices) {
  State& s = *st_;
  cudaStream_t cs = s.stream.get();
  using bf16_t = __nv_bfloat16;
  const Dims d = dims_of(shape_, limits_);
  const State::Layer& ly = s.layers[l];
  // A projection's slices as the RMSNorm after it counts them: 0 when it added into x itself.
  auto project = [&](const bf16_t* in, const bf16_t* w, int K, int slices, const char* what) {
    if (!skipped(what)) {
      if (slices == 1)
        s.gemm.matmul(in, w, s.x.as<float>(), Bp, d.D, K, true, cs);
      else
        s.gemm.matmul_split(in, w, s.dec_parts.as<float>(), Bp, d.D, K, slices, cs);
      mark(what);
    }
    return slices == 1 ? 0 : slices;
  };
  auto norm = [&](const float* w, int nparts) {
    if (skipped("rmsnorm")) return;
    enqueue_rmsnorm(Bp, w, s.dec_parts.as<float>(), nparts);
    mark("rmsnorm");
  };
  norm(ly.ln1.as<float>(), x_slices);
  if (!skipped("gemm qkv"))
    s.gemm.matmul(s.h.as<bf16_t>(), ly.wqkv.as<bf16_t>(), s.qkv.as<float>(), Bp, d.nqkv, d.D, false, cs);
  mark("gemm qkv");
  const QkvRopeArgs rope = s.rope_args(d, l, s.d_dec_table.as<int>());
  if (!skipped("attention"))
    launch_attention_decode_rope_batch(s.qkv.as<float>(), rope, Bp, table_stride, attn, d.eps, d_pos,
                                       s.dec_scratch.as<float>(), s.dec_counters.as<int>(), s.attn.as<bf16_t>(), cs);
  mark("attention");
  const int o_parts = project(s.attn.as<bf16_t>(), ly.wo.as<bf16_t>(), d.nq, decode_gemm_slices(d.nq, Bp, false), "gemm o");
  norm(ly.ln2.as<float>(), o_parts);
  if (!skipped("gemm gate/up")) s.gate_up(d, l, Bp);
  mark("gemm gate/up");
  if (!skipped("swiglu")) s.swiglu(d, Bp);
  mark("swiglu");
  return project(s.act.as<bf16_t>(), ly.wd.as<bf16_t>(), d.F, decode_gemm_slices(d.F, Bp, true), "gemm down");
}

void HandwrittenQwenLane::enqueue_rmsnorm(int Bp, const float* w, const float* parts, int nparts) {
  State& s = *st_;
  const Dims d = dims_of(shape_, limits_);
  if (nparts == 0)
    launch_rmsnorm_rows(s.x.as<float>(), w, Bp, d.D, d.eps, s.h.as<__nv_bfloat16>(), s.stream.get(), true);
  else
    launch_rmsnorm_rows_add(s.x.as<float>(), parts, nparts, w, Bp, d.D, d.eps, s.h.as<__nv_bfloat16>(),
                            s.stream.get());
}

// One layer of a batched decode step of Bp <= gemv_rows_max_t sequences on the row GEMVs (kernels.h):
// RMSNorm rows (adding the down slices of the layer before into x) -> QKV (accumulated into the
// zeroed qkv, its splits summed by their last) -> decode attention -> o_proj into K-split slices
// (and zeroing qkv for the next layer) -> RMSNorm rows (adding them into x) -> gate/up with the
// SwiGLU epilogue -> down into slices. Six launches, all PDL, against the cuBLASLt path's eight.
// o_proj and down leave their slices to the RMSNorm after them because a launch that sums its own
// splits waits at its tail for the last one's round trips: the slices took 1-5% off the 8B step of
// 2-32 sequences against that (H100, bench/RESULTS.md, thirty-fifth session, call 1);
// LG_QWEN_ROWS_SLICES=0 (lab) has them add into x themselves.
int HandwrittenQwenLane::enqueue_layer_rows(size_t l, int Bp, int table_stride, const BatchAttnPlan& attn,
                                            const int* d_pos, const std::function<void(const char*)>& mark,
                                            int x_slices) {
  static const bool slices_on = lab_knob("LG_QWEN_ROWS_SLICES", 1) != 0;
  State& s = *st_;
  cudaStream_t cs = s.stream.get();
  using bf16_t = __nv_bfloat16;
  const Dims d = dims_of(shape_, limits_);
  const State::Layer& ly = s.layers[l];
  auto args = [&](const bf16_t* W, int N, int K, const bf16_t* x) {
    GemvRowsArgs a;
    a.W = W;
    a.N = N;
    a.K = K;
    a.T = Bp;
    a.x = x;
    a.partials = s.rows_partials.as<float>();
    a.partials_n = s.rows_partials.bytes() / sizeof(float);
    a.arrivals = s.rows_arrivals.as<int>();
    a.arrivals_n = s.rows_arrivals.bytes() / sizeof(int);
    return a;
  };
  auto norm = [&](const float* w, int nparts) {
    enqueue_rmsnorm(Bp, w, s.rows_partials.as<float>(), nparts);
    mark("rmsnorm");
  };
  // o_proj and down: K-split slices for the RMSNorm after them (their count), or into x (0).
  auto into_x = [&](GemvRowsArgs a) {
    if (!slices_on) {
      a.out_f32 = s.x.as<float>();
      launch_gemv_rows(GemvRowsOutput::kResidual, a, cs);
      return 0;
    }
    return launch_gemv_rows(GemvRowsOutput::kSlices, a, cs);
  };
  norm(ly.ln1.as<float>(), x_slices);
  GemvRowsArgs qkv = args(ly.wqkv.as<bf16_t>(), d.nqkv, d.D, s.h.as<bf16_t>());
  qkv.out_f32 = s.qkv.as<float>();
  launch_gemv_rows(GemvRowsOutput::kResidual, qkv, cs);
  mark("row gemv qkv");
  const QkvRopeArgs rope = s.rope_args(d, l, s.d_dec_table.as<int>());
  launch_attention_decode_rope_batch(s.qkv.as<float>(), rope, Bp, table_stride, attn, d.eps, d_pos,
                                     s.dec_scratch.as<float>(), s.dec_counters.as<int>(), s.attn.as<bf16_t>(), cs);
  mark("attention");
  GemvRowsArgs o = args(ly.wo.as<bf16_t>(), d.D, d.nq, s.attn.as<bf16_t>());
  o.clear = s.qkv.as<float>();
  o.clear_n = static_cast<size_t>(Bp) * d.nqkv;
  const int o_slices = into_x(o);
  mark("row gemv o");
  norm(ly.ln2.as<float>(), o_slices);
  GemvRowsArgs gu = args(ly.wgu.as<bf16_t>(), 2 * d.F, d.D, s.h.as<bf16_t>());
  gu.out_bf16 = s.act.as<bf16_t>();
  launch_gemv_rows(GemvRowsOutput::kSwiGLU, gu, cs);
  mark("row gemv gate/up+swiglu");
  const int down_slices = into_x(args(ly.wd.as<bf16_t>(), d.D, d.F, s.act.as<bf16_t>()));
  mark("row gemv down");
  return down_slices;
}

}  // namespace lg::qwen
