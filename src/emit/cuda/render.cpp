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

#include "support/error.h"

namespace lg::emit::cuda {

using lift::StageKind;

ir::ValueId buffer_node(const ir::Graph& g, ir::ValueId v) {
  while (g.at(v).op == ir::Op::StateWrite) v = g.at(v).operands[0];
  return v;
}

std::string device_prelude() {
  return R"(// lanegraph compiled program: device helpers shared by every kernel.
__device__ __forceinline__ float lg_bf16(unsigned short v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ __forceinline__ float lg_bf16_lo(unsigned v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float lg_bf16_hi(unsigned v) { return __uint_as_float(v & 0xffff0000u); }
__device__ __forceinline__ float lg_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
)";
}

namespace {

std::string lit(double v) {
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  if (std::isnan(v)) return "__int_as_float(0x7fffffff)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

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

int32_t norm_axis(int32_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int32_t>(rank) : axis; }

// The renderer of one launch.
struct Renderer {
  const lift::StagedProgram& p;
  const ir::Graph& g;
  std::vector<KernelArg> args;
  std::map<ir::ValueId, size_t> arg_of;
  int tmp = 0;

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
      } else {
        using ir::Op;
        switch (n.op) {
          case Op::Const: b << "return " << lit(n.attrs.scalar) << ";"; break;
          case Op::Arange: b << "return (float)i0;"; break;
          case Op::Neg: b << "return -" << opnd(0) << ";"; break;
          case Op::Abs: b << "return fabsf(" << opnd(0) << ");"; break;
          case Op::Exp: b << "return expf(" << opnd(0) << ");"; break;
          case Op::Log: b << "return logf(" << opnd(0) << ");"; break;
          case Op::Sqrt: b << "return sqrtf(" << opnd(0) << ");"; break;
          case Op::Rsqrt: b << "return 1.0f / sqrtf(" << opnd(0) << ");"; break;
          case Op::Recip: b << "return 1.0f / (" << opnd(0) << ");"; break;
          case Op::Sin: b << "return sinf(" << opnd(0) << ");"; break;
          case Op::Cos: b << "return cosf(" << opnd(0) << ");"; break;
          case Op::Tanh: b << "return tanhf(" << opnd(0) << ");"; break;
          case Op::Sigmoid: b << "return 1.0f / (1.0f + expf(-(" << opnd(0) << ")));"; break;
          case Op::Cast:
            if (n.dtype == DType::I32) b << "return truncf(" << opnd(0) << ");";
            else if (n.dtype == DType::Bool) b << "return (" << opnd(0) << ") != 0.0f ? 1.0f : 0.0f;";
            else b << "return " << opnd(0) << ";";
            break;
          case Op::Add: b << "return " << opnd(0) << " + " << opnd(1) << ";"; break;
          case Op::Sub: b << "return " << opnd(0) << " - " << opnd(1) << ";"; break;
          case Op::Mul: b << "return " << opnd(0) << " * " << opnd(1) << ";"; break;
          case Op::Div:
            if (ints) b << "return truncf(" << opnd(0) << " / " << opnd(1) << ");";
            else b << "return " << opnd(0) << " / " << opnd(1) << ";";
            break;
          case Op::Pow: b << "return powf(" << opnd(0) << ", " << opnd(1) << ");"; break;
          case Op::Maximum: b << "return fmaxf(" << opnd(0) << ", " << opnd(1) << ");"; break;
          case Op::Minimum: b << "return fminf(" << opnd(0) << ", " << opnd(1) << ");"; break;
          case Op::Lt: b << "return " << opnd(0) << " < " << opnd(1) << " ? 1.0f : 0.0f;"; break;
          case Op::Le: b << "return " << opnd(0) << " <= " << opnd(1) << " ? 1.0f : 0.0f;"; break;
          case Op::Gt: b << "return " << opnd(0) << " > " << opnd(1) << " ? 1.0f : 0.0f;"; break;
          case Op::Ge: b << "return " << opnd(0) << " >= " << opnd(1) << " ? 1.0f : 0.0f;"; break;
          case Op::Eq: b << "return " << opnd(0) << " == " << opnd(1) << " ? 1.0f : 0.0f;"; break;
          case Op::Ne: b << "return " << opnd(0) << " != " << opnd(1) << " ? 1.0f : 0.0f;"; break;
          case Op::Where: b << "return " << opnd(0) << " != 0.0f ? " << opnd(1) << " : " << opnd(2) << ";"; break;
          case Op::ReduceSum:
          case Op::ReduceMax: {
            ir::ValueId o = n.operands[0];
            const auto& osh = g.at(o).shape;
            auto axis = static_cast<size_t>(norm_axis(n.attrs.axis, osh.size()));
            std::vector<std::string> oi;
            for (size_t k = 0, j = 0; k < osh.size(); ++k) {
              if (k == axis) { oi.push_back("r"); if (n.attrs.keepdim) ++j; continue; }
              oi.push_back(ix[j++]);
            }
            bool mx = n.op == Op::ReduceMax;
            memo_decl = "long " + nm + "_key = -1; float " + nm + "_val = 0.0f;\n";
            b << "long key = " << linear(n.shape, ix) << "; if (key == " << nm << "_key) return " << nm << "_val; "
              << "float acc = " << (mx ? "__int_as_float(0xff800000)" : "0.0f") << "; "
              << "for (long r = 0; r < " << dim(osh[axis]) << "; ++r) acc = "
              << (mx ? "fmaxf(acc, " + call(o, oi) + ")" : "acc + " + call(o, oi)) << "; "
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
            ir::ValueId o = n.operands[0];
            std::vector<std::string> oi;
            for (size_t k = 0; k < g.at(o).shape.size(); ++k) oi.push_back("o" + std::to_string(k));
            b << delinear(g.at(o).shape, linear(n.shape, ix), oi, "lin") << " return " << call(o, oi) << ";";
            break;
          }
          case Op::Permute: {
            std::vector<std::string> oi(n.attrs.perm.size());
            for (size_t k = 0; k < n.attrs.perm.size(); ++k) oi[static_cast<size_t>(n.attrs.perm[k])] = ix[k];
            b << "return " << call(n.operands[0], oi) << ";";
            break;
          }
          case Op::Slice: {
            auto axis = static_cast<size_t>(norm_axis(n.attrs.axis, n.shape.size()));
            std::vector<std::string> oi = ix;
            oi[axis] = std::to_string(n.attrs.start) + "L + " + ix[axis] + " * " + std::to_string(n.attrs.step) + "L";
            b << "return " << call(n.operands[0], oi) << ";";
            break;
          }
          case Op::Concat: {
            auto axis = static_cast<size_t>(norm_axis(n.attrs.axis, n.shape.size()));
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
    const ir::Node& n = g.at(w);
    ir::ValueId st = buffer_node(g, w);
    const auto& ssh = g.at(st).shape;
    size_t nfixed = n.attrs.fixed.size();
    auto axis = static_cast<size_t>(n.attrs.axis);
    std::vector<std::string> si;
    for (size_t k = 0; k < nfixed; ++k) si.push_back(std::to_string(n.attrs.fixed[k]) + "L");
    for (size_t k = 0; k < vi.size(); ++k) si.push_back(vi[k]);
    si[nfixed + axis] = "(long)" + name.at(n.operands[2]) + "(" + vi[axis] + ")";
    return "p" + std::to_string(arg(st, true)) + "[" + linear(ssh, si) + "] = " + val + ";";
  }

  // An element stage: grid-stride loops over each store and each state write.
  void element_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
    const lift::Stage& st = p.stages[static_cast<size_t>(s)];
    os << "  {  // " << lift::stage_kind_name(st.kind) << " stage\n";
    auto nodes = closure(s);
    auto name = lambdas(s, nodes, os, {});
    auto loop = [&](const ir::Shape& shape, const std::string& bodyf) {
      std::vector<std::string> ix;
      for (size_t k = 0; k < shape.size(); ++k) ix.push_back(idx_name(k));
      std::string n = "1L";
      for (const auto& d : shape) n += " * " + dim(d);
      int64_t c = 1;
      int32_t tp = 0;
      for (const auto& d : shape) {
        c *= d.coeff;
        if (!d.is_const()) ++tp;
      }
      wc.push_back(c);
      wp.push_back(tp);
      os << "    for (long e = (long)blockIdx.x * blockDim.x + threadIdx.x; e < " << n
         << "; e += (long)gridDim.x * blockDim.x) { " << delinear(shape, "e", ix, "t_") << " " << bodyf << " }\n";
      return ix;
    };
    for (ir::ValueId v : st.stores) {
      std::vector<std::string> ix;
      for (size_t k = 0; k < g.at(v).shape.size(); ++k) ix.push_back(idx_name(k));
      loop(g.at(v).shape, "p" + std::to_string(arg(v, true)) + "[e] = " + name.at(v) + "(" + join(ix) + ");");
    }
    for (ir::ValueId w : st.nodes) {
      if (g.at(w).op != ir::Op::StateWrite) continue;
      ir::ValueId val = g.at(w).operands[1];
      std::vector<std::string> ix;
      for (size_t k = 0; k < g.at(val).shape.size(); ++k) ix.push_back(idx_name(k));
      loop(g.at(val).shape, state_store(w, ix, name.at(val) + "(" + join(ix) + ")", name));
    }
    os << "  }\n";
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
    os << "  {  // gemm stage\n"
       << "    const long warp = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n"
       << "    const long nwarps = ((long)gridDim.x * blockDim.x) >> 5;\n"
       << "    const int lane = threadIdx.x & 31;\n    float " ;
    for (size_t j = 0; j < mms.size(); ++j) os << (j ? ", " : "") << "dot" << j << " = 0.0f";
    os << ";\n";
    auto nodes = closure(s);
    auto name = lambdas(s, nodes, os, dots);
    std::set<ir::ValueId> groups;
    for (ir::ValueId m : mms) groups.insert(find(m));
    for (ir::ValueId gr : groups) {
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
      wc.push_back(c);
      wp.push_back(tp);
      os << "    for (long e = warp; e < " << total << "; e += nwarps) {\n      " << delinear(shape, "e", ix, "t_") << "\n";
      for (ir::ValueId m : members) {
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
        ir::ValueId bw = b;
        while (g.at(bw).op == ir::Op::Cast && p.is_inline[static_cast<size_t>(bw)] && is_float(g.at(bw).dtype) &&
               is_float(g.at(g.at(bw).operands[0]).dtype))
          bw = g.at(bw).operands[0];
        const ir::Node& bn = g.at(bw);
        bool fast = bn.op == ir::Op::Permute && p.is_inline[static_cast<size_t>(bw)] && sb.size() == 2 &&
                    bn.attrs.perm == std::vector<int32_t>{1, 0} && g.at(bn.operands[0]).op == ir::Op::Param &&
                    g.at(bn.operands[0]).dtype == DType::BF16 && sa.back().is_const() && sa.back().coeff % 8 == 0;
        os << "      { float acc = 0.0f;\n";
        if (fast) {
          std::string W = "p" + std::to_string(arg(bn.operands[0], false));
          auto aj = [&](const std::string& k) {
            auto v = ai;
            v.push_back(k);
            return name.at(a) + "(" + join(v) + ")";
          };
          os << "        for (long k0 = (long)lane * 8; k0 < " << K << "; k0 += 256) {\n"
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
          os << "        for (long k = lane; k < " << K << "; k += 32) acc += " << name.at(a) << "(" << join(av) << ") * "
             << name.at(b) << "(" << join(bv) << ");\n";
        }
        os << "        " << dn << " = lg_warp_sum(acc); }\n";
      }
      os << "      if (lane == 0) {\n";
      for (ir::ValueId v : outs) {
        if (find(*deps(v).begin()) != gr) continue;
        if (g.at(v).op != ir::Op::StateWrite) {
          if (!(g.at(v).shape == shape))
            throw Error("emit: stage " + std::to_string(s) + ": a GEMM epilogue output differs from the GEMM's shape");
          os << "        p" << arg(v, true) << "[" << linear(shape, ix) << "] = " << name.at(v) << "(" << join(ix) << ");\n";
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
            os << "        " << delinear(vn.shape, linear(*csh, ci), ni, fresh("l")) << "\n";
          }
          ci = ni;
          csh = &vn.shape;
        }
        os << "        " << state_store(v, ci, name.at(cur) + "(" + join(ix) + ")", name) << "\n";
      }
      os << "      }\n    }\n";
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

RenderedLaunch render_launch(const lift::StagedProgram& p, const std::vector<int32_t>& stages) {
  Renderer r(p);
  RenderedLaunch out;
  std::ostringstream body;
  for (int32_t s : stages) {
    StageKind k = p.stages[static_cast<size_t>(s)].kind;
    if ((k == StageKind::Gemm || k == StageKind::Attention) && stages.size() > 1)
      throw Error("emit: stage " + std::to_string(s) + " (" + lift::stage_kind_name(k) + ") must have a launch of its own");
    if (k == StageKind::Gemm) {
      r.gemm_stage(s, body, out.work_const, out.work_t_power);
      out.per_block = 8;  // warps per block
    } else if (k == StageKind::Attention) {
      r.attention_stage(s, body, out.work_const, out.work_t_power);
      out.per_block = 1;
      out.block = 1024;
    } else {
      r.element_stage(s, body, out.work_const, out.work_t_power);
    }
  }
  std::vector<std::string> params;
  for (size_t i = 0; i < r.args.size(); ++i) params.push_back(r.param_decl(i));
  params.push_back("const long T");
  std::ostringstream k;
  k << "extern \"C\" __global__ void __launch_bounds__(" << out.block << ") KERNEL_NAME(\n    " << join(params, ",\n    ")
    << ") {\n"
    << body.str() << "}\n";
  out.source = k.str();
  out.args = r.args;
  return out;
}

}  // namespace lg::emit::cuda
