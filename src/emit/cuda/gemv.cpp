// The decode GEMV of a GEMM stage (its fused kernel at T = 1; every T when the stage has no
// prefill form): one warp per output element, the 32 lanes splitting K. bf16 weights read as W.T
// stream 16 bytes (8 weights) per lane per load; the activation row is read where an earlier stage
// stored it or staged once per block in shared memory; the prologue's single-row reductions
// (RMSNorm) are done by the whole block first.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "emit/cuda/render.h"
#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

int prologue_batch() {
  const char* e = std::getenv("LG_COMPILED_PROLOGUE_BATCH");
  return e && *e ? std::clamp(std::atoi(e), 0, 32) : 8;
}

namespace {

// A loop of a GEMM stage's threads (kGemmThreads) over `var` < n that computes `value` (an
// expression of var) and then runs `use` (a statement with `$` for the value), prologue_batch()
// values a thread at a time: all of a batch's loads go out before any is used. The stride is the
// constant block size, not blockDim.x: with an unknown trip count a plain loop, even unrolled,
// kept each iteration's loads behind the last one's exit test, and the 8B q/k/v kernel's RMSNorm
// staging took a round trip to L2 per element a thread (16), a third of its warps' stall samples
// (Nsight Compute, session 20). Each element's use is in the plain loop's order (a reduction's
// sum is bitwise the same). LG_COMPILED_PROLOGUE_BATCH=0 emits the plain loop (A/B in one binary).
// A batch that tiles a constant n exactly (B halved down to it, B * kGemmThreads dividing n)
// needs no bound test on its elements: the loop's own test covers them all.
std::string block_loop(const std::string& var, const ir::Dim& nd, const std::string& value, std::string use) {
  const size_t at = use.find('$');
  const std::string n = nd.is_const() ? std::to_string(nd.coeff) + "L" : dim(nd);
  int B = prologue_batch();
  if (B == 0)
    return "for (long " + var + " = threadIdx.x; " + var + " < " + n + "; " + var + " += blockDim.x) " +
           use.replace(at, 1, value) + ";\n";
  int tiles = B;
  while (tiles > 1 && !(nd.is_const() && nd.coeff % (int64_t{tiles} * kGemmThreads) == 0)) tiles /= 2;
  const bool exact = nd.is_const() && nd.coeff % (int64_t{tiles} * kGemmThreads) == 0;
  if (exact) B = tiles;
  const std::string Bs = std::to_string(B), stride = std::to_string(kGemmThreads),
                    first = "const long " + var + " = " + var + "0 + u * " + stride + "L; " +
                            (exact ? "" : "if (" + var + " < " + n + ") ");
  use.replace(at, 1, "lg_b[u]");
  return "for (long " + var + "0 = threadIdx.x; " + var + "0 < " + n + "; " + var + "0 += " + std::to_string(B * kGemmThreads) +
         "L) {\n        float lg_b[" + Bs + "];\n        #pragma unroll\n        for (int u = 0; u < " + Bs + "; ++u) { " +
         first + "lg_b[u] = " + value + "; }\n        #pragma unroll\n        for (int u = 0; u < " + Bs + "; ++u) { " + first +
         use + "; }\n      }\n";
}

}  // namespace

