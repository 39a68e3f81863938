// The prefill form of an attention stage (T > 1 rows of one sequence, head_dim 16/32/64/128):
// lg_fa::attention_block (src/kernels/flash_attention.cuh, tensor cores) through one of the device
// prelude's policies, with q and the K/V cache rows first packed as bf16 when k and v are
// contiguous cache rows; the split-KV form of every other step is attention.cpp's.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>

#include "emit/cuda/expr.h"
#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

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
       << lit(n.attrs.scale) << ", sm, " << n.attrs.window << ", " << lit(n.attrs.softcap) << ");\n";
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
  // the rows past it are never attended to and are not copied. With a sliding window, neither
  // are the rows before the step's first position's window (rows lo .. rows - 1 are copied).
  // (Positions are exact as floats: below 2^24.)
  const int64_t W = n.attrs.window;
  body << "  __shared__ float lg_red[32];\n"
       << "  float mx = -1.0f, mn = 3.0e38f;\n"
       << "  for (long t = threadIdx.x; t < T; t += blockDim.x) { const float q = " << name.at(n.operands[3])
       << "(t); mx = fmaxf(mx, q); mn = fminf(mn, q); }\n"
       << "  mx = lg_block_max(mx, lg_red);\n"
       << "  const long rows = mx < 0.0f ? 0L : ((long)mx + 1L < " << S << "L ? (long)mx + 1L : " << S << "L);\n";
  if (W > 0)
    body << "  mn = -lg_block_max(-mn, lg_red);\n"
         << "  const long lo = mx < 0.0f ? 0L : min(rows, max(0L, (long)mn - " << W - 1 << "L));\n";
  else
    body << "  (void)mn;\n  const long lo = 0L;\n";
  body << "  const long chunks = (rows - lo) * " << Dh / 8 << "L;  // 8 elements each, per KV head\n"
       << "  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < 2L * " << KV
       << "L * chunks; i += (long)gridDim.x * blockDim.x) {\n"
       << "    const long c = i / (" << KV << "L * chunks), kvh = (i / chunks) % " << KV << "L, e = (i % chunks) * 8L;\n"
       << "    const long p = lo + e / " << Dh << "L, d = e % " << Dh << "L;\n"
       << "    const long src = kvh * " << src_head << "L + " << src_row << " * " << Dh << "L + d;\n"
       << "    *reinterpret_cast<uint4*>(packed + c * " << KV * per_head << "L + kvh * " << per_head << "L + lo * " << Dh
       << "L + e) = "
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
