// Attention stages (the prefill form's kernels: attention_prefill.cpp). Decode rows (T = 1, a step
// of one token per sequence) and every step the prefill form does not take (ragged batches; any head_dim): the split-KV kernel (flash-decoding, below;
// program.h, SplitKv), in a second form for steps of many rows on the tensor cores (lg_dmma,
// src/kernels/decode_attention_mma.cuh; LaunchPlan::wide). At T > 1 with head_dim 16/32/64/128
// for one sequence:
// lg_fa::attention_block (src/kernels/flash_attention.cuh, tensor cores) through one of the device
// prelude's policies, with q and the K/V cache rows first packed as bf16 when k and v are
// contiguous cache rows. A sliding window (Attrs::window) bounds the keys both read: the split-KV
// kernel's chunks cover only the token's last `window` positions (and its splits are sized by the
// window), the flash kernel starts at the first key tile inside the block's windows, and the K/V
// pack copies from the first row a window of the step reaches. Soft-capping (Attrs::softcap) is
// C * tanh(scale * q.k / C) on each score in both.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>

#include "emit/cuda/expr.h"
#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* e = std::getenv(name);
  return e && *e ? std::max<int64_t>(1, std::atoll(e)) : fallback;
}

/// The split-KV kernel's shape, from the head dim, the GQA group and how K/V can be read.
struct SplitShape {
  bool rows = false;  ///< K/V read as 16-byte pieces of bf16 cache rows (else through the lambdas)
  int64_t ne = 0;     ///< elements of a row one lane holds
  int64_t lk = 0;     ///< lanes per key (32 / lk keys side by side in a warp)
  int64_t r = 0;      ///< key steps a warp loads together (all K and V loads in flight at once)
  int64_t qg = 0;     ///< query heads per block: a divisor of the GQA group
  bool mma = false;   ///< the tensor-core form: qg = the group, lg_dmma::kWarps warps (ne, lk, r unused)
  bool q_smem = false;  ///< the queries read from shared memory at each use, not held (one-row form)
  int64_t blocks_per_sm = 0;  ///< __launch_bounds__ and the runner's split target (0: two, the default)
  static constexpr int64_t kWarps = 8;
  static constexpr int64_t kMmaWarps = 2;         ///< lg_dmma::kWarps (the emitted kernel static_asserts it)
  static constexpr int64_t kMmaTileKeys = 32;     ///< lg_dmma::kTileKeys
  static constexpr int64_t kMmaBlocksPerSm = 4;   ///< the runner's split target (5 fit an SM)
  static constexpr int64_t kOneRowBlocksPerSm = 3;  ///< the one-row form: 80 registers a thread
};

