#include "lanes/qwen/handwritten_lane.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "lanes/qwen/handwritten_state.h"
#include "lanes/qwen/prefill_attention.h"
#include "lanes/qwen/weight_source.h"

namespace lg::qwen {

namespace {

/// Share of the device memory still free (after weights and step buffers) that the default KV
/// pool takes: vLLM's gpu_memory_utilization default, applied to what is free. The rest is left
/// for cuBLASLt, the decode graph and whatever else the process allocates later.
constexpr double kPoolShareOfFree = 0.9;

int64_t gib_tenths(size_t bytes) { return static_cast<int64_t>(static_cast<double>(bytes) / (1 << 30) * 10 + 0.5); }
std::string gib(size_t bytes) {
  const int64_t t = gib_tenths(bytes);
  return std::to_string(t / 10) + "." + std::to_string(t % 10) + " GiB";
}

/// The rows path's step on the device: where run_rows' one upload put each list.
struct RowsStep {
  const int* tokens;    ///< [T]
  const int* pos;       ///< [T]
  const int* seq;       ///< [T]: each token's row of `table`
  const int* slot;      ///< [T]: each token's pool row
  const int* rows;      ///< [B]: each sequence's last token
  const int* table;     ///< [B, W]: block tables, the decode sequences' rows first, unused entries -1
  const int* dec_rows;  ///< [ndec]: decode entry i's token (table row i)
  const int* dec_pos;   ///< [ndec]: its position
  const int* prompt;    ///< [nprompt]: the tokens left to the ragged kernel
  /// A sequence of kFlashMinTokens or more tokens in the step (a prompt chunk): its rows
  /// t0 .. t0 + n - 1 and table row r go to the tensor-core flash kernel, one launch per layer.
  struct FlashRun {
    int t0, n, r;
  };
  std::vector<FlashRun> flash;
  int W = 1, ndec = 0, nprompt = 0;
  int dec_max_len = 1;  ///< the decode entries' longest context (positions)
};

/// Prompt chunks at least this long take the flash kernel in a step of several sequences, shorter
/// ones the ragged kernel (one warp per token and head). A guess, not a measured crossover: the
/// flash kernel's query tile is 64 rows and costs a launch per layer and chunk; the serving run
/// of bench/RESULTS.md ("Sixth session") measured the split with this value only.
constexpr int kFlashMinTokens = 16;

/// Packs the step's lists into pinned staging h and copies them to d (device ints) in one copy on
/// cs (both sized by allocate_step_buffers). With split_decode, a sequence whose step is one token
/// is a decode entry (its table row first, in batch order), else there are none. Block tables
/// get the step's own row stride W (the longest table it needs), not the context's: a batch of
/// short sequences uploads a few ints per sequence.
RowsStep upload_rows_step(const FlatBatch& f, std::span<const SeqStep> batch, int64_t bs, bool split_decode, int* h,
                          int* d, cudaStream_t cs) {
  const int T = static_cast<int>(f.T), B = static_cast<int>(f.B);
  RowsStep u;
  int64_t W = 1;
  for (const SeqStep& q : batch)
    W = std::max<int64_t>(W, (q.start_pos + static_cast<int64_t>(q.tokens.size()) + bs - 1) / bs);
  u.W = static_cast<int>(W);
  auto is_decode = [&](int b) { return split_decode && batch[static_cast<size_t>(b)].tokens.size() == 1; };
  std::vector<int> trow(static_cast<size_t>(B));  // sequence b's table row
  for (int b = 0; b < B; ++b)
    if (is_decode(b)) trow[static_cast<size_t>(b)] = u.ndec++;
  std::vector<char> flash_seq(static_cast<size_t>(B), 0);
  for (int b = 0, r = u.ndec; b < B; ++b)
    if (!is_decode(b)) {
      trow[static_cast<size_t>(b)] = r;
      const int n = static_cast<int>(batch[static_cast<size_t>(b)].tokens.size());
      if (split_decode && n >= kFlashMinTokens) {
        u.flash.push_back({f.rows[static_cast<size_t>(b)] - n + 1, n, r});
        flash_seq[static_cast<size_t>(b)] = 1;
      }
      ++r;
    }
  const int ndec = u.ndec;
  int* tokens = h;
  int* pos = h + T;
  int* seq = h + 2 * T;
  int* slot = h + 3 * T;
  int* rows = h + 4 * T;
  int* table = rows + B;
  int* dec_rows = table + B * W;
  int* dec_pos = dec_rows + ndec;
  int* prompt = dec_pos + ndec;
  std::copy(f.tokens.begin(), f.tokens.end(), tokens);
  std::copy(f.pos.begin(), f.pos.end(), pos);
  std::copy(f.rows.begin(), f.rows.end(), rows);
  std::fill(table, table + B * W, -1);
  for (int b = 0; b < B; ++b) {
    const SeqStep& q = batch[static_cast<size_t>(b)];
    const int r = trow[static_cast<size_t>(b)];
    const auto n = std::min<int64_t>(W, static_cast<int64_t>(q.blocks.size()));
    std::copy(q.blocks.begin(), q.blocks.begin() + n, table + r * W);
    if (r < ndec) {
      dec_rows[r] = f.rows[static_cast<size_t>(b)];  // its one token is its last
      dec_pos[r] = static_cast<int>(q.start_pos);
      u.dec_max_len = std::max(u.dec_max_len, dec_pos[r] + 1);
    }
  }
  for (int t = 0; t < T; ++t) {
    const auto b = static_cast<size_t>(f.seq[static_cast<size_t>(t)]);
    const int r = trow[b];
    seq[t] = r;
    const int64_t p = pos[t];
    slot[t] = static_cast<int>(table[r * W + p / bs] * bs + p % bs);
    if (r >= ndec && !flash_seq[b]) prompt[u.nprompt++] = t;
  }
  const auto n_ints = static_cast<size_t>(prompt + u.nprompt - h);
  LG_CUDA_CHECK(cudaMemcpyAsync(d, h, n_ints * sizeof(int), cudaMemcpyHostToDevice, cs));
  u.tokens = d;
  u.pos = d + (pos - h);
  u.seq = d + (seq - h);
  u.slot = d + (slot - h);
  u.rows = d + (rows - h);
  u.table = d + (table - h);
  u.dec_rows = d + (dec_rows - h);
  u.dec_pos = d + (dec_pos - h);
  u.prompt = d + (prompt - h);
  return u;
}

}  // namespace

HandwrittenQwenLane::~HandwrittenQwenLane() = default;

Provenance HandwrittenQwenLane::provenance() const { return HandWritten{shape_.family, "prefill+decode"}; }

LaneFacts HandwrittenQwenLane::facts() const {
  LaneFacts f;
  f.launches_per_decode_layer = st_->decode_launches_per_layer;
  return f;
}

HandwrittenQwenLane::HandwrittenQwenLane(const QwenShape& shape, WeightSource& weights, const LaneOptions& options)
    : shape_(shape) {
  check_supported(shape_, weights.describe());
  const int64_t max_seq = options.max_seq;
  if (max_seq < 1 || max_seq > (int64_t{1} << 20))
    throw Error("hand-written lane: max_seq " + std::to_string(max_seq) + " out of range 1..1048576");
  // Step sizes first (the pool's default depends on what is left after the step buffers): a
  // stand-in pool of one context, checked for real below.
  const LaneLimits step_sizes = resolve_limits(options, max_seq, max_seq);
  const int64_t bs = step_sizes.block_size;
  if ((bs & (bs - 1)) != 0)
    throw Error("hand-written lane: KV block size " + std::to_string(bs) +
                " is not a power of two (its kernels find a position's block with a shift)");
  if (step_sizes.max_tokens > (int64_t{1} << 20) || step_sizes.max_batch > (int64_t{1} << 20))
    throw Error("hand-written lane: " + std::to_string(step_sizes.max_tokens) + " tokens and " +
                std::to_string(step_sizes.max_batch) + " sequences per step exceed its 1048576");
  if (!cuda::cuda_device_available()) throw Error("hand-written lane: no CUDA device (the lane needs a GPU)");
  st_ = std::make_unique<State>();
  st_->load_weights(shape_, weights);
  st_->allocate_step_buffers(shape_, step_sizes);

  // The KV pool: --kv-tokens, else most of what is free now.
  const size_t per_position = static_cast<size_t>(2 * shape_.layers * shape_.kv_heads * shape_.head_dim) * 2;  // K, V bf16
  size_t free_bytes = 0, total_bytes = 0;
  LG_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  int64_t default_pool = 0;
  if (options.kv_tokens == 0) {
    const auto fit = static_cast<int64_t>(kPoolShareOfFree * static_cast<double>(free_bytes) / static_cast<double>(per_position));
    const int64_t Bmax = step_sizes.max_batch;
    const int64_t cap = Bmax > INT64_MAX / max_seq ? INT64_MAX : Bmax * max_seq;
    default_pool = std::min(fit, cap);
    if (default_pool < max_seq)
      throw Error("hand-written lane: " + gib(free_bytes) + " of device memory are free after the weights and step " +
                  "buffers; " + std::to_string(static_cast<int>(kPoolShareOfFree * 100)) + "% of it holds " +
                  std::to_string(fit) + " KV positions, less than one sequence of " + std::to_string(max_seq) +
                  " (lower the context with --max-seq, or free device memory)");
  }
  limits_ = resolve_limits(options, max_seq, default_pool);
  // One block more than the runtime allocates from: the batched decode graphs' pad rows use it.
  const int64_t rows = (limits_.num_blocks + 1) * limits_.block_size;
  if (rows > INT_MAX)
    throw Error("hand-written lane: a KV pool of " + std::to_string(rows) + " positions exceeds its 2147483647 (--kv-tokens)");
  const size_t pool_bytes = static_cast<size_t>(rows) * per_position;
  if (pool_bytes > free_bytes)
    throw Error("hand-written lane: a KV pool of " + std::to_string(rows) + " positions needs " + gib(pool_bytes) +
                " of device memory, " + gib(free_bytes) + " are free (lower --kv-tokens)");
  st_->allocate_pool(pool_bytes, static_cast<int>(rows));
  st_->trash_block = static_cast<int>(limits_.num_blocks);
}

void HandwrittenQwenLane::State::load_weights(const QwenShape& sh, WeightSource& weights) {
  cudaStream_t cs = stream.get();
  const int64_t V = sh.vocab, D = sh.hidden, F = sh.intermediate, H = sh.heads, KV = sh.kv_heads, Dh = sh.head_dim,
                L = sh.layers;
  const int64_t nq = H * Dh, nkv = KV * Dh, nqkv = nq + 2 * nkv;
  using bf16_t = __nv_bfloat16;
  auto bf16_buf = [](int64_t n) { return cuda::DeviceBuffer(static_cast<size_t>(n) * 2); };
  auto f32_buf = [](int64_t n) { return cuda::DeviceBuffer(static_cast<size_t>(n) * 4); };

  embed = bf16_buf(V * D);
  weights.load_bf16("model.embed_tokens.weight", {V, D}, embed.as<bf16_t>(), cs);
  if (!sh.tied) {
    head = bf16_buf(V * D);
    weights.load_bf16("lm_head.weight", {V, D}, head.as<bf16_t>(), cs);
  }
  final_norm = f32_buf(D);
  weights.load_f32("model.norm.weight", {D}, final_norm.as<float>(), cs);
  const std::vector<float> inv = rope_inv_freq(Dh, sh.rope_theta);
  inv_freq = f32_buf(Dh / 2);
  inv_freq.upload(inv.data(), inv.size() * sizeof(float));

  {  // the (gate, up) temporaries are freed before the pool is sized from what is free
    cuda::DeviceBuffer tmp_gate = bf16_buf(F * D), tmp_up = bf16_buf(F * D);
    for (int64_t l = 0; l < L; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      State::Layer ly;
      ly.wqkv = bf16_buf(nqkv * D);
      bf16_t* wqkv = ly.wqkv.as<bf16_t>();
      weights.load_bf16(p + "self_attn.q_proj.weight", {nq, D}, wqkv, cs);
      weights.load_bf16(p + "self_attn.k_proj.weight", {nkv, D}, wqkv + nq * D, cs);
      weights.load_bf16(p + "self_attn.v_proj.weight", {nkv, D}, wqkv + (nq + nkv) * D, cs);
      if (sh.qkv_bias) {
        ly.bqkv = f32_buf(nqkv);
        float* b = ly.bqkv.as<float>();
        weights.load_f32(p + "self_attn.q_proj.bias", {nq}, b, cs);
        weights.load_f32(p + "self_attn.k_proj.bias", {nkv}, b + nq, cs);
        weights.load_f32(p + "self_attn.v_proj.bias", {nkv}, b + nq + nkv, cs);
      }
      if (sh.qk_norm) {
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
      layers.push_back(std::move(ly));
      // The interleave reads the temporaries: finish before the next layer overwrites them.
      stream.synchronize();
    }
  }
}

void HandwrittenQwenLane::State::allocate_step_buffers(const QwenShape& sh, const LaneLimits& sizes) {
  cudaStream_t cs = stream.get();
  const int64_t V = sh.vocab, D = sh.hidden, F = sh.intermediate, H = sh.heads, Dh = sh.head_dim;
  const int64_t nq = H * Dh, nqkv = (H + 2 * sh.kv_heads) * Dh;
  auto bf16_buf = [](int64_t n) { return cuda::DeviceBuffer(static_cast<size_t>(n) * 2); };
  auto f32_buf = [](int64_t n) { return cuda::DeviceBuffer(static_cast<size_t>(n) * 4); };
  const int64_t Tmax = sizes.max_tokens, Bmax = sizes.max_batch, MB = sizes.blocks_per_seq();
  x = f32_buf(Tmax * D);
  h = bf16_buf(Tmax * D);
  qkv = f32_buf(Tmax * nqkv);
  q = f32_buf(Tmax * nq);
  attn = bf16_buf(Tmax * nq);
  gu = f32_buf(Tmax * 2 * F);
  act = bf16_buf(Tmax * F);
  logits = f32_buf(Bmax * V);
  attn_scratch = f32_buf(static_cast<int64_t>(decode_attention_scratch_floats(static_cast<int>(H), static_cast<int>(Dh))));
  attn_counters = cuda::DeviceBuffer(static_cast<size_t>(H) * sizeof(int));
  gemv_sync = cuda::DeviceBuffer(static_cast<size_t>(kGemvSyncInts) * sizeof(int));
  LG_CUDA_CHECK(cudaMemsetAsync(attn_counters.data(), 0, attn_counters.bytes(), cs));
  LG_CUDA_CHECK(cudaMemsetAsync(gemv_sync.data(), 0, gemv_sync.bytes(), cs));
  // run_rows' upload: tokens, positions, table rows, slots [T]; last rows [B]; block tables [B, W];
  // the decode entries' rows and positions [<= B] and the prompt tokens' list [<= T].
  const int64_t step_ints = 5 * Tmax + 3 * Bmax + Bmax * MB;
  d_step = cuda::DeviceBuffer(static_cast<size_t>(step_ints) * sizeof(int));
  h_step.allocate(static_cast<size_t>(step_ints), false);
  h_token.allocate(1, true);
  h_pos.allocate(1, true);
  h_table.allocate(static_cast<size_t>(MB), false);
  d_pos = cuda::DeviceBuffer(sizeof(int));
  d_table = cuda::DeviceBuffer(static_cast<size_t>(MB) * sizeof(int));
  h_argmax.allocate(static_cast<size_t>(Bmax), true);
  draws.emplace(Bmax);
  d_dec = cuda::DeviceBuffer(static_cast<size_t>(2 * Bmax) * sizeof(int));
  h_dec.allocate(static_cast<size_t>(2 * Bmax), false);
  d_dec_table = cuda::DeviceBuffer(static_cast<size_t>(Bmax * MB) * sizeof(int));
  h_dec_table.allocate(static_cast<size_t>(Bmax * MB), false);
  dec_scratch = f32_buf(static_cast<int64_t>(
      decode_attention_batch_scratch_floats(static_cast<int>(H), static_cast<int>(sh.kv_heads), static_cast<int>(Dh),
                                            static_cast<int>(Bmax))));
  dec_counters = cuda::DeviceBuffer(static_cast<size_t>(Bmax * H) * sizeof(int));
  dec_parts = f32_buf(kMaxDecodeSlices * Bmax * D);
  LG_CUDA_CHECK(cudaMemsetAsync(dec_counters.data(), 0, dec_counters.bytes(), cs));
  if (gemv_rows_batch_limit() >= 2 && Bmax >= 2) {
    const int rows_t = static_cast<int>(std::min<int64_t>(Bmax, gemv_rows_batch_limit()));
    const int rows_n = static_cast<int>(std::max(nqkv, D));
    rows_partials = f32_buf(static_cast<int64_t>(gemv_rows_partials_floats(rows_t, rows_n)));
    rows_arrivals = cuda::DeviceBuffer(gemv_rows_arrival_ints(rows_n) * sizeof(int));
    LG_CUDA_CHECK(cudaMemsetAsync(rows_arrivals.data(), 0, rows_arrivals.bytes(), cs));
  }
  stream.synchronize();
}

void HandwrittenQwenLane::State::allocate_pool(size_t pool_bytes, int pool_rows) {
  cudaStream_t cs = stream.get();
  rows = pool_rows;
  kpool = cuda::DeviceBuffer(pool_bytes / 2);
  vpool = cuda::DeviceBuffer(pool_bytes / 2);
  // Attention reads only positions its sequence wrote; zeros make a stray read harmless and
  // keep compute-sanitizer's initcheck quiet.
  LG_CUDA_CHECK(cudaMemsetAsync(kpool.data(), 0, kpool.bytes(), cs));
  LG_CUDA_CHECK(cudaMemsetAsync(vpool.data(), 0, vpool.bytes(), cs));
  stream.synchronize();
}

std::vector<SeqResult> HandwrittenQwenLane::step(std::span<const SeqStep> batch) {
  st_->times.begin(st_->stream.get());
  const FlatBatch f = flatten(batch, limits_);  // throws, naming the sequence, for what the limits refuse
  for (size_t b = 0; b < batch.size(); ++b)
    for (size_t i = 0; i < batch[b].tokens.size(); ++i)
      if (batch[b].tokens[i] < 0 || batch[b].tokens[i] >= shape_.vocab)
        throw Error("hand-written lane: sequence " + std::to_string(b) + " of the step: token id " +
                    std::to_string(batch[b].tokens[i]) + " at index " + std::to_string(i) +
                    " is outside the vocabulary of " + std::to_string(shape_.vocab));
  st_->draws->check(batch, shape_.vocab);
  State& s = *st_;
  // LG_QWEN_BATCH_GRAPHS=0 sends batched decode steps down the rows path (A/B in one binary).
  static const bool batch_graphs = [] {
    const char* e = std::getenv("LG_QWEN_BATCH_GRAPHS");
    return !(e && std::string(e) == "0");
  }();
  if (f.B == 1 && f.T == 1)
    run_decode(batch[0]);
  else if (f.T == f.B && batch_graphs)
    run_decode_batch(f, batch);
  else
    run_rows(f, batch);
  s.draws->launch(s.logits.as<float>(), shape_.vocab, batch, s.stream.get());
  s.times.end_launches(s.stream.get());
  // The LM head wrote the argmaxes straight into mapped host memory, visible once the stream is done.
  s.stream.synchronize();
  s.times.done(f.T, f.B);
  std::vector<SeqResult> out(batch.size());
  s.draws->collect(batch, out);
  const auto V = static_cast<size_t>(shape_.vocab);
  for (size_t b = 0; b < batch.size(); ++b) {
    out[b].argmax = static_cast<volatile int*>(s.h_argmax.p)[b];
    if (batch[b].want_logits) {
      out[b].logits.resize(V);
      s.logits.download(out[b].logits.data(), V * sizeof(float), b * V * sizeof(float));
    }
  }
  return out;
}

void HandwrittenQwenLane::State::gate_up(const Dims& d, size_t l, int T) {
  const auto* w = layers[l].wgu.as<__nv_bfloat16>();
  if (gate_up_in_bf16())
    gemm.matmul_bf16(h.as<__nv_bfloat16>(), w, gu.as<__nv_bfloat16>(), T, 2 * d.F, d.D, stream.get());
  else
    gemm.matmul(h.as<__nv_bfloat16>(), w, gu.as<float>(), T, 2 * d.F, d.D, false, stream.get());
}

void HandwrittenQwenLane::State::swiglu(const Dims& d, int T) {
  const size_t n = static_cast<size_t>(T) * static_cast<size_t>(d.F);
  if (gate_up_in_bf16())
    launch_swiglu_bf16(gu.as<__nv_bfloat16>(), n, act.as<__nv_bfloat16>(), stream.get());
  else
    launch_swiglu(gu.as<float>(), n, act.as<__nv_bfloat16>(), stream.get());
}

QkvRopeArgs HandwrittenQwenLane::State::rope_args(const Dims& d, size_t l, const int* table) const {
  const Layer& ly = layers[l];
  QkvRopeArgs rope;
  rope.bias = ly.bqkv.as<float>();
  rope.q_norm = ly.qn.as<float>();
  rope.k_norm = ly.kn.as<float>();
  rope.inv_freq = inv_freq.as<float>();
  rope.H = d.H;
  rope.KV = d.KV;
  rope.Dh = d.Dh;
  rope.max_seq = d.max_seq;
  rope.cache = pages_of(kpool, vpool, rows, d, l);
  rope.block_table = table;
  return rope;
}

// One decode token of one sequence: the captured graph (see the header), its block table refreshed first
// when the sequence's differs from what the device holds (a new sequence, or a block added every
// block_size tokens).
void HandwrittenQwenLane::run_decode(const SeqStep& q) {
  State& s = *st_;
  cudaStream_t cs = s.stream.get();
  using bf16_t = __nv_bfloat16;
  const Dims d = dims_of(shape_, limits_);
  const auto need = static_cast<size_t>(q.start_pos / limits_.block_size + 1);  // flatten checked q.blocks covers it
  if (s.table_on_device.size() < need || !std::equal(q.blocks.begin(), q.blocks.begin() + static_cast<std::ptrdiff_t>(need),
                                                     s.table_on_device.begin())) {
    s.table_on_device.clear();  // unknown until the copy is enqueued
    std::copy(q.blocks.begin(), q.blocks.begin() + static_cast<std::ptrdiff_t>(need), s.h_table.p);
    LG_CUDA_CHECK(cudaMemcpyAsync(s.d_table.data(), s.h_table.p, need * sizeof(int), cudaMemcpyHostToDevice, cs));
    s.table_on_device.assign(q.blocks.begin(), q.blocks.begin() + static_cast<std::ptrdiff_t>(need));
  }
  // Read by the graph's first kernel from mapped memory; the previous step finished at its synchronize.
  *s.h_token.p = q.tokens[0];
  *s.h_pos.p = static_cast<int>(q.start_pos);
  // Long contexts take a graph of their own, with the attention by KV head (v8): there the K/V
  // rows are most of a step's bytes, and v7's per-query-head blocks read them H / KV times.
  static const char* const long_from_knob = std::getenv("LG_QWEN_LONG_DECODE_FROM");
  const int64_t long_from = long_from_knob ? std::atoll(long_from_knob) : long_decode_from(d.H / d.KV);
  const bool long_ctx = q.start_pos >= long_from && attention_decode_long_supports(d.H, d.KV, d.Dh);
  cuda::GraphExec& graph = long_ctx ? s.decode_graph_long : s.decode_graph;
  if (!graph.ready()) {
    const int* pos = s.d_pos.as<int>();
    // LG_QWEN_ATTN_SOLO_GQA=1: the single-sequence graph takes the batched decode attention too
    // (v6); =2: on the tensor cores (v9).
    static const int solo_by_kv_head = [] {
      const char* e = std::getenv("LG_QWEN_ATTN_SOLO_GQA");
      return e ? std::atoi(e) : 0;
    }();
    const int solo_splits = decode_attention_batch_splits(d.H, d.KV, 1, d.max_seq);
    const BatchAttnPlan solo_plan{solo_by_kv_head == 2 ? BatchAttnForm::kTensorCores : BatchAttnForm::kTiles,
                                  solo_splits};
    capture(graph, cs, [&] {
      launch_embed_decode(s.embed.as<bf16_t>(), s.h_token.dev, s.h_pos.dev, s.d_pos.as<int>(), d.D, s.x.as<float>(), cs);
      const size_t launches_before = cuda::captured_kernel_launches(cs);
      for (size_t l = 0; l < s.layers.size(); ++l) {
        const State::Layer& ly = s.layers[l];
        const GemvArgs a{.W = ly.wqkv.as<bf16_t>(), .N = d.nqkv, .K = d.D, .x_f32 = s.x.as<float>(),
                         .norm_w = ly.ln1.as<float>(), .eps = d.eps, .out_f32 = s.qkv.as<float>()};
        launch_gemv(GemvInput::kRmsNorm, GemvOutput::kStore, a, cs);
        const QkvRopeArgs rope = s.rope_args(d, l, s.d_table.as<int>());
        if (solo_by_kv_head)  // the batched decode's attention (v6 or v9) for a batch of one
          launch_attention_decode_rope_batch(s.qkv.as<float>(), rope, 1, 1, solo_plan, d.eps, pos,
                                             s.dec_scratch.as<float>(), s.dec_counters.as<int>(),
                                             s.attn.as<bf16_t>(), cs);
        else if (long_ctx)
          launch_attention_decode_rope_long(s.qkv.as<float>(), rope, d.eps, pos, s.attn_scratch.as<float>(),
                                            s.attn_counters.as<int>(), s.attn.as<bf16_t>(), cs);
        else
          launch_attention_decode_rope(s.qkv.as<float>(), rope, d.eps, pos, s.attn_scratch.as<float>(),
                                       s.attn_counters.as<int>(), s.attn.as<bf16_t>(), cs);
        launch_gemv(GemvInput::kBf16, GemvOutput::kResidual,
                    {.W = ly.wo.as<bf16_t>(), .N = d.D, .K = d.nq, .in_bf16 = s.attn.as<bf16_t>(), .out_f32 = s.x.as<float>()},
                    cs);
        launch_gemv(GemvInput::kRmsNorm, GemvOutput::kSwiGLU,
                    {.W = ly.wgu.as<bf16_t>(), .N = 2 * d.F, .K = d.D, .x_f32 = s.x.as<float>(),
                     .norm_w = ly.ln2.as<float>(), .eps = d.eps, .out_bf16 = s.act.as<bf16_t>()},
                    cs);
        launch_gemv(GemvInput::kBf16, GemvOutput::kResidual,
                    {.W = ly.wd.as<bf16_t>(), .N = d.D, .K = d.F, .in_bf16 = s.act.as<bf16_t>(), .out_f32 = s.x.as<float>()},
                    cs);
      }
      // What `lg bench` reports: the kernels the layers above put into the graph, per layer.
      const size_t layer_launches = cuda::captured_kernel_launches(cs) - launches_before;
      if (!s.layers.empty() && layer_launches % s.layers.size() == 0)
        s.decode_launches_per_layer = static_cast<int64_t>(layer_launches / s.layers.size());
      enqueue_head_gemv(s.x.as<float>());
    });
  }
  graph.launch(cs);
}

// Final RMSNorm + LM head on one row of the residual stream (x_row f32 [D]), with the device argmax
// fused: logits row 0, the argmax into the first mapped int.
void HandwrittenQwenLane::enqueue_head_gemv(const float* x_row) {
  State& s = *st_;
  const GemvArgs a{.W = s.head_w(),
                   .N = static_cast<int>(shape_.vocab),
                   .K = static_cast<int>(shape_.hidden),
                   .x_f32 = x_row,
                   .norm_w = s.final_norm.as<float>(),
                   .eps = static_cast<float>(shape_.eps),
                   .out_f32 = s.logits.as<float>(),
                   .argmax_out = s.h_argmax.dev,
                   .sync = s.gemv_sync.as<int>()};
  launch_gemv(GemvInput::kRmsNorm, GemvOutput::kStoreArgmax, a, s.stream.get());
}

// Everything but one decode token: the step's T rows through the layers, then the LM head on each
// sequence's last row. The attention of a step of several sequences is split by token: a sequence
// whose step is one token (a decode token) goes to the batched decode attention (v6, split-KV,
// through a row map: entry i is that token's row), a prompt chunk of kFlashMinTokens or more to the
// tensor-core flash kernel (one launch per such sequence), the other tokens to the ragged kernel
// (through a token list). LG_QWEN_MIXED_DECODE_ATTN=0: the ragged kernel takes them all (the path
// before; A/B in one binary).
void HandwrittenQwenLane::run_rows(const FlatBatch& f, std::span<const SeqStep> batch) {
  State& s = *st_;
  cudaStream_t cs = s.stream.get();
  using bf16_t = __nv_bfloat16;
  const Dims d = dims_of(shape_, limits_);
  const int T = static_cast<int>(f.T), B = static_cast<int>(f.B);
  static const bool split_decode = [] {
    const char* e = std::getenv("LG_QWEN_MIXED_DECODE_ATTN");
    return !(e && std::string(e) == "0");
  }();
  // B == 1 keeps the flash kernel: no decode entries then.
  const RowsStep u = upload_rows_step(f, batch, limits_.block_size, B > 1 && split_decode, s.h_step.p,
                                      s.d_step.as<int>(), cs);
  const int* d_tokens = u.tokens;
  const int* d_pos = u.pos;
  const int* d_table = u.table;
  const int W = u.W;
  // Scratch and counters are the batched decode graphs' (sized for max_batch entries, any split
  // count decode_attention_batch_plan gives; every launch leaves the counters at zero).
  const BatchAttnPlan dec_attn =
      u.ndec > 0 ? decode_attention_batch_plan(d.H, d.KV, d.Dh, u.ndec, u.dec_max_len, u.dec_max_len) : BatchAttnPlan{};

  launch_embed(s.embed.as<bf16_t>(), d_tokens, T, d.D, s.x.as<float>(), cs);
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const State::Layer& ly = s.layers[l];
    const KvPages pages = pages_of(s.kpool, s.vpool, s.rows, d, l);
    launch_rmsnorm_rows(s.x.as<float>(), ly.ln1.as<float>(), T, d.D, d.eps, s.h.as<bf16_t>(), cs);
    s.gemm.matmul(s.h.as<bf16_t>(), ly.wqkv.as<bf16_t>(), s.qkv.as<float>(), T, d.nqkv, d.D, false, cs);
    launch_rope_kv(s.qkv.as<float>(), ly.bqkv.as<float>(), ly.qn.as<float>(), ly.kn.as<float>(),
                   s.inv_freq.as<float>(), d_pos, u.slot, d.eps, T, d.H, d.KV, d.Dh, pages, s.q.as<float>(), cs);
    if (B == 1)
      launch_attention_prefill_tc(s.q.as<float>(), pages, d_table, d_pos, T, d.H, d.KV, d.Dh, s.attn.as<bf16_t>(), cs);
    else {
      // The decode tokens' K/V are written by launch_rope_kv above and again by the decode
      // attention (it forms them from the raw projection itself, the same math: a rewrite of the
      // same values, up to the qk-norm's summation order); no other sequence reads them here.
      if (u.ndec > 0)
        launch_attention_decode_rope_batch(s.qkv.as<float>(), s.rope_args(d, l, d_table), u.ndec, W, dec_attn, d.eps,
                                           u.dec_pos, s.dec_scratch.as<float>(), s.dec_counters.as<int>(),
                                           s.attn.as<bf16_t>(), cs, u.dec_rows);
      for (const RowsStep::FlashRun& fr : u.flash) {
        const size_t off = static_cast<size_t>(fr.t0) * static_cast<size_t>(d.nq);
        launch_attention_prefill_tc(s.q.as<float>() + off, pages, d_table + static_cast<size_t>(fr.r) * W,
                                    d_pos + fr.t0, fr.n, d.H, d.KV, d.Dh, s.attn.as<bf16_t>() + off, cs);
      }
      // No list when every token is the ragged kernel's (split decode off, or no decode and no
      // flash entries): it then takes rows 0 .. T-1.
      const bool listed = u.ndec > 0 || !u.flash.empty();
      if (u.nprompt > 0)
        launch_attention_ragged(s.q.as<float>(), pages, d_table, W, u.seq, d_pos, u.nprompt, d.H, d.KV, d.Dh,
                                s.attn.as<bf16_t>(), cs, listed ? u.prompt : nullptr);
    }
    s.gemm.matmul(s.attn.as<bf16_t>(), ly.wo.as<bf16_t>(), s.x.as<float>(), T, d.D, d.nq, true, cs);
    launch_rmsnorm_rows(s.x.as<float>(), ly.ln2.as<float>(), T, d.D, d.eps, s.h.as<bf16_t>(), cs);
    s.gate_up(d, l, T);
    s.swiglu(d, T);
    s.gemm.matmul(s.act.as<bf16_t>(), ly.wd.as<bf16_t>(), s.x.as<float>(), T, d.D, d.F, true, cs);
  }
  if (B == 1) {
    enqueue_head_gemv(s.x.as<float>() + static_cast<size_t>(T - 1) * d.D);
    return;
  }
  // B rows: each sequence's last token, normed into bf16 (as the GEMV's prologue rounds it), the
  // LM head as one GEMM [B, V], an argmax per row.
  launch_rmsnorm_gather(s.x.as<float>(), u.rows, s.final_norm.as<float>(), B, d.D, d.eps, s.h.as<bf16_t>(), cs);
  s.gemm.matmul(s.h.as<bf16_t>(), s.head_w(), s.logits.as<float>(), B, d.V, d.D, false, cs);
  launch_argmax_rows(s.logits.as<float>(), B, d.V, s.h_argmax.dev, cs);
}

}  // namespace lg::qwen
