// The Renderer: the state of one kernel being rendered (its buffer parameters, the lifted layer
// index, fresh names) and the pieces every stage kind builds on: the device lambda of each node a
// stage evaluates (renderer.cpp, with the elementwise expressions of expr.cpp and the view index
// arithmetic of index.cpp). One member function per stage kind renders that kind's loop around
// the lambdas, each in its own file (see render.h for the list). Internal to src/emit/cuda.
//
// Names inside a kernel are local (v0, v1, ... in graph order; p0, p1, ... for buffers), so the
// stages of different layers that compute the same thing render to the same text and share a
// kernel.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "emit/cuda/index.h"
#include "emit/cuda/render.h"
#include "support/error.h"

namespace lg::emit::cuda {

/// Device lambda names of a stage's nodes (v0, v1, ...), as lambdas() returns them.
using LambdaNames = std::map<ir::ValueId, std::string>;

/// The call of v's lambda at index expressions `ix`: "v3(i0, 0L)".
inline std::string call(const LambdaNames& name, ir::ValueId v, const std::vector<std::string>& ix) {
  return name.at(v) + "(" + join(ix) + ")";
}

/// The renderer of one kernel.
struct Renderer {
  const lift::StagedProgram& p;
  const ir::Graph& g;
  std::vector<KernelArg> args;
  std::map<ir::ValueId, size_t> arg_of;
  int tmp = 0;
  /// Epilogue form of a GEMM stage (T > 1): dot products come from the f32 buffers d0, d1, ...
  /// (cuBLASLt's outputs), one thread per output element.
  bool scratch_dots = false;
  /// Where the epilogue reads matmul m's dot product (t, n): d<param>[t * ld + col + n]. A
  /// stacked GEMM (GemmPrefillRender::Gemm::weights) holds several matmuls side by side.
  struct ScratchDot {
    size_t param = 0;
    int64_t ld = 0, col = 0;
  };
  std::map<ir::ValueId, ScratchDot> scratch_dot_of;
  /// Epilogue form: stores also written as bf16 through the named param (a later GEMM's A).
  std::map<ir::ValueId, std::string> epilogue_copy;
  /// Set while gemm_stage renders a stage with a prefill form (has_gemm_prefill_form): its kernel
  /// runs only at T == 1, so the decode GEMVs are emitted without their any-T fallback, whose
  /// registers would lower the kernel's occupancy (LG_COMPILED_GEMV_DECODE_ONLY=0 keeps it).
  bool decode_only = false;
  /// Render attention stages in their wide split-KV form (more query heads a block: see
  /// LaunchPlan::wide).
  bool attention_wide = false;
  /// Render attention stages in their one-row split-KV form (LaunchPlan::one_row).
  bool attention_one_row = false;
  /// Warps per output element in the decode GEMVs of the stage being rendered (gemm_stage): each
  /// takes a slice of K and the block sums the slices.
  int gemv_split = 1;
  /// Layer lifting: the leading index of a state (the layer of a KV cache, `kcache[l]`) becomes
  /// the kernel parameter lg_l instead of a constant, so the launches of every layer share one
  /// kernel. Done only when one kernel sees a single such index (layer_values); otherwise
  /// re-rendered with constants (with_layer_lifting).
  bool lift_layer = true;
  std::set<int64_t> layer_values;
  /// Set by a stage that places the wait on the previous launch (wait_previous_launch) in its own
  /// body, after reads of memory no launch writes; kernel() then leaves it out of the kernel's head.
  bool body_waits = false;
  /// The buffers (buffer_node ids) that are not final before this launch's kernel starts: those
  /// the previous launch and this one write. Every other buffer is written by no launch of the
  /// step or only by launches two or more before this one: every emitted kernel triggers its
  /// dependents (griddepcontrol.launch_dependents) only after its own wait, so when this kernel
  /// starts, the launch two back has completed and its writes are visible; only the previous
  /// launch may still run. A stage may read those other buffers before its wait (experts_stage's
  /// routed weight rows). nullopt (render_launch's default, and the first launch of a step): none
  /// is known final, nothing is read early. The rule relies
  /// on the lane running every planned launch in order, each as at least one kernel, on kernels
  /// the emitter does not write (cuBLASLt's) launching without PDL, and on a grid that starts
  /// after another completed seeing its writes before its own wait (as the hand-written lane's
  /// PDL kernels assume, kernels/pdl.cuh).
  std::optional<std::set<ir::ValueId>> unsettled;
  /// Whether v's buffer is final before this launch starts (see `unsettled`).
  bool settled(ir::ValueId v) const { return unsettled && !unsettled->count(buffer_node(g, v)); }
  /// Blocks an SM the kernel's launch bounds ask for (0: none), set by a stage whose registers
  /// would otherwise exceed what its occupancy needs (experts_stage's early rows).
  int min_blocks_per_sm = 0;

