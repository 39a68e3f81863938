// Host launchers of the hand-written Qwen kernels (kernels/*.cuh). Plain C++ so the lane and the
// tests compile without nvcc. Every launcher enqueues on `stream`, checks the launch and never
// synchronises, so all of them can be captured into a graph. The decode kernels (GEMV, decode
// attention, embedding) are launched with Programmatic Dependent Launch (kernels/pdl.cuh).
// Kernel-lab knobs, read once from the environment (bench/qwen_lane.md; defaults are the measured
// best): LG_QWEN_GEMV_BPS (GEMV blocks per SM), LG_QWEN_PDL=0 (launch without PDL),
// LG_QWEN_ATTN_WARPS (4, 8 or 16 warps per decode-attention block) and LG_QWEN_ATTN_SPLIT (its
// shortest chunk of positions); for the batched decode attention LG_QWEN_ATTN_GQA=0 (v5 instead
// of v6), LG_QWEN_GQA_SPLIT (v6's shortest chunk, 128) and LG_QWEN_GQA_MAX_SPLITS (64), and
// LG_QWEN_ATTN_SOLO_GQA=1 or 2 (the single-sequence decode graph on v6 or v9 too: slower on the
// H200, v9 at 32,768 positions included); LG_QWEN_LONG_HEADS=2 (v8 with 2 of a KV head's 4
// query heads a block); LG_QWEN_SPLITK=0 (the batched decode's o_proj and down without split-K
// slices); for the row GEMV LG_QWEN_GEMV_ROWS (unset: the card's default, gemv_rows_batch_limit;
// 0: the batched decode's projections all on cuBLASLt; 1: the register form up to 16 sequences;
// 2: the TMA form up to 32), LG_QWEN_TMA_STAGES (2, 3, 4, 8),
// LG_QWEN_TMA_KHALVES=1 (8 consumer warps a block), LG_QWEN_ROWS_SLICES=0 (o_proj and down sum
// their own K splits), LG_QWEN_ROWS_ATOMIC_SPLITS=1 (the splits add atomically: not
// deterministic), LG_QWEN_GEMV_ROWS_BPS and LG_QWEN_GEMV_ROWS_SPLITS; LG_QWEN_ROPE_WARP=0 (the
// rows path's RoPE/KV kernel a block per (token, head)), LG_QWEN_SWIGLU_VEC=0 (a pair a thread)
// and LG_QWEN_GU_BF16=0 (the gate/up GEMM's product in f32, gate_up_in_bf16).
// Shapes are element counts; "bf16" is __nv_bfloat16, row-major everywhere.
// The KV cache is paged (KvPages below, kernels/paged.cuh): kernels find a position's row through
// the sequence's block table; block sizes are powers of two.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace lg::qwen {

using bf16 = __nv_bfloat16;

/// What the GEMV does before the dot products.
enum class GemvInput {
  kRmsNorm,  ///< x_f32 [K] -> rms_norm(x, norm_w [K] f32, eps) rounded to bf16
  kBf16,     ///< in_bf16 [K] used as is
};
/// What it does with y = W x.
enum class GemvOutput {
  kStore,        ///< out_f32[N] = y
  kResidual,     ///< out_f32[N] += y
  kSwiGLU,       ///< out_bf16[N/2], i-th = silu(y[2i]) * y[2i+1]
  kStoreArgmax,  ///< out_f32[N] = y and *argmax_out = argmax(y), lowest index on a tie (the LM head)
};

/// One layer's paged KV cache: K and V pools bf16 [KV, rows, Dh], rows = num_blocks * block_size.
/// Position p of a sequence whose block table is bt (device ints) lives at row
/// bt[p / block_size] * block_size + p % block_size of each KV head. The attention launchers
/// throw lg::Error for a block size that is not a power of two dividing rows.
struct KvPages {
  bf16* k = nullptr;
  bf16* v = nullptr;
  int rows = 0;        ///< pool rows per KV head, 1 .. 2^31 - 1
  int block_size = 0;  ///< positions per block, a power of two
};