// The reductions of a GEMM's prologue (pass_gemm_reduce_prologue: RMSNorm) at T == 1, where
// each has a single row: the whole block reduces it (every warp would otherwise walk the row on
// its own) and seeds the reduction lambda's memo, so the staging that follows reads the result.
// In graph order, so a reduction over another one's result finds it memoised.
bool Renderer::block_reductions(int32_t s, const std::vector<ir::ValueId>& nodes, const LambdaNames& name,
                                std::ostringstream& os) {
  bool first = true;
  for (ir::ValueId v : nodes) {
    const ir::Node& n = g.at(v);
    if (p.stage_of[static_cast<size_t>(v)] != s || !ir::is_reduce(n.op) || lift::numel(n.shape, 1) != 1) continue;
    const ir::ValueId o = n.operands[0];
    const auto& osh = g.at(o).shape;
    const auto axis = static_cast<size_t>(ir::positive_axis(n.attrs.axis, osh.size()));
    std::vector<std::string> oi(osh.size(), "0L");
    oi[axis] = "r";
    const bool mx = n.op == ir::Op::ReduceMax;
    const std::string& nm = name.at(v);
    const std::string init = mx ? "__int_as_float(0xff800000)" : "0.0f";
    auto fold = [&](const std::string& a, const std::string& b) { return mx ? "fmaxf(" + a + ", " + b + ")" : a + " + " + b; };
    if (first) os << "    __shared__ float lg_red[32];\n";
    first = false;
    os << "    if (T == 1) {  // " << ir::op_name(n.op) << " of the prologue, by the whole block\n"
       << "      float acc = " << init << ";\n"
       << "      " << block_loop("r", osh[axis], call(name, o, oi), "acc = " + fold("acc", "$"))
       << "      acc = " << (mx ? "lg_block_max" : "lg_block_sum") << "(acc, lg_red);\n"
       << "      " << nm << "_key = 0; " << nm << "_val = acc;\n"
       << "    }\n";
  }
  return !first;
}

// Decode (T == 1): the activation row each fast-path GEMV reads, as f32 [K]. A row some earlier
// stage stored (o_proj's attention output, down_proj's SwiGLU product) is read where it is,
// through L1 (mapped to a __ldg of the buffer): the block's warps share the lines, and a warp's
// first weights do not wait for a copy of the whole row. A computed one (an RMSNorm prologue) is
// staged once per block in shared memory (a plain load), by halves of each 8-element chunk
// (staged_halves): elements 8c..8c+3 at float4 c, 8c+4..8c+7 at float4 K/8 + c, so that a warp's
// lanes, each on its chunk, read consecutive float4s. Stored in order, the two float4s of a
// lane's chunk are 32 bytes apart and the warp's reads take twice the shared-memory wavefronts
// (Nsight Compute, 8B q/k/v: a 7.5-way conflict, 48% of wavefronts excessive; session 20).
std::map<ir::ValueId, std::pair<std::string, bool>> Renderer::stage_activations(int32_t s, const std::vector<ir::ValueId>& mms,
                                                                                const LambdaNames& name,
                                                                                std::ostringstream& os) {
  std::map<ir::ValueId, std::pair<std::string, bool>> staged;  // activation -> (float4 base, via __ldg)
  int64_t floats = 0;
  for (ir::ValueId m : mms) {
    ir::ValueId a = g.at(m).operands[0];
    const auto& sa = g.at(a).shape;
    if (staged.count(a) || transposed_bf16_weight(p, a, g.at(m).operands[1]) < 0 || sa.size() != 2 ||
        sa[0].is_const() || sa[0].coeff != 1)
      continue;
    if (const ir::ValueId row = stored_row(s, a); row >= 0) {
      staged[a] = {"reinterpret_cast<const float4*>(p" + std::to_string(arg(row, false)) + ")", true};
      continue;
    }
    if (floats + sa[1].coeff > 12288) continue;
    const std::string buf = "sa" + std::to_string(staged.size());
    staged[a] = {"reinterpret_cast<const float4*>(" + buf + ")", false};
    floats += sa[1].coeff;
    const int64_t K = sa[1].coeff;
    const std::string at = staged_halves(K) ? "[((k >> 3) + ((k >> 2) & 1) * " + std::to_string(K / 8) + "L) * 4 + (k & 3)]" : "[k]";
    os << "    __shared__ __align__(16) float " << buf << "[" << K << "];\n"
       << "    if (T == 1) {\n      " << block_loop("k", sa[1], name.at(a) + "(0L, k)", buf + at + " = $")
       << "    }\n";
  }
  if (!staged.empty()) os << "    __syncthreads();\n";
  return staged;
}