  explicit Renderer(const lift::StagedProgram& prog) : p(prog), g(prog.graph) {}

  // ---- the kernel: parameters, buffers, loads (renderer.cpp)

  /// The expression of a state's leading index `v`: lg_l when lifted (recording v), else "vL".
  std::string layer_index(int64_t v);
  /// The lifted layer index, or -1 (the kernel then has no lg_l parameter).
  int64_t layer() const { return layer_values.empty() ? -1 : *layer_values.begin(); }
  bool is_state(ir::ValueId v) const { return g.at(buffer_node(g, v)).op == ir::Op::State; }
  /// Buffer node `n` is a float state stored as bf16 (EmitOptions::bf16_states).
  bool bf16_state(const ir::Node& n) const {
    return n.op == ir::Op::State && is_float(n.dtype) && kernel_context().bf16_states;
  }
  /// True if stage s computes v (its own node or an inline one); false: v is loaded.
  bool here(int32_t s, ir::ValueId v) const {
    return p.stage_of[static_cast<size_t>(v)] == s || p.is_inline[static_cast<size_t>(v)];
  }
  /// A whole kernel: the buffer params, `extra` params, lg_l when a layer index was lifted, T;
  /// the body follows the wait on the previous launch unless body_waits.
  std::string kernel(const std::string& bounds, const std::vector<std::string>& extra, const std::string& comment,
                     const std::string& body) const;
  std::string fresh(const char* base) { return std::string(base) + std::to_string(tmp++); }
  /// The kernel parameter index of node's buffer (added on first use; `written` sticks).
  size_t arg(ir::ValueId node, bool written);
  std::string param_decl(size_t i) const;
  /// The float value of v's buffer at linear offset `off` (i32 inputs and bf16 weights widened).
  std::string load(ir::ValueId v, const std::string& off);

  // ---- the device lambdas of a stage (renderer.cpp)

  /// The nodes stage s evaluates: its own and the inline ones it reaches, plus the buffered
  /// values it loads; in graph order.
  std::vector<ir::ValueId> closure(int32_t s) const;
  /// The same from `roots` (nodes of stage s or inline ones it reads) only: what a kernel
  /// evaluating just those values (a pack of one GEMM operand) computes and loads.
  std::vector<ir::ValueId> closure(int32_t s, const std::vector<ir::ValueId>& roots) const;
  /// Device lambdas for every node of `nodes`, written to `os`; returns their names. MatMul
  /// nodes return the variable `dots[node]` (GEMM stages), reductions loop (memoised per thread).
  LambdaNames lambdas(int32_t s, const std::vector<ir::ValueId>& nodes, std::ostringstream& os,
                      const std::map<ir::ValueId, std::string>& dots);

  // ---- index arithmetic of views and gathers (index.cpp)

  /// The lambda body of view or gather node v (Reshape, Permute, Slice, Concat, Gather) at
  /// index names `ix`, reading its operands through their lambdas.
  std::string view_body(int32_t s, ir::ValueId v, const std::vector<std::string>& ix, const LambdaNames& name);
  /// For `cache[l]` seen as [A, B, C] (a Reshape dropping the leading 1 of a Slice at l of a state
  /// [L, A, B, C] read from its buffer): the pointer expression of that slice's first element, so
  /// rows of C elements are contiguous at stride C and heads at stride B * C. "" otherwise.
  std::string state_slice_base(ir::ValueId v);

  // ---- element stages: map, reduce, gather, state write (element_stage.cpp)

