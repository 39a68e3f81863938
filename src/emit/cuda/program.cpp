// emit_program: renders every launch, dedupes kernels by source, lays out the arena by liveness
// and writes plan.json.
#include "emit/cuda/program.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "emit/cuda/index.h"
#include "emit/cuda/render.h"
#include "ir/print.h"
#include "support/error.h"

namespace lg::emit::cuda {

int64_t LaunchPlan::grid(int64_t T) const {
  int64_t work = 0;
  for (size_t i = 0; i < work_const.size(); ++i) {
    int64_t w = work_const[i];
    for (int32_t k = 0; k < work_t_power[i]; ++k) w *= T;
    work = std::max(work, w);
  }
  int64_t blocks = std::max<int64_t>(1, (work + per_block - 1) / per_block);
  return max_blocks > 0 ? std::min(blocks, max_blocks) : blocks;
}

std::string CudaProgram::source() const {
  std::string s = "// " + model + ": compiled by lanegraph (provenance " + to_string(provenance) + ").\n" + prelude;
  for (const auto& k : kernels) s += "\n" + k.source;
  return s;
}

namespace {

// The placed arena buffers whose live range (first to last launch) overlaps a given one, found
// without a look at every placed buffer (an unfused program of 32k stages has 32k buffers, and
// comparing each with each took seconds): the buffers sorted by first launch, and a segment tree
// holding for each run of them the latest last launch among the placed ones.
class PlacedByLife {
 public:
  PlacedByLife(const std::vector<Buffer>& buffers, std::vector<int32_t> ids) : buffers_(buffers), ids_(std::move(ids)) {
    std::stable_sort(ids_.begin(), ids_.end(), [&](int32_t a, int32_t b) { return at(a).first_launch < at(b).first_launch; });
    pos_.assign(buffers.size(), 0);
    for (size_t i = 0; i < ids_.size(); ++i) pos_[static_cast<size_t>(ids_[i])] = i;
    while (size_ < ids_.size()) size_ *= 2;
    latest_.assign(2 * size_, kNone);
  }
  void place(int32_t id) {
    size_t i = size_ + pos_[static_cast<size_t>(id)];
    latest_[i] = at(id).last_launch;
    for (i /= 2; i > 0; i /= 2) latest_[i] = std::max(latest_[2 * i], latest_[2 * i + 1]);
  }
  /// Calls f(id) for every placed buffer with first_launch <= last and last_launch >= first.
  template <class F>
  void overlapping(int32_t first, int32_t last, F&& f) const {
    const size_t end = static_cast<size_t>(
        std::upper_bound(ids_.begin(), ids_.end(), last, [&](int32_t l, int32_t id) { return l < at(id).first_launch; }) -
        ids_.begin());
    struct Run {
      size_t node, lo, hi;
    };
    std::vector<Run> todo{{1, 0, size_}};
    while (!todo.empty()) {
      const Run r = todo.back();
      todo.pop_back();
      if (r.lo >= end || latest_[r.node] == kNone || latest_[r.node] < first) continue;
      if (r.hi - r.lo == 1) {
        f(ids_[r.lo]);
        continue;
      }
      const size_t mid = (r.lo + r.hi) / 2;
      todo.push_back({2 * r.node + 1, mid, r.hi});
      todo.push_back({2 * r.node, r.lo, mid});
    }
  }

 private:
  static constexpr int64_t kNone = INT64_MIN;
  const Buffer& at(int32_t id) const { return buffers_[static_cast<size_t>(id)]; }
  const std::vector<Buffer>& buffers_;
  std::vector<int32_t> ids_;
  std::vector<size_t> pos_;
  size_t size_ = 1;
  std::vector<int64_t> latest_;
};

const char* kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Weight: return "weight";
    case BufferKind::State: return "state";
    case BufferKind::Arena: return "arena";
  }
  return "?";
}

