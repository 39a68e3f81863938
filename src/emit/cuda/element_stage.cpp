// Element stages (map, reduce, gather, state write): a grid-stride loop over the elements of each
// store and each state write, the values pulled through the stage's lambdas; and the lambda of a
// reduction (a loop over the reduced axis, memoised per thread for its last row, split over a
// warp's lanes when the whole warp asks for the same row).
#include <cstdlib>

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
  const std::string x = call(name, o, oi);
  const std::string fold = mx ? "fmaxf(acc, " + x + ")" : "acc + " + x;
  memo_decl = "long " + nm + "_key = -1; float " + nm + "_val = 0.0f;\n";
  // The block-wide path (element_loop's rows of a decode step, lg_block_coop set): the block's
  // threads split the axis, every thread running the same iterations (past the end at the last
  // index, its value dropped), since a reduction inside the operand may be block-wide too.
  // Unrolled by 4: Gemma 3's post-attention stage at T = 1 took 8.17 us a launch, 9.26 without
  // unrolling and 9.28 unrolled by 16 (H200, bench/labs/reduce_lab_main.cu).
  const std::string N = dim(osh[axis]);
  const std::string block =
      block_reductions_
          ? "if (lg_block_coop) { _Pragma(\"unroll 4\") for (long r0 = 0; r0 < " + N + "; r0 += blockDim.x) { const bool lg_in = r0 + threadIdx.x < " +
                N + "; const long r = lg_in ? r0 + threadIdx.x : " + N + " - 1; const float lg_x = " + x + "; if (lg_in) acc = " +
                (mx ? "fmaxf(acc, lg_x)" : "acc + lg_x") + "; } acc = " + (mx ? "lg_block_max" : "lg_block_sum") +
                "(acc, lg_red); } else "
          : "";
  // Memoised per thread for its last key. When a whole converged warp asks for the same key
  // (element loops give a warp one row; see element_loop), the 32 lanes split the axis and combine
  // with shuffles: the row is read once, not once per lane.
  return "long key = " + linear(n.shape, ix) + "; if (key == " + nm + "_key) return " + nm + "_val; " +
         "float acc = " + (mx ? "__int_as_float(0xff800000)" : "0.0f") + "; " + block + "{ " +
         "const unsigned am = __activemask(); " +
         "if (am == 0xffffffffu && __all_sync(am, key == __shfl_sync(am, key, 0))) { " +
         "for (long r = threadIdx.x & 31; r < " + N + "; r += 32) acc = " + fold + "; " +
         "acc = " + (mx ? "lg_warp_max(acc)" : "lg_warp_sum(acc)") + "; " +
         "} else { for (long r = 0; r < " + N + "; ++r) acc = " + fold + "; } } " + nm + "_key = key; " +
         nm + "_val = acc; return acc;";
}

bool Renderer::row_reductions_only(int32_t s, const std::vector<ir::ValueId>& nodes, const ir::Shape& rows) const {
  if (rows.empty() || !rows.back().is_const()) return false;
  ir::Shape row_result = rows;
  row_result.back() = ir::Dim::constant(1);
  // A broadcast of `rows`: right-aligned, each dim equal or 1 (how elementwise lambdas index).
  auto broadcast = [&](const ir::Shape& sh) {
    if (sh.size() > rows.size()) return false;
    for (size_t k = 0; k < sh.size(); ++k) {
      const ir::Dim& d = sh[sh.size() - 1 - k];
      if (!(d == rows[rows.size() - 1 - k]) && !(d == ir::Dim::constant(1))) return false;
    }
    return true;
  };
  auto squeezed = [](const ir::Shape& sh) {
    ir::Shape out;
    for (const auto& d : sh)
      if (!(d == ir::Dim::constant(1))) out.push_back(d);
    return out;
  };
  for (ir::ValueId v : nodes) {
    if (!here(s, v)) continue;  // read from memory: a leaf
    const ir::Node& n = g.at(v);
    if (ir::is_reduce(n.op)) {
      const ir::Shape& osh = g.at(n.operands[0]).shape;
      if (!(osh == rows) || !(n.shape == row_result) ||
          static_cast<size_t>(ir::positive_axis(n.attrs.axis, osh.size())) != osh.size() - 1)
        return false;
    } else if (ir::is_elementwise(n.op) || n.op == ir::Op::Const) {
      if (!broadcast(n.shape)) return false;
    } else if (n.op == ir::Op::Reshape) {
      // Only one that adds or drops dims of size 1 (a weight [D] as [1, D]): indices pass unchanged.
      if (!broadcast(n.shape) || !(squeezed(n.shape) == squeezed(g.at(n.operands[0]).shape))) return false;
    } else if (n.op != ir::Op::StateWrite) {
      return false;
    }
  }
  return true;
}

