// CUDA rendering of stages (see render.h for the kernel shapes). Names inside a kernel are local
// (v0, v1, ... in graph order; p0, p1, ... for buffers), so the stages of different layers that
// compute the same thing render to the same text and share a kernel.
#include "emit/cuda/render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "emit/cuda/expr.h"
#include "emit/cuda/templates.h"
#include "support/error.h"

namespace lg::emit::cuda {

using lift::StageKind;

ir::ValueId buffer_node(const ir::Graph& g, ir::ValueId v) {
  while (g.at(v).op == ir::Op::StateWrite) v = g.at(v).operands[0];
  return v;
}

std::string device_prelude() {
  return "// lanegraph compiled program: device helpers shared by every kernel, after the flash-attention\n"
         "// template (src/kernels/flash_attention.cuh) that attention stages instantiate at T > 1.\n" +
         std::string(kFlashAttentionTemplate) + R"(
// The compiled program's policies for lg_fa::attention_block.
// When k and v are layer slices of f32 caches laid out [kv head][position][dim] (what `kcache[l]`
// reads): a pack kernel first rounds the rows the step attends to into a bf16 copy of the same
// layout, so the tiles are 16-byte loads of 8 bf16 (half the bytes of the f32 rows, read by every
// query tile); q comes packed as bf16 [T, H * DH] by a pack kernel (its RoPE and norms computed
// once per element there, at full occupancy, not inside this 2-blocks-per-SM kernel).
template <int DH, class P, class O> struct lg_attn_policy_rows {
  const P& p; const O& o;
  const unsigned short* q; long q_row;
  const unsigned short* k; const unsigned short* v; long head_stride, row_stride;
  __device__ __forceinline__ uint4 row8(const unsigned short* base, int kvh, int j, int d0) const {
    return *reinterpret_cast<const uint4*>(base + kvh * head_stride + j * row_stride + d0);
  }
  __device__ uint4 load_q8(int t, int h, int d0) const {
    return *reinterpret_cast<const uint4*>(q + t * q_row + h * DH + d0);
  }
  __device__ uint4 load_k8(int kvh, int j, int d0) const { return row8(k, kvh, j, d0); }
  __device__ uint4 load_v8(int kvh, int j, int d0) const { return row8(v, kvh, j, d0); }
  __device__ int pos(int t) const { return (int)p(t); }
  __device__ void store_o2(int t, int h, int d, float o0, float o1) const { o(t, h, d, o0, o1); }
};
// Otherwise: q, k, v and the query positions are the attention stage's own lambdas (views, RoPE,
// norms inline), rounded to bf16 on the way in.
template <class Q, class K, class V, class P, class O> struct lg_attn_policy {
  const Q& q; const K& k; const V& v; const P& p; const O& o;
  template <class F> __device__ __forceinline__ uint4 pack8(const F& f, int a, int b, int d0) const {
    uint4 r;
    r.x = lg_fa::pack_bf16x2(f(a, b, d0), f(a, b, d0 + 1));
    r.y = lg_fa::pack_bf16x2(f(a, b, d0 + 2), f(a, b, d0 + 3));
    r.z = lg_fa::pack_bf16x2(f(a, b, d0 + 4), f(a, b, d0 + 5));
    r.w = lg_fa::pack_bf16x2(f(a, b, d0 + 6), f(a, b, d0 + 7));
    return r;
  }
  __device__ uint4 load_q8(int t, int h, int d0) const { return pack8(q, t, h, d0); }
  __device__ uint4 load_k8(int kvh, int j, int d0) const { return pack8(k, kvh, j, d0); }
  __device__ uint4 load_v8(int kvh, int j, int d0) const { return pack8(v, kvh, j, d0); }
  __device__ int pos(int t) const { return (int)p(t); }
  __device__ void store_o2(int t, int h, int d, float o0, float o1) const { o(t, h, d, o0, o1); }
};
// bf16 widening, warp reductions, loads.
__device__ __forceinline__ float lg_bf16(unsigned short v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ __forceinline__ float lg_bf16_lo(unsigned v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float lg_bf16_hi(unsigned v) { return __uint_as_float(v & 0xffff0000u); }
// Programmatic dependent launch (sm_90): the runtime may start this grid before the previous
// launch has finished (its launch latency hides behind that launch's tail); nothing is read before
// the previous grid's writes are visible. Without the launch attribute it returns at once.
__device__ __forceinline__ void lg_wait_previous_launch() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// A 16-byte load of data read once (decode weights): bypasses L1 so it does not evict what is reused.
__device__ __forceinline__ uint4 lg_ld_stream(const uint4* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  return r;
}
__device__ __forceinline__ float lg_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// f32 -> bf16 bits, round to nearest even (NaN stays NaN): the operand of a tensor-core GEMM.
__device__ __forceinline__ unsigned short lg_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)0x7fc0u;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
__device__ __forceinline__ float lg_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide sum / max of every thread's v (blockDim.x a multiple of 32); every thread gets the
// block's value. `red`: 32 floats of shared memory, free for the next call when it returns.
__device__ __forceinline__ float lg_block_sum(float v, float* red) {
  v = lg_warp_sum(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < (int)(blockDim.x >> 5); ++w) v += red[w];
  __syncthreads();
  return v;
}
__device__ __forceinline__ float lg_block_max(float v, float* red) {
  v = lg_warp_max(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < (int)(blockDim.x >> 5); ++w) v = fmaxf(v, red[w]);
  __syncthreads();
  return v;
}
)";
}

namespace {

std::string dim(const ir::Dim& d) {
  if (d.is_const()) return std::to_string(d.coeff) + "L";
  return d.coeff == 1 ? "T" : "(" + std::to_string(d.coeff) + "L * T)";
}

std::string idx_name(size_t k) { return "i" + std::to_string(k); }

// "((a)*d1 + b)*d2 + c" for index expressions `ix` over `shape`.
std::string linear(const ir::Shape& shape, const std::vector<std::string>& ix) {
  if (shape.empty()) return "0L";
  std::string s = "(" + ix[0] + ")";
  for (size_t k = 1; k < shape.size(); ++k) s = "(" + s + " * " + dim(shape[k]) + " + (" + ix[k] + "))";
  return s;
}

// Statements declaring `names[k]` = the multi-index of linear `lin` over `shape`.
std::string delinear(const ir::Shape& shape, const std::string& lin, const std::vector<std::string>& names,
                     const std::string& tmp) {
  std::string s = "long " + tmp + " = " + lin + "; (void)" + tmp + ";";
  for (size_t k = shape.size(); k-- > 0;) {
    if (k == 0) {
      s += " long " + names[k] + " = " + tmp + ";";
    } else {
      s += " long " + names[k] + " = " + tmp + " % " + dim(shape[k]) + "; " + tmp + " /= " + dim(shape[k]) + ";";
    }
  }
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// The value `v` is computed from through inline float -> float casts (the .lg's bf16 weights or
// stored f32 rows widened or narrowed on the way in), or `v` itself.
ir::ValueId through_float_casts(const lift::StagedProgram& p, ir::ValueId v) {
  const ir::Graph& g = p.graph;
  while (g.at(v).op == ir::Op::Cast && p.is_inline[static_cast<size_t>(v)] && is_float(g.at(v).dtype) &&
         is_float(g.at(g.at(v).operands[0]).dtype))
    v = g.at(v).operands[0];
  return v;
}

// The bf16 weight W of `b` when the matmul reads it as W.T ([K, N] view of W[N, K], possibly
// widened by an inline float cast) with a constant K % 8 == 0; -1 otherwise.
ir::ValueId transposed_bf16_weight(const lift::StagedProgram& p, ir::ValueId a, ir::ValueId b) {
  const ir::Graph& g = p.graph;
  const ir::ValueId bw = through_float_casts(p, b);
  const ir::Node& bn = g.at(bw);
  const auto& sa = g.at(a).shape;
  bool fast = bn.op == ir::Op::Permute && p.is_inline[static_cast<size_t>(bw)] && g.at(b).shape.size() == 2 &&
              bn.attrs.perm == std::vector<int32_t>{1, 0} && g.at(bn.operands[0]).op == ir::Op::Param &&
              g.at(bn.operands[0]).dtype == DType::BF16 && sa.back().is_const() && sa.back().coeff % 8 == 0;
  return fast ? bn.operands[0] : -1;
}

// The renderer of one launch.
struct Renderer {
  const lift::StagedProgram& p;
  const ir::Graph& g;
  std::vector<KernelArg> args;
  std::map<ir::ValueId, size_t> arg_of;
  int tmp = 0;
  // Epilogue form of a GEMM stage (T > 1): dot products come from the f32 buffers d0, d1, ...
  // (cuBLASLt's outputs), one thread per output element.
  bool scratch_dots = false;
  // Layer lifting: the leading index of a state (the layer of a KV cache, `kcache[l]`) becomes the
  // kernel parameter lg_l instead of a constant, so the launches of every layer share one kernel.
  // Done only when one kernel sees a single such index (layer_values); otherwise re-rendered with
  // constants.
  bool lift_layer = true;
  std::set<int64_t> layer_values;

  std::string layer_index(int64_t v) {
    if (!lift_layer) return std::to_string(v) + "L";
    layer_values.insert(v);
    return "lg_l";
  }
  bool is_state(ir::ValueId v) const { return g.at(buffer_node(g, v)).op == ir::Op::State; }
  /// For `cache[l]` seen as [A, B, C] (a Reshape dropping the leading 1 of a Slice at l of a state
  /// [L, A, B, C] read from its buffer): the pointer expression of that slice's first element, so
  /// rows of C elements are contiguous at stride C and heads at stride B * C. "" otherwise.
  std::string state_slice_base(ir::ValueId v) {
    const ir::Node& rs = g.at(v);
    if (rs.op != ir::Op::Reshape || !p.is_inline[static_cast<size_t>(v)] || rs.shape.size() != 3) return "";
    const ir::ValueId sl = rs.operands[0];
    const ir::Node& sn = g.at(sl);
    if (sn.op != ir::Op::Slice || !p.is_inline[static_cast<size_t>(sl)] || sn.attrs.step != 1 ||
        ir::positive_axis(sn.attrs.axis, sn.shape.size()) != 0 || sn.shape.size() != 4 || !(sn.shape[0] == ir::Dim::constant(1)))
      return "";
    const ir::ValueId st = sn.operands[0];
    if (p.is_inline[static_cast<size_t>(st)] || !is_state(st)) return "";
    const ir::Shape& ss = g.at(st).shape;
    for (size_t k = 1; k < 4; ++k)
      if (!ss[k].is_const() || !(ss[k] == rs.shape[k - 1])) return "";
    if (rs.shape[2].coeff % 8 != 0) return "";
    return "p" + std::to_string(arg(st, false)) + " + " + layer_index(sn.attrs.start) + " * " +
           std::to_string(ss[1].coeff * ss[2].coeff * ss[3].coeff) + "L";
  }

  /// The lifted layer index, or -1 (the kernel then has no lg_l parameter).
  int64_t layer() const { return layer_values.empty() ? -1 : *layer_values.begin(); }

  /// A whole kernel: the buffer params, `extra` params, lg_l when a layer index was lifted, T.
  std::string kernel(const std::string& bounds, const std::vector<std::string>& extra, const std::string& comment,
                     const std::string& body) const {
    std::vector<std::string> params;
    for (size_t i = 0; i < args.size(); ++i) params.push_back(param_decl(i));
    params.insert(params.end(), extra.begin(), extra.end());
    if (!layer_values.empty()) params.push_back("const long lg_l");
    params.push_back("const long T");
    return "extern \"C\" __global__ void " + bounds + " KERNEL_NAME(\n    " + join(params, ",\n    ") + ") {" +
           (comment.empty() ? "" : "  // " + comment) + "\n  lg_wait_previous_launch();\n" + body + "}\n";
  }

  Renderer(const lift::StagedProgram& prog) : p(prog), g(prog.graph) {}

  std::string fresh(const char* base) { return std::string(base) + std::to_string(tmp++); }

  size_t arg(ir::ValueId node, bool written) {
    ir::ValueId b = buffer_node(g, node);
    auto it = arg_of.find(b);
    if (it != arg_of.end()) {
      args[it->second].written = args[it->second].written || written;
      return it->second;
    }
    arg_of[b] = args.size();
    args.push_back({b, written});
    return args.size() - 1;
  }

  std::string param_decl(size_t i) const {
    const ir::Node& n = g.at(args[i].node);
    std::string ty;
    if (n.op == ir::Op::Input) ty = "const int* __restrict__";
    else if (n.op == ir::Op::Param) ty = n.dtype == DType::BF16 ? "const unsigned short* __restrict__" : "const float* __restrict__";
    else ty = args[i].written || n.op == ir::Op::State ? "float* __restrict__" : "const float* __restrict__";
    return ty + " p" + std::to_string(i);
  }

  std::string load(ir::ValueId v, const std::string& off) {
    ir::ValueId b = buffer_node(g, v);
    std::string ptr = "p" + std::to_string(arg(b, false));
    const ir::Node& n = g.at(b);
    if (n.op == ir::Op::Input) return "(float)" + ptr + "[" + off + "]";
    if (n.op == ir::Op::Param && n.dtype == DType::BF16) return "lg_bf16(" + ptr + "[" + off + "])";
    return ptr + "[" + off + "]";
  }

  // The nodes stage s evaluates: its own and the inline ones it reaches, plus the buffered
  // values it loads; in graph order.
  std::vector<ir::ValueId> closure(int32_t s) {
    std::set<ir::ValueId> seen;
    std::function<void(ir::ValueId)> visit = [&](ir::ValueId v) {
      if (!seen.insert(v).second) return;
      bool here = p.stage_of[static_cast<size_t>(v)] == s || p.is_inline[static_cast<size_t>(v)];
      if (!here) return;
      for (ir::ValueId o : g.at(v).operands) visit(o);
    };
    for (ir::ValueId v : p.stages[static_cast<size_t>(s)].nodes) visit(v);
    return {seen.begin(), seen.end()};
  }

  // Device lambdas for every node of `nodes`; returns their names. MatMul nodes return the
  // variable `dots[node]` (GEMM stages), reductions loop (memoised per thread).
  std::map<ir::ValueId, std::string> lambdas(int32_t s, const std::vector<ir::ValueId>& nodes, std::ostringstream& os,
                                             const std::map<ir::ValueId, std::string>& dots) {
    std::map<ir::ValueId, std::string> name;
    int local = 0;
    for (ir::ValueId v : nodes) name[v] = "v" + std::to_string(local++);
    auto call = [&](ir::ValueId v, const std::vector<std::string>& ix) { return name.at(v) + "(" + join(ix) + ")"; };
    for (ir::ValueId v : nodes) {
      const ir::Node& n = g.at(v);
      const std::string& nm = name[v];
      std::vector<std::string> ix;
      std::vector<std::string> params;
      for (size_t k = 0; k < n.shape.size(); ++k) {
        ix.push_back(idx_name(k));
        params.push_back("long " + idx_name(k));
      }
      bool here = p.stage_of[static_cast<size_t>(v)] == s || p.is_inline[static_cast<size_t>(v)];
      // A write (state_store) or the attention loop itself, not a value.
      if (here && (n.op == ir::Op::StateWrite || n.op == ir::Op::Attention)) continue;
      std::string memo_decl;
      std::ostringstream b;
      auto bcast = [&](ir::ValueId o) {
        const auto& os2 = g.at(o).shape;
        std::vector<std::string> r;
        size_t shift = n.shape.size() - os2.size();
        for (size_t k = 0; k < os2.size(); ++k)
          r.push_back(os2[k] == ir::Dim::constant(1) && !(n.shape[k + shift] == ir::Dim::constant(1)) ? "0L" : ix[k + shift]);
        return r;
      };
      auto opnd = [&](size_t i) { return call(n.operands[i], bcast(n.operands[i])); };
      bool ints = n.operands.size() >= 2 && !is_float(g.at(n.operands[0]).dtype) && !is_float(g.at(n.operands[1]).dtype);
      if (!here) {
        b << "return " << load(v, linear(n.shape, ix)) << ";";
      } else if (ir::is_elementwise(n.op)) {
        std::vector<std::string> xs;
        for (size_t i = 0; i < n.operands.size(); ++i) xs.push_back(opnd(i));
        b << "return " << elementwise_expr(n, ints, xs) << ";";
      } else {
        using ir::Op;
        switch (n.op) {
          case Op::Const: b << "return " << lit(n.attrs.scalar) << ";"; break;
          case Op::Arange: b << "return (float)i0;"; break;
          case Op::ReduceSum:
          case Op::ReduceMax: {
            ir::ValueId o = n.operands[0];
            const auto& osh = g.at(o).shape;
            auto axis = static_cast<size_t>(ir::positive_axis(n.attrs.axis, osh.size()));
            std::vector<std::string> oi;
            for (size_t k = 0, j = 0; k < osh.size(); ++k) {
              if (k == axis) { oi.push_back("r"); if (n.attrs.keepdim) ++j; continue; }
              oi.push_back(ix[j++]);
            }
            bool mx = n.op == Op::ReduceMax;
            const std::string fold = mx ? "fmaxf(acc, " + call(o, oi) + ")" : "acc + " + call(o, oi);
            memo_decl = "long " + nm + "_key = -1; float " + nm + "_val = 0.0f;\n";
            // Memoised per thread for its last key. When a whole converged warp asks for the same
            // key (element loops give a warp one row; see element_stage), the 32 lanes split the
            // axis and combine with shuffles: the row is read once, not once per lane.
            b << "long key = " << linear(n.shape, ix) << "; if (key == " << nm << "_key) return " << nm << "_val; "
              << "float acc = " << (mx ? "__int_as_float(0xff800000)" : "0.0f") << "; "
              << "const unsigned am = __activemask(); "
              << "if (am == 0xffffffffu && __all_sync(am, key == __shfl_sync(am, key, 0))) { "
              << "for (long r = threadIdx.x & 31; r < " << dim(osh[axis]) << "; r += 32) acc = " << fold << "; "
              << "acc = " << (mx ? "lg_warp_max(acc)" : "lg_warp_sum(acc)") << "; "
              << "} else { for (long r = 0; r < " << dim(osh[axis]) << "; ++r) acc = " << fold << "; } "
              << nm << "_key = key; " << nm << "_val = acc; return acc;";
            break;
          }
          case Op::MatMul: {
            auto it = dots.find(v);
            if (it == dots.end()) throw Error("emit: internal error: matmul outside a GEMM stage");
            b << "return " << it->second << ";";
            break;
          }
          case Op::Gather: {
            ir::ValueId tab = n.operands[0], id = n.operands[1];
            size_t ri = g.at(id).shape.size();
            std::vector<std::string> ii(ix.begin(), ix.begin() + static_cast<std::ptrdiff_t>(ri));
            std::vector<std::string> ti = {"row"};
            for (size_t k = ri; k < ix.size(); ++k) ti.push_back(ix[k]);
            b << "long row = (long)" << call(id, ii) << "; row = row < 0 ? 0 : (row >= " << dim(g.at(tab).shape[0])
              << " ? " << dim(g.at(tab).shape[0]) << " - 1 : row); return " << call(tab, ti) << ";";
            break;
          }
          case Op::Reshape: {
            // Trailing dims the reshape keeps map index to index; only the leading ones go through
            // a linear index (and none at all when what is left is only 1s, as in a squeeze):
            // 64-bit division is not free, and K/V tiles of the prefill attention are read through
            // exactly such views.
            ir::ValueId o = n.operands[0];
            const ir::Shape& osh = g.at(o).shape;
            size_t keep = 0;
            while (keep < osh.size() && keep < n.shape.size() &&
                   osh[osh.size() - 1 - keep] == n.shape[n.shape.size() - 1 - keep])
              ++keep;
            const ir::Shape opre(osh.begin(), osh.end() - static_cast<std::ptrdiff_t>(keep));
            const ir::Shape npre(n.shape.begin(), n.shape.end() - static_cast<std::ptrdiff_t>(keep));
            const std::vector<std::string> ipre(ix.begin(), ix.end() - static_cast<std::ptrdiff_t>(keep));
            std::vector<std::string> oi;
            for (size_t k = 0; k < opre.size(); ++k) oi.push_back("o" + std::to_string(k));
            const bool ones = std::all_of(opre.begin(), opre.end(), [](const ir::Dim& d) { return d == ir::Dim::constant(1); });
            if (ones) {
              for (auto& x : oi) x = "0L";
            } else if (!opre.empty()) {
              b << delinear(opre, npre.empty() ? "0L" : linear(npre, ipre), oi, "lin") << " ";
            }
            for (size_t k = 0; k < keep; ++k) oi.push_back(ix[ix.size() - keep + k]);
            b << "return " << call(o, oi) << ";";
            break;
          }
          case Op::Permute: {
            std::vector<std::string> oi(n.attrs.perm.size());
            for (size_t k = 0; k < n.attrs.perm.size(); ++k) oi[static_cast<size_t>(n.attrs.perm[k])] = ix[k];
            b << "return " << call(n.operands[0], oi) << ";";
            break;
          }
          case Op::Slice: {
            auto axis = static_cast<size_t>(ir::positive_axis(n.attrs.axis, n.shape.size()));
            std::vector<std::string> oi = ix;
            const bool layer = axis == 0 && n.attrs.step == 1 && g.at(n.operands[0]).shape[0].is_const() &&
                               n.shape[0] == ir::Dim::constant(1) && is_state(n.operands[0]) &&
                               p.stage_of[static_cast<size_t>(n.operands[0])] != s &&
                               !p.is_inline[static_cast<size_t>(n.operands[0])];
            oi[axis] = (layer ? layer_index(n.attrs.start) : std::to_string(n.attrs.start) + "L") + " + " + ix[axis] +
                       " * " + std::to_string(n.attrs.step) + "L";
            b << "return " << call(n.operands[0], oi) << ";";
            break;
          }
          case Op::Concat: {
            auto axis = static_cast<size_t>(ir::positive_axis(n.attrs.axis, n.shape.size()));
            std::string off = "0L";
            for (size_t j = 0; j < n.operands.size(); ++j) {
              ir::ValueId o = n.operands[j];
              std::vector<std::string> oi = ix;
              oi[axis] = ix[axis] + " - (" + off + ")";
              std::string end = off + " + " + dim(g.at(o).shape[axis]);
              if (j + 1 < n.operands.size()) b << "if (" << ix[axis] << " < " << end << ") ";
              b << "return " << call(o, oi) << "; ";
              off = end;
            }
            break;
          }
          default:
            throw Error("emit: internal error: " + std::string(ir::op_name(n.op)) + " rendered as a value");
        }
      }
      os << memo_decl << "  auto " << nm << " = [&](" << join(params) << ") -> float { " << b.str() << " };\n";
    }
    return name;
  }

  // Code writing state write w's element at value index `vi` (names) with value expression `val`.
  std::string state_store(ir::ValueId w, const std::vector<std::string>& vi, const std::string& val,
                          const std::map<ir::ValueId, std::string>& name) {
    return state_element(w, vi, name) + " = " + val + ";";
  }

  // The cache element state write w writes for value index `vi` (names), as an lvalue.
  std::string state_element(ir::ValueId w, const std::vector<std::string>& vi,
                            const std::map<ir::ValueId, std::string>& name) {
    const ir::Node& n = g.at(w);
    ir::ValueId st = buffer_node(g, w);
    const auto& ssh = g.at(st).shape;
    size_t nfixed = n.attrs.fixed.size();
    auto axis = static_cast<size_t>(n.attrs.axis);
    std::vector<std::string> si;
    for (size_t k = 0; k < nfixed; ++k)
      si.push_back(k == 0 ? layer_index(n.attrs.fixed[k]) : std::to_string(n.attrs.fixed[k]) + "L");
    for (size_t k = 0; k < vi.size(); ++k) si.push_back(vi[k]);
    si[nfixed + axis] = "(long)" + name.at(n.operands[2]) + "(" + vi[axis] + ")";
    return "p" + std::to_string(arg(st, true)) + "[" + linear(ssh, si) + "]";
  }

  // A grid-stride loop over the elements of `shape` (linear index e, multi-index i0, i1, ...)
  // assigning expression `value` to lvalue `dst` for each. Returns the threads it wants per
  // element (for the grid): 32 when a warp computes each element, else 1.
  int element_loop(const ir::Shape& shape, const std::string& dst, const std::string& value, bool reduces,
                   std::ostringstream& os) {
    std::vector<std::string> ix;
    for (size_t k = 0; k < shape.size(); ++k) ix.push_back(idx_name(k));
    std::string n = "1L";
    for (const auto& d : shape) n += " * " + dim(d);
    const std::string bodyf = dst + " = " + value + ";";
    // A reduction's own result (rows of fewer than 32 outputs, e.g. [T, H, 1]): a warp per
    // element, so that its lanes split the reduced axis together (a thread per element would walk
    // the whole axis alone); lane 0 stores it.
    if (reduces && !shape.empty() && shape.back().is_const() && shape.back().coeff < 32) {
      os << "    for (long e = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; e < " << n
         << "; e += ((long)gridDim.x * blockDim.x) >> 5) { __syncwarp(); " << delinear(shape, "e", ix, "t_")
         << " const float lg_v = " << value << "; if ((threadIdx.x & 31) == 0) " << dst << " = lg_v; }\n";
      return 32;
    }
    // With a reduction inside and rows of at least a warp, a warp walks one row at a time so
    // that its lanes ask for the same reduction key together (the cooperative path in
    // lambdas()); otherwise a plain grid-stride loop over elements.
    const bool rows = reduces && !shape.empty() && shape.back().is_const() && shape.back().coeff >= 32;
    if (rows) {
      // A warp takes a span of one row: the whole row when there are rows enough to give
      // about 8192 warps work (the reduction is read once per row), else the row halved until
      // there are (down to 128 or 32 elements): each span recomputes the row's reduction, but a
      // lone warp walking a 4096-wide row serially (a decode step) takes tens of microseconds.
      // Every lane of a warp runs the same iterations when the row is a multiple of 32 wide,
      // so the warp is reconverged (__syncwarp) before each element: the reduction's
      // cooperative path needs all 32 lanes at the call together.
      // Rows of at most 256 are cheap to reduce again (8 loads a lane), so their spans go down to
      // 32 elements: a decode step's q/k-norm rows then spread over 4x the warps.
      const int64_t N = shape.back().coeff;
      const int64_t small = N % 32 == 0 && N <= 256 ? 32 : (N % 128 == 0 ? 128 : (N % 32 == 0 ? 32 : N));
      os << "    {\n      long span = " << N << "L;\n"
         << "      while (" << n << " / span < 8192L && span % 64L == 0L && span / 2 >= " << small
         << "L) span /= 2;\n"
         << "      for (long w = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; w * span < " << n
         << "; w += ((long)gridDim.x * blockDim.x) >> 5)\n"
         << "        for (long e = w * span + (threadIdx.x & 31); e < (w + 1) * span; e += 32) { "
         << (N % 32 == 0 ? "__syncwarp(); " : "") << delinear(shape, "e", ix, "t_") << " " << bodyf << " }\n    }\n";
      return 1;
    }
    os << "    for (long e = (long)blockIdx.x * blockDim.x + threadIdx.x; e < " << n
       << "; e += (long)gridDim.x * blockDim.x) { " << delinear(shape, "e", ix, "t_") << " " << bodyf << " }\n";
    return 1;
  }

  // An element stage: grid-stride loops over each store and each state write.
  void element_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
    const lift::Stage& st = p.stages[static_cast<size_t>(s)];
    os << "  {  // " << lift::stage_kind_name(st.kind) << " stage\n";
    auto nodes = closure(s);
    bool reduces = false;
    for (ir::ValueId v : nodes)
      if (g.at(v).op == ir::Op::ReduceSum || g.at(v).op == ir::Op::ReduceMax) reduces = true;
    auto name = lambdas(s, nodes, os, {});
    auto loop = [&](const ir::Shape& shape, const std::string& dst, const std::string& value) {
      int64_t c = 1;
      int32_t tp = 0;
      for (const auto& d : shape) {
        c *= d.coeff;
        if (!d.is_const()) ++tp;
      }
      wc.push_back(c * element_loop(shape, dst, value, reduces, os));
      wp.push_back(tp);
    };
    for (ir::ValueId v : st.stores) {
      std::vector<std::string> ix;
      for (size_t k = 0; k < g.at(v).shape.size(); ++k) ix.push_back(idx_name(k));
      loop(g.at(v).shape, "p" + std::to_string(arg(v, true)) + "[e]", name.at(v) + "(" + join(ix) + ")");
    }
    for (ir::ValueId w : st.nodes) {
      if (g.at(w).op != ir::Op::StateWrite) continue;
      ir::ValueId val = g.at(w).operands[1];
      std::vector<std::string> ix;
      for (size_t k = 0; k < g.at(val).shape.size(); ++k) ix.push_back(idx_name(k));
      loop(g.at(val).shape, state_element(w, ix, name), name.at(val) + "(" + join(ix) + ")");
    }
    os << "  }\n";
  }

  // The buffer behind GEMM activation `a` of stage s when `a` is that buffer's value as f32
  // [T, K] (seen through float casts): a value another stage stored. -1 otherwise.
  ir::ValueId stored_row(int32_t s, ir::ValueId a) const {
    const ir::ValueId v = through_float_casts(p, a);
    const ir::Node& n = g.at(v);
    if (p.is_inline[static_cast<size_t>(v)] || p.stage_of[static_cast<size_t>(v)] == s || p.stage_of[static_cast<size_t>(v)] < 0)
      return -1;
    if (n.op == ir::Op::StateWrite || n.dtype != DType::F32 || !(n.shape == g.at(a).shape)) return -1;
    return v;
  }

  // The reductions of a GEMM's prologue (pass_gemm_reduce_prologue: RMSNorm) at T == 1, where
  // each has a single row: the whole block reduces it (every warp would otherwise walk the row on
  // its own) and seeds the reduction lambda's memo, so the staging that follows reads the result.
  // In graph order, so a reduction over another one's result finds it memoised.
  void block_reductions(int32_t s, const std::vector<ir::ValueId>& nodes, const std::map<ir::ValueId, std::string>& name,
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
         << "      #pragma unroll 4\n"
         << "      for (long r = threadIdx.x; r < " << dim(osh[axis]) << "; r += blockDim.x) acc = "
         << fold("acc", name.at(o) + "(" + join(oi) + ")") << ";\n"
         << "      acc = " << (mx ? "lg_block_max" : "lg_block_sum") << "(acc, lg_red);\n"
         << "      " << nm << "_key = 0; " << nm << "_val = acc;\n"
         << "    }\n";
    }
  }

