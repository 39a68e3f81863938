// Attention stages. At T = 1 (and for any head_dim): one block per (token, query head), 32 warps
// split the KV length, each an online softmax (running max and sum), merged across warps in shared
// memory. At T > 1 with head_dim 16/32/64/128: lg_fa::attention_block (src/kernels/
// flash_attention.cuh, tensor cores) through one of the device prelude's policies, with q and the
// K/V cache rows first packed as bf16 when k and v are contiguous cache rows.
#include "emit/cuda/expr.h"
#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

void Renderer::attention_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  ir::ValueId att = st.nodes.at(0);
  const ir::Node& n = g.at(att);
  const auto& qs = g.at(n.operands[0]).shape;
  int64_t H = qs[1].coeff, Dh = qs[2].coeff;
  wc.push_back(H);
  wp.push_back(1);
  auto nodes = closure(s);
  auto name = lambdas(s, nodes, os, {});
  std::string Q = name.at(n.operands[0]), K = name.at(n.operands[1]), V = name.at(n.operands[2]),
              P = name.at(n.operands[3]);
  // Paged (a batched graph): key j of token t is pool row block_table[seq[t], j / bs] * bs + j % bs.
  const bool paged = n.operands.size() == 6;
  const std::string row = paged ? paged_row(n, 4, "t", "j", name) : "j";
  int64_t DC = (Dh + 31) / 32;
  // 32 warps split the KV length: a decode step has only H blocks, and each warp's loop over its
  // keys is latency-bound (load K, reduce, load V), so more warps in flight is what pays.
  os << "  {  // attention stage: one block per (token, head), 32 warps over the KV length\n"
     << "    const long row = blockIdx.x; if (row >= T * " << H << "L) return;\n"
     << "    const long t = row / " << H << "L, h = row % " << H << "L, kvh = h / " << n.attrs.gqa_group << "L;\n"
     << "    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;\n"
     << "    constexpr int DC = " << DC << "; constexpr long DH = " << Dh << "L; constexpr int NW = 32;\n"
     << "    float q[DC], acc[DC];\n"
     << "    #pragma unroll\n    for (int c = 0; c < DC; ++c) { long d = lane + 32 * c; q[c] = d < DH ? " << Q
     << "(t, h, d) : 0.0f; acc[c] = 0.0f; }\n"
     << "    const long last = (long)" << P << "(t);\n"
     << "    float m = __int_as_float(0xff800000), l = 0.0f;\n"
     << "    for (long j = wid; j <= last; j += NW) {\n"
     << "      const long r = " << row << ";\n"
     << "      float sc = 0.0f;\n"
     << "      #pragma unroll\n      for (int c = 0; c < DC; ++c) { long d = lane + 32 * c; if (d < DH) sc += q[c] * " << K
     << "(kvh, r, d); }\n"
     << "      sc = lg_warp_sum(sc) * " << lit(n.attrs.scale) << ";\n"
     << "      const float mn = fmaxf(m, sc), corr = expf(m - mn), pj = expf(sc - mn);\n"
     << "      l = l * corr + pj;\n"
     << "      #pragma unroll\n      for (int c = 0; c < DC; ++c) { long d = lane + 32 * c; acc[c] = acc[c] * corr + (d < DH ? pj * "
     << V << "(kvh, r, d) : 0.0f); }\n"
     << "      m = mn;\n    }\n"
     << "    __shared__ float sm[NW], sl[NW], sacc[NW][DC * 32];\n"
     << "    if (lane == 0) { sm[wid] = m; sl[wid] = l; }\n"
     << "    #pragma unroll\n    for (int c = 0; c < DC; ++c) sacc[wid][lane + 32 * c] = acc[c];\n"
     << "    __syncthreads();\n"
     << "    if (wid == 0) {\n"
     << "      // Lane w rescales warp w's partial softmax to the common max (NW == warp size).\n"
     << "      float M = sm[lane];\n"
     << "      for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));\n"
     << "      const float fw = sl[lane] > 0.0f ? expf(sm[lane] - M) : 0.0f;\n"
     << "      const float L = lg_warp_sum(sl[lane] * fw);\n"
     << "      #pragma unroll\n      for (int c = 0; c < DC; ++c) { const long d = lane + 32 * c;\n"
     << "        float o = 0.0f; for (int w = 0; w < NW; ++w) o += sacc[w][d] * __shfl_sync(0xffffffffu, fw, w);\n"
     << "        if (d < DH) p" << arg(att, true) << "[(t * " << H << "L + h) * DH + d] = o / L; }\n"
     << "    }\n  }\n";
}