/// `max_sym[i]`: the largest value of runtime dim i (T, then B in a batched graph); `where`: the
/// .lg declaration or statement the buffer holds (ir::span_text), or empty, for the error.
Buffer make_buffer(BufferKind kind, int32_t index, ir::ValueId node, std::string name, DType dt, const ir::Shape& shape,
                   const std::vector<int64_t>& max_sym, const std::string& where = "") {
  Buffer b{kind, index, node, std::move(name), dt, 1, 0, 0, 0, 0, -1, -1};
  // A buffer no GPU could hold is a config's size gone wrong (vocab_size 2^40 planned a petabyte
  // arena and compiled): refused here, naming it, before any product can overflow.
  constexpr int64_t kMaxBufferBytes = int64_t{1} << 40;
  bool over = false;
  for (const auto& d : shape) {
    over = over || __builtin_mul_overflow(b.elems_const, d.coeff, &b.elems_const);
    if (d.is_const()) continue;
    if (b.elems_t_power > 0 && d.sym != b.sym)
      throw Error("emit: internal error: buffer " + b.name + " scales with two runtime dims");
    b.sym = d.sym;
    ++b.elems_t_power;
  }
  over = over || __builtin_mul_overflow(b.elems_const, static_cast<int64_t>(dtype_size(dt)), &b.bytes);
  for (int32_t k = 0; k < b.elems_t_power && !over; ++k)
    over = __builtin_mul_overflow(b.bytes, max_sym.at(static_cast<size_t>(b.sym)), &b.bytes);
  if (over || b.bytes > kMaxBufferBytes)
    throw Error((where.empty() ? std::string() : where + ": ") + "emit: the " + std::string(kind_name(kind)) +
                " buffer " + b.name +
                " would need more than 1 TiB at the largest runtime sizes, more than any GPU holds: check the sizes "
                "in config.json (vocab_size, hidden_size, ...), the program's dims and --max-seq");
  return b;
}

}  // namespace

