// Per-stage CUDA rendering. Every node a stage reads becomes a device lambda of its multi-index
// (views become index arithmetic, inline elementwise nodes expressions, buffers loads), the same
// pull evaluation the CPU staged executor runs; the stage kind decides the loop around it:
//   - element stages (map, reduce, gather, state write): a grid-stride loop over each store's
//     elements; a reduction is a loop inside the lambda, memoised per thread for its last row;
//   - GEMM stages: one warp per output element, lanes split K, bf16 weights read 16 bytes
//     (8 values) per lane per load when the weight is a transposed bf16 param with K % 8 == 0;
//     the epilogue and cache writes run on lane 0 with the dot products in registers;
//   - attention: split-KV (flash-decoding): a block per (token, group of query heads that share a
//     KV head, chunk of the token's positions), warps over the chunk, each an online softmax
//     (running max and sum) merged across warps in shared memory, the chunks by the last block of
//     the token's group to finish (program.h, SplitKv).
//
// Which file renders what (all in src/emit/cuda; the Renderer is declared in renderer.h):
//   render.cpp         render_launch: the dispatcher from a launch's stages to their kind's emitter
//   renderer.cpp       kernel parameters and buffers, loads, the lifted layer index, node lambdas
//   expr.cpp           elementwise expressions from the op table (src/ir/ops.def), literals
//   index.cpp          index arithmetic: linear offsets, views (reshape, permute, slice, concat), gather
//   element_stage.cpp  map / reduce / gather / state-write stages; the reduction lambda
//   state_write.cpp    KV-cache writes (element stages and GEMM epilogues)
//   gemm_stage.cpp     GEMM stages: matmuls grouped by epilogue, the loop over their outputs
//   gemv.cpp           the decode GEMV's dot products, activation staging, prologue reductions
//   gemm_prefill.cpp   the prefill GEMM: bf16 pack kernels, cuBLASLt plan, epilogue kernel
//   attention.cpp      attention: the one-block-per-row kernel and the prefill flash attention
//   experts.cpp        experts stages (moe_gate_up, moe_down) and topk: the decode form
//   experts_prefill.cpp  experts stages at many tokens: route, grouped tensor-core GEMM, combine
//   prelude.cpp        the device prelude every program starts with (text: src/kernels/*.cuh)
//   program.cpp        emit_program: kernels deduped, launch plan, arena, plan.json
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emit/cuda/program.h"
#include "lift/stage.h"

