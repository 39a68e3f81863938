// Launchers of the hand-written lane's batched decode attention: the plan that picks a form and
// its splits for a batch (decode_attention_batch_plan: v5, v6, v8's rows form, v9, v10) and their
// launches over the batch's block table. One sequence's forms are in attention_launch.cu, the
// kernels in kernels/attention_decode*.cuh.
#include <algorithm>
#include <cmath>
#include <string>

#include "lanes/qwen/attention_launch_common.cuh"
#include "lanes/qwen/kernels.h"
#include "lanes/qwen/kernels/attention_decode.cuh"
#include "lanes/qwen/kernels/attention_decode_gqa.cuh"
#include "lanes/qwen/kernels/attention_decode_gqa_tc.cuh"
#include "lanes/qwen/kernels/attention_decode_long.cuh"
#include "lanes/qwen/kernels/attention_decode_tc_rows.cuh"
#include "lanes/qwen/launch_pdl.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "support/error.h"

namespace lg::qwen {

using namespace attn_launch;

static_assert(kDecodeMaxSplits >= dev::kDecodeSplits && kDecodeMaxSplits >= dev::kGqaMaxSplits);

namespace {
/// Blocks v5's batched decode attention aims at: 16 per SM, about four waves of its 8-warp blocks
/// (4 fit an SM at 64 registers a thread). v6 (a block per KV head) aims at 8 per SM below.
int batch_attn_blocks() { return 2 * 8 * cuda::sm_count(); }
/// LG_QWEN_ATTN_GQA=0: the batched decode attention is v5 (a block per query head) instead of v6,
/// v9 or v8's rows form. (v8's first form over a batch, a key a warp, measured slower than v6 past
/// 16 sequences, tenth session; its rows form, 16 lanes a key, is quicker up to two waves of
/// blocks: decode_attention_batch_plan.)
bool gqa_attention() {
  static const bool on = lab_knob("LG_QWEN_ATTN_GQA", 1) != 0;
  return on;
}
/// LG_QWEN_ATTN_TC: 1 (default) v9 where decode_attention_batch_plan's rule says, 0 never,
/// 2 always (a lab setting, for A/B at every batch size).
int gqa_tc_mode() {
  static const int mode = lab_knob("LG_QWEN_ATTN_TC", 1);
  return mode;
}
/// v6's shortest chunk (knob LG_QWEN_GQA_SPLIT): four tiles of 32 keys. H200, tenth session, 8B at
/// 512 positions: B = 16 5.74 ms a step against 5.95 with two tiles (8 splits of blocks whose fixed
/// costs outweighed their two tiles), B = 64 and 128 the same (one or two splits either way).
int gqa_min_split() {
  static const int n = std::max(1, lab_knob("LG_QWEN_GQA_SPLIT", 128));
  return n;
}
/// v6's blocks per SM that the splits aim for, all sequences and KV heads together (knob
/// LG_QWEN_GQA_BLOCKS_PER_SM).
int gqa_blocks_per_sm() {
  static const int n = std::clamp(lab_knob("LG_QWEN_GQA_BLOCKS_PER_SM", 8), 1, 256);
  return n;
}
}  // namespace

int decode_attention_batch_splits(int H, int KV, int batch, int max_len) {
  if (gqa_attention()) {
    const int by_length = (std::max(1, max_len) + gqa_min_split() - 1) / gqa_min_split();
    const int by_blocks = std::max(1, gqa_blocks_per_sm() * cuda::sm_count() / std::max(1, KV * batch));
    static const int most = std::clamp(lab_knob("LG_QWEN_GQA_MAX_SPLITS", 64), 1, dev::kGqaMaxSplits);
    return std::max(1, std::min({by_length, by_blocks, most}));
  }
  const int by_length = decode_attn_splits(std::max(1, max_len), decode_attn_shape().min_split);
  const int by_blocks = std::max(1, batch_attn_blocks() / std::max(1, H * batch));
  return std::max(1, std::min({by_length, by_blocks, dev::kDecodeSplits}));
}

namespace {
/// Blocks of 8 warps an SM holds at most (2,048 threads): the rows form's splits keep
/// splits x batch x KV within this many a device (rows_shape), which the scratch is sized for.
constexpr int kRowsMaxBlocksPerSm = 2048 / (8 * 32);

/// LG_QWEN_ATTN_ROWS: 1 (default) v8's rows form where decode_attention_batch_plan's rule says,
/// 0 never, 2 always (4 query heads a block at a group of 4; a lab setting, for A/B).
int rows_mode() {
  static const int mode = lab_knob("LG_QWEN_ATTN_ROWS", 1);
  return mode;
}

/// v10's instance for head_dim DH, a group of G and NW warps a block: 8 / NW blocks an SM (its
/// launch bounds), so that each warp may hold two tiles' K/V fragments (up to 255 registers).
template <int DH, int G, int NW>
struct TcRowsKernel {
  static constexpr int kWarps = NW;
  static constexpr auto kernel = dev::attn_decode_tc_rows_kernel<DH, G, kWarps>;
  static int resident() {
    static const int n = resident_blocks(kernel, kWarps * 32);
    return n;
  }
};

/// f(TcRowsKernel<...>{}) for a shape attention_decode_long_supports takes (a group of 2 or 4,
/// head_dim 64 or 128) and blocks of `warps` (2, 4 or 8) warps.
template <typename F>
void with_tc_rows_kernel(int G, int Dh, int warps, F&& f) {
  if (warps == 2) {
    if (Dh == 64) return G == 2 ? f(TcRowsKernel<64, 2, 2>{}) : f(TcRowsKernel<64, 4, 2>{});
    return G == 2 ? f(TcRowsKernel<128, 2, 2>{}) : f(TcRowsKernel<128, 4, 2>{});
  }
  if (warps == 4) {
    if (Dh == 64) return G == 2 ? f(TcRowsKernel<64, 2, 4>{}) : f(TcRowsKernel<64, 4, 4>{});
    return G == 2 ? f(TcRowsKernel<128, 2, 4>{}) : f(TcRowsKernel<128, 4, 4>{});
  }
  if (Dh == 64) return G == 2 ? f(TcRowsKernel<64, 2, 8>{}) : f(TcRowsKernel<64, 4, 8>{});
  return G == 2 ? f(TcRowsKernel<128, 2, 8>{}) : f(TcRowsKernel<128, 4, 8>{});
}

/// LG_QWEN_ATTN_V10: 1 (default) v10 where decode_attention_batch_plan's rule says, 0 never, 2
/// wherever the rule would take v8's rows form (a lab setting, for A/B).
int tc_rows_mode() {
  static const int mode = lab_knob("LG_QWEN_ATTN_V10", 1);
  return mode;
}

/// v10's blocks' warps (knob LG_QWEN_V10_WARPS: 2, 4 or 8; else the rule): 8 while the batch's
/// (sequence, KV head) items fit one on each SM, 4 (two an SM) while they fit in one wave of
/// those, else 2 (four an SM). Every form holds 8 warps an SM; fewer a block keeps the launch one
/// wave, where 4-warp blocks took two at 48-64 sequences of the 8B shape (512 items over the
/// H100's 264), paying the prologue and first round trips twice (bench/RESULTS.md, session 37,
/// calls 6-7, H100: the kernel at 64 x 256 44.6 -> 38.8 us; the step at 48 sequences of
/// 1,024-4,096 positions -3.4 to -5.3%, at 64 -0.5 to -1.2%; not yet measured on an H200, which
/// has as many SMs).
int tc_rows_warps(int items) {
  static const int forced = lab_knob("LG_QWEN_V10_WARPS", 0);
  if (forced == 2 || forced == 4 || forced == 8) return forced;
  if (items <= cuda::sm_count()) return 8;
  return items <= 2 * cuda::sm_count() ? 4 : 2;
}

/// v10's plan for `batch` sequences: tc_rows_warps' blocks; splits of v8's split length covering
/// split_len, no more than one wave of blocks over the items.
BatchAttnPlan tc_rows_plan(int H, int KV, int Dh, int batch, int split_len) {
  const int items = KV * batch, warps = tc_rows_warps(items);
  BatchAttnPlan plan{BatchAttnForm::kTcRows, 1, H / KV, warps};
  with_tc_rows_kernel(H / KV, Dh, warps, [&](auto k) {
    using K = decltype(k);
    const int min_split = decode_attn_shape().min_split;
    const int by_length = (std::max(1, split_len) + min_split - 1) / min_split;
    plan.splits = std::max(1, std::min({by_length, K::resident() / items, kDecodeMaxSplits}));
  });
  return plan;
}

/// The rows form with `heads` query heads a block for `batch` sequences: its splits (chunks of
/// v8's split length covering split_len, no more than one wave of blocks over the batch's
/// (sequence, KV head, head pair) items: every block of a short context does the same few rounds
/// of loads, so a second wave would double the launch's time) and its waves of blocks at one split.
struct RowsShape {
  int splits;
  double waves;
};
RowsShape rows_shape(int H, int KV, int Dh, int batch, int split_len, int heads) {
  RowsShape r{1, 0.0};
  with_long_kernel<true>(H / KV, Dh, heads, [&](auto k) {
    using K = decltype(k);
    const int items = KV * K::kParts * batch, min_split = decode_attn_shape().min_split;
    const int by_length = (std::max(1, split_len) + min_split - 1) / min_split;
    r.splits = std::max(1, std::min({by_length, K::resident() / items, kDecodeMaxSplits}));
    r.waves = static_cast<double>(items) / K::resident();
  });
  return r;
}
}  // namespace

BatchAttnPlan decode_attention_batch_plan(int H, int KV, int Dh, int batch, int split_len, int max_len) {
  const int splits = decode_attention_batch_splits(H, KV, batch, split_len);
  const int tc_mode = gqa_tc_mode();
  const bool tc = gqa_attention() && (tc_mode == 2 || (tc_mode == 1 && splits == 1 && max_len >= 512));
  const BatchAttnPlan old{tc ? BatchAttnForm::kTensorCores : BatchAttnForm::kTiles, splits};
  if (!gqa_attention() || rows_mode() == 0 || !attention_decode_long_supports(H, KV, Dh)) return old;
  const int G = H / KV;
  const int most = G == 4 && Dh == 128 ? 4 : 2;  // query heads a block at most (with_long_kernel)
  const RowsShape pairs = rows_shape(H, KV, Dh, batch, split_len, 2);
  const RowsShape widest = most == 2 ? pairs : rows_shape(H, KV, Dh, batch, split_len, most);
  const BatchAttnPlan rows_pairs{BatchAttnForm::kRows, pairs.splits, 2};
  const BatchAttnPlan rows_widest{BatchAttnForm::kRows, widest.splits, most};
  if (rows_mode() == 2) return rows_widest;
  // v10 streams K/V at about 4.0 TB/s against the rows form's 2.75 (8B, 16 sequences, the step's
  // slope from 1,024 to 2,048 positions) but costs more a launch. H200 (bench/RESULTS.md, session
  // 24, calls 9-10): at a group of 4 and head_dim 128 (8B) it wins at 16-64 sequences once the
  // longest passes 1,024 positions (a split length of 2,048: -0.1% to 1.9% there, 1.5-5% past
  // 2,048) and loses up to 1.3% below; at 128 sequences v9 stays ahead, and at a group of 2 (0.6B: the scores'
  // 8 mma columns a quarter used) it loses 3-8% everywhere.
  const int tc_rows = tc_rows_mode();
  const bool tc_rows_pays = G == 4 && Dh == 128 && batch >= 16 && batch <= 64 && split_len >= 2048;
  if (tc_rows == 2 || (tc_rows == 1 && tc_rows_pays)) return tc_rows_plan(H, KV, Dh, batch, split_len);
  // Pairs of heads while the batch's blocks fit one wave (twice the blocks of 4 heads, 4 rounds
  // of loads in flight a warp), then as many heads as a block takes up to two waves; past that
  // v6 / v9, except that v9 does not pay at a group of 2 (its MMA rows are the group's heads: 16
  // computed for 2).
  if (pairs.waves <= 1.0) return rows_pairs;
  if (widest.waves <= 2.0) return rows_widest;
  if (G == 2 && old.form == BatchAttnForm::kTensorCores) return rows_pairs;
  return old;
}

size_t decode_attention_batch_scratch_floats(int H, int KV, int Dh, int max_batch) {
  // splits * batch <= max(blocks / heads, batch) by decode_attention_batch_splits and rows_shape.
  const int gqa_per_head = gqa_blocks_per_sm() * cuda::sm_count() / std::max(1, KV);
  const int rows_per_head = kRowsMaxBlocksPerSm * cuda::sm_count() / std::max(1, KV);
  const size_t per_head = std::max<size_t>({static_cast<size_t>(batch_attn_blocks() / std::max(1, H)),
                                            static_cast<size_t>(gqa_per_head), static_cast<size_t>(rows_per_head),
                                            static_cast<size_t>(std::max(1, max_batch))});
  return per_head * static_cast<size_t>(H) * static_cast<size_t>(Dh + 2);
}

template <int DH, int NW>
static void launch_gqa_tc(const dev::GqaDecodeParams& g, int KV, int splits, int batch, cudaStream_t s) {
  constexpr size_t smem = dev::gqa_tc_smem_bytes<DH, NW>();
  static const bool sized = [] {  // past the 48 KB a launch gets without asking
    LG_CUDA_CHECK(cudaFuncSetAttribute(dev::attn_decode_gqa_tc_kernel<DH, NW>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    return true;
  }();
  (void)sized;
  launch_pdl(dev::attn_decode_gqa_tc_kernel<DH, NW>, dim3(KV, splits, batch), dim3(32 * NW), smem, s, g);
}

/// The BATCH forms' fields of DecodeAttnParams (v5 and v8's rows form).
static dev::DecodeAttnParams batch_attention_params(const float* qkv, const QkvRopeArgs& r, int Dh, int table_stride,
                                                    float eps, float* scratch, int* counters, bf16* out,
                                                    const int* rows) {
  dev::DecodeAttnParams p = decode_attention_params(qkv, r.cache, r.block_table, r.H, r.KV, Dh, scratch, counters, out);
  set_rope_fields(p, r, eps);
  p.q_stride = (r.H + 2 * r.KV) * Dh;
  p.table_stride = table_stride;
  p.row_map = rows;
  p.min_split = decode_attn_shape().min_split;
  return p;
}

template <int DH>
static void attn_decode_rope_batch_as(const float* qkv, const QkvRopeArgs& r, int batch, int table_stride, int splits,
                                      float eps, const int* pos, float* scratch, int* counters, bf16* out,
                                      const int* rows, bool tensor_cores, cudaStream_t s) {
  if (gqa_attention() || tensor_cores) {
    dev::GqaDecodeParams g{};
    g.qkv = qkv;
    g.row_map = rows;
    g.k_cache = r.cache.k;
    g.v_cache = r.cache.v;
    g.block_table = r.block_table;
    g.pos = pos;
    g.table_stride = table_stride;
    g.H = r.H;
    g.KV = r.KV;
    g.rows = r.cache.rows;
    g.block_shift = page_shift(r.cache);
    g.scale = 1.f / sqrtf(static_cast<float>(DH));
    g.min_split = gqa_min_split();
    g.partial = scratch;
    g.counters = counters;
    g.out = out;
    g.bias = r.bias;
    g.q_norm = r.q_norm;
    g.k_norm = r.k_norm;
    g.inv_freq = r.inv_freq;
    g.eps = eps;
    const int G = r.H / r.KV;
    if (tensor_cores) {
      // LG_QWEN_ATTN_TC_WARPS=2: blocks of 2 warps and 32-key tiles (44 KB, against 74 KB).
      static const int warps = lab_knob("LG_QWEN_ATTN_TC_WARPS", 4) == 2 ? 2 : 4;
      return warps == 2 ? launch_gqa_tc<DH, 2>(g, r.KV, splits, batch, s)
                        : launch_gqa_tc<DH, 4>(g, r.KV, splits, batch, s);
    }
    return launch_pdl(dev::attn_decode_gqa_kernel<DH>, dim3(r.KV, splits, batch), dim3(32 * G),
                      dev::gqa_smem_bytes<DH>(G), s, g);
  }
  const dev::DecodeAttnParams p = batch_attention_params(qkv, r, DH, table_stride, eps, scratch, counters, out, rows);
  const dim3 grid(p.H, splits, batch);
  switch (decode_attn_shape().warps) {
    case 8: return launch_pdl(dev::attn_decode_kernel<DH, true, 8, true>, grid, dim3(8 * 32), 0, s, p, pos);
    case 16: return launch_pdl(dev::attn_decode_kernel<DH, true, 16, true>, grid, dim3(16 * 32), 0, s, p, pos);
    default: return launch_pdl(dev::attn_decode_kernel<DH, true, 4, true>, grid, dim3(4 * 32), 0, s, p, pos);
  }
}

void launch_attention_decode_rope_batch(const float* qkv, const QkvRopeArgs& r, int batch, int table_stride,
                                        BatchAttnPlan plan, float eps, const int* pos, float* scratch, int* counters,
                                        bf16* out, cudaStream_t s, const int* rows) {
  check_head_dim(r.Dh);
  check_gqa(r.H, r.KV);
  const int splits = plan.splits;
  if (!qkv || !r.inv_freq || !r.cache.k || !r.cache.v || !r.block_table || !pos || !scratch || !counters || !out)
    throw Error("hand-written attention: batched decode attention with a missing buffer");
  if (r.H / r.KV > dev::kGqaMaxGroup)
    throw Error("hand-written attention: " + std::to_string(r.H / r.KV) + " query heads per KV head, at most " +
                std::to_string(dev::kGqaMaxGroup));
  if (batch < 1 || batch > 65535 || table_stride < 1 || splits < 1 || splits > kDecodeMaxSplits)
    throw Error("hand-written attention: batched decode attention of " + std::to_string(batch) + " sequences, " +
                std::to_string(splits) + " splits, block-table stride " + std::to_string(table_stride) +
                " (1..65535 sequences, 1.." + std::to_string(kDecodeMaxSplits) + " splits)");
  if (plan.form == BatchAttnForm::kTcRows) {
    if (!attention_decode_long_supports(r.H, r.KV, r.Dh))
      throw Error("hand-written attention: v10 takes 2 or 4 query heads a KV head and head_dim 64 or 128, not " +
                  std::to_string(r.H / r.KV) + " and " + std::to_string(r.Dh));
    if (plan.warps != 2 && plan.warps != 4 && plan.warps != 8)
      throw Error("hand-written attention: v10 takes blocks of 2, 4 or 8 warps, not " + std::to_string(plan.warps));
    const dev::DecodeAttnParams p =
        batch_attention_params(qkv, r, r.Dh, table_stride, eps, scratch, counters, out, rows);
    // Launched without PDL: its blocks start when the QKV projection has ended. Started early,
    // its 4-warp blocks made the step slower (bench/RESULTS.md): behind a cuBLASLt GEMM's launch
    // completion 64 sequences of 2,048 positions 10.6 -> 14.9 ms (H200, session 26), behind the
    // TMA row GEMV's early trigger 32 of 2,048 9.92 -> 11.55 ms (H100, session 30).
    // LG_QWEN_V10_CARVEOUT=PCT (lab, session 26, not yet run on a GPU): v10's preferred
    // shared-memory carveout (percent of the unified L1/shared; unset: the driver's choice), to
    // test whether v10 blocks that start on SMs configured for a cuBLASLt GEMM's shared memory
    // (LG_EARLY_AFTER_GEMM=2) lose L1 (bench/gpu-logs/session26/call10_run.sh).
    static const int carveout = lab_knob("LG_QWEN_V10_CARVEOUT", -1);
    return with_tc_rows_kernel(r.H / r.KV, r.Dh, plan.warps, [&](auto k) {
      using K = decltype(k);
      if (carveout >= 0)
        LG_CUDA_CHECK(cudaFuncSetAttribute(K::kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
      launch_maybe_pdl(false, K::kernel, dim3(r.KV, splits, batch), dim3(K::kWarps * 32), 0, s, p, pos);
    });
  }
  if (plan.form == BatchAttnForm::kRows) {
    if (!attention_decode_long_supports(r.H, r.KV, r.Dh) || (plan.heads != 2 && plan.heads != 4))
      throw Error("hand-written attention: the rows form of the batched decode attention takes 2 or 4 query heads "
                  "a KV head, head_dim 64 or 128 and 2 or 4 heads a block, not " + std::to_string(r.H / r.KV) + ", " +
                  std::to_string(r.Dh) + " and " + std::to_string(plan.heads));
    const dev::DecodeAttnParams p =
        batch_attention_params(qkv, r, r.Dh, table_stride, eps, scratch, counters, out, rows);
    return with_long_kernel<true>(r.H / r.KV, r.Dh, plan.heads, [&](auto k) {
      using K = decltype(k);
      launch_pdl(K::kernel, dim3(r.KV * K::kParts, splits, batch), dim3(K::kWarps * 32), 0, s, p, pos);
    });
  }
  const bool tc = plan.form == BatchAttnForm::kTensorCores;
  switch (r.Dh) {
    case 16:
      return attn_decode_rope_batch_as<16>(qkv, r, batch, table_stride, splits, eps, pos, scratch, counters, out, rows,
                                          tc, s);
    case 32:
      return attn_decode_rope_batch_as<32>(qkv, r, batch, table_stride, splits, eps, pos, scratch, counters, out, rows,
                                          tc, s);
    case 64:
      return attn_decode_rope_batch_as<64>(qkv, r, batch, table_stride, splits, eps, pos, scratch, counters, out, rows,
                                          tc, s);
    default:
      return attn_decode_rope_batch_as<128>(qkv, r, batch, table_stride, splits, eps, pos, scratch, counters, out, rows,
                                            tc, s);
  }
}

}  // namespace lg::qwen