std::string CudaProgram::plan_json() const {
  nlohmann::json j;
  j["model"] = model;
  j["provenance"] = nlohmann::json::parse(to_json(provenance));
  j["max_t"] = max_t;
  j["max_b"] = max_b;
  j["arena_bytes"] = arena_bytes;
  j["prefill_gemm"] =
      "GEMM launches with a `prefill` entry run at T > 1 as: pack kernels (activation -> bf16), cuBLASLt bf16 GEMMs "
      "with f32 accumulation and output (tensor cores), then the epilogue kernel; at T = 1 (decode) the fused "
      "warp-per-output GEMV kernel streams the bf16 weights. A GEMM over several weights (q, k, v) reads them as one "
      "matrix: their buffers are a stack (`stack`: in the first one's allocation of `stack_bytes`, at `offset`)";
  j["prefill_experts"] =
      "experts launches with a `prefill.experts` entry run at T >= min_t as: the route kernel (one block of 1024 "
      "threads: the (token, slot) pairs grouped by expert into a route buffer), the grouped GEMM on the tensor cores "
      "(grid (T * slots / tile_rows + experts + 2, col_tiles) x 128), then for moe_down the epilogue kernel (the weighted "
      "sum over the slots and the stage's epilogue)";
  j["split_kv"] =
      "attention launches with a `split_kv` entry run on a grid of (T * items_per_row, splits) blocks: block (item, "
      "split) takes one chunk of the positions of item's token for heads_per_item query heads; the kernel takes "
      "float* lg_part (T * splits * part_floats) and int* lg_count (T * items_per_row, zero) after its buffers; blocks "
      "of `threads` threads; blocks_per_sm > 0: the splits aim at that many blocks an SM over all items; with a "
      "`wide_split_kv` entry, steps of at least min_rows rows run that kernel instead, with its split_kv "
      "(tensor_cores: lg_dmma's form); with a `one_row_split_kv` entry, steps of one row run that kernel (checked "
      "before the wide form)";
  for (const auto& b : buffers) {
    nlohmann::json e = {{"kind", kind_name(b.kind)}, {"name", b.name}, {"dtype", std::string(dtype_name(b.dtype))},
                        {"elems", b.elems_const}, {"t_power", b.elems_t_power}, {"bytes_at_max_t", b.bytes}};
    if (b.elems_t_power > 0 && b.sym != 0) e["rows"] = "B";
    if (b.kind == BufferKind::Arena) {
      e["offset"] = b.offset;
      e["live"] = {b.first_launch, b.last_launch};
    }
    if (b.kind != BufferKind::Arena) e["index"] = b.index;
    if (b.stack >= 0) e["stack"] = {{"in", b.stack}, {"offset", b.stack_offset}};
    if (b.stack_bytes > 0) e["stack_bytes"] = b.stack_bytes;
    j["buffers"].push_back(e);
  }
  for (const auto& l : launches) {
    nlohmann::json e = {{"kernel", kernels[static_cast<size_t>(l.kernel)].name},
                        {"stages", l.stages},
                        {"args", l.args},
                        {"layer", l.layer},
                        {"block", l.block},
                        {"rows", l.rows_sym == 0 ? "T" : "B"},
                        {"grid", {{"work", l.work_const}, {"t_power", l.work_t_power}, {"per_block", l.per_block},
                                  {"max_blocks", l.max_blocks}}}};
    auto split_json = [](const SplitKv& sp) {
      return nlohmann::json{{"items_per_row", sp.items_per_row}, {"heads_per_item", sp.heads_per_item},
                            {"part_floats", sp.part_floats}, {"min_chunk", sp.min_chunk}, {"max_splits", sp.max_splits},
                            {"tensor_cores", sp.tensor_cores}, {"threads", sp.threads},
                            {"blocks_per_sm", sp.blocks_per_sm}};
    };
    if (l.split) e["split_kv"] = split_json(*l.split);
    if (l.wide)
      e["wide_split_kv"] = {{"kernel", kernels[static_cast<size_t>(l.wide->kernel)].name},
                            {"min_rows", l.wide->min_rows},
                            {"split_kv", split_json(l.wide->split)}};
    if (l.one_row)
      e["one_row_split_kv"] = {{"kernel", kernels[static_cast<size_t>(l.one_row->kernel)].name},
                               {"split_kv", split_json(l.one_row->split)}};
    if (l.prefill) {
      nlohmann::json pf;
      for (const auto& pk : l.prefill->packs)
        pf["packs"].push_back(
            {{"kernel", kernels[static_cast<size_t>(pk.kernel)].name}, {"args", pk.args}, {"layer", pk.layer}});
      for (const auto& gm : l.prefill->gemms)
        pf["cublaslt"].push_back(
            {{"a_bf16", gm.a}, {"weight", gm.w}, {"c_f32", gm.c}, {"out_f32", gm.out}, {"N", gm.N}, {"K", gm.K}});
      if (l.prefill->epilogue_kernel >= 0)
        pf["epilogue"] = {{"kernel", kernels[static_cast<size_t>(l.prefill->epilogue_kernel)].name},
                        {"args", l.prefill->epilogue_args},
                        {"layer", l.prefill->epilogue_layer},
                        {"block", l.prefill->block},
                        {"t_tile", l.prefill->t_tile}};
      if (const auto& ex = l.prefill->experts)
        pf["experts"] = {{"route", {{"kernel", kernels[static_cast<size_t>(ex->route_kernel)].name},
                                    {"args", ex->route_args},
                                    {"layer", ex->route_layer}}},
                         {"grouped_gemm", {{"kernel", kernels[static_cast<size_t>(ex->gemm_kernel)].name},
                                           {"args", ex->gemm_args},
                                           {"layer", ex->gemm_layer},
                                           {"col_tiles", ex->col_tiles},
                                           {"tile_rows", grouped_gemm_shape::kTileRows}}},
                         {"experts", ex->experts},
                         {"slots", ex->slots}};
      pf["min_t"] = l.prefill->min_t;
      e["prefill"] = pf;
    }
    j["launches"].push_back(e);
  }
  j["outputs"] = outputs;
  return j.dump(1);
}

namespace {

/// Rows from which an attention launch runs its wide form: call 3 of the sixteenth session
/// measured it quicker at 64 and 128 sequences and slower at 1 and 16 (bench/RESULTS.md); the
/// batched steps' buckets are powers of two, so 32 is the one size not measured.
constexpr int64_t kWideAttentionRows = 64;

/// Builds a CudaProgram launch by launch: buffers first (inputs, weights, states, then one arena
/// buffer per stored value), then per launch its kernels (deduped by source) and plan, then the
/// arena layout.
struct ProgramBuilder {
  const lift::StagedProgram& p;
  const ir::Graph& g;
  CudaProgram prog;
  std::map<ir::ValueId, int32_t> arena_of;  ///< stored value -> its buffer
  std::map<std::string, int32_t> kernel_of;  ///< source (before naming) -> kernel
  GemmPrefillPlan gemm_prefills;             ///< plan_gemm_prefills(p)
  std::map<ir::ValueId, int32_t> bf16_copy_of;  ///< such a value -> its bf16 copy's buffer