  // A GEMM stage: matmuls grouped by shared epilogue; one warp per output element of a group.
  void gemm_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
    const lift::Stage& st = p.stages[static_cast<size_t>(s)];
    std::vector<ir::ValueId> mms;
    for (ir::ValueId v : st.nodes)
      if (g.at(v).op == ir::Op::MatMul) mms.push_back(v);
    // Which matmuls each stage node depends on (through stage and inline nodes).
    std::map<ir::ValueId, std::set<ir::ValueId>> dep;
    std::function<const std::set<ir::ValueId>&(ir::ValueId)> deps = [&](ir::ValueId v) -> const std::set<ir::ValueId>& {
      auto it = dep.find(v);
      if (it != dep.end()) return it->second;
      std::set<ir::ValueId> d;
      const ir::Node& n = g.at(v);
      if (n.op == ir::Op::MatMul && p.stage_of[static_cast<size_t>(v)] == s) {
        d.insert(v);
      } else if (p.stage_of[static_cast<size_t>(v)] == s || p.is_inline[static_cast<size_t>(v)]) {
        for (ir::ValueId o : n.operands) {
          if (n.op == ir::Op::StateWrite && o == n.operands[0]) continue;
          const auto& od = deps(o);
          d.insert(od.begin(), od.end());
        }
      }
      return dep[v] = d;
    };
    // Union the matmuls an epilogue node joins (silu(gate) * up).
    std::map<ir::ValueId, ir::ValueId> root;
    for (ir::ValueId m : mms) root[m] = m;
    std::function<ir::ValueId(ir::ValueId)> find = [&](ir::ValueId m) { return root[m] == m ? m : root[m] = find(root[m]); };
    std::vector<ir::ValueId> outs(st.stores.begin(), st.stores.end());
    for (ir::ValueId v : st.nodes)
      if (g.at(v).op == ir::Op::StateWrite) outs.push_back(v);
    for (ir::ValueId v : outs) {
      const auto& d = deps(v);
      if (d.empty())
        throw Error("emit: stage " + std::to_string(s) + " (gemm) has an output that uses none of its GEMMs");
      for (ir::ValueId m : d) root[find(m)] = find(*d.begin());
    }
    for (ir::ValueId v : st.nodes) (void)deps(v);
    std::map<ir::ValueId, std::string> dots;
    for (size_t j = 0; j < mms.size(); ++j) dots[mms[j]] = "dot" + std::to_string(j);
    if (scratch_dots)
      os << "  {  // gemm stage epilogue: dot products read from the GEMM's outputs\n"
         << "    const long warp = (long)blockIdx.x * blockDim.x + threadIdx.x;\n"
         << "    const long nwarps = (long)gridDim.x * blockDim.x;\n"
         << "    const int lane = 0;\n    float ";
    else
      os << "  {  // gemm stage\n"
         << "    const long warp = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n"
         << "    const long nwarps = ((long)gridDim.x * blockDim.x) >> 5;\n"
         << "    const int lane = threadIdx.x & 31;\n    float " ;
    for (size_t j = 0; j < mms.size(); ++j) os << (j ? ", " : "") << "dot" << j << " = 0.0f";
    os << ";\n";
    auto nodes = closure(s);
    auto name = lambdas(s, nodes, os, dots);
    // Decode (T == 1): the activation row each fast-path GEMV reads, as f32 [K]. A row some
    // earlier stage stored (o_proj's attention output, down_proj's SwiGLU product) is read where
    // it is, through L1 (`staged` maps it to a __ldg of the buffer): the block's warps share the
    // lines, and a warp's first weights do not wait for a copy of the whole row. A computed one
    // (an RMSNorm prologue) is staged once per block in shared memory (a plain load).
    std::map<ir::ValueId, std::pair<std::string, bool>> staged;  // activation -> (float4 base, via __ldg)
    if (!scratch_dots) {
      block_reductions(s, nodes, name, os);
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
        os << "    __shared__ __align__(16) float " << buf << "[" << sa[1].coeff << "];\n"
           << "    if (T == 1) for (long k = threadIdx.x; k < " << sa[1].coeff << "L; k += blockDim.x) " << buf
           << "[k] = " << name.at(a) << "(0L, k);\n";
      }
      if (!staged.empty()) os << "    __syncthreads();\n";
    }
    std::set<ir::ValueId> groups;
    for (ir::ValueId m : mms) groups.insert(find(m));
    // Groups (GEMMs joined by an epilogue, e.g. q, k and v each alone, or gate with up) share
    // one loop over all their outputs, so that a small group (k, v) does not leave most warps
    // idle while it runs on its own.
    std::vector<std::string> group_body, group_total;
    std::vector<int64_t> group_c;
    std::vector<int32_t> group_tp;
    for (ir::ValueId gr : groups) {
      std::ostringstream gs;
      const ir::Shape& shape = g.at(gr).shape;
      std::vector<ir::ValueId> members;
      for (ir::ValueId m : mms)
        if (find(m) == gr) {
          if (!(g.at(m).shape == shape))
            throw Error("emit: stage " + std::to_string(s) + ": GEMMs joined by an epilogue differ in shape");
          members.push_back(m);
        }
      std::vector<std::string> ix;
      for (size_t k = 0; k < shape.size(); ++k) ix.push_back(idx_name(k));
      std::string total = "1L";
      int64_t c = 1;
      int32_t tp = 0;
      for (const auto& d : shape) {
        total += " * " + dim(d);
        c *= d.coeff;
        if (!d.is_const()) ++tp;
      }
      group_total.push_back(total);
      group_c.push_back(c);
      group_tp.push_back(tp);
      gs << "      " << delinear(shape, "e", ix, "t_") << "\n";
      for (ir::ValueId m : members) {
        if (scratch_dots) {
          const size_t j = static_cast<size_t>(std::find(mms.begin(), mms.end(), m) - mms.begin());
          gs << "      " << dots[m] << " = d" << j << "[" << linear(shape, ix) << "];\n";
          continue;
        }
        const ir::Node& mn = g.at(m);
        ir::ValueId a = mn.operands[0], b = mn.operands[1];
        const auto& sa = g.at(a).shape;
        const auto& sb = g.at(b).shape;
        size_t rv = shape.size();
        std::vector<std::string> ai, bi;
        for (size_t k = 0; k + 2 < sa.size(); ++k)
          ai.push_back(sa[k] == ir::Dim::constant(1) ? "0L" : ix[k + (rv - sa.size())]);
        for (size_t k = 0; k + 2 < sb.size(); ++k)
          bi.push_back(sb[k] == ir::Dim::constant(1) ? "0L" : ix[k + (rv - sb.size())]);
        ai.push_back(ix[rv - 2]);
        std::string K = dim(sa.back());
        const std::string& dn = dots[m];
        // Fast path: B = W.T of a bf16 weight W[N, K], K % 8 == 0: 16-byte loads of 8 weights.
        // A float -> float cast of the weight (the .lg's bf16 widened to f32) is the load itself.
        const ir::ValueId wparam = transposed_bf16_weight(p, a, b);
        gs << "      { float acc = 0.0f;\n";
        if (wparam >= 0 && staged.count(a)) {
          // Weights stream once (no L1 allocation); four 16-byte loads in flight per lane (eight
          // measured slower on the H200: 1.34 -> 1.81 ms for the 8B down projections).
          std::string W = "p" + std::to_string(arg(wparam, false));
          const auto& [xa, ldg] = staged.at(a);
          gs << "        if (T == 1) {\n"
             << "          const uint4* wr = reinterpret_cast<const uint4*>(" << W << " + " << ix[rv - 1] << " * " << K
             << ");\n"
             << "          const float4* xa = " << xa << ";\n"
             << "          #pragma unroll 4\n"
             << "          for (long c = lane; c < " << K << " / 8; c += 32) {\n"
             << "            const uint4 w = lg_ld_stream(wr + c);\n"
             << (ldg ? "            const float4 x0 = __ldg(xa + 2 * c), x1 = __ldg(xa + 2 * c + 1);\n"
                     : "            const float4 x0 = xa[2 * c], x1 = xa[2 * c + 1];\n")
             << "            acc += x0.x * lg_bf16_lo(w.x) + x0.y * lg_bf16_hi(w.x) + x0.z * lg_bf16_lo(w.y) + x0.w * "
                "lg_bf16_hi(w.y);\n"
             << "            acc += x1.x * lg_bf16_lo(w.z) + x1.y * lg_bf16_hi(w.z) + x1.z * lg_bf16_lo(w.w) + x1.w * "
                "lg_bf16_hi(w.w);\n"
             << "          }\n"
             << "        } else\n";
        }
        if (wparam >= 0) {
          std::string W = "p" + std::to_string(arg(wparam, false));
          auto aj = [&](const std::string& k) {
            auto v = ai;
            v.push_back(k);
            return name.at(a) + "(" + join(v) + ")";
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
          auto av = ai, bv = bi;
          av.push_back("k");
          bv.push_back("k");
          bv.push_back(ix[rv - 1]);
          gs << "        for (long k = lane; k < " << K << "; k += 32) acc += " << name.at(a) << "(" << join(av) << ") * "
             << name.at(b) << "(" << join(bv) << ");\n";
        }
        gs << "        " << dn << " = lg_warp_sum(acc); }\n";
      }
      gs << "      if (lane == 0) {\n";
      for (ir::ValueId v : outs) {
        if (find(*deps(v).begin()) != gr) continue;
        if (g.at(v).op != ir::Op::StateWrite) {
          if (!(g.at(v).shape == shape))
            throw Error("emit: stage " + std::to_string(s) + ": a GEMM epilogue output differs from the GEMM's shape");
          gs << "        p" << arg(v, true) << "[" << linear(shape, ix) << "] = " << name.at(v) << "(" << join(ix) << ");\n";
          continue;
        }
        // A cache write of a GEMM result seen through Reshape/Permute: map this element's index
        // forward through the views to the written value's index.
        std::vector<ir::ValueId> chain;
        ir::ValueId cur = g.at(v).operands[1];
        while (p.stage_of[static_cast<size_t>(cur)] != s) {
          chain.push_back(cur);
          cur = g.at(cur).operands[0];
        }
        if (!(g.at(cur).shape == shape))
          throw Error("emit: stage " + std::to_string(s) + ": a cache write's value is not GEMM-shaped");
        std::vector<std::string> ci = ix;
        const ir::Shape* csh = &shape;
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
          const ir::Node& vn = g.at(*it);
          std::vector<std::string> ni;
          if (vn.op == ir::Op::Permute) {
            for (size_t k = 0; k < vn.attrs.perm.size(); ++k) ni.push_back(ci[static_cast<size_t>(vn.attrs.perm[k])]);
          } else {
            for (size_t k = 0; k < vn.shape.size(); ++k) ni.push_back(fresh("w"));
            gs << "        " << delinear(vn.shape, linear(*csh, ci), ni, fresh("l")) << "\n";
          }
          ci = ni;
          csh = &vn.shape;
        }
        gs << "        " << state_store(v, ci, name.at(cur) + "(" + join(ix) + ")", name) << "\n";
      }
      gs << "      }\n";
      group_body.push_back(gs.str());
    }
    const bool merged = std::all_of(group_tp.begin(), group_tp.end(), [&](int32_t t) { return t == group_tp[0]; });
    if (merged) {
      int64_t c = 0;
      std::string all = "0L";
      for (size_t i = 0; i < group_body.size(); ++i) {
        c += group_c[i];
        all += " + " + group_total[i];
      }
      wc.push_back(c);
      wp.push_back(group_tp.empty() ? 0 : group_tp[0]);
      os << "    for (long e_all = warp; e_all < " << all << "; e_all += nwarps) {\n";
      std::string before = "0L";
      for (size_t i = 0; i < group_body.size(); ++i) {
        const std::string end = before + " + " + group_total[i];
        os << "    " << (i ? "else " : "") << (i + 1 < group_body.size() ? "if (e_all < " + end + ") " : "")
           << "{\n      const long e = e_all - (" << before << ");\n" << group_body[i] << "    }\n";
        before = end;
      }
      os << "    }\n";
    } else {
      for (size_t i = 0; i < group_body.size(); ++i) {
        wc.push_back(group_c[i]);
        wp.push_back(group_tp[i]);
        os << "    for (long e = warp; e < " << group_total[i] << "; e += nwarps) {\n" << group_body[i] << "    }\n";
      }
    }
    os << "  }\n";
  }

  void attention_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
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
       << "      float sc = 0.0f;\n"
       << "      #pragma unroll\n      for (int c = 0; c < DC; ++c) { long d = lane + 32 * c; if (d < DH) sc += q[c] * " << K
       << "(kvh, j, d); }\n"
       << "      sc = lg_warp_sum(sc) * " << lit(n.attrs.scale) << ";\n"
       << "      const float mn = fmaxf(m, sc), corr = expf(m - mn), pj = expf(sc - mn);\n"
       << "      l = l * corr + pj;\n"
       << "      #pragma unroll\n      for (int c = 0; c < DC; ++c) { long d = lane + 32 * c; acc[c] = acc[c] * corr + (d < DH ? pj * "
       << V << "(kvh, j, d) : 0.0f); }\n"
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
};

}  // namespace

