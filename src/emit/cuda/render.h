// Per-stage CUDA rendering. Every node a stage reads becomes a device lambda of its multi-index
// (views become index arithmetic, inline elementwise nodes expressions, buffers loads), the same
// pull evaluation the CPU staged executor runs; the stage kind decides the loop around it:
//   - element stages (map, reduce, gather, state write): a grid-stride loop over each store's
//     elements; a reduction is a loop inside the lambda, memoised per thread for its last row;
//   - GEMM stages: one warp per output element, lanes split K, bf16 weights read 16 bytes
//     (8 values) per lane per load when the weight is a transposed bf16 param with K % 8 == 0;
//     the epilogue and cache writes run on lane 0 with the dot products in registers;
//   - attention: one block per (token, query head), 32 warps split the KV length, each an online
//     softmax (running max and sum), merged across warps in shared memory at the end.
#pragma once

#include <string>
#include <vector>

#include "lift/stage.h"

namespace lg::emit::cuda {

/// A buffer a kernel reads or writes, in the kernel's parameter order.
struct KernelArg {
  ir::ValueId node;   ///< the node whose buffer it is (State source for a state)
  bool written;
};

/// The rendered body of one launch.
struct RenderedLaunch {
  std::string source;                 ///< the kernel, named KERNEL_NAME (replaced on dedupe)
  std::vector<KernelArg> args;
  std::vector<int64_t> work_const;    ///< per stage: elements (element/gemm) or rows (attention)
  std::vector<int32_t> work_t_power;
  int64_t per_block = 256;
  int32_t block = 256;
};

/// The node whose buffer holds v's value: the State source for a state version, v otherwise.
ir::ValueId buffer_node(const ir::Graph& g, ir::ValueId v);

/// Renders the stages of one launch (element stages may share a launch; GEMM and attention
/// stages are alone in theirs). Throws lg::Error naming the stage for a form it cannot render.
RenderedLaunch render_launch(const lift::StagedProgram& p, const std::vector<int32_t>& stages);

/// Device helpers every kernel uses (bf16 widening, warp sum).
std::string device_prelude();

}  // namespace lg::emit::cuda