  EmitOptions options;
  std::vector<int64_t> max_sym;  ///< largest value of each runtime dim
  int32_t rows = 0;              ///< the runtime dim of the launch being planned

  ProgramBuilder(const lift::StagedProgram& program, const EmitOptions& o) : p(program), g(program.graph), options(o) {
    for (const auto& sym : g.symbols) max_sym.push_back(sym.max);
    if (max_sym.empty()) max_sym.push_back(1);
    gemm_prefills = plan_gemm_prefills(p);
  }

  void add_buffers() {
    for (size_t i = 0; i < g.inputs.size(); ++i)
      prog.buffers.push_back(make_buffer(BufferKind::Input, static_cast<int32_t>(i), -1, g.inputs[i].name, DType::I32,
                                         g.inputs[i].shape, max_sym));
    for (size_t i = 0; i < g.params.size(); ++i)
      prog.buffers.push_back(make_buffer(BufferKind::Weight, static_cast<int32_t>(i), -1, g.params[i].tensor,
                                         g.params[i].dtype == DType::BF16 ? DType::BF16 : DType::F32, g.params[i].shape,
                                         max_sym, where(g.params[i].span)));
    for (size_t i = 0; i < g.states.size(); ++i)
      prog.buffers.push_back(make_buffer(BufferKind::State, static_cast<int32_t>(i), -1, g.states[i].name,
                                         state_dtype(g.states[i].dtype), g.states[i].shape, max_sym));
    for (const auto& st : p.stages)
      for (ir::ValueId v : st.stores) {
        arena_of[v] = static_cast<int32_t>(prog.buffers.size());
        const ir::Node& n = g.at(v);
        prog.buffers.push_back(make_buffer(BufferKind::Arena, -1, v, n.name.empty() ? "%" + std::to_string(v) : n.name,
                                           DType::F32, n.shape, max_sym, where(n.span)));
      }
  }

  /// The .lg place of a span for an error message, or empty where the graph has none.
  std::string where(const ir::Span& span) const { return span.file >= 0 ? ir::span_text(g, span) : std::string(); }

  /// A state's dtype on the device: bf16 for a float state when asked (EmitOptions), else f32.
  DType state_dtype(DType declared) const {
    return options.bf16_states && is_float(declared) ? DType::BF16 : DType::F32;
  }

  int32_t buffer_id(ir::ValueId node) const {
    const ir::Node& n = g.at(node);
    size_t ni = g.inputs.size(), np = g.params.size();
    switch (n.op) {
      case ir::Op::Input: return n.attrs.index;
      case ir::Op::Param: return static_cast<int32_t>(ni) + n.attrs.index;
      case ir::Op::State: return static_cast<int32_t>(ni + np) + n.attrs.index;
      default: return arena_of.at(node);
    }
  }

  /// The kernel of `source`, added as "k<index>_<kind>" unless an identical one exists.
  int32_t kernel_for(const std::string& source, const std::string& kind) {
    auto it = kernel_of.find(source);
    if (it != kernel_of.end()) return it->second;
    auto k = static_cast<int32_t>(prog.kernels.size());
    std::string name = "k" + std::to_string(k) + "_" + kind;
    std::string src = source;
    src.replace(src.find("KERNEL_NAME"), 11, name);
    prog.kernels.push_back({name, src});
    kernel_of[source] = k;
    return k;
  }

  /// Buffer b is used by launch li (arena liveness).
  void use(int32_t b, int32_t li) {
    Buffer& buf = prog.buffers[static_cast<size_t>(b)];
    if (buf.kind != BufferKind::Arena) return;
    if (buf.first_launch < 0) buf.first_launch = li;
    buf.last_launch = std::max(buf.last_launch, li);
  }

  /// The buffer ids of kernel arguments `args`, each used by launch li.
  std::vector<int32_t> args_of(const std::vector<KernelArg>& args, int32_t li) {
    std::vector<int32_t> out;
    for (const auto& a : args) {
      out.push_back(buffer_id(a.node));
      use(out.back(), li);
    }
    return out;
  }

