// Element stages (map, reduce, gather, state write): a grid-stride loop over the elements of each
// store and each state write, the values pulled through the stage's lambdas; and the lambda of a
// reduction (a loop over the reduced axis, memoised per thread for its last row, split over a
// warp's lanes when the whole warp asks for the same row).
#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

std::string Renderer::reduce_body(ir::ValueId v, const std::vector<std::string>& ix, const LambdaNames& name,
                                  std::string& memo_decl) {
  const ir::Node& n = g.at(v);
  const std::string& nm = name.at(v);
  ir::ValueId o = n.operands[0];
  const auto& osh = g.at(o).shape;
  auto axis = static_cast<size_t>(ir::positive_axis(n.attrs.axis, osh.size()));
  std::vector<std::string> oi;
  for (size_t k = 0, j = 0; k < osh.size(); ++k) {
    if (k == axis) {
      oi.push_back("r");
      if (n.attrs.keepdim) ++j;
      continue;
    }
    oi.push_back(ix[j++]);
  }
  bool mx = n.op == ir::Op::ReduceMax;
  const std::string fold = mx ? "fmaxf(acc, " + call(name, o, oi) + ")" : "acc + " + call(name, o, oi);
  memo_decl = "long " + nm + "_key = -1; float " + nm + "_val = 0.0f;\n";
  // Memoised per thread for its last key. When a whole converged warp asks for the same key
  // (element loops give a warp one row; see element_loop), the 32 lanes split the axis and combine
  // with shuffles: the row is read once, not once per lane.
  return "long key = " + linear(n.shape, ix) + "; if (key == " + nm + "_key) return " + nm + "_val; " +
         "float acc = " + (mx ? "__int_as_float(0xff800000)" : "0.0f") + "; " +
         "const unsigned am = __activemask(); " +
         "if (am == 0xffffffffu && __all_sync(am, key == __shfl_sync(am, key, 0))) { " +
         "for (long r = threadIdx.x & 31; r < " + dim(osh[axis]) + "; r += 32) acc = " + fold + "; " +
         "acc = " + (mx ? "lg_warp_max(acc)" : "lg_warp_sum(acc)") + "; " +
         "} else { for (long r = 0; r < " + dim(osh[axis]) + "; ++r) acc = " + fold + "; } " + nm + "_key = key; " +
         nm + "_val = acc; return acc;";
}

int Renderer::element_loop(const ir::Shape& shape, const std::string& dst, const std::string& value, bool reduces,
                           std::ostringstream& os) {
  const std::vector<std::string> ix = idx_names(shape.size());
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
  // that its lanes ask for the same reduction key together (the cooperative path of
  // reduce_body); otherwise a plain grid-stride loop over elements.
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

void Renderer::element_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp) {
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
    const std::vector<std::string> ix = idx_names(g.at(v).shape.size());
    loop(g.at(v).shape, "p" + std::to_string(arg(v, true)) + "[e]", call(name, v, ix));
  }
  for (ir::ValueId w : st.nodes) {
    if (g.at(w).op != ir::Op::StateWrite) continue;
    ir::ValueId val = g.at(w).operands[1];
    const std::vector<std::string> ix = idx_names(g.at(val).shape.size());
    const std::string v = call(name, val, ix);
    loop(g.at(val).shape, state_element(w, ix, name), bf16_state(g.at(buffer_node(g, w))) ? "lg_to_bf16(" + v + ")" : v);
  }
  os << "  }\n";
}

}  // namespace lg::emit::cuda