int Renderer::element_loop(const ir::Shape& shape, const std::vector<std::pair<std::string, std::string>>& outs,
                           bool reduces, bool block_rows, std::ostringstream& os) {
  const std::vector<std::string> ix = idx_names(shape.size());
  std::string n = "1L";
  for (const auto& d : shape) n += " * " + dim(d);
  // bodyf assigns every output; `values` computes them into lg_v0, lg_v1, ... on every thread and
  // `stores` writes those, for the paths whose threads all compute but only some store.
  std::string bodyf, values, stores;
  for (size_t j = 0; j < outs.size(); ++j) {
    const std::string lv = "lg_v" + std::to_string(j);
    bodyf += (j ? " " : "") + outs[j].first + " = " + outs[j].second + ";";
    values += "const auto " + lv + " = " + outs[j].second + "; ";
    stores += " " + outs[j].first + " = " + lv + ";";
  }
  stores = "{" + stores + " }";
  // A reduction's own result (rows of fewer than 32 outputs, e.g. [T, H, 1]): a warp per
  // element, so that its lanes split the reduced axis together (a thread per element would walk
  // the whole axis alone); lane 0 stores it.
  if (reduces && !shape.empty() && shape.back().is_const() && shape.back().coeff < 32) {
    os << "    for (long e = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; e < " << n
       << "; e += ((long)gridDim.x * blockDim.x) >> 5) { __syncwarp(); " << delinear(shape, "e", ix, "t_") << " "
       << values << "if ((threadIdx.x & 31) == 0) " << stores << " }\n";
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
    // Few rows (a decode step of up to kBlockRows tokens) and only row reductions: a block per
    // (row, blockDim.x elements of it), the row's reductions split over all of the block's
    // threads (reduce_body's block path), each block computing them again for its part of the
    // row. A warp alone walks a 3840-wide row in 120 dependent steps a lane, and a Gemma 3
    // post-attention stage (two chained RMSNorms) took 39 us at T = 1 that way (H200, bench/labs).
    // Every thread of the block runs the same iterations (the last element again past the end,
    // not stored): the block-wide reductions need all of them.
    constexpr int64_t kBlockRows = 128;  // a guess: rows enough that a warp per row is better
    if (block_rows)
      os << "    if (" << n << " / " << N << "L <= " << kBlockRows << "L) {\n"
         << "      lg_block_coop = true;\n"
         << "      const long lg_parts = (" << N << "L + blockDim.x - 1) / blockDim.x;\n"
         << "      for (long item = blockIdx.x; item < " << n << " / " << N << "L * lg_parts; item += gridDim.x) {\n"
         << "        const long c = (item % lg_parts) * blockDim.x + threadIdx.x;\n"
         << "        const long e = (item / lg_parts) * " << N << "L + (c < " << N << "L ? c : " << N - 1 << "L); "
         << delinear(shape, "e", ix, "t_") << " " << values << "if (c < " << N << "L) " << stores
         << "\n      }\n      lg_block_coop = false;\n    } else\n";
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
  // Block-wide reductions when every store and state write has one shape of rows and every
  // reduction is a row's (row_reductions_only).
  std::vector<ir::Shape> shapes;
  for (ir::ValueId v : st.stores) shapes.push_back(g.at(v).shape);
  for (ir::ValueId w : st.nodes)
    if (g.at(w).op == ir::Op::StateWrite) shapes.push_back(g.at(g.at(w).operands[1]).shape);
  // LG_COMPILED_BLOCK_ROWS=0 keeps every reduction on the warp path (A/B in one binary).
  static const bool block_rows_on = [] {
    const char* e = std::getenv("LG_COMPILED_BLOCK_ROWS");
    return !(e && std::string(e) == "0");
  }();
  bool block_rows = block_rows_on && reduces && !shapes.empty();
  for (const auto& sh : shapes) block_rows = block_rows && sh == shapes[0];
  block_rows = block_rows && row_reductions_only(s, nodes, shapes[0]);
  if (block_rows) os << "  __shared__ float lg_red[32]; bool lg_block_coop = false;\n";
  block_reductions_ = block_rows;
  auto name = lambdas(s, nodes, os, {});
  block_reductions_ = false;
  auto loop = [&](const ir::Shape& shape, const std::vector<std::pair<std::string, std::string>>& outs) {
    int64_t c = 1;
    int32_t tp = 0;
    for (const auto& d : shape) {
      c *= d.coeff;
      if (!d.is_const()) ++tp;
    }
    wc.push_back(c * element_loop(shape, outs, reduces, block_rows, os));
    wp.push_back(tp);
  };
  // Stores of one shape share a loop: each lambda is inlined at every call site, so a loop per
  // store repeated the computation's code (the 30B-A3B top-k stage's TopK and ArgTopK loops each
  // carried the router softmax and the ranking: 176 KB of SASS for a 128-wide row).
  std::vector<bool> done(st.stores.size(), false);
  for (size_t i = 0; i < st.stores.size(); ++i) {
    if (done[i]) continue;
    const ir::Shape& sh = g.at(st.stores[i]).shape;
    std::vector<std::pair<std::string, std::string>> outs;
    for (size_t j = i; j < st.stores.size(); ++j) {
      const ir::ValueId v = st.stores[j];
      if (done[j] || !(g.at(v).shape == sh)) continue;
      done[j] = true;
      outs.emplace_back("p" + std::to_string(arg(v, true)) + "[e]", call(name, v, idx_names(sh.size())));
    }
    loop(sh, outs);
  }
  for (ir::ValueId w : st.nodes) {
    if (g.at(w).op != ir::Op::StateWrite) continue;
    ir::ValueId val = g.at(w).operands[1];
    const std::vector<std::string> ix = idx_names(g.at(val).shape.size());
    const std::string v = call(name, val, ix);
    loop(g.at(val).shape, {{state_element(w, ix, name), bf16_state(g.at(buffer_node(g, w))) ? "lg_to_bf16(" + v + ")" : v}});
  }
  os << "  }\n";
}

}  // namespace lg::emit::cuda
