// The topk stage's lambda (ops.def's TopK / ArgTopK, the router's top-k of a mixture of experts):
// an element stage whose lambda keeps the k best of its row; a warp that all asks for one row ranks
// it together (64-bit keys, k rounds of a warp max), any other caller scans it serially. The
// experts stages that read its indices are in experts.cpp.

#include "emit/cuda/expr.h"
#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

std::string Renderer::topk_body(ir::ValueId v, const std::vector<std::string>& ix, const LambdaNames& name,
                                std::string& memo_decl) {
  const ir::Node& n = g.at(v);
  const std::string& nm = name.at(v);
  const ir::ValueId o = n.operands[0];
  const auto& osh = g.at(o).shape;
  const size_t last = osh.size() - 1;  // the lifter takes the last axis only
  const int64_t K = n.shape[last].coeff;
  // topk(x) gives a TopK and an ArgTopK node over the same row: the later lambda reads the
  // earlier one's memo rather than ranking the row again (the stage ran the warp arg-max twice).
  for (const auto& [w, wname] : name) {
    const ir::Node& m = g.at(w);
    if (w >= v || (m.op != ir::Op::TopK && m.op != ir::Op::ArgTopK) || m.op == n.op || m.operands[0] != o ||
        m.shape[last].coeff != K)
      continue;
    std::vector<std::string> first(ix.begin(), ix.end());
    first[last] = "0L";
    memo_decl.clear();
    return call(name, w, first) + "; return " +
           (n.op == ir::Op::ArgTopK ? "(float)" + wname + "_i[" + ix[last] + "]" : wname + "_v[" + ix[last] + "]") + ";";
  }
  std::vector<std::string> oi(ix.begin(), ix.end());
  oi[last] = "r";
  ir::Shape rows(n.shape.begin(), n.shape.end() - 1);
  std::vector<std::string> ri(ix.begin(), ix.end() - 1);
  const std::string key = rows.empty() ? "0L" : linear(rows, ri);
  memo_decl = "long " + nm + "_key = -1; float " + nm + "_v[" + std::to_string(K) + "]; int " + nm + "_i[" +
              std::to_string(K) + "];\n";
  const std::string Ks = std::to_string(K), vs = nm + "_v", is = nm + "_i";
  // Insertion into the k best so far: larger first, NaN largest (as torch.topk), ties keep the
  // lower index first (a later equal value does not pass an earlier one).
  const std::string serial =
      "for (int j = 0; j < " + Ks + "; ++j) { " + vs + "[j] = __int_as_float(0xff800000); " + is + "[j] = -1; } " +
      "for (long r = 0; r < " + dim(osh[last]) + "; ++r) { const float x = " + call(name, o, oi) + "; " + "int j = " + Ks +
      "; " + "while (j > 0 && (" + is + "[j - 1] < 0 || (x != x ? " + vs + "[j - 1] == " + vs + "[j - 1] : x > " + vs +
      "[j - 1]))) { if (j < " + Ks + ") { " + vs + "[j] = " + vs + "[j - 1]; " + is + "[j] = " + is + "[j - 1]; } --j; } " +
      "if (j < " + Ks + ") { " + vs + "[j] = x; " + is + "[j] = (int)r; } }";
  std::string body = serial;
  const int64_t E = osh[last].is_const() ? osh[last].coeff : 0, C = (E + 31) / 32;
  if (E > 0 && C <= 32) {
    // A warp whose 32 lanes all ask for the same row (the stage runs a warp per output element,
    // so the k warps of a row each do this; a few microseconds, not the serial scan per thread):
    // lane l holds elements l, l + 32, ... (read with the index clamped so every lane calls the
    // operand: its softmax reductions then run warp-wide too; in a loop not unrolled, since each
    // unrolled call inlined the operand's whole lambda chain again), each as a 64-bit key whose
    // order is the serial scan's: the float's bits made order-preserving (NaN largest, -0 as +0)
    // above the complement of its index (ties to the lower index). Then k rounds of a warp max of
    // the keys, the winner dropped (its key set to 0, below every element's): a round is two
    // 32-bit warp maxima (lg_warp_max_u32: one redux.sync each), the high words' and then the low
    // words' among the lanes holding that high word, where five 64-bit shuffle steps took ten
    // dependent shuffles (LG_COMPILED_TOPK_REDUX=0: the shuffles; the topk kernel 4.6 -> 4.3 us
    // on the H200, session 23). The float-and-index comparisons before the keys took ~2,100
    // dependent instructions a warp at E = 128, k = 8 (9 us a launch, session 12). Any other
    // caller (divergent lanes) takes the serial scan.
    std::vector<std::string> ci(oi);
    ci[last] = "lg_r";
    const std::string Cs = std::to_string(C), Es = std::to_string(E);
    body = "const unsigned am = __activemask(); "
           "if (am == 0xffffffffu && __all_sync(am, key == __shfl_sync(am, key, 0))) { "
           "const int lane = threadIdx.x & 31; float xs[" + Cs + "]; unsigned long long ks[" + Cs + "]; "
           "_Pragma(\"unroll 1\") for (int c = 0; c < " + Cs + "; ++c) { const long lg_r = min(c * 32L + lane, " + Es +
           "L - 1L); xs[c] = " + call(name, o, ci) + "; } " +
           "_Pragma(\"unroll\") for (int c = 0; c < " + Cs + "; ++c) { const float x = xs[c] == 0.0f ? 0.0f : xs[c]; "
           "const unsigned u = __float_as_uint(x), ord = x != x ? 0xffffffffu : ((u & 0x80000000u) ? ~u : (u | 0x80000000u)); "
           "ks[c] = c * 32 + lane < " + Es + " ? ((unsigned long long)ord << 32) | (0xffffffffu - (unsigned)(c * 32 + lane)) : 0ull; } " +
           "for (int j = 0; j < " + Ks + "; ++j) { unsigned long long b = 0ull; " +
           "_Pragma(\"unroll\") for (int c = 0; c < " + Cs + "; ++c) b = ks[c] > b ? ks[c] : b; " +
           (knob_off("LG_COMPILED_TOPK_REDUX")
                ? std::string("for (int s = 16; s > 0; s >>= 1) { const unsigned long long ob = __shfl_xor_sync(0xffffffffu, b, s); "
                              "b = ob > b ? ob : b; } ")
                : std::string("{ const unsigned hi = lg_warp_max_u32((unsigned)(b >> 32)); "
                              "const unsigned lo = lg_warp_max_u32((unsigned)(b >> 32) == hi ? (unsigned)b : 0u); "
                              "b = ((unsigned long long)hi << 32) | lo; } ")) +
           "const int bi = b == 0ull ? -1 : (int)(0xffffffffu - (unsigned)b); float bv = xs[0]; " +
           "_Pragma(\"unroll\") for (int c = 1; c < " + Cs + "; ++c) if ((bi >> 5) == c) bv = xs[c]; " +
           "bv = __shfl_sync(0xffffffffu, bv, bi & 31); " +
           vs + "[j] = bi < 0 ? __int_as_float(0xff800000) : bv; " + is + "[j] = bi; " +
           "_Pragma(\"unroll\") for (int c = 0; c < " + Cs + "; ++c) if (ks[c] == b) ks[c] = 0ull; } " +
           "} else { " + serial + " }";
  }
  return "long key = " + key + "; if (key != " + nm + "_key) { " + body + " " + nm + "_key = key; } " +
         "return " + (n.op == ir::Op::ArgTopK ? "(float)" + is + "[" + ix[last] + "]" : vs + "[" + ix[last] + "]") + ";";
}

}  // namespace lg::emit::cuda