// One 16-byte load of 8 bf16 weights against x0, x1 (float4 each): see renderer.h.
std::string bf16x8_dot(const std::string& acc, const std::string& w, const std::string& ind) {
  return ind + acc + " += x0.x * lg_bf16_lo(" + w + ".x) + x0.y * lg_bf16_hi(" + w + ".x) + x0.z * lg_bf16_lo(" + w +
         ".y) + x0.w * lg_bf16_hi(" + w + ".y);\n" + ind + acc + " += x1.x * lg_bf16_lo(" + w + ".z) + x1.y * lg_bf16_hi(" +
         w + ".z) + x1.z * lg_bf16_lo(" + w + ".w) + x1.w * lg_bf16_hi(" + w + ".w);\n";
}

namespace {

/// The decode form (T == 1) of GEMVs that read one activation row: `rows` holds, per GEMV, its
/// bf16 weight W[N, K] (a kernel parameter) and the dot it sets; `o` is the output index, `xa`
/// the row as float4 (read via __ldg when `ldg`: a row another stage stored). One loop streams
/// every weight row, 16 bytes (8 weights) per lane per load, so an activation load serves every
/// row. Loads go in batches of D per row and lane (gemv_depth()), all issued before any is used
/// and predicated at the end of K: a K of 3840 (480 loads, 15 a lane) then costs 4 round trips at
/// D = 4, not 3 unrolled by 4 and 3 single ones. Pipelined (gemv_pipeline_knob()), two batches
/// alternate: the next batch's loads are issued before the current one's math, so a row's loads
/// stay in flight while the warp waits and adds. Nsight Compute put the one-batch loop's 8B
/// q/k/v and o_proj kernels at 1.8 TB/s (bench/RESULTS.md, session 19); pipelined, with the
/// prefetch before the wait (gemv_prefetch_bytes), the 8B step went 5.13 -> 5.00 ms; either
/// alone changed it by under 1%. Weights stream once (no L1 allocation).
/// LG_COMPILED_GEMV_BATCH=0 emits the plain loop unrolled by 4 instead (A/B in one binary).
std::string fast_gemvs(const std::vector<std::pair<std::string, std::string>>& rows, const std::string& o,
                       int64_t Kc, const std::string& xa, bool ldg, int split) {
  const std::string K = std::to_string(Kc) + "L";
  // With split > 1 the warp takes slice lg_slice of the row's K / 8 chunks (gemm_stage sums them).
  const std::string lo = split > 1 ? "lg_slice * (" + K + " / " + std::to_string(8 * split) + ")" : "0L";
  const std::string hi = split > 1 ? "(lg_slice + 1) * (" + K + " / " + std::to_string(8 * split) + ")" : K + " / 8";
  std::ostringstream gs;
  const std::string xs = ldg                 ? "const float4 x0 = __ldg(xa + 2 * c), x1 = __ldg(xa + 2 * c + 1);\n"
                         : staged_halves(Kc) ? "const float4 x0 = xa[c], x1 = xa[c + " + K + " / 8];\n"
                                             : "const float4 x0 = xa[2 * c], x1 = xa[2 * c + 1];\n";
  const int64_t D = gemv_depth();
  // Pipelined only where a lane's part of the row (its slice's) spans more than two batches: a
  // shorter one (Qwen3-0.6B's and 30B-A3B's rows, K <= 4,096 in slices) gains no overlap and the
  // second buffer's registers cost occupancy (0.6B: 1.05 -> 1.09 ms a step, session 19, call 3).
  const int pipe_knob = gemv_pipeline_knob();
  const bool pipe = pipe_knob == 2 || (pipe_knob == 1 && Kc / 8 / split > 2 * 32 * D);
  gs << "      if (T == 1) {  // decode: " << rows.size() << " GEMV(s) over one activation row"
     << (pipe ? ", two batches of loads in flight" : "") << "\n"
     << "        const float4* xa = " << xa << ";\n";
  for (size_t j = 0; j < rows.size(); ++j)
    gs << "        const uint4* wr" << j << " = reinterpret_cast<const uint4*>(" << rows[j].first << " + " << o << " * "
       << K << ");\n        float acc" << j << " = 0.0f;\n";
  const std::string Ds = std::to_string(D), stride = std::to_string(32 * D), in = "          ";
  // The batch of chunks base + 32 u (u < D) of every row: its loads into buffer `buf`, its math.
  auto batch = [&](const std::string& base, const std::string& ind) {
    return ind + "#pragma unroll\n" + ind + "for (int u = 0; u < " + Ds + "; ++u)\n" + ind + "  if (" + base +
           " + 32 * u < " + hi + ") {\n";
  };
  auto load = [&](const std::string& base, const std::string& buf, const std::string& ind) {
    std::string t = batch(base, ind);
    for (size_t j = 0; j < rows.size(); ++j) {
      const std::string js = std::to_string(j);
      t += ind + "    " + buf + js + "[u] = lg_ld_stream(wr" + js + " + " + base + " + 32 * u);\n";
    }
    return t + ind + "  }\n";
  };
  auto math = [&](const std::string& base, const std::string& buf, const std::string& ind) {
    std::string t = batch(base, ind) + ind + "    const long c = " + base + " + 32 * u;\n" + ind + "    " + xs;
    for (size_t j = 0; j < rows.size(); ++j)
      t += bf16x8_dot("acc" + std::to_string(j), buf + std::to_string(j) + "[u]", ind + "    ");
    return t + ind + "  }\n";
  };
  auto buffers = [&](const std::string& buf) {
    std::string t;
    for (size_t j = 0; j < rows.size(); ++j) t += (j ? ", " : "") + buf + std::to_string(j) + "[" + Ds + "]";
    return t;
  };
  if (knob_off("LG_COMPILED_GEMV_BATCH")) {
    gs << "        #pragma unroll 4\n        for (long c = lane; c < " << K << " / 8; c += 32) {\n";
    for (size_t j = 0; j < rows.size(); ++j) gs << "          const uint4 w" << j << " = lg_ld_stream(wr" << j << " + c);\n";
    gs << "          " << xs;
    for (size_t j = 0; j < rows.size(); ++j) gs << bf16x8_dot("acc" + std::to_string(j), "w" + std::to_string(j), "          ");
    gs << "        }\n";
  } else if (pipe) {
    // Batches a (even) and b (odd) alternate: b's loads go out before a's math, a's next before b's.
    gs << "        uint4 " << buffers("wa") << ", " << buffers("wb") << ";\n"
       << load(lo + " + lane", "wa", "        ") << "        for (long c0 = " << lo << " + lane; c0 < " << hi
       << "; c0 += " << 64 * D << ") {\n"
       << load("c0 + " + stride, "wb", in) << math("c0", "wa", in) << load("c0 + " + std::to_string(64 * D), "wa", in)
       << math("c0 + " + stride, "wb", in) << "        }\n";
  } else {
    gs << "        for (long c0 = " << lo << " + lane; c0 < " << hi << "; c0 += " << stride << ") {\n"
       << in << "uint4 " << buffers("w") << ";\n" << load("c0", "w", in) << math("c0", "w", in) << "        }\n";
  }
  for (size_t j = 0; j < rows.size(); ++j) gs << "        " << rows[j].second << " = lg_warp_sum(acc" << j << ");\n";
  gs << "      }";
  return gs.str();
}

}  // namespace