// Runs `render(r)` on a fresh Renderer with the layer index lifted to `lg_l`, and once more with
// constants when that kernel saw more than one layer.
template <class F>
auto with_layer_lifting(const lift::StagedProgram& p, F&& render) {
  for (bool lift : {true, false}) {
    Renderer r(p);
    r.lift_layer = lift;
    auto out = render(r);
    if (!lift || r.layer_values.size() <= 1) return out;
  }
  throw Error("emit: internal error: a kernel rendered with constants still lifted a layer index");
}

// A pack kernel: node `a` of stage s (shape [T, const...]) evaluated through the stage's lambdas,
// every element once, written as bf16 rows [T, K] (K = the product of the constant dims).
GemmPrefillRender::Pack render_pack(const lift::StagedProgram& p, int32_t s, ir::ValueId a,
                                    const std::map<ir::ValueId, std::string>& dots, const std::string& comment) {
  return with_layer_lifting(p, [&](Renderer& r) {
    const ir::Shape& shape = p.graph.at(a).shape;
    std::ostringstream body;
    auto nodes = r.closure(s);
    auto name = r.lambdas(s, nodes, body, dots);
    std::vector<std::string> ix;
    for (size_t k = 0; k < shape.size(); ++k) ix.push_back(idx_name(k));
    GemmPrefillRender::Pack pk;
    pk.a = a;
    pk.K = 1;
    for (size_t k = 1; k < shape.size(); ++k) pk.K *= shape[k].coeff;
    // With a reduction in the operand (an RMSNorm prologue, a q-norm), warps walk row spans as an
    // element stage does, so that a row's reduction is read once per span, not once per element.
    const bool reduces = std::any_of(nodes.begin(), nodes.end(), [&](ir::ValueId v) {
      return ir::is_reduce(p.graph.at(v).op) && (p.stage_of[static_cast<size_t>(v)] == s || p.is_inline[static_cast<size_t>(v)]);
    });
    r.element_loop(shape, "packed[e]", "lg_to_bf16(" + name.at(a) + "(" + join(ix) + "))", reduces, body);
    pk.source = r.kernel("__launch_bounds__(256)", {"unsigned short* __restrict__ packed"}, comment, body.str());
    pk.args = r.args;
    pk.layer = r.layer();
    return pk;
  });
}