  /// A scratch buffer of the prefill path (`shape`: [T, cols], or a constant size), live during
  /// launch li only.
  int32_t scratch(const std::string& name, DType dt, ir::Shape shape, int32_t li) {
    Buffer b = make_buffer(BufferKind::Arena, -1, -1, name, dt, std::move(shape), max_sym);
    b.first_launch = b.last_launch = li;
    prog.buffers.push_back(b);
    return static_cast<int32_t>(prog.buffers.size() - 1);
  }

  /// [rows, cols]: rows of the launch being planned (T or B).
  ir::Shape t_rows(int64_t cols) const { return ir::Shape{ir::Dim::symbol(rows), ir::Dim::constant(cols)}; }

  /// The bf16 [rows, K] copy of stored value v that its producer's prefill epilogue writes and a
  /// later GEMM reads as its A operand (GemmPrefillPlan::epilogue_copies), used by launch li.
  int32_t bf16_copy(ir::ValueId v, int32_t li) {
    auto [it, fresh] = bf16_copy_of.emplace(v, -1);
    if (fresh) {
      Buffer b = make_buffer(BufferKind::Arena, -1, -1, "%" + std::to_string(v) + ".bf16", DType::BF16, g.at(v).shape,
                             max_sym);
      prog.buffers.push_back(b);
      it->second = static_cast<int32_t>(prog.buffers.size() - 1);
    }
    use(it->second, li);
    return it->second;
  }

  /// The buffer of a GEMM's weights: the first one's, with the others placed after it in its
  /// allocation (Buffer::stack) when there are several.
  int32_t stack_weights(const std::vector<ir::ValueId>& weights) {
    const int32_t head = buffer_id(weights.at(0));
    if (weights.size() == 1) return head;
    int64_t offset = 0;
    for (ir::ValueId w : weights) {
      Buffer& b = prog.buffers[static_cast<size_t>(buffer_id(w))];
      if (b.kind != BufferKind::Weight || b.stack >= 0 || b.stack_bytes > 0)
        throw Error("emit: internal error: weight " + b.name + " stacked twice");
      if (offset > 0) {
        b.stack = head;
        b.stack_offset = offset;
      }
      offset += b.bytes;
    }
    prog.buffers[static_cast<size_t>(head)].stack_bytes = offset;
    return head;
  }

  /// A pack kernel's launch: its arguments, then the buffer `out` it writes.
  LaunchPlan::Prefill::Pack plan_pack(const GemmPrefillRender::Pack& pk, int32_t out, int32_t li) {
    LaunchPlan::Prefill::Pack pp;
    pp.kernel = kernel_for(pk.source, "pack");
    pp.args = args_of(pk.args, li);
    pp.args.push_back(out);
    pp.K = pk.K;
    pp.layer = pk.layer;
    return pp;
  }

  /// The prefill form of a GEMM launch: packs, cuBLASLt GEMMs (their f32 outputs scratch unless
  /// the GEMM writes a residual sum itself), the epilogue.
  LaunchPlan::Prefill plan_gemm_prefill(const GemmPrefillRender& r, int32_t li) {
    LaunchPlan::Prefill pf;
    std::vector<int32_t> a_of;  // pack -> the bf16 A buffer
    for (const auto& pk : r.packs) {
      if (pk.copy_of >= 0) {
        a_of.push_back(bf16_copy(pk.copy_of, li));
        continue;
      }
      pf.packs.push_back(plan_pack(pk, scratch("%" + std::to_string(pk.a) + ".bf16", DType::BF16, t_rows(pk.K), li), li));
      a_of.push_back(pf.packs.back().args.back());
    }
    std::vector<int32_t> dots;
    for (size_t j = 0; j < r.gemms.size(); ++j) {
      const auto& gm = r.gemms[j];
      LaunchPlan::Prefill::Gemm lt;
      lt.a = a_of[gm.pack];
      lt.w = stack_weights(gm.weights);
      if (gm.residual >= 0) {
        lt.c = buffer_id(gm.residual);
        lt.out = buffer_id(gm.out);
        use(lt.c, li);
        use(lt.out, li);
      } else {
        lt.out = scratch("launch" + std::to_string(li) + ".dots" + std::to_string(j), DType::F32, t_rows(gm.N), li);
      }
      lt.N = gm.N;
      lt.K = gm.K;
      pf.gemms.push_back(lt);
      dots.push_back(lt.out);
    }
    if (r.epilogue_source.empty()) return pf;
    pf.epilogue_kernel = kernel_for(r.epilogue_source, "epilogue");
    pf.epilogue_args = args_of(r.epilogue_args, li);
    pf.epilogue_args.insert(pf.epilogue_args.end(), dots.begin(), dots.end());
    for (ir::ValueId v : r.epilogue_copies) pf.epilogue_args.push_back(bf16_copy(v, li));
    pf.epilogue_layer = r.epilogue_layer;
    pf.work_const = r.work_const;
    pf.work_t_power = r.work_t_power;
    return pf;
  }