/// What the decode attention does to the raw QKV projection of one token at position *pos0
/// (launch_attention_decode_rope): q/k/v bias, qk-norm, RoPE and the KV-cache write, as
/// launch_rope_kv does for prefill (same fields, same math).
struct QkvRopeArgs {
  const float* bias = nullptr;      ///< f32 [(H+2KV)*Dh] or null (Qwen2 only)
  const float* q_norm = nullptr;    ///< f32 [Dh] or null (Qwen3 only)
  const float* k_norm = nullptr;    ///< f32 [Dh] or null
  const float* inv_freq = nullptr;  ///< f32 [Dh/2]
  int H = 0, KV = 0, Dh = 0;
  int max_seq = 0;                  ///< longest sequence the launch must serve (sizes the split grid)
  KvPages cache;                    ///< this layer's pools
  const int* block_table = nullptr; ///< device ints: the sequence's blocks, covering positions 0 .. *pos0
};

/// Layout of the GEMV's cross-block sync area (ints; `sync` below): the block counter and the
/// per-block partial maxima of kStoreArgmax. The area must be zero-filled once before its first
/// launch; every launch leaves its counter at zero again.
constexpr int kGemvMaxBlocks = 1024;  ///< the persistent grid never has more blocks
constexpr int kGemvSyncArgmaxCounter = 0;
constexpr int kGemvSyncArgmaxValues = 1;
constexpr int kGemvSyncArgmaxIndices = kGemvSyncArgmaxValues + kGemvMaxBlocks;
constexpr int kGemvSyncInts = kGemvSyncArgmaxIndices + kGemvMaxBlocks;

/// Inputs of one GEMV launch. W bf16 [N, K]; N even; K a multiple of 8 and at most kGemvMaxK.
struct GemvArgs {
  const bf16* W = nullptr;
  int N = 0, K = 0;
  const float* x_f32 = nullptr;
  const bf16* in_bf16 = nullptr;
  const float* norm_w = nullptr;
  float eps = 0.f;  ///< of the RMSNorm prologue (config rms_norm_eps)
  float* out_f32 = nullptr;
  bf16* out_bf16 = nullptr;
  int* argmax_out = nullptr;  ///< kStoreArgmax only: device int
  int* sync = nullptr;        ///< kStoreArgmax: kGemvSyncInts device ints (see above)
  int blocks_per_sm = 0;      ///< persistent grid size per SM; 0 = the tuned default (kernels.cu)
};

/// Largest K the GEMV accepts (its input vector lives in shared memory as bf16, under the 48 KB default limit).
constexpr int kGemvMaxK = 20480;

/// y = W x with the chosen prologue and epilogue (kernels/gemv.cuh), launched with Programmatic
/// Dependent Launch (its weight loads may start while the previous kernel in the stream runs).
/// Throws lg::Error on an unsupported N/K or missing kStoreArgmax fields.
void launch_gemv(GemvInput in, GemvOutput out, const GemvArgs& a, cudaStream_t stream);

/// What the tensor-core GEMV of a few rows (launch_gemv_rows) does with y[t, n] = sum_k x[t, k] W[n, k].
enum class GemvRowsOutput {
  kStore,     ///< out_f32[t, n] = y (one K split: every output is written by one warp)
  kResidual,  ///< out_f32[t, n] += y (K splits summed in split order); with out zeroed first, a store
  kSwiGLU,    ///< out_bf16[t, i] = bf16(silu(y[t, 2i]) * y[t, 2i+1]) (one K split)
  /// partials[s, t, n] = split s's share of y: the K splits' sums left for the next kernel to add
  /// in split order (launch_rmsnorm_rows_add), so no launch waits on another's tail
  kSlices,
};

/// Most rows launch_gemv_rows takes: 32 in the TMA form (four mma n-tiles of 8), 16 in the
/// register form (gemv_rows_max_t).
constexpr int kGemvRowsMaxT = 32;
/// Most rows the register form takes (two mma n-tiles of 8: its registers hold both).
constexpr int kGemvRowsRegistersMaxT = 16;
/// Most K splits a kResidual launch takes (the TMA form's choice reaches 16 at the 0.6B shape:
/// N = 1,024 gives 16 tiles of 64 rows for 264 blocks).
constexpr int kGemvRowsMaxSplits = 16;
/// Floats of GemvRowsArgs::partials that let kResidual launches of up to T rows and N outputs take
/// any split count, and ints of its arrivals.
inline size_t gemv_rows_partials_floats(int T, int N) {
  return static_cast<size_t>(kGemvRowsMaxSplits) * static_cast<size_t>(T) * static_cast<size_t>(N);
}
inline size_t gemv_rows_arrival_ints(int N) { return static_cast<size_t>(N / 16); }

