// Launchers of the hand-written lane's attention kernels for one sequence (the decode attention's
// forms v5, v7 and v8 for long contexts) and the ragged paged attention of mixed steps; the
// head_dim and group dispatch. The batched decode step's forms are in attention_batch_launch.cu,
// the kernels in kernels/attention*.cuh.
#include <algorithm>
#include <string>

#include "lanes/qwen/attention_launch_common.cuh"
#include "lanes/qwen/kernels.h"
#include "lanes/qwen/kernels/attention.cuh"
#include "lanes/qwen/kernels/attention_decode.cuh"
#include "lanes/qwen/kernels/attention_decode_long.cuh"
#include "lanes/qwen/launch_pdl.h"
#include "runtime/cuda/cuda_check.h"
#include "support/error.h"

namespace lg::qwen {

using namespace attn_launch;

size_t decode_attention_scratch_floats(int H, int Dh) {
  return static_cast<size_t>(H) * dev::kDecodeSplits * (Dh + 2);
}

namespace {

/// `splits` per head, or fewer so that the H x splits blocks of a long context fill whole waves of
/// the kernel's resident blocks: a partial last wave costs a whole one, since every block of a
/// long context has the same chunk to do (at 32,768 positions, 8B, 3 blocks of 8 warps per SM:
/// 1,024 blocks are 2.6 waves, 24 splits' 768 are 1.9).
template <typename Kernel>
int whole_wave_splits(Kernel kernel, int threads, int H, int splits) {
  const int resident = resident_blocks(kernel, threads);
  if (H * splits <= resident) return splits;
  const int waves = H * splits / resident;
  return std::max(1, std::min(splits, waves * resident / H));
}

template <typename Kernel>
void launch_attn_decode_grid(Kernel kernel, int warps, const dev::DecodeAttnParams& p, int splits, const int* pos0,
                             cudaStream_t s) {
  const dim3 grid(p.H, whole_wave_splits(kernel, warps * 32, p.H, splits));
  launch_pdl(kernel, grid, dim3(warps * 32), 0, s, p, pos0);
}

template <int DH, bool ROPE, bool EARLY>
void launch_attn_decode_as(const dev::DecodeAttnParams& p, int splits, const DecodeAttnShape& sh, const int* pos0,
                           cudaStream_t s) {
  switch (sh.warps) {
    case 8:
      if (sh.bound == 3)
        return launch_attn_decode_grid(dev::attn_decode_kernel<DH, ROPE, 8, false, EARLY, 3>, 8, p, splits, pos0, s);
      return launch_attn_decode_grid(dev::attn_decode_kernel<DH, ROPE, 8, false, EARLY, 4>, 8, p, splits, pos0, s);
    case 16: return launch_attn_decode_grid(dev::attn_decode_kernel<DH, ROPE, 16, false, EARLY>, 16, p, splits, pos0, s);
    default: return launch_attn_decode_grid(dev::attn_decode_kernel<DH, ROPE, 4, false, EARLY>, 4, p, splits, pos0, s);
  }
}

template <int DH, bool ROPE>
void launch_attn_decode_kernel(const dev::DecodeAttnParams& p0, int max_seq, const int* pos0, cudaStream_t s) {
  const DecodeAttnShape sh = decode_attn_shape();
  dev::DecodeAttnParams p = p0;
  p.min_split = sh.min_split;
  const int splits = decode_attn_splits(max_seq, sh.min_split);
  if (ROPE && sh.early) return launch_attn_decode_as<DH, ROPE, ROPE>(p, splits, sh, pos0, s);
  launch_attn_decode_as<DH, ROPE, false>(p, splits, sh, pos0, s);
}

}  // namespace

template <int DH>
static void attn_decode_as(const float* q, const KvPages& c, const int* bt, const int* pos0, int H, int KV,
                           int max_seq, float* scratch, int* counters, bf16* out, cudaStream_t s) {
  const dev::DecodeAttnParams p = decode_attention_params(q, c, bt, H, KV, DH, scratch, counters, out);
  launch_attn_decode_kernel<DH, false>(p, max_seq, pos0, s);
}

void launch_attention_decode(const float* q, const KvPages& c, const int* bt, const int* pos0, int H, int KV, int Dh,
                             int max_seq, float* scratch, int* counters, bf16* out, cudaStream_t s) {
  check_head_dim(Dh);
  check_gqa(H, KV);
  if (!q || !bt || !pos0 || !scratch || !counters || !out || max_seq <= 0)
    throw Error("hand-written attention: decode attention with a missing buffer or no context");
  switch (Dh) {
    case 16: return attn_decode_as<16>(q, c, bt, pos0, H, KV, max_seq, scratch, counters, out, s);
    case 32: return attn_decode_as<32>(q, c, bt, pos0, H, KV, max_seq, scratch, counters, out, s);
    case 64: return attn_decode_as<64>(q, c, bt, pos0, H, KV, max_seq, scratch, counters, out, s);
    default: return attn_decode_as<128>(q, c, bt, pos0, H, KV, max_seq, scratch, counters, out, s);
  }
}

template <int DH>
static void attn_decode_rope_as(const float* qkv, const QkvRopeArgs& r, float eps, const int* pos0, float* scratch,
                                int* counters, bf16* out, cudaStream_t s) {
  dev::DecodeAttnParams p = decode_attention_params(qkv, r.cache, r.block_table, r.H, r.KV, DH, scratch, counters, out);
  set_rope_fields(p, r, eps);
  launch_attn_decode_kernel<DH, true>(p, r.max_seq, pos0, s);
}

// The buffers and context both single-sequence RoPE decode attentions (v7, v8) need.
static void check_rope_decode_args(const float* qkv, const QkvRopeArgs& r, const int* pos0, const float* scratch,
                                   const int* counters, const bf16* out) {
  if (!qkv || !r.inv_freq || !r.cache.k || !r.cache.v || !r.block_table || !pos0 || !scratch || !counters || !out ||
      r.max_seq <= 0)
    throw Error("hand-written attention: decode attention from the raw QKV with a missing buffer or no context");
}

void launch_attention_decode_rope(const float* qkv, const QkvRopeArgs& r, float eps, const int* pos0, float* scratch,
                                  int* counters, bf16* out, cudaStream_t s) {
  check_head_dim(r.Dh);
  check_gqa(r.H, r.KV);
  check_rope_decode_args(qkv, r, pos0, scratch, counters, out);
  switch (r.Dh) {
    case 16: return attn_decode_rope_as<16>(qkv, r, eps, pos0, scratch, counters, out, s);
    case 32: return attn_decode_rope_as<32>(qkv, r, eps, pos0, scratch, counters, out, s);
    case 64: return attn_decode_rope_as<64>(qkv, r, eps, pos0, scratch, counters, out, s);
    default: return attn_decode_rope_as<128>(qkv, r, eps, pos0, scratch, counters, out, s);
  }
}

bool attention_decode_long_supports(int H, int KV, int Dh) {
  const int G = KV > 0 && H % KV == 0 ? H / KV : 0;
  return (G == 2 || G == 4) && (Dh == 64 || Dh == 128);
}

/// Query heads a v8 block at a group of 4: all 4 (each K/V row read once, 2 rounds of loads in
/// flight a warp), or 2 with LG_QWEN_LONG_HEADS=2 (rows read twice, 4 rounds in flight). H200,
/// 8B, one sequence: 4 heads 6.05 ms at 32,768 positions against 6.16, but 4.91 at 8,192 against
/// 4.78 (bench/RESULTS.md, seventeenth session, call 8); the long graph runs to the context's end.
static int long_heads() {
  static const int n = lab_knob("LG_QWEN_LONG_HEADS", 4) == 2 ? 2 : 4;
  return n;
}

void launch_attention_decode_rope_long(const float* qkv, const QkvRopeArgs& r, float eps, const int* pos0,
                                       float* scratch, int* counters, bf16* out, cudaStream_t s) {
  if (!attention_decode_long_supports(r.H, r.KV, r.Dh))
    return launch_attention_decode_rope(qkv, r, eps, pos0, scratch, counters, out, s);
  check_rope_decode_args(qkv, r, pos0, scratch, counters, out);
  dev::DecodeAttnParams p =
      decode_attention_params(qkv, r.cache, r.block_table, r.H, r.KV, r.Dh, scratch, counters, out);
  set_rope_fields(p, r, eps);
  p.min_split = decode_attn_shape().min_split;
  const int splits = decode_attn_splits(r.max_seq, p.min_split);
  with_long_kernel<false>(r.H / r.KV, r.Dh, long_heads(), [&](auto k) {
    using K = decltype(k);
    const int items = r.KV * K::kParts;
    launch_pdl(K::kernel, dim3(items, whole_wave_splits(K::kernel, K::kWarps * 32, items, splits)),
               dim3(K::kWarps * 32), 0, s, p, pos0);
  });
}

template <int DH>
static void attn_ragged_as(dev::RaggedAttnParams p, cudaStream_t s) {
  p.scale = 1.f / sqrtf(static_cast<float>(DH));
  const dim3 grid(p.H, (p.T + dev::kAttnWarps - 1) / dev::kAttnWarps);
  dev::attn_ragged_kernel<DH><<<grid, dev::kAttnWarps * 32, 0, s>>>(p);
  LG_CUDA_CHECK_LAUNCH();
}

void launch_attention_ragged(const float* q, const KvPages& c, const int* block_table, int table_stride,
                             const int* seq, const int* pos, int T, int H, int KV, int Dh, bf16* out, cudaStream_t s,
                             const int* tokens) {
  check_head_dim(Dh);
  check_gqa(H, KV);
  if (T < 0 || table_stride < 1) throw Error("hand-written attention: ragged attention with T < 0 or no block table");
  if (T == 0) return;
  if (!q || !block_table || !seq || !pos || !out) throw Error("hand-written attention: ragged attention with a missing buffer");
  dev::RaggedAttnParams p{};
  p.q = q;
  p.k_pool = c.k;
  p.v_pool = c.v;
  p.block_table = block_table;
  p.seq = seq;
  p.pos = pos;
  p.tokens = tokens;
  p.table_stride = table_stride;
  p.T = T;
  p.H = H;
  p.KV = KV;
  p.rows = c.rows;
  p.block_shift = page_shift(c);
  p.out = out;
  switch (Dh) {
    case 16: return attn_ragged_as<16>(p, s);
    case 32: return attn_ragged_as<32>(p, s);
    case 64: return attn_ragged_as<64>(p, s);
    default: return attn_ragged_as<128>(p, s);
  }
}

}  // namespace lg::qwen