  /// The prefill form of an attention launch: the flash-attention kernel as the "epilogue", after
  /// the q and K/V pack kernels when it reads packed rows.
  LaunchPlan::Prefill plan_attention_prefill(const AttentionPrefillRender& fa, int32_t stage, int32_t li) {
    LaunchPlan::Prefill pf;
    pf.epilogue_kernel = kernel_for(fa.source, "flash_attention");
    pf.epilogue_args = args_of(fa.args, li);
    if (fa.q_pack) {
      const std::string name = "launch" + std::to_string(li) + ".q.bf16";
      pf.packs.push_back(plan_pack(*fa.q_pack, scratch(name, DType::BF16, t_rows(fa.q_pack->K), li), li));
      pf.epilogue_args.push_back(pf.packs.back().args.back());
    }
    if (fa.kv_pack) {
      const ir::ValueId att = p.stages[static_cast<size_t>(stage)].nodes.at(0);
      const auto& cache = g.at(g.at(att).operands[1]).shape;  // [KV, S, Dh]; paged: S is the pool
      // A paged cache's rows are gathered for one sequence: S (its positions), not the pool's rows.
      const int64_t kv_rows = fa.paged ? g.batching.max_seq : cache[1].coeff;
      const ir::Shape kv{ir::Dim::constant(2 * cache[0].coeff * kv_rows * cache[2].coeff)};
      const std::string name = "launch" + std::to_string(li) + ".kv.bf16";
      pf.packs.push_back(plan_pack(*fa.kv_pack, scratch(name, DType::BF16, kv, li), li));
      pf.epilogue_args.push_back(pf.packs.back().args.back());
    }
    pf.work_const = {fa.heads};
    pf.work_t_power = {0};
    pf.block = 128;
    pf.t_tile = 64;
    pf.epilogue_layer = fa.layer;
    pf.one_sequence = fa.paged;
    return pf;
  }

  /// The tensor-core form of an experts launch: route, grouped GEMM, and moe_down's combine as the
  /// epilogue; the route workspace and moe_down's expert outputs are scratch of the launch.
  LaunchPlan::Prefill plan_experts_prefill(const ExpertsPrefillRender& r, int32_t li) {
    LaunchPlan::Prefill pf;
    LaunchPlan::Prefill::Experts ex;
    const std::string at = "launch" + std::to_string(li);
    ex.experts = r.experts;
    ex.slots = r.slots;
    const int64_t max_rows = max_sym[static_cast<size_t>(rows)];
    const int32_t route = scratch(at + ".route", DType::I32, ir::Shape{ir::Dim::constant(ex.route_ints(max_rows))}, li);
    ex.route_kernel = kernel_for(r.route.source, "experts_route");
    ex.route_args = args_of(r.route.args, li);
    ex.route_args.push_back(route);
    ex.route_layer = r.route.layer;
    ex.gemm_kernel = kernel_for(r.gemm.source, "experts_mma");
    ex.gemm_args = args_of(r.gemm.args, li);
    ex.gemm_args.push_back(route);
    ex.gemm_layer = r.gemm.layer;
    ex.col_tiles = (r.outputs + 63) / 64;
    if (r.combine) {
      const int32_t y = scratch(at + ".expert_out", DType::F32, t_rows(r.slots * r.outputs), li);
      ex.gemm_args.push_back(y);
      pf.epilogue_kernel = kernel_for(r.combine->source, "experts_combine");
      pf.epilogue_args = args_of(r.combine->args, li);
      pf.epilogue_args.push_back(route);
      pf.epilogue_args.push_back(y);
      pf.epilogue_layer = r.combine->layer;
      pf.work_const = {r.outputs};
      pf.work_t_power = {1};
    }
    // Below this many tokens the decode form's few rows per expert beat a mostly padded tile
    // (bench/RESULTS.md, session 14; the compiled lane's LG_COMPILED_MOE_MMA_T overrides it).
    pf.min_t = 64;
    pf.experts = ex;
    return pf;
  }