/// How launch_gemv_rows feeds the tensor cores.
enum class GemvRowsForm {
  kDefault,    ///< the knob's form (gemv_rows_form())
  kRegisters,  ///< kernels/gemv_rows.cuh: each lane's 16-byte W loads in registers
  kTma,        ///< kernels/gemv_rows_tma.cuh: a producer thread's TMA boxes into a ring of stages
};

/// Inputs of one launch_gemv_rows. W bf16 [N, K] row-major, N a multiple of 16, K a multiple of 8;
/// x bf16 [T, K] row-major, 1 <= T <= gemv_rows_max_t(form); out_f32 [T, N] or out_bf16 [T, N/2]. x and
/// the outputs are 16-byte aligned (cudaMalloc'd buffers and row offsets of them are).
struct GemvRowsArgs {
  const bf16* W = nullptr;
  int N = 0, K = 0, T = 0;
  const bf16* x = nullptr;
  float* out_f32 = nullptr;
  bf16* out_bf16 = nullptr;
  /// Optional: zero-filled after the kernel's PDL wait, clear_n floats (a multiple of 4, 16-byte
  /// aligned), for a later kResidual launch that stores: it must be no input or output of this
  /// launch, and no kernel before this one may still need it (they have all finished by then).
  float* clear = nullptr;
  size_t clear_n = 0;
  /// kResidual's K splits need both: partials f32 [splits, T, N] (each split's sums) and arrivals
  /// int [N / 16] (zero before the first launch; every launch leaves them zero). The last split of
  /// a 16-row tile to arrive adds the partials in split order, so the result is the same bits run
  /// to run whatever order the blocks finish in. Without them a kResidual launch takes one split.
  /// kSlices writes its output into partials (no arrivals), as many splits as it holds.
  float* partials = nullptr;
  size_t partials_n = 0;
  int* arrivals = nullptr;
  size_t arrivals_n = 0;
  int blocks_per_sm = 0;  ///< kRegisters: persistent grid per SM, 1..4; 0 = default (knob LG_QWEN_GEMV_ROWS_BPS, 4)
  /// kResidual's and kSlices' K splits; 0 = the launcher's choice (knob LG_QWEN_GEMV_ROWS_SPLITS),
  /// at most what partials holds and kGemvRowsMaxSplits.
  int splits = 0;
  GemvRowsForm form = GemvRowsForm::kDefault;
  int max_blocks = 0;  ///< kTma: at most this many blocks (0: as many as fit); tests make blocks loop over items
  /// kTma: consumer warps a block, 4 (one a 16-row MMA tile) or 8 (two, each half of a stage's k);
  /// 0 = the knob's (LG_QWEN_TMA_KHALVES=1: 8, else 4)
  int consumer_warps = 0;
};