std::optional<GemmPrefillRender> render_gemm_prefill(const lift::StagedProgram& p, int32_t s) {
  const ir::Graph& g = p.graph;
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  if (st.kind != StageKind::Gemm) return std::nullopt;
  GemmPrefillRender out;
  std::map<ir::ValueId, size_t> pack_of;
  std::map<ir::ValueId, std::string> zero_dots;
  for (ir::ValueId v : st.nodes) {
    const ir::Node& n = g.at(v);
    if (n.op != ir::Op::MatMul) continue;
    zero_dots[v] = "0.0f";
    ir::ValueId a = n.operands[0];
    const ir::Shape& sa = g.at(a).shape;
    ir::ValueId w = transposed_bf16_weight(p, a, n.operands[1]);
    // cuBLASLt takes [T, K] x [K, N]: the activation's rows are the tokens.
    if (w < 0 || sa.size() != 2 || sa[0].is_const() || sa[0].coeff != 1) return std::nullopt;
    auto [it, fresh] = pack_of.emplace(a, out.packs.size());
    if (fresh) out.packs.push_back({{}, {}, a, sa[1].coeff});
    out.gemms.push_back({it->second, w, g.at(w).shape[0].coeff, sa[1].coeff});
  }
  if (out.gemms.empty()) return std::nullopt;
  // A lone GEMM whose one output is `r + dot` for a stored r of its shape (o_proj, down_proj:
  // the residual add) needs no epilogue: cuBLASLt adds r as its C operand and writes the output.
  if (out.gemms.size() == 1 && st.stores.size() == 1) {
    const ir::ValueId v = *st.stores.begin();
    const ir::Node& vn = g.at(v);
    bool writes_state = false;
    for (ir::ValueId x : st.nodes) writes_state = writes_state || g.at(x).op == ir::Op::StateWrite;
    ir::ValueId mm = -1;
    for (ir::ValueId x : st.nodes)
      if (g.at(x).op == ir::Op::MatMul) mm = x;
    if (!writes_state && vn.op == ir::Op::Add && vn.dtype == DType::F32 && vn.shape == g.at(mm).shape) {
      for (int side = 0; side < 2; ++side) {
        const ir::ValueId d = vn.operands[static_cast<size_t>(side)], r = vn.operands[static_cast<size_t>(1 - side)];
        if (d == mm && p.stage_of[static_cast<size_t>(r)] != s && !p.is_inline[static_cast<size_t>(r)] &&
            g.at(r).shape == vn.shape && g.at(r).dtype == DType::F32) {
          out.gemms[0].residual = r;
          out.gemms[0].out = v;
        }
      }
    }
  }
  // Pack kernels: the activation as bf16 [T, K], evaluated through the stage's own lambdas.
  for (auto& pk : out.packs) pk = render_pack(p, s, pk.a, zero_dots, "pack a GEMM activation as bf16 for cuBLASLt");
  if (out.gemms[0].residual >= 0) return out;
  // The epilogue: the stage's GEMM kernel with the dot products read back.
  std::vector<std::string> dot_params;
  for (size_t j = 0; j < out.gemms.size(); ++j) dot_params.push_back("const float* __restrict__ d" + std::to_string(j));
  std::tie(out.epilogue_source, out.epilogue_args, out.epilogue_layer) = with_layer_lifting(p, [&](Renderer& r) {
    r.scratch_dots = true;
    std::ostringstream body;
    out.work_const.clear();
    out.work_t_power.clear();
    r.gemm_stage(s, body, out.work_const, out.work_t_power);
    return std::make_tuple(r.kernel("__launch_bounds__(256)", dot_params, "", body.str()), r.args, r.layer());
  });
  return out;
}