  /// The buffers launch li writes: its stages' stores and the states their cache writes update.
  std::set<ir::ValueId> written_by(size_t li) const {
    std::set<ir::ValueId> w;
    for (int32_t s : p.launches[li].stages) {
      const lift::Stage& st = p.stages[static_cast<size_t>(s)];
      for (ir::ValueId v : st.stores) w.insert(buffer_node(p.graph, v));
      for (ir::ValueId v : st.nodes)
        if (p.graph.at(v).op == ir::Op::StateWrite) w.insert(buffer_node(p.graph, v));
    }
    return w;
  }

  /// Renderer::unsettled for launch li: the buffers launches li - 1 and li write; nullopt for the
  /// first launch, whose previous kernel is the last step's or a copy's.
  std::optional<std::set<ir::ValueId>> unsettled_buffers(size_t li) const {
    if (li == 0) return std::nullopt;
    std::set<ir::ValueId> open = written_by(li - 1);
    for (ir::ValueId v : written_by(li)) open.insert(v);
    return open;
  }

  void plan_launch(size_t li) {
    const auto l32 = static_cast<int32_t>(li);
    const auto& stages = p.launches[li].stages;
    rows = lift::stage_rows_symbol(p, stages[0]);
    const KernelScope scope({rows, options.bf16_states});  // the kernels of this launch take that dim as T
    RenderedLaunch r;
    try {
      r = render_launch(p, stages, AttentionForm::kNarrow, unsettled_buffers(li));
    } catch (const Error& e) {
      const auto& st = p.stages[static_cast<size_t>(stages[0])];
      throw Error(std::string(e.what()) + " (launch " + std::to_string(li) + ", a " +
                  lift::stage_kind_name(st.kind) + " stage ending in " + ir::op_name(p.graph.at(st.nodes.back()).op) +
                  ")");
    }
    LaunchPlan lp;
    lp.rows_sym = rows;
    lp.kernel = kernel_for(r.source, lift::stage_kind_name(p.stages[static_cast<size_t>(stages[0])].kind));
    lp.stages = stages;
    lp.args = args_of(r.args, l32);
    lp.work_const = r.work_const;
    lp.work_t_power = r.work_t_power;
    lp.per_block = r.per_block;
    lp.gemm = r.gemm;
    lp.block = r.block;
    lp.max_blocks = r.per_block == 256 ? 4096 : 0;  // element kernels stride over the grid
    lp.layer = r.layer;
    lp.split = r.split;
    if (r.split) plan_wide_attention(stages, r, lp);
    if (r.split) plan_one_row_attention(stages, r, lp);
    if (stages.size() == 1) {
      if (auto pre = render_gemm_prefill(p, stages[0], gemm_prefills)) lp.prefill = plan_gemm_prefill(*pre, l32);
      if (auto fa = render_attention_prefill(p, stages[0])) lp.prefill = plan_attention_prefill(*fa, stages[0], l32);
      if (p.stages[static_cast<size_t>(stages[0])].kind == lift::StageKind::Experts)
        if (auto ex = render_experts_prefill(p, stages[0])) lp.prefill = plan_experts_prefill(*ex, l32);
    }
    prog.launches.push_back(lp);
  }

  /// The wide split-KV form of an attention launch (LaunchPlan::wide), when it has more query
  /// heads a block than `r`, the form rendered for every step: on the tensor cores (lg_dmma)
  /// where the stage reads bf16 cache rows of a head_dim the mma takes, else the CUDA-core kernel
  /// with more heads (attention.cpp, split_shape). LG_COMPILED_ATTN_WIDE_ROWS=N sets its min_rows
  /// (1: every step but those that run the one-row form, for tests; 0: never).
  void plan_wide_attention(const std::vector<int32_t>& stages, const RenderedLaunch& r, LaunchPlan& lp) {
    const char* env = std::getenv("LG_COMPILED_ATTN_WIDE_ROWS");
    const int64_t min_rows = env && *env ? std::atoll(env) : kWideAttentionRows;
    if (min_rows <= 0) return;
    const RenderedLaunch w = render_launch(p, stages, AttentionForm::kWide);
    // Only where it serves more heads a block: at a group of 2 the CUDA-core form already reads
    // each K/V row once for both, and the mma's 16 rows would hold 2 (Qwen3-0.6B, H200: +7% a
    // step at 64 and 128 sequences of 512 positions, bench/RESULTS.md, seventeenth session).
    // LG_COMPILED_ATTN_WIDE_FORM=mma keeps it there too (tests: the 22M model's group is 2).
    const bool forced = wide_attention_form() == WideAttentionForm::kMmaAlways && w.split->tensor_cores;
    if (w.split->heads_per_item == r.split->heads_per_item && !forced) return;
    lp.wide = LaunchPlan::WideSplit{other_form(w, r, lp, "wide"), min_rows};
  }