/// y = x W^T for a few rows on tensor cores (W streamed once, mma.sync m16n8k16 bf16 with fp32
/// accumulation, split-K for small N), launched with Programmatic Dependent Launch; a.form picks
/// how W arrives: 16-byte loads into registers (kernels/gemv_rows.cuh, T <= 16) or TMA boxes
/// into shared memory (kernels/gemv_rows_tma.cuh, T <= 32). Deterministic: K splits are summed
/// in a fixed order (GemvRowsArgs::partials). Throws lg::Error on an unsupported shape (see
/// gemv_rows_supports), T past the form's rows, a missing pointer, a bad `clear`, or forced splits
/// without room for their partials. Returns the K splits it ran (kSlices: the slices written).
int launch_gemv_rows(GemvRowsOutput out, const GemvRowsArgs& a, cudaStream_t stream);
/// Whether launch_gemv_rows takes W [N, K]: N a positive multiple of 16, K a positive multiple of 8.
bool gemv_rows_supports(int N, int K);
/// The largest batch bucket whose batched decode graph runs its projections on launch_gemv_rows
/// (the hand-written lane; larger buckets, and every bucket at 0, on cuBLASLt). Knob
/// LG_QWEN_GEMV_ROWS: 0 = none, 1 = the register form up to 16, 2 = the TMA form up to 32; unset,
/// the card's default: the TMA form up to 16 on an H100 or H200, none elsewhere. Why
/// (bench/RESULTS.md, 8B / 0.6B step ms at 2 / 8 / 16 / 32 sequences of 512 positions, TMA form
/// against cuBLASLt): H100, thirty-fifth session (K splits summed in a fixed order, o_proj's and
/// down's by the next RMSNorm): 8B 5.98 / 6.16 / 6.48 / 7.41 against 6.40 / 6.68 / 6.95 / 7.57,
/// 0.6B 1.16 / 1.32 / 1.58 / 2.13 against 1.19 / 1.35 / 1.59 / 1.92 (so not at 32). H200,
/// fortieth session (that form; 4 stages at 2-8 rows, 3 at 16, as tma_stages picks): 8B 4.64 /
/// 4.85 / 5.11 / 5.95 against 4.77 / 5.17 / 5.25 / 5.68, 0.6B 1.02 / 1.16 / 1.38 / 1.82 against
/// 1.06 / 1.18 / 1.38 / 1.63 (the thirty-first session's form, 8 stages and atomic split sums,
/// lost there at 2-8: 5.96 / 6.14). (The register form streams W at 1.8-2.2 TB/s on the H200,
/// sixth session: B = 2..16 steps took 8.6-9.0 ms against cuBLASLt's 5.6-5.7.)
int gemv_rows_batch_limit();
/// The form launch_gemv_rows takes for GemvRowsForm::kDefault: kRegisters when
/// LG_QWEN_GEMV_ROWS=1, else kTma (the kernel tests' and LG_QWEN_GEMV_ROWS=2's form).
GemvRowsForm gemv_rows_form();
/// Most rows a launch of this form takes (kDefault: the knob's form): 16 registers, 32 TMA.
int gemv_rows_max_t(GemvRowsForm form);

/// h[t] = bf16(rms_norm(x[t], w, eps)) for t < T; x f32 [T, D], w f32 [D], h bf16 [T, D].
/// pdl: launched with Programmatic Dependent Launch (the kernel waits for the previous one before
/// reading x, and lets the next one's blocks start early: the batched decode, before launch_gemv_rows
/// and behind a cuBLASLt GEMM, where cuda::note_untriggered_launch lets its blocks start early).
void launch_rmsnorm_rows(const float* x, const float* w, int T, int D, float eps, bf16* h, cudaStream_t stream,
                         bool pdl = false);
/// The same over chosen rows: h[b] = bf16(rms_norm(x[rows[b]], w, eps)) for b < B; rows device
/// int [B] (each a row of x); h bf16 [B, D].
void launch_rmsnorm_gather(const float* x, const int* rows, const float* w, int B, int D, float eps, bf16* h,
                           cudaStream_t stream);
/// The residual add of a split-K GEMM (cuda::LtGemm::matmul_split), then launch_rmsnorm_rows:
/// x[t] += parts[0][t] + ... + parts[nparts-1][t] (in that order), written back, and h[t] =
/// bf16(rms_norm(x[t], w, eps)). parts f32 [nparts, T, D]: cuBLASLt's split-K slices or the row
/// GEMV's (GemvRowsOutput::kSlices). Launched with PDL (the batched decode, behind the split-K
/// GEMM). Throws lg::Error unless 1 <= nparts <= kGemvRowsMaxSplits.
void launch_rmsnorm_rows_add(float* x, const float* parts, int nparts, const float* w, int T, int D, float eps, bf16* h,
                             cudaStream_t stream);
/// Split-K slices of the batched decode step's o_proj (`down` false, K = H * Dh) and down (K = F)
/// GEMMs for a bucket of Bp rows: cuda::LtGemm::matmul_split's S, the RMSNorm after each summing
/// the slices (launch_rmsnorm_rows_add); 1: the plain GEMM accumulating into the residual. From
/// the split-K lab's best slices at the 8B shape, 16-128 rows (bench/RESULTS.md, eleventh
/// session): 4 and 3 up to 64 rows, 2 and 2 up to 128, none past (not measured); fewer where K
/// does not split into multiples of 8. LG_QWEN_SPLITK=0 (lab knob) gives 1 everywhere.
int decode_gemm_slices(int K, int Bp, bool down);
/// Most slices decode_gemm_slices returns.
inline constexpr int kMaxDecodeSlices = 4;