SplitShape split_shape(int64_t Dh, int64_t group, bool bf16_rows, bool wide, bool one_row) {
  SplitShape sh;
  // The tensor-core form (src/kernels/decode_attention_mma.cuh): every query head of a KV head as
  // a row of the mma's A operand, K/V tiles of bf16 cache rows through shared memory.
  sh.mma = wide && wide_attention_form() != WideAttentionForm::kHeads && bf16_rows && Dh % 16 == 0 && Dh <= 128 &&
           group <= 16;
  if (sh.mma) {
    sh.rows = true;
    sh.qg = group;
    return sh;
  }
  // 16-byte loads of 8 bf16 when the rows are bf16 cache rows and Dh / 8 lanes tile a warp; each
  // lane then holds 8 contiguous elements, and 32 / (Dh / 8) keys share one warp-wide load (fewer
  // shuffles per key: log2(Dh / 8) steps, not 5).
  sh.rows = bf16_rows && Dh % 8 == 0 && 32 % (Dh / 8) == 0;
  sh.ne = sh.rows ? 8 : (Dh + 31) / 32;
  sh.lk = sh.rows ? Dh / 8 : 32;
  const int64_t kpw = 32 / sh.lk;
  // About 8 keys per warp per round, with the raw K/V of a round in at most 32 registers.
  sh.r = sh.rows ? std::clamp<int64_t>(8 / kpw, 1, 4) : std::clamp<int64_t>(16 / sh.ne, 1, 8);
  // q and the accumulators of the block's heads take 2 * qg * ne registers; 32 keeps a thread
  // under the 128 that lets two blocks share an SM (__launch_bounds__(256, 2)). The wide form
  // (many rows, bf16 cache rows) takes up to 4 heads of 8 elements a lane (64 registers) with the
  // round's raw K/V halved (r / 2), ptxas spilling 12 bytes at the 8B shape: each K/V row then
  // serves 4 query heads, not 2. H200, 8B shape, ms a step (bench/RESULTS.md, sixteenth session,
  // call 3): 128 sequences of 512 positions 12.21 -> 11.72, 64 of 1,024 10.31 -> 9.90; but 16 of
  // 512 5.78 -> 5.94 and one sequence +2% (across calls), not profiled: half the items get twice
  // the splits from the runner, so as many blocks each stream half the keys (for twice the
  // heads) with half the loads in flight, and more partials merge.
  // Lab knobs: LG_COMPILED_ATTN_QNE=N bounds qg * ne by N in both forms, LG_COMPILED_ATTN_R=N sets r.
  const int64_t qne = env_int("LG_COMPILED_ATTN_QNE", wide && sh.rows ? 32 : 16);
  sh.qg = 1;
  for (int64_t d = 1; d <= group; ++d)
    if (group % d == 0 && d * sh.ne <= qne) sh.qg = d;
  if (sh.qg * sh.ne > 16) sh.r = std::max<int64_t>(1, sh.r / 2);
  sh.r = env_int("LG_COMPILED_ATTN_R", sh.r);
  // The one-row form (one sequence's decode, where a long context gives each block long chunks):
  // the queries read from shared memory at each use free 16 registers, and at 80 a thread three
  // blocks share an SM: half as many warps again keep loads in flight. H200, 8B, one sequence of
  // 32,768 positions 6.03-6.05 -> 5.90-5.92 ms (512 positions: no change); at many rows it loses
  // (16 sequences of 512 positions +2.7%; not profiled), hence its own
  // launch. Only where a KV head's query heads span several blocks (group > qg: Qwen3-8B's 4 in
  // blocks of 2): at Qwen3-0.6B's group of 2, one block a KV head, it lost 1.4% at 512 positions
  // and 2% at 32,768, a measured rule, not one we can explain yet (bench/RESULTS.md, session 21).
  // LG_COMPILED_ATTN_ONE_ROW=1 makes it wherever the rows form is (tests: the 22M model's group
  // of 2), =0 nowhere.
  const bool one_row_off = knob_off("LG_COMPILED_ATTN_ONE_ROW");
  const bool one_row_forced = !one_row_off && env_int("LG_COMPILED_ATTN_ONE_ROW", 0) == 1;
  if (one_row && sh.rows && !one_row_off && (group > sh.qg || one_row_forced)) {
    sh.q_smem = true;
    sh.blocks_per_sm = SplitShape::kOneRowBlocksPerSm;
  }
  return sh;
}

void key_loop(std::ostringstream& os, const SplitShape& sh, const std::string& Q, const std::string& K,
              const std::string& V, const std::string& kbase, const std::string& vbase, int64_t head_stride,
              const std::function<std::string(const std::string&, double)>& capped);
void split_kv_tail(std::ostringstream& os, const std::string& out);

}  // namespace

WideAttentionForm wide_attention_form() {
  const char* e = std::getenv("LG_COMPILED_ATTN_WIDE_FORM");
  const std::string v = e ? e : "";
  if (v == "heads") return WideAttentionForm::kHeads;
  return v == "mma" ? WideAttentionForm::kMmaAlways : WideAttentionForm::kMma;
}