  /// The one-row split-KV form of an attention launch (LaunchPlan::one_row), where the stage's own
  /// kernel is the CUDA-core one over bf16 cache rows and split_shape gives it one (its rule and
  /// LG_COMPILED_ATTN_ONE_ROW: attention.cpp).
  void plan_one_row_attention(const std::vector<int32_t>& stages, const RenderedLaunch& r, LaunchPlan& lp) {
    if (r.split->tensor_cores) return;
    const RenderedLaunch o = render_launch(p, stages, AttentionForm::kOneRow);
    if (o.split->blocks_per_sm == 0) return;
    lp.one_row = other_form(o, r, lp, "one-row");
  }

  /// Launch `lp`'s other split-KV form `o` (rendered from the same stages as `r`): its kernel and
  /// split. Throws lg::Error if its kernel takes other arguments than lp's.
  LaunchPlan::SplitForm other_form(const RenderedLaunch& o, const RenderedLaunch& r, const LaunchPlan& lp,
                                   const std::string& form) {
    std::vector<int32_t> args;
    for (const auto& a : o.args) args.push_back(buffer_id(a.node));
    if (args != lp.args || o.layer != r.layer)
      throw Error("emit: internal error: the " + form + " attention kernel takes other arguments");
    return {kernel_for(o.source, "attention"), *o.split};
  }

  /// Arena: largest first, each at the lowest 256-aligned offset free over its live range.
  void place_arena() {
    std::vector<int32_t> order;
    for (size_t i = 0; i < prog.buffers.size(); ++i)
      if (prog.buffers[i].kind == BufferKind::Arena) order.push_back(static_cast<int32_t>(i));
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return prog.buffers[static_cast<size_t>(a)].bytes > prog.buffers[static_cast<size_t>(b)].bytes;
    });
    PlacedByLife placed(prog.buffers, order);
    for (int32_t i : order) {
      Buffer& b = prog.buffers[static_cast<size_t>(i)];
      std::vector<std::pair<int64_t, int64_t>> busy;
      placed.overlapping(b.first_launch, b.last_launch, [&](int32_t j) {
        const Buffer& o = prog.buffers[static_cast<size_t>(j)];
        busy.push_back({o.offset, o.offset + o.bytes});
      });
      std::sort(busy.begin(), busy.end());
      int64_t off = 0;
      for (auto [s, e] : busy) {
        if (off + b.bytes <= s) break;
        off = std::max(off, (e + 255) / 256 * 256);
      }
      b.offset = off;
      prog.arena_bytes = std::max(prog.arena_bytes, off + b.bytes);
      placed.place(i);
    }
  }

};

}  // namespace

CudaProgram emit_program(const lift::StagedProgram& p, const EmitOptions& options) {
  ProgramBuilder b(p, options);
  const ir::Graph& g = p.graph;
  b.prog.model = g.model;
  b.prog.max_t = g.symbols.empty() ? 1 : g.symbols[0].max;
  b.prog.max_b = g.symbols.size() > 1 ? g.symbols[1].max : 1;
  b.prog.prelude = device_prelude();
  b.add_buffers();
  for (size_t li = 0; li < p.launches.size(); ++li) b.plan_launch(li);
  for (ir::ValueId o : g.outputs) {
    int32_t buf = b.arena_of.at(o);
    b.prog.outputs.push_back(buf);
    b.prog.buffers[static_cast<size_t>(buf)].last_launch = static_cast<int32_t>(p.launches.size());
  }
  b.place_arena();
  return std::move(b.prog);
}

}  // namespace lg::emit::cuda