/// Bias + qk-norm + RoPE + KV-cache write (kernels/rope_kv.cuh) for T tokens of any sequences.
/// qkv f32 [T, (H+2KV)*Dh]; bias f32 [(H+2KV)*Dh] or null; q_norm/k_norm f32 [Dh] or null;
/// inv_freq f32 [Dh/2]; pos device int [T] (each token's position, for RoPE); slot device int
/// [T] (each token's pool row, 0 .. cache.rows - 1, where its K/V go); q_out f32 [T, H, Dh].
/// Dh <= 256, even. T == 0 launches nothing.
void launch_rope_kv(const float* qkv, const float* bias, const float* q_norm, const float* k_norm,
                    const float* inv_freq, const int* pos, const int* slot, float eps, int T, int H, int KV, int Dh,
                    const KvPages& cache, float* q_out, cudaStream_t stream);

/// Floats of scratch the split-KV decode attention needs for H query heads of head_dim Dh.
size_t decode_attention_scratch_floats(int H, int Dh);

/// Decode attention of one query at position *pos0 over the sequence's positions 0..*pos0 in the
/// paged pool (causal GQA, split-KV; one block per head while the context fits one chunk, else the
/// last split of a head to finish merges the splits: one launch, PDL).
/// q f32 [H, Dh]; block_table device ints covering positions 0..*pos0; *pos0 < max_seq (the
/// split grid is sized for max_seq); scratch f32 [decode_attention_scratch_floats]; counters: H
/// device ints, zero-filled once before the first launch (each launch leaves them at zero); out
/// bf16 [H * Dh]. Dh in {16, 32, 64, 128}.
void launch_attention_decode(const float* q, const KvPages& cache, const int* block_table, const int* pos0, int H,
                             int KV, int Dh, int max_seq, float* scratch, int* counters, bf16* out,
                             cudaStream_t stream);

/// The decode step's attention fed by the raw QKV projection (v3): launch_attention_decode, with
/// what launch_rope_kv does for this one position done inside it. Every block forms its query
/// head from qkv (bias, qk-norm, RoPE in fp32); the blocks whose split holds position *pos0 form
/// the KV head's key and value there too (rounded to bf16, as the cache holds them) and use them
/// for that position, and the one of the KV head's first query head writes them into the caches.
/// So the QKV GEMV before it is a plain store. qkv f32 [(H+2KV)*Dh]; scratch, counters, out as
/// launch_attention_decode. Dh in {16, 32, 64, 128}. *pos0 and the block table are read before
/// the PDL wait: they must be written by the host or at least two launches before this one.
void launch_attention_decode_rope(const float* qkv, const QkvRopeArgs& rope, float eps, const int* pos0,
                                  float* scratch, int* counters, bf16* out, cudaStream_t stream);

/// Whether launch_attention_decode_rope_long has its own kernel for this shape: H / KV in {2, 4}
/// query heads per KV head and Dh in {64, 128} (Qwen3 0.6B-8B, Qwen2.5 0.5B-7B).
bool attention_decode_long_supports(int H, int KV, int Dh);

/// launch_attention_decode_rope's math with a block per (KV head, split) instead of per (query
/// head, split): each K/V row is read once for the H / KV query heads that share it (v8,
/// kernels/attention_decode_long.cuh; LG_QWEN_LONG_HEADS=2: a block per pair of them at a group
/// of 4), for long contexts, where those rows are most of a step's bytes. Same arguments, buffers
/// and PDL contract (counters: one per block of a split, at most H). A shape
/// attention_decode_long_supports refuses goes to launch_attention_decode_rope.
void launch_attention_decode_rope_long(const float* qkv, const QkvRopeArgs& rope, float eps, const int* pos0,
                                       float* scratch, int* counters, bf16* out, cudaStream_t stream);

/// Splits of each sequence's positions in a batched decode attention launch of v6 or v9: enough
/// that chunks of the kernel's split length cover max_len (the step's longest sequence), at most
/// kDecodeMaxSplits, and no more than keep about two waves of blocks busy once the batch's
/// sequences x heads are there already (a batch brings its own parallelism; every split adds a
/// partial to merge).
int decode_attention_batch_splits(int H, int KV, int batch, int max_len);