// Flash-decoding (Dao et al. 2023, "Flash-Decoding for long-context inference"; FlashAttention's
// split-KV): block (item, split) takes the split-th chunk of item's token's positions counted back
// from its own, for the qg query heads of item that read one KV head, so each K/V row is loaded
// once for all of them. Within a chunk, warp w takes keys in rounds of (32 / lk) * r: lane group
// `sub` (lk lanes, each `ne` elements of the row) key j0 + r' * (32 / lk) + sub of each of the r
// steps, every K and V load of the round issued before the math. Each lane group keeps an online
// softmax per head (Milakov & Gimelshein 2018); the groups of a warp merge with shuffles, the warps
// of a block in shared memory. One chunk: the block writes the output. More: each writes its
// partial (unnormalised output, max, sum) to lg_part and the last block of the item to finish (an
// atomic count in lg_count, reset to 0 by that block: graphs replay) merges them in batches of 8
// (the loads of a batch in flight together). The chunk length comes from the token's own position
// on the device, so a launch of any number of splits serves every context; the runner picks the
// splits (SplitKv) so that short contexts leave most blocks empty (they exit after one read).
SplitKv Renderer::attention_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  ir::ValueId att = st.nodes.at(0);
  const ir::Node& n = g.at(att);
  const auto& qs = g.at(n.operands[0]).shape;
  const auto& ks = g.at(n.operands[1]).shape;  // [KV, rows, Dh]
  const int64_t H = qs[1].coeff, Dh = qs[2].coeff, G = n.attrs.gqa_group;
  const bool paged = n.operands.size() == 6;
  auto nodes = closure(s);
  auto name = lambdas(s, nodes, os, {});
  const std::string Q = name.at(n.operands[0]), K = name.at(n.operands[1]), V = name.at(n.operands[2]),
                    P = name.at(n.operands[3]);
  // The cache behind k (a reshape of a layer slice of a state, or of a version a write made of it).
  ir::ValueId cache = n.operands[1];
  for (;;) {
    const ir::Op op = g.at(cache).op;
    if (op == ir::Op::Reshape || op == ir::Op::Slice || op == ir::Op::StateWrite) cache = g.at(cache).operands[0];
    else break;
  }
  const std::string kbase = state_slice_base(n.operands[1]), vbase = state_slice_base(n.operands[2]);
  const SplitShape sh = split_shape(Dh, G, !kbase.empty() && !vbase.empty() && bf16_state(g.at(cache)),
                                    attention_wide, attention_one_row);
  const int64_t NW = sh.mma ? SplitShape::kMmaWarps : SplitShape::kWarps, KPW = sh.mma ? 1 : 32 / sh.lk,
                QG = sh.qg, items = H / QG;
  // Shared memory: each warp's partial per head (sizes a block's heads and warps, 16 KB at Dh 128),
  // beside the staged queries (QG * Dh floats) and the tail's few words: under 48 KB.
  if (!sh.mma && NW * QG * Dh * 4 > 40 * 1024)
    throw Error("emit: attention with head_dim " + std::to_string(Dh) + " needs more than 40 KB of shared memory");
  wc.push_back(items);
  wp.push_back(1);
  SplitKv split;
  split.items_per_row = items;
  split.heads_per_item = QG;
  split.part_floats = H * (Dh + 2);
  // Two rounds of the block's warps; the mma form four tiles (v9's shortest chunk: below it a
  // block's fixed costs, its queries and the pipeline's fill, outweigh its keys).
  split.min_chunk = sh.mma ? 4 * SplitShape::kMmaTileKeys : 2 * NW * KPW * sh.r;
  split.tensor_cores = sh.mma;
  split.threads = static_cast<int32_t>(NW * 32);
  split.blocks_per_sm = sh.mma ? SplitShape::kMmaBlocksPerSm : sh.blocks_per_sm;
  // A sliding window bounds the positions a token reads, and so the splits they can fill.
  const int64_t cache_rows = paged ? g.batching.max_seq : ks[1].coeff;
  const int64_t context = n.attrs.window > 0 ? std::min(cache_rows, n.attrs.window) : cache_rows;
  split.max_splits = std::clamp<int64_t>((context + split.min_chunk - 1) / split.min_chunk, 1, sh.mma ? 128 : 64);

  // The key row of position j of the token.
  const std::string bs = std::to_string(n.attrs.block_size) + "L";
  // In 32-bit arithmetic (positions are below 2^31, and block ids, read through the block table's
  // float lambda, exact below 2^24; j >= 0, so / and % need no sign fix-up): integer addressing,
  // the 64-bit division and modulo among it, was about 130 of the 549 instructions of a warp's
  // iteration (Nsight SASS, bench/RESULTS.md, session 21, call 3).
  const std::string key_row =
      paged ? "(long)(int)" + call(name, n.operands[5], {"sq", "(long)((unsigned)i / " + std::to_string(n.attrs.block_size) + "u)"}) +
                  " * " + bs + " + (long)((unsigned)i % " + std::to_string(n.attrs.block_size) + "u)"
            : "j";
  const std::string out = "p" + std::to_string(arg(att, true));
  // The score of a dot product d: scale * d, soft-capped (C * tanh(scale * d / C)) when asked.
  // `unit` rescales the score (log2(e): a score in base-2 units for exp2).
  auto capped = [&](const std::string& d, double unit) {
    if (!(n.attrs.softcap > 0)) return d + " * " + lit(n.attrs.scale * unit);
    return lit(n.attrs.softcap * unit) + " * tanhf(" + d + " * " + lit(n.attrs.scale / n.attrs.softcap) + ")";
  };
  os << "  {  // attention stage: split-KV (flash-decoding), " << QG << " query head(s) per block"
     << (sh.mma ? ", on the tensor cores" : "") << "\n"
     << "    constexpr int NW = " << NW << ", QG = " << QG << ", NE = " << sh.ne << ", LK = " << sh.lk << ", KPW = " << KPW
     << ", R = " << sh.r << ";\n"
     << "    constexpr long DH = " << Dh << "L, H = " << H << "L, G = " << G << "L, MINC = " << split.min_chunk << "L;\n"
     << "    const float NEG_INF = __int_as_float(0xff800000);\n"
     << "    const long item = blockIdx.x; if (item >= T * (H / QG)) return;\n"
     << "    const long t = item / (H / QG), h0 = item % (H / QG) * QG, kvh = h0 / G;\n"
     << "    const long len = (long)" << P << "(t) + 1L, nsp = gridDim.y, split = blockIdx.y;\n"
     // The token's keys are lo .. len - 1: all of them, or the last `window` (sliding window).
     << "    const long lo = " << (n.attrs.window > 0 ? "max(0L, len - " + std::to_string(n.attrs.window) + "L)" : "0L")
     << ", span = len - lo;\n"
     << "    const long chunk = max(MINC, (span + nsp - 1) / nsp), nch = (span + chunk - 1) / chunk;\n"
     << "    if (split >= nch) return;  // past the token's last chunk\n"
     << "    const long k1 = len - split * chunk, k0 = max(lo, k1 - chunk);\n"
     << "    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;\n";
  if (paged) os << "    const long sq = (long)" << call(name, n.operands[4], {"t"}) << ";\n";
  os << "    auto key_row = [&](long j) -> long { const int i = (int)j; (void)i; return " << key_row << "; };\n";
  if (sh.mma) {
    const int64_t head_stride = ks[1].coeff * Dh;
    os << "    (void)lane; (void)wid;\n"
       << "    static_assert(NW == lg_dmma::kWarps, \"the launch's threads are the template's warps\");\n"
       << "    __shared__ lg_dmma::Smem<" << Dh << "> sm;\n"
       << "    auto qf = [&](int g, int d) -> float { return " << Q << "(t, h0 + g, d); };\n"
       << "    lg_dmma::chunk<" << Dh << ", " << (n.attrs.softcap > 0 ? "true" : "false") << ">(qf, (int)QG, key_row, "
       << kbase << " + kvh * " << head_stride << "L, " << vbase << " + kvh * " << head_stride << "L, k0, k1, "
       << lit(n.attrs.scale) << ", " << lit(n.attrs.softcap > 0 ? n.attrs.softcap : 0.0) << ", sm);\n"
       << "    auto& s_m = sm.m;\n    auto& s_l = sm.l;\n    float (*s_o)[16 * DH] = sm.out();\n";
  } else {
    key_loop(os, sh, Q, K, V, kbase, vbase, ks[1].coeff * Dh, capped);
  }
  split_kv_tail(os, out);
  return split;
}