  /// The lambda body of reduction v (memoised per thread; a converged warp splits the axis), and
  /// the memo variables it needs before the lambda, in `memo_decl`.
  std::string reduce_body(ir::ValueId v, const std::vector<std::string>& ix, const LambdaNames& name,
                          std::string& memo_decl);
  /// A grid-stride loop over the elements of `shape` assigning each output's value to its lvalue
  /// (`outs`: {dst, value} pairs, one loop for all of them; element e, indices i0, i1, ...);
  /// returns the threads it wants per element (32: a warp each). `block_rows`: the stage's
  /// reductions are row reductions (row_reductions_only), so a step of few rows gives each block
  /// a row and its reductions all of the block's threads.
  int element_loop(const ir::Shape& shape, const std::vector<std::pair<std::string, std::string>>& outs, bool reduces,
                   bool block_rows, std::ostringstream& os);
  /// Whether every reduction among `nodes` (stage s's closure) reduces the last axis of a value
  /// of shape `rows` into [rows..., 1] and every other value it computes is elementwise over a
  /// broadcast of `rows`: then a reduction's key depends on the row alone, so every thread of a
  /// block walking one row asks for the same keys in the same order (the block-wide path of
  /// reduce_body cannot deadlock).
  bool row_reductions_only(int32_t s, const std::vector<ir::ValueId>& nodes, const ir::Shape& rows) const;
  /// Set while element_stage renders the lambdas of a stage that row_reductions_only admits:
  /// reduce_body then also emits the block-wide path (taken when lg_block_coop is set).
  bool block_reductions_ = false;
  /// An element stage: grid-stride loops over each store and each state write.
  void element_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp);

  // ---- state writes (state_write.cpp)

  /// The cache element state write w writes for value index `vi`, as an lvalue.
  std::string state_element(ir::ValueId w, const std::vector<std::string>& vi, const LambdaNames& name);
  /// The pool row of position `pos` of token `t` for paged node n (its seq and block_table are
  /// operands `first` and `first + 1`): block_table[seq[t], pos / bs] * bs + pos % bs.
  std::string paged_row(const ir::Node& n, size_t first, const std::string& t, const std::string& pos,
                        const LambdaNames& name);
  /// The statement writing w's element at value index `vi` with value expression `val`.
  std::string state_store(ir::ValueId w, const std::vector<std::string>& vi, const std::string& val,
                          const LambdaNames& name);
  /// In a GEMM stage's epilogue (output element at `ix` of the GEMM's `shape`): the cache write w
  /// of a GEMM result seen through Reshape/Permute, its index mapped forward through the views.
  std::string gemm_cache_write(int32_t s, ir::ValueId w, const ir::Shape& shape, const std::vector<std::string>& ix,
                               const LambdaNames& name);

  // ---- GEMM stages (gemm_stage.cpp; the decode GEMV's dot products and staging: gemv.cpp)

