// A CudaProgram: what `lg compile` writes and the compiled lane runs. CUDA C++ source with one
// kernel per distinct launch (identical launches of different layers share one kernel: dedupe by
// source text), the launch plan (kernel, grid as a function of T, block, buffer arguments), the
// buffer arena (activations placed by liveness, so buffers whose lifetimes do not overlap share
// memory), and the weights binding (which checkpoint tensor each weight buffer holds).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emit/cuda/grouped_gemm_shape.h"
#include "runtime/provenance.h"
#include "lift/stage.h"

namespace lg::emit::cuda {

/// Where a buffer lives.
enum class BufferKind : uint8_t {
  Input,   ///< a runtime input (tokens, pos): i32, uploaded per step
  Weight,  ///< a Graph param, bf16 (or f32 when the .lg declares f32) at its own allocation
  State,   ///< a state (KV cache): f32, persists across steps
  Arena,   ///< an activation stored by a stage, at `offset` in the arena
};

/// One device buffer. Sizes are for the largest value of its runtime dim (T: the program's max_t,
/// B: its max_b).
struct Buffer {
  BufferKind kind;
  int32_t index = -1;          ///< Input/Weight/State: index in Graph::inputs/params/states
  ir::ValueId node = -1;       ///< Arena: the stored node
  std::string name;            ///< for plan.json: the .lg name, or the checkpoint tensor
  DType dtype = DType::F32;    ///< element type on the device
  int64_t elems_const = 0;     ///< element count = elems_const * R^elems_t_power
  int32_t elems_t_power = 0;
  int32_t sym = 0;             ///< R: the runtime dim its size scales with (0: T; 1: B, batched graphs)
  int64_t bytes = 0;           ///< at R's largest value
  int64_t offset = 0;          ///< Arena: byte offset (256-aligned)
  int32_t first_launch = -1, last_launch = -1;  ///< Arena: liveness
  /// Weight: -1, its own allocation; else the buffer whose allocation holds it `stack_offset`
  /// bytes in: weights one GEMM reads as a single [sum N_i, K] matrix (q, k, v; gate, up), laid
  /// out in that order. The first of them has stack -1 and `stack_bytes` (> bytes) for all.
  int32_t stack = -1;
  int64_t stack_offset = 0;
  int64_t stack_bytes = 0;     ///< the first of a stack: the whole allocation; else 0
};

/// The split-KV ("flash-decoding") form of an attention launch: block (item, split) of a grid of
/// (T * items_per_row, splits) blocks runs an online softmax over one chunk of the positions of
/// item's token, for heads_per_item query heads that share a KV head; each chunk ends
/// split * chunk positions before the token's own, chunk = max(min_chunk, ceil(len / splits)) with
/// len = pos + 1 read on the device, so one launch (or captured graph) serves every position, and
/// splits past the last chunk exit at once. With more than one chunk, each block writes its partial
/// (unnormalised output, max, sum) to `lg_part` and the last of the item's blocks to finish merges
/// them (an atomic counter per item in `lg_count`, put back to 0 by that block). The kernel takes
/// `float* lg_part, int* lg_count` after its buffers; the runner allocates them: lg_part at least
/// T * splits * part_floats floats for every (T, splits) it launches, lg_count T * items_per_row
/// ints, zeroed once.
struct SplitKv {
  int64_t items_per_row = 0;   ///< blocks per token along x: query heads / heads_per_item
  int64_t heads_per_item = 1;  ///< query heads one block serves (they read the same K/V rows once)
  int64_t part_floats = 0;     ///< lg_part floats per (token, split): H * (head_dim + 2)
  int64_t min_chunk = 0;       ///< positions: the shortest chunk one block takes
  int64_t max_splits = 1;      ///< splits that can have positions at the program's context
  bool tensor_cores = false;   ///< the mma form (src/kernels/decode_attention_mma.cuh)
  int32_t threads = 256;       ///< threads a block
  int64_t blocks_per_sm = 0;   ///< the splits' target, blocks an SM over all items (0: the lane's default)
};

/// The work of a launch: blocks = ceil(max_i(work_const[i] * T^work_t_power[i]) / per_block), where
/// T is the launch's row count: the value of runtime dim `rows_sym` in this step (the tokens, or in
/// a batched graph the sequences for the launches that compute only their rows). Its kernels take
/// that value as their `T` argument.
struct LaunchPlan {
  int32_t kernel = -1;                 ///< index into CudaProgram::kernels
  std::vector<int32_t> stages;         ///< the lifted stages it runs
  std::vector<int32_t> args;           ///< buffer ids, in the kernel's parameter order
  std::vector<int64_t> work_const;
  std::vector<int32_t> work_t_power;
  int64_t per_block = 1;               ///< work items per block
  int32_t block = 256;                 ///< threads per block
  int64_t max_blocks = 0;              ///< 0: no cap (grid-stride kernels may be capped)
  int64_t layer = -1;                  ///< >= 0: passed as the kernel's `lg_l` (before T)
  bool gemm = false;                   ///< a GEMM stage's kernel: warps stride over the outputs, so
                                       ///< the lane may launch fewer blocks than grid(1) at decode
  int32_t rows_sym = 0;                ///< 0: T rows; 1: B rows (lift::stage_rows_symbol)
  /// An attention launch's kernel is split-KV: grid (grid(T), splits), 1 <= splits; see SplitKv.
  std::optional<SplitKv> split;
  /// Another split-KV kernel of an attention launch, with the same arguments, that some steps run
  /// instead of `kernel` (the compiled lane's split_form picks it).
  struct SplitForm {
    int32_t kernel = -1;
    SplitKv split;
  };
  /// An attention launch's form for steps of at least `min_rows` rows: its split-KV kernel with
  /// more query heads a block (each K/V row read once for all of a KV head's query heads). It wins
  /// when many rows fill the GPU and loses when few rows leave the blocks long chunks
  /// (attention.cpp, split_shape). Grid (T * split.items_per_row, splits).
  struct WideSplit : SplitForm {
    int64_t min_rows = 0;
  };
  std::optional<WideSplit> wide;
  /// An attention launch's form for steps of one row (one sequence's decode): its split-KV kernel
  /// with more blocks an SM (SplitKv::blocks_per_sm; the queries read from shared memory). Over
  /// one sequence's long context more warps keep more loads in flight; at many rows it loses
  /// (attention.cpp, split_shape). Grid (split.items_per_row, splits).
  std::optional<SplitForm> one_row;