std::optional<AttentionPrefillRender> render_attention_prefill(const lift::StagedProgram& p, int32_t s) {
  const ir::Graph& g = p.graph;
  const lift::Stage& st = p.stages[static_cast<size_t>(s)];
  if (st.kind != StageKind::Attention) return std::nullopt;
  const ir::ValueId att = st.nodes.at(0);
  const ir::Node& n = g.at(att);
  const auto& qs = g.at(n.operands[0]).shape;
  const int64_t H = qs[1].coeff, Dh = qs[2].coeff;
  if (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128) return std::nullopt;
  AttentionPrefillRender a = with_layer_lifting(p, [&](Renderer& r) {
    std::ostringstream body;
    auto nodes = r.closure(s);
    auto name = r.lambdas(s, nodes, body, {});
    const std::string out = "p" + std::to_string(r.arg(att, true));
    body << "  auto store = [&](long t, long h, long d, float o0, float o1) { const long i = (t * " << H << "L + h) * "
         << Dh << "L + d; " << out << "[i] = o0; " << out << "[i + 1] = o1; };\n";
    const std::string kbase = r.state_slice_base(n.operands[1]), vbase = r.state_slice_base(n.operands[2]);
    const auto& ks = g.at(n.operands[1]).shape;
    const bool rows = !kbase.empty() && !vbase.empty();
    if (rows)
      body << "  const lg_attn_policy_rows<" << Dh << ", decltype(" << name.at(n.operands[3])
           << "), decltype(store)> pol{" << name.at(n.operands[3]) << ", store, qpacked, " << H * Dh
           << "L, kvpacked, kvpacked + " << ks[0].coeff * ks[1].coeff * ks[2].coeff << "L, "
           << ks[1].coeff * ks[2].coeff << "L, " << ks[2].coeff << "L};\n";
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
    if (rows) fa.q_pack = fa.kv_pack = GemmPrefillRender::Pack{};  // rendered below
    return fa;
  });
  if (!a.q_pack) return a;
  // q [T, H, Dh] packed once as bf16 rows, and the K/V cache rows of positions 0 .. max pos as
  // bf16 [2][KV, S, Dh], when the kernel reads them so.
  a.q_pack = render_pack(p, s, n.operands[0], {}, "q of a prefill attention as bf16 rows");
  a.kv_pack = with_layer_lifting(p, [&](Renderer& r) {
    std::ostringstream body;
    auto nodes = r.closure(s);
    auto name = r.lambdas(s, nodes, body, {});
    const std::string kbase = r.state_slice_base(n.operands[1]), vbase = r.state_slice_base(n.operands[2]);
    const auto& ks = g.at(n.operands[1]).shape;
    const int64_t KV = ks[0].coeff, S = ks[1].coeff, per_head = S * Dh;
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
         << "    const long off = kvh * " << per_head << "L + e;\n"
         << "    *reinterpret_cast<uint4*>(packed + c * " << KV * per_head << "L + off) = lg_fa::load8_f32_as_bf16((c == 0 ? "
         << kbase << " : " << vbase << ") + off);\n"
         << "  }\n";
    GemmPrefillRender::Pack pk;
    pk.source = r.kernel("__launch_bounds__(256)", {"unsigned short* __restrict__ packed"},
                         "K/V cache rows of a prefill attention as bf16", body.str());
    pk.args = r.args;
    pk.layer = r.layer();
    pk.K = 2 * KV * Dh / 8;  // 16-byte chunks per token of a step that starts at position 0
    return pk;
  });
  return a;
}

RenderedLaunch render_launch(const lift::StagedProgram& p, const std::vector<int32_t>& stages) {
  return with_layer_lifting(p, [&](Renderer& r) {
    RenderedLaunch out;
    std::ostringstream body;
    for (int32_t s : stages) {
      StageKind k = p.stages[static_cast<size_t>(s)].kind;
      if ((k == StageKind::Gemm || k == StageKind::Attention) && stages.size() > 1)
        throw Error("emit: stage " + std::to_string(s) + " (" + lift::stage_kind_name(k) +
                    ") must have a launch of its own");
      if (k == StageKind::Gemm) {
        r.gemm_stage(s, body, out.work_const, out.work_t_power);
        out.per_block = 8;  // warps per block
        out.gemm = true;
      } else if (k == StageKind::Attention) {
        r.attention_stage(s, body, out.work_const, out.work_t_power);
        out.per_block = 1;
        out.block = 1024;
      } else {
        r.element_stage(s, body, out.work_const, out.work_t_power);
      }
    }
    out.source = r.kernel("__launch_bounds__(" + std::to_string(out.block) + ")", {}, "", body.str());
    out.args = r.args;
    out.layer = r.layer();
    return out;
  });
}

}  // namespace lg::emit::cuda