  /// A GEMM stage: matmuls grouped by shared epilogue; one warp per output element of a group
  /// (scratch_dots: one thread, the dot products read back from d0, d1, ...).
  void gemm_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp);
  /// Warps per output element for a decode-only stage's GEMVs (groups of [T, N] GEMMs `mms`, each
  /// streaming a bf16 weight row): 1, or a power of two up to 8 while the stage has fewer than
  /// 4,096 outputs, so that few-output stages (o_proj, down, a router) put more loads in flight.
  /// LG_COMPILED_GEMV_SPLIT=0 keeps one warp an output, =N caps it at N (gemm_stage.cpp).
  int decode_split(const std::set<ir::ValueId>& groups, const std::vector<ir::ValueId>& mms,
                   const std::map<ir::ValueId, std::pair<std::string, bool>>& staged);
  /// The buffer behind GEMM activation `a` of stage s when `a` is exactly that buffer's f32 value
  /// as [T, K] (seen through widening casts to f32 and row-major views): a value another stage
  /// stored, which a reader of `a` may read in place. A rounding cast on the way (`.to(bf16)`)
  /// is not seen through: reading the stored row would skip the rounding. -1 otherwise.
  ir::ValueId stored_row(int32_t s, ir::ValueId a) const;
  /// stored_row for a reader that rounds the row to bf16 itself (a GEMM's packed operand, the
  /// experts' grouped GEMM): every cast on the way must be to f32 or bf16, which that rounding
  /// absorbs (another float type's would not be: f16's range and mantissa). -1 otherwise.
  ir::ValueId stored_row_rounded_to_bf16(int32_t s, ir::ValueId a) const;
  /// stored_row's walk; `any_float_cast` also passes rounding casts between float types.
  ir::ValueId stored_row_through(int32_t s, ir::ValueId a, bool any_float_cast) const;
  /// Decode: the prologue's single-row reductions done by the whole block; whether there is one
  /// (gemv.cpp).
  bool block_reductions(int32_t s, const std::vector<ir::ValueId>& nodes, const LambdaNames& name,
                        std::ostringstream& os);
  /// Decode: the activation rows of the fast-path GEMVs, as (float4 base, read via __ldg); rows
  /// computed in the stage are staged in shared memory (gemv.cpp).
  std::map<ir::ValueId, std::pair<std::string, bool>> stage_activations(int32_t s, const std::vector<ir::ValueId>& mms,
                                                                        const LambdaNames& name, std::ostringstream& os);
  /// The statements computing matmul m's dot product at output index `ix` into `dot` by the
  /// warp's 32 lanes, at any T (gemv.cpp).
  std::string gemv_dot(ir::ValueId m, const std::vector<std::string>& ix, const std::string& dot,
                       const LambdaNames& name);
  /// The dot products of a group's matmuls `ms` at output index `ix` into dots[m], by the warp's
  /// 32 lanes: a decode form (T == 1) for each that streams a bf16 weight row, one for all of
  /// them when they read one activation row (gate and up); gemv_dot otherwise (gemv.cpp).
  std::string gemv_dots(const std::vector<ir::ValueId>& ms, const std::vector<std::string>& ix,
                        const std::map<ir::ValueId, std::string>& dots,
                        const std::map<ir::ValueId, std::pair<std::string, bool>>& staged, const LambdaNames& name);
  /// Decode: lane 0's L2 prefetches of the first gemv_prefetch_bytes() of each weight row (or the
  /// warp's slice of it) that the fast forms of `ms` stream for output index `ix`; empty when
  /// none streams one (gemv.cpp).
  std::string gemv_prefetch(const std::vector<ir::ValueId>& ms, const std::vector<std::string>& ix,
                            const std::map<ir::ValueId, std::pair<std::string, bool>>& staged);
  /// The bf16 weight W[N, K] that matmul m streams in the decode form (W.T over an activation
  /// row stored or staged), or -1 (gemv.cpp).
  ir::ValueId decode_weight(ir::ValueId m, const std::map<ir::ValueId, std::pair<std::string, bool>>& staged);

  // ---- mixtures of experts (experts.cpp)

  /// The lambda body of TopK/ArgTopK v: the k best of the row memoised per thread for its last row.
  std::string topk_body(ir::ValueId v, const std::vector<std::string>& ix, const LambdaNames& name,
                        std::string& memo_decl);
  /// An experts stage (moe_gate_up or moe_down): a warp per output element reading the routed
  /// expert's weight row; see experts.cpp.
  void experts_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp);
  /// The statement writing every store of experts stage s at output index `ix` (the element's
  /// offset `o` in scope), the experts' value (node v, `lg_moe`) being `value`: the value itself,
  /// or what an epilogue (the residual add) makes of it.
  std::string experts_write(int32_t s, ir::ValueId v, const LambdaNames& name, const std::string& value,
                            const std::vector<std::string>& ix);
  /// An experts stage's form at T > 1: the pairs grouped by expert inside each block (experts.cpp). `xrow`: the
  /// activation row's pointer expression when it is a stored buffer, else empty.
  template <class Write>
  void grouped_experts(std::ostringstream& os, const ir::Node& n, bool up, const LambdaNames& name, Write&& write,
                       int64_t E, int64_t N, int64_t C, int64_t K, const std::string& xrow);

  // ---- attention (attention.cpp)

  /// The split-KV form (every T outside the prefill flash form, any head_dim): a block per (token,
  /// group of query heads sharing a KV head, chunk of the token's positions); see SplitKv. Its
  /// kernel takes `lg_part` and `lg_count` after the buffers (kSplitKvParams).
  SplitKv attention_stage(int32_t s, std::ostringstream& os, std::vector<int64_t>& wc, std::vector<int32_t>& wp);
};

/// The extra kernel parameters of a split-KV attention kernel, after its buffers (SplitKv).
inline const std::vector<std::string> kSplitKvParams = {"float* __restrict__ lg_part", "int* __restrict__ lg_count"};