/// The kernel of a batched decode attention launch (decode_attention_batch_plan).
enum class BatchAttnForm {
  kTiles,        ///< v6 (kernels/attention_decode_gqa.cuh): K/V tiles through shared memory
  kTensorCores,  ///< v9 (attention_decode_gqa_tc.cuh): v6's blocks, scores and P V on the tensor cores
  kRows,         ///< v8 over the batch (attention_decode_long.cuh): K/V rows in registers, 16-byte slices
  kTcRows,       ///< v10 (attention_decode_tc_rows.cuh): a block a KV head, K/V fragments from the cache
                 ///< into the tensor cores, each warp streaming its own tiles
};
/// A batched decode attention launch: its kernel and the splits of each sequence's positions.
struct BatchAttnPlan {
  BatchAttnForm form = BatchAttnForm::kTiles;
  int splits = 1;
  int heads = 2;  ///< kRows: query heads a block (4 at a group of 4 and head_dim 128, else 2); kTcRows: the group
  int warps = 8;  ///< kTcRows: warps a block, 8 (one block an SM) or 4 (two)
  // (kernels.cu is C++17: no operator<=>) the decode graphs' map key
  bool operator<(const BatchAttnPlan& o) const {
    return form != o.form     ? form < o.form
           : splits != o.splits ? splits < o.splits
           : heads != o.heads   ? heads < o.heads
                                : warps < o.warps;
  }
  bool operator==(const BatchAttnPlan& o) const {
    return form == o.form && splits == o.splits && heads == o.heads && warps == o.warps;
  }
};
/// The plan of a batched decode attention launch of `batch` sequences whose longest has max_len
/// positions; split_len (>= max_len: a decode graph's power-of-two bucket of it, so that one
/// graph serves a range of lengths) sizes the splits. Where v8 serves the shape
/// (attention_decode_long_supports):
///   - kRows with pairs of query heads a block while the batch's (sequence, KV head, pair) blocks
///     fit one wave, then with as many as a block takes (all 4 of a group of 4 at head_dim 128)
///     up to two waves of blocks;
///   - past that v6 or v9 as below, but kRows where v9 would run at a group of 2;
///   - kTcRows (v10) instead of kRows at a group of 4 and head_dim 128 for 16-64 sequences with
///     split_len >= 2,048, 8 warps a block while the (sequence, KV head) items fit one an SM,
///     else 4 (LG_QWEN_ATTN_V10=0: never; 2: wherever kRows would run).
/// Otherwise (and with LG_QWEN_ATTN_ROWS=0; =2 takes kRows everywhere it serves):
///   - kTensorCores (v9) when v6's splits are one and max_len >= 512 (LG_QWEN_ATTN_TC=0: never;
///     2: always);
///   - kTiles (v6) at decode_attention_batch_splits.
/// Measured on the H200 (bench/RESULTS.md, eighteenth session), decode step ms against v6/v9:
/// 8B at 16 sequences of 512 positions 5.55 -> 5.30 (pairs), 32: 6.23 -> 5.88, 64: 7.32 ->
/// 7.15 (all 4); at 128, four waves, v9 is 11% quicker (8.53 against 9.59). 0.6B: 2-20% quicker
/// at 16-64 sequences, 3-5% at 128 sequences of 512-1,024 positions (where v9 ran). v10 against
/// kRows (session 24): 8B at 16 sequences 5.79 -> 5.72 ms at 1,024 positions, 6.59 -> 6.29 at
/// 2,048; 64 sequences 10.82 -> 10.51 at 2,048; at or below 1,024 positions up to 1.3% slower.
BatchAttnPlan decode_attention_batch_plan(int H, int KV, int Dh, int batch, int split_len, int max_len);
/// Most splits decode_attention_batch_splits returns.
constexpr int kDecodeMaxSplits = 128;
/// Floats of scratch launch_attention_decode_rope_batch needs for up to max_batch sequences.
size_t decode_attention_batch_scratch_floats(int H, int KV, int Dh, int max_batch);