namespace lg::emit::cuda {

/// A buffer a kernel reads or writes, in the kernel's parameter order.
struct KernelArg {
  ir::ValueId node;   ///< the node whose buffer it is (State source for a state)
  bool written;
};

/// Threads of a GEMM stage's launch: 8 warps (RenderedLaunch::per_block), which its decode loops
/// and prologue take as a constant.
constexpr int32_t kGemmThreads = 256;

/// The rendered body of one launch. The index of a state's leading axis (a KV cache's layer) is a
/// kernel parameter, `lg_l`, rather than a constant, so that the launches of every layer share one
/// kernel (`layer` holds its value for this launch).
struct RenderedLaunch {
  std::string source;                 ///< the kernel, named KERNEL_NAME (replaced on dedupe)
  std::vector<KernelArg> args;
  std::vector<int64_t> work_const;    ///< per stage: elements (element/gemm) or rows (attention)
  std::vector<int32_t> work_t_power;
  int64_t per_block = 256;
  int32_t block = 256;
  int64_t layer = -1;                 ///< >= 0: the kernel takes `const long lg_l` (before T) = this
  bool gemm = false;                  ///< a GEMM stage: its warps stride over the outputs (any grid)
  std::optional<SplitKv> split;       ///< an attention stage: its split-KV launch (program.h)
};

/// The node whose buffer holds v's value: the State source for a state version, v otherwise.
ir::ValueId buffer_node(const ir::Graph& g, ir::ValueId v);

/// The wide split-KV form of attention stages (LaunchPlan::wide), LG_COMPILED_ATTN_WIDE_FORM:
/// unset, the tensor-core form (src/kernels/decode_attention_mma.cuh) where the stage reads bf16
/// cache rows of head_dim 16..128, and only where it serves more query heads a block than the
/// narrow form; "heads", the CUDA-core kernel with more heads a block; "mma", the tensor-core form
/// even where it serves no more heads (tests and measurements).
enum class WideAttentionForm { kMma, kHeads, kMmaAlways };
WideAttentionForm wide_attention_form();

/// Renders the stages of one launch (element stages may share a launch; GEMM and attention
/// stages are alone in theirs). Throws lg::Error naming the stage for a form it cannot render.
/// Which split-KV kernel an attention stage renders: its own, the wide form (LaunchPlan::wide) or
/// the one-row form (LaunchPlan::one_row).
enum class AttentionForm { kNarrow, kWide, kOneRow };

/// `attention`: the split-KV form an attention stage renders. `unsettled`: the buffers not final
/// before the launch starts (Renderer::unsettled; program.cpp, unsettled_buffers; nullopt: none
/// is known final), the rest it may read before its wait on the previous launch.
RenderedLaunch render_launch(const lift::StagedProgram& p, const std::vector<int32_t>& stages,
                             AttentionForm attention = AttentionForm::kNarrow,
                             const std::optional<std::set<ir::ValueId>>& unsettled = std::nullopt);

/// True if v is a row a GEMM stage's prologue computes and stores for other stages: a store of
/// that stage that is the activation operand of one of its MatMuls (pass_gemm_reduce_prologue_shared).
/// (gemm_prefill.cpp)
bool is_prologue_row(const lift::StagedProgram& p, ir::ValueId v);

/// The T > 1 form of a GEMM stage whose matmuls all read a bf16 weight W[N, K] as W.T against a
/// [T, K] activation: a pack kernel per distinct activation writes it as bf16 [T, K]; cuBLASLt
/// computes each matmul's [T, N] dot products in f32 on the tensor cores; the epilogue kernel (the
/// stage's own epilogue and cache writes, one thread per output element) reads them back. Decode
/// (T = 1) keeps the fused GEMV kernel of render_launch, which is bound by the weight stream.
struct GemmPrefillRender {
  struct Pack {
    std::string source;           ///< kernel KERNEL_NAME(args..., unsigned short* packed, long T)
    std::vector<KernelArg> args;  ///< before `packed`
    ir::ValueId a = -1;           ///< the activation node
    int64_t K = 0;
    int64_t layer = -1;           ///< as RenderedLaunch::layer
    /// >= 0: no pack kernel (source empty): the activation is this stored value as it is, whose
    /// producer's epilogue writes its bf16 copy (epilogue_copies of that stage's render).
    ir::ValueId copy_of = -1;
  };
  struct Gemm {
    size_t pack = 0;              ///< index into packs: the A operand
    /// The bf16 Param nodes W_i [N_i, K] the GEMM reads as one W [N, K], N = sum N_i: one
    /// weight, or the stage's weights over one activation (q, k, v; gate, up) stacked at load in
    /// this order (Buffer::stack), so that one cuBLASLt call computes all their dot products.
    std::vector<ir::ValueId> weights;
    int64_t N = 0, K = 0;
    /// >= 0: the stage is `out = residual + dot` (one GEMM): cuBLASLt writes `out` with the
    /// residual as C, and there is no epilogue kernel (epilogue_source empty).
    ir::ValueId residual = -1, out = -1;
  };
  std::vector<Pack> packs;
  std::vector<Gemm> gemms;        ///< GEMM j writes f32 [T, N_j]: the epilogue's param d<j>
  /// Stored values the epilogue also writes as bf16 [T, K] for a later GEMM's A operand (params
  /// after the dots, `unsigned short* c0..`): the gate/up product that down_proj reads.
  std::vector<ir::ValueId> epilogue_copies;
  std::string epilogue_source;    ///< KERNEL_NAME(args..., const float* d0.., [c0..,] long T)
  std::vector<KernelArg> epilogue_args;
  int64_t epilogue_layer = -1;
  std::vector<int64_t> work_const;  ///< output elements (one thread each)
  std::vector<int32_t> work_t_power;
};

/// Whether GEMM stage `stage` has a prefill form: every matmul streams a bf16 weight W[N, K] as
/// W.T over activation rows [T, K]. Its fused kernel then runs only at T == 1.
bool has_gemm_prefill_form(const lift::StagedProgram& p, int32_t stage);

/// What the prefill forms of the GEMM stages need to know of the whole program, found once (a
/// walk of the graph for each stage would make emission quadratic in the program's size).
struct GemmPrefillPlan {
  /// Stored values some GEMM stage's prefill form packs as they are (a bf16 cast of the f32
  /// buffer, nothing computed) and that another GEMM stage's prefill epilogue computes, for
  /// launches of the same rows: that epilogue writes the bf16 copy, and the pack kernel goes.
  /// LG_COMPILED_EPILOGUE_PACK=0: none (every activation packed by its own kernel).
  std::set<ir::ValueId> epilogue_copies;
  /// bf16 params that one node reads (their transpose, read by one matmul): a stacked GEMM may
  /// place them in another weight's allocation. LG_COMPILED_GEMM_STACK=0: none (a GEMM a weight).
  std::set<ir::ValueId> stackable_weights;
};
GemmPrefillPlan plan_gemm_prefills(const lift::StagedProgram& p);

/// The prefill form of GEMM stage `stage`, or nullopt when a matmul is not of that form (the
/// fused kernel then serves every T). `plan`: plan_gemm_prefills(p).
std::optional<GemmPrefillRender> render_gemm_prefill(const lift::StagedProgram& p, int32_t stage,
                                                     const GemmPrefillPlan& plan);

/// The T > 1 form of an attention stage: lg_fa::attention_block (src/kernels/flash_attention.cuh,
/// tensor cores, bf16 operands, fp32 softmax) over the stage's q/k/v/position lambdas. Grid:
/// ceil(T / 64) * heads blocks of 128 threads.
struct AttentionPrefillRender {
  std::string source;           ///< KERNEL_NAME(args..., [qpacked, kvpacked,] long T)
  std::vector<KernelArg> args;
  int64_t heads = 0;
  int64_t layer = -1;
  /// When k and v are contiguous cache rows: q is first packed as bf16 [T, H * Dh] by this kernel
  /// (its output is the flash kernel's `qpacked`; K = H * Dh)...
  std::optional<GemmPrefillRender::Pack> q_pack;
  /// ... and the cache rows of positions 0 .. max pos(t) as bf16 [2][KV, S, Dh] (k, then v) by
  /// this one, into the flash kernel's `kvpacked` (a buffer of 2 * KV * S * Dh; K = its 16-byte
  /// chunks per token when the step starts at position 0, for the grid).
  std::optional<GemmPrefillRender::Pack> kv_pack;
  /// k and v are a paged cache (a batched graph): the K/V pack gathers one sequence's rows
  /// through its block table, so the form holds for steps of one sequence.
  bool paged = false;
};

/// The prefill form of attention stage `stage`, or nullopt (head_dim not 16/32/64/128: the
/// one-block-per-row kernel then serves every T).
std::optional<AttentionPrefillRender> render_attention_prefill(const lift::StagedProgram& p, int32_t stage);

/// The tensor-core form of an experts stage (moe_gate_up or moe_down) for steps of many tokens:
/// src/kernels/grouped_gemm.cuh's route and grouped GEMM, instantiated with the stage's lambdas
/// (experts_prefill.cpp). Kernels, in launch order:
///   route    KERNEL_NAME(args..., int* lg_route, [lg_l,] long T): one block of 1,024 threads
///            groups the step's T * slots (token, slot) pairs by expert into `lg_route`
///            (lg_moe::route_ints(experts, T * slots) ints);
///   gemm     KERNEL_NAME(args..., int* lg_route, [float* lg_y,] [lg_l,] long T): grid
///            (lg_moe::max_tiles(experts, T * slots), ceil(outputs / 64)) x 128 threads;
///            moe_gate_up writes the stage's stores (SwiGLU of gate and up) itself, moe_down its
///            expert outputs to `lg_y` ([T * slots, outputs] f32 at the pairs' sorted positions);
///   combine  (moe_down only) KERNEL_NAME(args..., int* lg_route, float* lg_y, [lg_l,] long T):
///            one thread per output (T * outputs), the routing-weighted sum over the slots in slot
///            order (as the decode form), then the stage's epilogue and stores.
struct ExpertsPrefillRender {
  struct Kernel {
    std::string source;
    std::vector<KernelArg> args;  ///< before the lg_route (and lg_y) parameters
    int64_t layer = -1;           ///< as RenderedLaunch::layer
  };
  Kernel route, gemm;
  std::optional<Kernel> combine;
  int64_t experts = 0, slots = 0;   ///< E, and K of top-K
  int64_t outputs = 0;              ///< N: outputs per (pair, matrix)
  int64_t contraction = 0;          ///< C: a weight row's length
};

/// The tensor-core form of experts stage `stage`, or nullopt when it does not apply: the
/// activation is not a stored f32 row (the grouped GEMM reads rows from memory), the weights are
/// not bf16 with a contraction that is a multiple of 32, more than 4,095 experts, or
/// LG_COMPILED_MOE_MMA=0 (an emit-time A/B switch).
std::optional<ExpertsPrefillRender> render_experts_prefill(const lift::StagedProgram& p, int32_t stage);

/// The device code every program starts with (prelude.cpp): src/kernels/flash_attention.cuh,
/// attention_policies.cuh and device_helpers.cuh (shared with the hand-written lane).
std::string device_prelude();

}  // namespace lg::emit::cuda