  /// Blocks for a step of T tokens.
  int64_t grid(int64_t T) const;

  /// At T > 1 (prefill) a GEMM launch runs on the tensor cores instead: pack kernels write the
  /// activations as bf16, cuBLASLt computes the dot products, an epilogue kernel finishes the
  /// stage (render.h, GemmPrefillRender); an attention launch runs the flash-attention kernel as
  /// its "epilogue", with no packs or GEMMs (AttentionPrefillRender). Absent: the kernel above
  /// serves every T.
  struct Prefill {
    struct Pack {
      int32_t kernel = -1;
      std::vector<int32_t> args;  ///< buffer ids, the packed bf16 [T, K] output last
      int64_t K = 0;
      int64_t layer = -1;
    };
    struct Gemm {
      int32_t a = -1, w = -1, out = -1;  ///< buffers: packed bf16 [T, K], weight bf16 [N, K], f32 [T, N]
      int32_t c = -1;                    ///< >= 0: out = c + a @ w^T (a residual add, no epilogue)
      int64_t N = 0, K = 0;
    };
    std::vector<Pack> packs;
    std::vector<Gemm> gemms;
    int32_t epilogue_kernel = -1;        ///< -1: none (the GEMM's output is the stage's)
    std::vector<int32_t> epilogue_args;  ///< buffer ids, the dot buffers last
    int64_t epilogue_layer = -1;
    std::vector<int64_t> work_const;     ///< epilogue: one thread per output element
    std::vector<int32_t> work_t_power;
    int32_t block = 256;                 ///< epilogue threads per block
    int64_t t_tile = 0;                  ///< > 0: blocks = ceil(T / t_tile) * work_const[0]
    /// The form holds for a step of one sequence only (paged flash attention: its K/V rows are
    /// gathered through that sequence's block table); other steps run the kernel above.
    bool one_sequence = false;
    /// The form runs at steps of at least this many rows (the kernel above below it).
    int64_t min_t = 2;
    /// An experts stage on the tensor cores (render.h, ExpertsPrefillRender): the route kernel
    /// (one block of 1,024 threads), then the grouped GEMM (grid (lg_moe::max_tiles(experts,
    /// T * slots), col_tiles) x 128), each taking the route buffer (and the GEMM of moe_down the
    /// expert-output buffer) after its buffers; then the epilogue kernel above (moe_down's
    /// combine, args ending in the route and expert-output buffers), if any.
    struct Experts {
      int32_t route_kernel = -1, gemm_kernel = -1;
      std::vector<int32_t> route_args, gemm_args;  ///< buffer ids, the scratch buffers last
      int64_t route_layer = -1, gemm_layer = -1;
      int64_t experts = 0, slots = 0, col_tiles = 0;
      /// The grouped GEMM's blocks along x for a step of T rows (grouped_gemm_shape.h).
      int64_t max_tiles(int64_t T) const { return grouped_gemm_shape::max_tiles(experts, T * slots); }
      /// The route workspace in ints for a step of T rows (grouped_gemm_shape.h).
      int64_t route_ints(int64_t T) const { return grouped_gemm_shape::route_ints(experts, T * slots); }
    };
    std::optional<Experts> experts;
  };
  std::optional<Prefill> prefill;
};

struct Kernel {
  std::string name;    ///< "k3_gemm"
  std::string source;  ///< one extern "C" __global__ function
};

struct CudaProgram {
  std::string model;
  Provenance provenance = Compiled{};
  int64_t max_t = 0;
  int64_t max_b = 1;                  ///< sequences per step (batched graphs; 1 otherwise)
  std::string prelude;                ///< device helpers shared by all kernels
  std::vector<Kernel> kernels;
  std::vector<LaunchPlan> launches;
  std::vector<Buffer> buffers;
  int64_t arena_bytes = 0;
  std::vector<int32_t> outputs;       ///< buffer ids of the graph outputs

  /// The whole translation unit: prelude + every kernel.
  std::string source() const;
  /// The launch plan, buffers and weights binding as JSON text (plan.json).
  std::string plan_json() const;
};

/// How states are stored on the device.
struct EmitOptions {
  /// Float states (the KV cache) in bf16 whatever the .lg declares (f32 in qwen3.lg, as the fp32
  /// reference keeps it): half the memory and bandwidth; the locks check it (docs/language.md).
  bool bf16_states = false;
};

/// Renders a fused staged program into CUDA for sm_90: per launch one kernel specialised on
/// every bound dim (T stays a kernel argument), the arena laid out by liveness.
/// Throws lg::Error if a stage has a form the renderer does not take (named by its stage).
CudaProgram emit_program(const lift::StagedProgram& p, const EmitOptions& options = {});

}  // namespace lg::emit::cuda