/// Runs `render(r)` on a fresh Renderer with the layer index lifted to `lg_l`, and once more with
/// constants when that kernel saw more than one layer.
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

/// A pack kernel: node `a` of stage s (shape [T, const...]) evaluated through the stage's lambdas,
/// every element once, written as bf16 rows [T, K] (K = the product of the constant dims).
/// (gemm_prefill.cpp)
GemmPrefillRender::Pack render_pack(const lift::StagedProgram& p, int32_t s, ir::ValueId a,
                                    const std::map<ir::ValueId, std::string>& dots, const std::string& comment);

/// The one moe_gate_up or moe_down node of experts stage s (the rest are its epilogue and
/// prologue reductions). Throws lg::Error if it has none or two. (experts.cpp)
ir::ValueId experts_node(const lift::StagedProgram& p, int32_t s);

/// Whether the A/B switch `name` (an environment variable) is set to "0". (renderer.cpp)
bool knob_off(const char* name);
/// Emit-time switches (the program text, hence its NVRTC cache key, follows them; A/B in one
/// binary). LG_COMPILED_EARLY_LAUNCH=0: no griddepcontrol.launch_dependents after each kernel's
/// wait (the next launch is then scheduled only as this one's blocks exit). (renderer.cpp)
bool early_launch();
/// The wait on the previous launch that heads every kernel (and its early launch of the next,
/// early_launch()), as kernel body statements. (renderer.cpp)
std::string wait_previous_launch();

/// Values a thread computes together in the block-wide loops of a decode GEMV's prologue (the
/// RMSNorm's sum of squares, the staging of its row): LG_COMPILED_PROLOGUE_BATCH=N (0-32,
/// default 8; 0 the plain loop). (gemv.cpp)
int prologue_batch();
/// Whether a decode GEMV's activation row of K elements staged in shared memory is laid out by
/// halves of 8-element chunks (Renderer::stage_activations): K % 8 == 0, unless
/// LG_COMPILED_GEMV_HALVES=0 (in order, A/B in one binary). (gemv.cpp)
bool staged_halves(int64_t K);
/// 16-byte weight loads a lane issues together in each row of a decode GEMV (one batch);
/// LG_COMPILED_GEMV_DEPTH=N sets it (1-16, default 4). (gemv.cpp)
int64_t gemv_depth();
/// When a decode GEMV keeps two batches of loads in flight (the next issued before the current
/// one's math): LG_COMPILED_GEMV_PIPE=1 (the default) where a lane's part of a row spans more
/// than two batches, 0 never, 2 always. (gemv.cpp)
int gemv_pipeline_knob();
/// Bytes of each decode GEMV's first weight row a warp prefetches into L2 before the wait on the
/// previous launch (weights are written by no launch), so the stream starts during that launch's
/// tail, this launch's start and its prologue (the RMSNorm). H200, one-sequence step, ms
/// (bench/RESULTS.md, session 19, calls 1 and 3): 8,192 bytes slowed the 8B step 5.19 -> 5.54
/// (32,768: 5.69); 2,048 left it unchanged with one batch of loads in flight and took it
/// 5.13 -> 5.00 with two (fast_gemvs). LG_COMPILED_GEMV_PREFETCH=N sets it (0: no prefetch, the
/// wait heads the kernel). (gemv.cpp)
constexpr int64_t kGemvPrefetchBytes = 2048;
int64_t gemv_prefetch_bytes();

/// Statements adding to `acc` the dot product of 8 bf16 weights (`w`, one uint4) with the 8 f32
/// activations in scope as float4 x0, x1, each line indented by `ind`. (gemv.cpp)
std::string bf16x8_dot(const std::string& acc, const std::string& w, const std::string& ind);

/// The value `v` is computed from through inline float -> float casts (the .lg's bf16 weights or
/// stored f32 rows widened or narrowed on the way in), or `v` itself. (gemm_stage.cpp)
ir::ValueId through_float_casts(const lift::StagedProgram& p, ir::ValueId v);
/// The bf16 weight W of `b` when the matmul reads it as W.T ([K, N] view of W[N, K], possibly
/// widened by an inline float cast) with a constant K % 8 == 0; -1 otherwise. (gemm_stage.cpp)
ir::ValueId transposed_bf16_weight(const lift::StagedProgram& p, ir::ValueId a, ir::ValueId b);

}  // namespace lg::emit::cuda