namespace {

// The flash-attention kernel of attention node `att` of stage s: the stage's lambdas, a store of
// two outputs, and the policy: lg_attn_policy_rows over the packed q and K/V rows when k and v
// are contiguous cache rows (q_pack/kv_pack then set, rendered by the caller), else
// lg_attn_policy over the lambdas.
AttentionPrefillRender flash_kernel(Renderer& r, int32_t s, ir::ValueId att) {
  const ir::Graph& g = r.g;
  const ir::Node& n = g.at(att);
  const auto& qs = g.at(n.operands[0]).shape;
  const int64_t H = qs[1].coeff, Dh = qs[2].coeff;
  std::ostringstream body;
  auto nodes = r.closure(s);
  auto name = r.lambdas(s, nodes, body, {});
  const std::string out = "p" + std::to_string(r.arg(att, true));
  body << "  auto store = [&](long t, long h, long d, float o0, float o1) { const long i = (t * " << H << "L + h) * "
       << Dh << "L + d; " << out << "[i] = o0; " << out << "[i + 1] = o1; };\n";
  const std::string kbase = r.state_slice_base(n.operands[1]), vbase = r.state_slice_base(n.operands[2]);
  const auto& ks = g.at(n.operands[1]).shape;
  const bool rows = !kbase.empty() && !vbase.empty();
  // Packed K/V rows per KV head: the cache's positions, or one sequence's of a paged pool.
  const int64_t S = n.operands.size() == 6 ? g.batching.max_seq : ks[1].coeff;
  if (rows)
    body << "  const lg_attn_policy_rows<" << Dh << ", decltype(" << name.at(n.operands[3])
         << "), decltype(store)> pol{" << name.at(n.operands[3]) << ", store, qpacked, " << H * Dh
         << "L, kvpacked, kvpacked + " << ks[0].coeff * S * ks[2].coeff << "L, " << S * ks[2].coeff << "L, "
         << ks[2].coeff << "L};\n";
  else
    body << "  const lg_attn_policy<decltype(" << name.at(n.operands[0]) << "), decltype(" << name.at(n.operands[1])
         << "), decltype(" << name.at(n.operands[2]) << "), decltype(" << name.at(n.operands[3])
         << "), decltype(store)> pol{" << name.at(n.operands[0]) << ", " << name.at(n.operands[1]) << ", "
         << name.at(n.operands[2]) << ", " << name.at(n.operands[3]) << ", store};\n";
  body << "  __shared__ lg_fa::Smem<" << Dh << "> sm;\n"
       << "  int tile, h;\n"
       << "  lg_fa::schedule(blockIdx.x, (int)T, " << H << ", tile, h);\n"
       << "  lg_fa::attention_block<" << Dh << ">(pol, tile, h, (int)T, " << n.attrs.gqa_group << ", "
       << lit(n.attrs.scale) << ", sm);\n";
  AttentionPrefillRender fa;
  fa.source = r.kernel("__launch_bounds__(lg_fa::kThreads)",
                       rows ? std::vector<std::string>{"const unsigned short* __restrict__ qpacked",
                                                       "const unsigned short* __restrict__ kvpacked"}
                            : std::vector<std::string>{},
                       "attention stage, T > 1: tensor-core flash attention", body.str());
  fa.args = r.args;
  fa.heads = H;
  fa.layer = r.layer();
  if (rows) fa.q_pack = fa.kv_pack = GemmPrefillRender::Pack{};  // rendered by the caller
  return fa;
}

// The pack kernel of the K/V cache rows of positions 0 .. max pos as bf16 [2][KV, S, Dh].
GemmPrefillRender::Pack kv_pack(Renderer& r, int32_t s, ir::ValueId att) {
  const ir::Graph& g = r.g;
  const ir::Node& n = g.at(att);
  const int64_t Dh = g.at(n.operands[0]).shape[2].coeff;
  std::ostringstream body;
  auto nodes = r.closure(s);
  auto name = r.lambdas(s, nodes, body, {});
  const std::string kbase = r.state_slice_base(n.operands[1]), vbase = r.state_slice_base(n.operands[2]);
  const auto& ks = g.at(n.operands[1]).shape;
  // Paged: one sequence's positions (the step holds one), gathered through its block table.
  const bool paged = n.operands.size() == 6;
  const int64_t KV = ks[0].coeff, S = paged ? g.batching.max_seq : ks[1].coeff, per_head = S * Dh,
                src_head = ks[1].coeff * Dh;
  const std::string src_row = paged ? r.paged_row(n, 4, "0L", "p", name) : "p";
  // bf16 states are copied as they are, f32 ones rounded to bf16. The operand is the layer's view
  // (a reshape of a slice) of the state, or of a version a state write made of it.
  ir::ValueId cache = n.operands[1];
  for (;;) {
    const ir::Op op = g.at(cache).op;
    if (op == ir::Op::Reshape || op == ir::Op::Slice || op == ir::Op::StateWrite) cache = g.at(cache).operands[0];
    else break;
  }
  const std::string chunk = r.bf16_state(g.at(cache))
                                ? "*reinterpret_cast<const uint4*>"
                                : "lg_fa::load8_f32_as_bf16";
  // Every block finds the step's last position itself (T reads of an L2-resident vector):
  // the rows past it are never attended to and are not copied.
  // (Positions are exact as floats: below 2^24.)
  body << "  __shared__ float lg_red[32];\n"
       << "  float mx = -1.0f;\n"
       << "  for (long t = threadIdx.x; t < T; t += blockDim.x) mx = fmaxf(mx, " << name.at(n.operands[3]) << "(t));\n"
       << "  mx = lg_block_max(mx, lg_red);\n"
       << "  const long rows = mx < 0.0f ? 0L : ((long)mx + 1L < " << S << "L ? (long)mx + 1L : " << S << "L);\n"
       << "  const long chunks = rows * " << Dh / 8 << "L;  // 8 elements each, per KV head\n"
       << "  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < 2L * " << KV
       << "L * chunks; i += (long)gridDim.x * blockDim.x) {\n"
       << "    const long c = i / (" << KV << "L * chunks), kvh = (i / chunks) % " << KV << "L, e = (i % chunks) * 8L;\n"
       << "    const long p = e / " << Dh << "L, d = e % " << Dh << "L;\n"
       << "    const long src = kvh * " << src_head << "L + " << src_row << " * " << Dh << "L + d;\n"
       << "    *reinterpret_cast<uint4*>(packed + c * " << KV * per_head << "L + kvh * " << per_head << "L + e) = "
       << chunk << "((c == 0 ? " << kbase << " : " << vbase << ") + src);\n"
       << "  }\n";
  GemmPrefillRender::Pack pk;
  pk.source = r.kernel("__launch_bounds__(256)", {"unsigned short* __restrict__ packed"},
                       "K/V cache rows of a prefill attention as bf16", body.str());
  pk.args = r.args;
  pk.layer = r.layer();
  pk.K = 2 * KV * Dh / 8;  // 16-byte chunks per token of a step that starts at position 0
  return pk;
}

}  // namespace