std::string Renderer::gemv_dots(const std::vector<ir::ValueId>& ms, const std::vector<std::string>& ix,
                                const std::map<ir::ValueId, std::string>& dots,
                                const std::map<ir::ValueId, std::pair<std::string, bool>>& staged,
                                const LambdaNames& name) {
  auto fast_weight = [&](ir::ValueId m) { return decode_weight(m, staged); };
  auto fast = [&](const std::vector<ir::ValueId>& group) {
    const ir::ValueId a = g.at(group[0]).operands[0];
    std::vector<std::pair<std::string, std::string>> rows;
    for (ir::ValueId m : group) rows.emplace_back("p" + std::to_string(arg(fast_weight(m), false)), dots.at(m));
    const auto& [xa, ldg] = staged.at(a);
    return fast_gemvs(rows, ix.back(), g.at(a).shape.back().coeff, xa, ldg, gemv_split);
  };
  // Joined (one loop) when every member is on the fast path over one activation row that another
  // stage stored (read via __ldg): gate and up of Gemma 3's GeGLU, whose input is the stored output
  // of its pre-feedforward norm. A row staged in shared memory (an RMSNorm prologue: Qwen, Llama)
  // stays apart. H200 decode ms, joined / apart (bench/RESULTS.md, session 8): Gemma-3-12B 7.84 /
  // 7.89, Qwen3-8B 5.16 / 5.12, Llama-3.1-8B 4.88 / 4.86. LG_COMPILED_GEMV_JOIN=0 keeps every
  // group apart, =1 joins staged rows too (A/B in one binary).
  const char* join_knob = std::getenv("LG_COMPILED_GEMV_JOIN");
  const std::string jk = join_knob ? join_knob : "";
  const ir::ValueId a0 = ms.empty() ? -1 : g.at(ms[0]).operands[0];
  bool join = ms.size() >= 2 && ms.size() <= 4 && jk != "0" && staged.count(a0) && (staged.at(a0).second || jk == "1");
  for (ir::ValueId m : ms) join = join && fast_weight(m) >= 0 && g.at(m).operands[0] == a0;
  std::string out;
  if (join) {
    out = fast(ms);
    if (decode_only) return out + "\n";
    out += " else {\n";
    for (ir::ValueId m : ms) out += gemv_dot(m, ix, dots.at(m), name);
    return out + "      }\n";
  }
  for (ir::ValueId m : ms) {
    if (fast_weight(m) < 0) out += gemv_dot(m, ix, dots.at(m), name);
    else if (decode_only) out += fast({m}) + "\n";
    else out += fast({m}) + " else {\n" + gemv_dot(m, ix, dots.at(m), name) + "      }\n";
  }
  return out;
}