/// The batched decode step's attention: launch_attention_decode_rope's math for `batch` sequences
/// of one decode token each in one launch, by plan.form (BatchAttnForm: v6, v9, v8's rows form or v10;
/// v5 with LG_QWEN_ATTN_GQA=0, a block per (query head, split, sequence)). Sequence b's raw
/// projection is row b of qkv f32 [batch, (H+2KV)*Dh], its position pos[b] (device ints), its
/// block table row b of rope.block_table (table_stride ints apart), its output row b of out bf16
/// [batch, H*Dh]. plan from decode_attention_batch_plan for a max_len at least every pos[b] + 1 (a
/// sequence longer than splits * chunk still gets every key: chunks grow with the length);
/// scratch f32 [decode_attention_batch_scratch_floats(H, KV, Dh, batch)]; counters batch * H device
/// ints, zero-filled once (each launch leaves them at zero). rope.max_seq is unused.
/// rows (device ints [batch], or null: entry b is row b): entry b reads row rows[b] of qkv and
/// writes row rows[b] of out (the rows of a step's tokens, HandwrittenQwenLane::run_rows), while
/// its position pos[b], block-table row b, partials and counters stay per entry; it writes the
/// K/V of its position as always (where launch_rope_kv put the same values already: idempotent).
/// Throws lg::Error for more than 16 query heads per KV head, a batch, split count or stride out
/// of range, or kRows at a shape attention_decode_long_supports refuses.
void launch_attention_decode_rope_batch(const float* qkv, const QkvRopeArgs& rope, int batch, int table_stride,
                                        BatchAttnPlan plan, float eps, const int* pos, float* scratch, int* counters,
                                        bf16* out, cudaStream_t stream, const int* rows = nullptr);

/// Attention of a ragged batch (kernels/attention.cuh): token t of sequence seq[t] at position
/// pos[t] sees positions 0 .. pos[t] of that sequence (causal GQA). q f32 [T, H, Dh];
/// block_table device int [B, table_stride] (row seq[t] covers positions 0 .. pos[t]); seq, pos
/// device int [T]; out bf16 [T, H * Dh]. Dh in {16, 32, 64, 128}. T == 0 launches nothing.
/// tokens (device ints [T], or null: tokens 0 .. T-1): do only these tokens, each an index into
/// q, seq, pos and out (then as long as the step's tokens; rows of out not listed are left as they are).
void launch_attention_ragged(const float* q, const KvPages& cache, const int* block_table, int table_stride,
                             const int* seq, const int* pos, int T, int H, int KV, int Dh, bf16* out,
                             cudaStream_t stream, const int* tokens = nullptr);

/// out[b] = argmax of logits[b, 0 .. V-1] for b < B (lowest index on a tie, NaN never wins, all
/// NaN: 0); logits f32 [B, V]; out device (or mapped host) int [B]. Launched with PDL, so behind
/// the LM head's cuBLASLt GEMM in a decode graph its blocks start early
/// (cuda::note_untriggered_launch).
void launch_argmax_rows(const float* logits, int B, int V, int* out, cudaStream_t stream);

/// act[i] = silu(gu[2i]) * gu[2i+1] for i < n; gu f32 [2n], act bf16 [n]. Launched with PDL (as
/// launch_argmax_rows, behind the gate/up GEMM).
void launch_swiglu(const float* gu, size_t n, bf16* act, cudaStream_t stream);

/// launch_swiglu of a bf16 gate/up product (cuda::LtGemm::matmul_bf16): gu bf16 [2n], 16-byte
/// aligned; act bf16 [n], 8-byte aligned (throws lg::Error otherwise). PDL launch.
void launch_swiglu_bf16(const bf16* gu, size_t n, bf16* act, cudaStream_t stream);

/// Whether the cuBLASLt steps (prefill, mixed and batched decode past the row GEMV) write the
/// gate/up product in bf16 for launch_swiglu_bf16 (default) rather than f32 for launch_swiglu
/// (lab knob LG_QWEN_GU_BF16=0).
bool gate_up_in_bf16();

/// x[t] = f32(table[tokens[t]]) for t < T; table bf16 [V, D]; tokens device int [T]. PDL launch.
void launch_embed(const bf16* table, const int* tokens, int T, int D, float* x, cudaStream_t stream);
/// The decode step's embedding (one token): token id and position read from mapped pinned host
/// memory (the device pointers of cudaHostAlloc'd ints the host writes before launching), the
/// position copied to device memory at pos_dev for the step's later kernels; x f32 [D]. PDL launch.
void launch_embed_decode(const bf16* table, const int* token_mapped, const int* pos_mapped, int* pos_dev, int D,
                         float* x, cudaStream_t stream);

/// dst = bf16(src), n elements.
void launch_f32_to_bf16(const float* src, size_t n, bf16* dst, cudaStream_t stream);
/// dst [2*rows, K] = rows of gate [rows, K] and up [rows, K] interleaved (gate_0, up_0, ...). K % 8 == 0.
void launch_interleave_rows(const bf16* gate, const bf16* up, size_t rows, size_t K, bf16* dst, cudaStream_t stream);

}  // namespace lg::qwen