std::optional<AttentionPrefillRender> render_attention_prefill(const lift::StagedProgram& p, int32_t s) {
  const ir::Graph& g = p.graph;
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  if (st.kind != lift::StageKind::Attention) return std::nullopt;
  const ir::ValueId att = st.nodes.at(0);
  const ir::Node& n = g.at(att);
  const int64_t Dh = g.at(n.operands[0]).shape[2].coeff;
  if (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128) return std::nullopt;
  AttentionPrefillRender a = with_layer_lifting(p, [&](Renderer& r) { return flash_kernel(r, s, att); });
  // A paged cache is read by the flash kernel only as one sequence's packed rows.
  if (n.operands.size() == 6 && !a.q_pack) return std::nullopt;
  if (!a.q_pack) return a;
  // q [T, H, Dh] packed once as bf16 rows, and the K/V cache rows of positions 0 .. max pos as
  // bf16 [2][KV, S, Dh], when the kernel reads them so.
  a.q_pack = render_pack(p, s, n.operands[0], {}, "q of a prefill attention as bf16 rows");
  a.kv_pack = with_layer_lifting(p, [&](Renderer& r) { return kv_pack(r, s, att); });
  a.paged = n.operands.size() == 6;
  return a;
}

}  // namespace lg::emit::cuda