bool staged_halves(int64_t K) { return K % 8 == 0 && !knob_off("LG_COMPILED_GEMV_HALVES"); }

int64_t gemv_depth() {
  const char* e = std::getenv("LG_COMPILED_GEMV_DEPTH");
  return e && *e ? std::clamp<int64_t>(std::atoll(e), 1, 16) : 4;
}

int gemv_pipeline_knob() {
  const char* e = std::getenv("LG_COMPILED_GEMV_PIPE");
  return e && *e ? std::clamp(std::atoi(e), 0, 2) : 1;
}

int64_t gemv_prefetch_bytes() {
  const char* e = std::getenv("LG_COMPILED_GEMV_PREFETCH");
  return e && *e ? std::max<int64_t>(0, std::atoll(e)) / 16 * 16 : kGemvPrefetchBytes;
}

std::string Renderer::gemv_prefetch(const std::vector<ir::ValueId>& ms, const std::vector<std::string>& ix,
                                    const std::map<ir::ValueId, std::pair<std::string, bool>>& staged) {
  const int64_t cap = gemv_prefetch_bytes();
  std::string out;
  for (ir::ValueId m : ms) {
    const ir::ValueId w = decode_weight(m, staged);
    if (w < 0 || cap == 0) continue;
    // The row's (or the warp's slice's) first bytes: K % 8 == 0 and decode_split divides K / 8,
    // so the slice is a whole number of 16-byte pieces.
    const int64_t K = g.at(g.at(m).operands[0]).shape.back().coeff, slice = K / gemv_split;
    const std::string first = gemv_split > 1 ? " + lg_slice * " + std::to_string(slice) + "L" : "";
    out += "      lg_prefetch_l2(p" + std::to_string(arg(w, false)) + " + " + ix.back() + " * " + std::to_string(K) + "L" +
           first + ", " + std::to_string(std::min(cap, 2 * slice)) + "u);\n";
  }
  return out;
}