namespace {

/// The key loop's emit-time choices: the element a lane holds and the A/B knobs (see key_loop).
struct KeyLoopForm {
  std::string elem;  ///< the row element of lane element e: ln * NE + e (cache rows), else lane + 32 * e
  bool lazy = true;  ///< rescale a head's state only when its max rises (LG_COMPILED_ATTN_LAZY)
  bool q_smem = false;   ///< the queries read from s_q at each use (the one-row form)
  bool stage_q = true;   ///< the queries formed once into s_q (LG_COMPILED_ATTN_STAGE_Q)
  bool exp2 = true;      ///< scores in base-2 units, exponentials by ex2 (LG_COMPILED_ATTN_EXP2)
  std::string ex;        ///< the exponential's function
};

KeyLoopForm key_loop_form(const SplitShape& sh) {
  KeyLoopForm f;
  f.elem = sh.rows ? "ln * NE + e" : "lane + 32 * e";
  f.lazy = !knob_off("LG_COMPILED_ATTN_LAZY");
  // The queries from s_q at each use, not held in registers: the one-row form.
  f.q_smem = sh.rows && sh.q_smem;
  // LG_COMPILED_ATTN_STAGE_Q=0: each lane forms its own query elements (not where q_smem).
  f.stage_q = f.q_smem || !knob_off("LG_COMPILED_ATTN_STAGE_Q");
  // Scores in base-2 units (scale * log2(e) folded into the score's multiply) and exponentials by
  // ex2.approx.ftz: each __expf adds a multiply and a denormal fix-up (a compare against -126 and
  // predicated multiplies in the SASS). The state leaves in natural units (s_m = m * ln 2) for the
  // shared tail. LG_COMPILED_ATTN_EXP2=0: natural units and __expf (1-2% slower a step at 32,768
  // positions, bench/RESULTS.md, session 21).
  f.exp2 = !knob_off("LG_COMPILED_ATTN_EXP2");
  f.ex = f.exp2 ? "lg_fa::exp2_approx" : "__expf";
  return f;
}

/// The chunk's bounds as 32-bit ints, the block's queries (formed once into s_q, each element by
/// one thread, unless LG_COMPILED_ATTN_STAGE_Q=0) and each head's online-softmax state, zeroed.
void key_loop_queries(std::ostringstream& os, const KeyLoopForm& f, const std::string& Q) {
  os << "    const int sub = lane / LK, ln = lane % LK;\n"
     << "    (void)ln;\n"
     << "    const int k0i = (int)k0, k1i = (int)k1;  // positions: below 2^31\n";
  if (f.stage_q)
    os << "    __shared__ __align__(16) float s_q[QG * DH];\n"
       << "    for (int i = threadIdx.x; i < QG * DH; i += NW * 32) s_q[i] = " << Q << "(t, h0 + i / DH, i % DH);\n"
       << "    __syncthreads();\n";
  const std::string q_elem = f.stage_q ? "s_q[g * DH + d]" : Q + "(t, h0 + g, d)";
  os << "    float " << (f.q_smem ? "" : "q[QG][NE], ") << "acc[QG][NE], m[QG], l[QG];\n"
     << "    #pragma unroll\n    for (int g = 0; g < QG; ++g) {\n"
     << "      m[g] = NEG_INF; l[g] = 0.0f;\n"
     << "      #pragma unroll\n      for (int e = 0; e < NE; ++e) { const long d = " << f.elem << "; (void)d; "
     << (f.q_smem ? "" : "q[g][e] = d < DH ? " + q_elem + " : 0.0f; ") << "acc[g][e] = 0.0f; }\n"
     << "    }\n";
}

/// How a lane reads its part of a K or V row (Raw, kraw, vraw) and widens element e of it (el):
/// 16-byte pieces of bf16 cache rows, or NE floats through the K/V lambdas.
void key_loop_raw(std::ostringstream& os, const SplitShape& sh, const KeyLoopForm& f, const std::string& K,
                  const std::string& V, const std::string& kbase, const std::string& vbase, int64_t head_stride) {
  if (sh.rows) {
    // Raw bf16 as loaded (4 registers per 8 elements), widened at use; L2 only (__ldcg): the rows
    // of a block's chunk are read once by it.
    // A head's rows span under 2^32 elements (else 64-bit): 32-bit row offsets.
    os << "    typedef uint4 Raw;\n"
       << "    const unsigned short* kb = " << kbase << " + kvh * " << head_stride << "L + ln * 8;\n"
       << "    const unsigned short* vb = " << vbase << " + kvh * " << head_stride << "L + ln * 8;\n"
       << "    auto row_off = [&](long row) { return "
       << (head_stride < (int64_t{1} << 32) ? "(unsigned)row * (unsigned)DH" : "row * DH") << "; };\n"
       << "    auto kraw = [&](long row) -> Raw { return __ldcg(reinterpret_cast<const uint4*>(kb + row_off(row))); };\n"
       << "    auto vraw = [&](long row) -> Raw { return __ldcg(reinterpret_cast<const uint4*>(vb + row_off(row))); };\n"
       << "    auto el = [](const Raw& u, int e) -> float {\n"
       << "      const unsigned w = e < 2 ? u.x : e < 4 ? u.y : e < 6 ? u.z : u.w;\n"
       << "      return (e & 1) ? lg_bf16_hi(w) : lg_bf16_lo(w); };\n";
  } else {
    os << "    struct Raw { float x[NE]; };\n"
       << "    auto kraw = [&](long row) -> Raw { Raw u;\n"
       << "      #pragma unroll\n      for (int e = 0; e < NE; ++e) { const long d = " << f.elem << "; u.x[e] = d < DH ? " << K
       << "(kvh, row, d) : 0.0f; }\n      return u; };\n"
       << "    auto vraw = [&](long row) -> Raw { Raw u;\n"
       << "      #pragma unroll\n      for (int e = 0; e < NE; ++e) { const long d = " << f.elem << "; u.x[e] = d < DH ? " << V
       << "(kvh, row, d) : 0.0f; }\n      return u; };\n"
       << "    auto el = [](const Raw& u, int e) -> float { return u.x[e]; };\n";
  }
}

/// The warp's R rounds of keys from j0 (past the chunk: a valid row, masked when used), and the
/// online softmax of every head over them: the lambdas load_rounds and use_rounds, the loop's
/// body (key_loop).
void key_loop_rounds(std::ostringstream& os, const KeyLoopForm& f,
                     const std::function<std::string(const std::string&, double)>& capped) {
  // `full` (a literal at each call, folded once the lambda is inlined): every key of the rounds is
  // in the chunk, so none is clamped or masked.
  os << "    auto load_rounds = [&](int j0, Raw (&kr)[R], Raw (&vr)[R], bool full) {\n"
     << "      #pragma unroll\n      for (int r = 0; r < R; ++r) {\n"
     << "        const long row = key_row(full ? j0 + r * KPW + sub : min(j0 + r * KPW + sub, k1i - 1));\n"
     << "        kr[r] = kraw(row); vr[r] = vraw(row);\n      }\n    };\n"
     << "    auto use_rounds = [&](int j0, const Raw (&kr)[R], const Raw (&vr)[R], bool full) {\n";
  // q_smem: every head's dot products first, the queries read 4 elements at a time (4 registers
  // live, not NE), each sum still in element order.
  if (f.q_smem)
    os << "      float dots[QG][R];\n"
       << "      #pragma unroll\n      for (int g = 0; g < QG; ++g)\n"
       << "        #pragma unroll\n        for (int r = 0; r < R; ++r) dots[g][r] = 0.0f;\n"
       << "      #pragma unroll\n      for (int c = 0; c < NE / 4; ++c)\n"
       << "        #pragma unroll\n        for (int g = 0; g < QG; ++g) {\n"
       << "          const float4 qc = *reinterpret_cast<const float4*>(&s_q[g * DH + ln * NE + 4 * c]);\n"
       << "          #pragma unroll\n          for (int r = 0; r < R; ++r) {\n"
       << "            float d = dots[g][r];\n"
       << "            d = fmaf(qc.x, el(kr[r], 4 * c), d); d = fmaf(qc.y, el(kr[r], 4 * c + 1), d);\n"
       << "            d = fmaf(qc.z, el(kr[r], 4 * c + 2), d); d = fmaf(qc.w, el(kr[r], 4 * c + 3), d);\n"
       << "            dots[g][r] = d;\n"
       << "          }\n        }\n";
  os << "      #pragma unroll\n      for (int g = 0; g < QG; ++g) {\n"
     << "        float sc[R], mx = m[g];\n"
     << "        #pragma unroll\n        for (int r = 0; r < R; ++r) {\n";
  if (f.q_smem)
    os << "          float d = dots[g][r];\n";
  else
    os << "          float d = 0.0f;\n"
       << "          #pragma unroll\n          for (int e = 0; e < NE; ++e) d = fmaf(q[g][e], el(kr[r], e), d);\n";
  os << "          #pragma unroll\n          for (int o = LK / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);\n"
     << "          sc[r] = full || j0 + r * KPW + sub < k1i ? " << capped("d", f.exp2 ? 1.4426950408889634 : 1.0) << " : NEG_INF;\n"
     << "          mx = fmaxf(mx, sc[r]);\n        }\n";
  if (f.lazy)
    os << "        if (mx > m[g]) {  // the max rose: rescale (else corr would be exactly 1)\n"
       << "          const float corr = " << f.ex << "(m[g] - mx);\n"
       << "          l[g] *= corr;\n"
       << "          #pragma unroll\n          for (int e = 0; e < NE; ++e) acc[g][e] *= corr;\n"
       << "          m[g] = mx;\n        }\n"
       << "        const float mu = m[g] == NEG_INF ? 0.0f : m[g];  // a lane group that has seen no key yet\n";
  else
    os << "        const float mu = mx == NEG_INF ? 0.0f : mx;  // a lane group that has seen no key yet\n"
       << "        const float corr = " << f.ex << "(m[g] - mu);\n"
       << "        l[g] *= corr;\n"
       << "        #pragma unroll\n        for (int e = 0; e < NE; ++e) acc[g][e] *= corr;\n"
       << "        m[g] = mx;\n";
  os << "        #pragma unroll\n        for (int r = 0; r < R; ++r) {\n"
     << "          const float pr = " << f.ex << "(sc[r] - mu);  // masked: exp(-inf) = 0\n"
     << "          l[g] += pr;\n"
     << "          #pragma unroll\n          for (int e = 0; e < NE; ++e) acc[g][e] = fmaf(pr, el(vr[r], e), acc[g][e]);\n"
     << "        }\n      }\n    };\n";
}

/// The lane groups of a warp (KPW > 1) merged by shuffles, every lane ending with the warp's
/// state, then each warp's state in shared memory (s_m in natural units, s_l, s_o) for the tail.
void key_loop_warp_merge(std::ostringstream& os, const KeyLoopForm& f) {
  os << "    #pragma unroll\n    for (int o = LK; o < 32; o <<= 1) {\n"
     << "      #pragma unroll\n      for (int g = 0; g < QG; ++g) {\n"
     << "        const float mo = __shfl_xor_sync(0xffffffffu, m[g], o), lo = __shfl_xor_sync(0xffffffffu, l[g], o);\n"
     << "        const float mx = fmaxf(m[g], mo), mu = mx == NEG_INF ? 0.0f : mx;\n"
     << "        const float cs = " << f.ex << "(m[g] - mu), co = " << f.ex << "(mo - mu);\n"
     << "        l[g] = l[g] * cs + lo * co;\n"
     << "        #pragma unroll\n        for (int e = 0; e < NE; ++e) acc[g][e] = acc[g][e] * cs + __shfl_xor_sync(0xffffffffu, acc[g][e], o) * co;\n"
     << "        m[g] = mx;\n      }\n    }\n"
     << "    __shared__ float s_m[NW][QG], s_l[NW][QG], s_o[NW][QG * DH];\n"
     << "    #pragma unroll\n    for (int g = 0; g < QG; ++g) {\n"
     << "      if (lane == 0) { s_m[wid][g] = m[g]" << (f.exp2 ? " * 0.6931471805599453f" : "") << "; s_l[wid][g] = l[g]; }\n"
     << "      #pragma unroll\n      for (int e = 0; e < NE; ++e) { const long d = " << f.elem
     << "; if (sub == 0 && d < DH) s_o[wid][g * DH + d] = acc[g][e]; }\n"
     << "    }\n"
     << "    __syncthreads();\n";
}

// The CUDA-core form's chunk: lane groups of LK lanes take keys side by side, R rounds of loads in
// flight, an online softmax per query head; the warps' states end in s_m, s_l, s_o.
//
// The block's queries are formed once, each element by one thread, into shared memory (s_q): a
// lane that formed its QG * NE elements itself ran their RMSNorm/RoPE lambdas one after another
// (LG_COMPILED_ATTN_STAGE_Q=0 does so).
// A head's running max and the rescale of its sum and accumulators by exp(m_old - m_new) change
// only when a round raises the max (rarely, past a chunk's first keys): corr would be exactly 1,
// so skipping it leaves every value bit-identical (LG_COMPILED_ATTN_LAZY=0 always rescales).
// Key indices and row offsets are 32-bit and scores are in base-2 units (key_loop_form). With
// these, H200, 8B, one sequence of 32,768 positions: the decode attention kernel 62.6-62.9 ->
// 54.6 us (36.8M -> 31.2M instructions; Nsight), the step 6.27-6.29 -> 6.06-6.11 ms
// (bench/RESULTS.md, session 21).
void key_loop(std::ostringstream& os, const SplitShape& sh, const std::string& Q, const std::string& K,
              const std::string& V, const std::string& kbase, const std::string& vbase, int64_t head_stride,
              const std::function<std::string(const std::string&, double)>& capped) {
  const KeyLoopForm f = key_loop_form(sh);
  key_loop_queries(os, f, Q);
  key_loop_raw(os, sh, f, K, V, kbase, vbase, head_stride);
  key_loop_rounds(os, f, capped);
  // The iterations whose keys are all in the chunk, then a warp's last, partial one.
  os << "    int j0 = k0i + wid * (KPW * R);\n"
     << "    for (; j0 + KPW * R <= k1i; j0 += NW * KPW * R) {\n"
     << "      Raw kr[R], vr[R];\n"
     << "      load_rounds(j0, kr, vr, true);\n"
     << "      use_rounds(j0, kr, vr, true);\n"
     << "    }\n"
     << "    if (j0 < k1i) {\n"
     << "      Raw kr[R], vr[R];\n"
     << "      load_rounds(j0, kr, vr, false);\n"
     << "      use_rounds(j0, kr, vr, false);\n"
     << "    }\n";
  key_loop_warp_merge(os, f);
}

// Every form's end: the warps' states (s_m, s_l, s_o) merged into the block's partial per (head,
// element), or the output itself when the token has one chunk; the last block of the item to
// finish merges the partials.
void split_kv_tail(std::ostringstream& os, const std::string& out) {
  os << "    __shared__ bool s_last;\n"
     // The block's partial per (head, element); the output itself when the token has one chunk.
     << "    for (int i = threadIdx.x; i < QG * DH; i += NW * 32) {\n"
     << "      const int g = i / DH, d = i % DH;\n"
     << "      float bm = NEG_INF;\n"
     << "      for (int w = 0; w < NW; ++w) bm = fmaxf(bm, s_m[w][g]);  // finite: the chunk has keys\n"
     << "      float bl = 0.0f, bo = 0.0f;\n"
     << "      for (int w = 0; w < NW; ++w) { const float c = __expf(s_m[w][g] - bm); bl += s_l[w][g] * c; bo += s_o[w][g * DH + d] * c; }\n"
     << "      const long row = t * H + h0 + g;\n"
     << "      if (nch == 1) { " << out << "[row * DH + d] = bo / bl; continue; }\n"
     << "      float* pp = lg_part + (row * nsp + split) * (DH + 2L);\n"
     << "      pp[d] = bo;\n"
     << "      if (d == 0) { pp[DH] = bm; pp[DH + 1] = bl; }\n"
     << "    }\n"
     << "    if (nch == 1) return;\n"
     // The last block of the item to finish merges (threadFenceReduction, CUDA samples).
     << "    __threadfence();\n"
     << "    __syncthreads();\n"
     << "    if (threadIdx.x == 0) {\n"
     << "      s_last = atomicAdd(lg_count + item, 1) + 1 == (int)nch;\n"
     << "      if (s_last) lg_count[item] = 0;  // for the next launch: no other block of this one touches it\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "    if (!s_last) return;\n"
     << "    __threadfence();\n"
     << "    for (int i = threadIdx.x; i < QG * DH; i += NW * 32) {\n"
     << "      const int g = i / DH, d = i % DH;\n"
     << "      const long row = t * H + h0 + g;\n"
     << "      const float* pp = lg_part + row * nsp * (DH + 2L);\n"
     << "      float gm = NEG_INF, gl = 0.0f, go = 0.0f;\n"
     << "      for (long s0 = 0; s0 < nch; s0 += 8) {\n"
     << "        float ms[8], ls[8], vs[8];\n"
     << "        #pragma unroll\n        for (int k = 0; k < 8; ++k) {\n"
     << "          ms[k] = NEG_INF; ls[k] = 0.0f; vs[k] = 0.0f;\n"
     << "          if (s0 + k < nch) { const float* ps = pp + (s0 + k) * (DH + 2L); ms[k] = __ldcg(ps + DH); ls[k] = __ldcg(ps + DH + 1); vs[k] = __ldcg(ps + d); }\n"
     << "        }\n"
     << "        float bm = gm;\n"
     << "        #pragma unroll\n        for (int k = 0; k < 8; ++k) bm = fmaxf(bm, ms[k]);  // finite: split s0 has keys\n"
     << "        const float corr = __expf(gm - bm);\n"
     << "        gl *= corr; go *= corr;\n"
     << "        #pragma unroll\n        for (int k = 0; k < 8; ++k) { const float c = __expf(ms[k] - bm); gl += ls[k] * c; go += vs[k] * c; }\n"
     << "        gm = bm;\n"
     << "      }\n"
     << "      " << out << "[row * DH + d] = go / gl;\n"
     << "    }\n"
     << "  }\n";
}

}  // namespace

}  // namespace lg::emit::cuda