ir::ValueId Renderer::decode_weight(ir::ValueId m, const std::map<ir::ValueId, std::pair<std::string, bool>>& staged) {
  // B = W.T of a bf16 weight W[N, K] (K % 8 == 0) over an activation row that is stored or
  // staged. A float -> float cast of the weight (the .lg's bf16 widened) is the load.
  const ir::Node& mn = g.at(m);
  const ir::ValueId w = transposed_bf16_weight(p, mn.operands[0], mn.operands[1]);
  return w >= 0 && staged.count(mn.operands[0]) ? w : -1;
}

std::string Renderer::gemv_dot(ir::ValueId m, const std::vector<std::string>& ix, const std::string& dn,
                               const LambdaNames& name) {
  std::ostringstream gs;
  const ir::Node& mn = g.at(m);
  ir::ValueId a = mn.operands[0], b = mn.operands[1];
  const auto& sa = g.at(a).shape;
  const auto& sb = g.at(b).shape;
  size_t rv = ix.size();
  std::vector<std::string> ai, bi;
  for (size_t k = 0; k + 2 < sa.size(); ++k) ai.push_back(sa[k] == ir::Dim::constant(1) ? "0L" : ix[k + (rv - sa.size())]);
  for (size_t k = 0; k + 2 < sb.size(); ++k) bi.push_back(sb[k] == ir::Dim::constant(1) ? "0L" : ix[k + (rv - sb.size())]);
  ai.push_back(ix[rv - 2]);
  std::string K = dim(sa.back());
  const ir::ValueId wparam = transposed_bf16_weight(p, a, b);
  gs << "      { float acc = 0.0f;\n";
  if (wparam >= 0) {
    // T > 1 without a prefill form: the activation through its lambda, 8 weights per load.
    std::string W = "p" + std::to_string(arg(wparam, false));
    auto aj = [&](const std::string& k) {
      auto v = ai;
      v.push_back(k);
      return call(name, a, v);
    };
    gs << "        for (long k0 = (long)lane * 8; k0 < " << K << "; k0 += 256) {\n"
       << "          const uint4 w = *reinterpret_cast<const uint4*>(" << W << " + " << ix[rv - 1] << " * " << K
       << " + k0);\n"
       << "          acc += " << aj("k0") << " * lg_bf16_lo(w.x) + " << aj("k0 + 1") << " * lg_bf16_hi(w.x);\n"
       << "          acc += " << aj("k0 + 2") << " * lg_bf16_lo(w.y) + " << aj("k0 + 3") << " * lg_bf16_hi(w.y);\n"
       << "          acc += " << aj("k0 + 4") << " * lg_bf16_lo(w.z) + " << aj("k0 + 5") << " * lg_bf16_hi(w.z);\n"
       << "          acc += " << aj("k0 + 6") << " * lg_bf16_lo(w.w) + " << aj("k0 + 7") << " * lg_bf16_hi(w.w);\n"
       << "        }\n";
  } else {
    // Any other B: a lambda per element of both operands.
    auto av = ai, bv = bi;
    av.push_back("k");
    bv.push_back("k");
    bv.push_back(ix[rv - 1]);
    gs << "        for (long k = lane; k < " << K << "; k += 32) acc += " << call(name, a, av) << " * " << call(name, b, bv)
       << ";\n";
  }
  gs << "        " << dn << " = lg_warp_sum(acc); }\n";
  return gs.str();
}

}  // namespace lg::emit::cuda
