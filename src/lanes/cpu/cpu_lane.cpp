#include "lanes/cpu/cpu_lane.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>

#include "ir/batch.h"
#include "model/model_dir.h"
#include "runtime/bind_params.h"
#include "runtime/draw.h"
#include "runtime/finite_logits.h"
#include "runtime/forward_graph.h"
#include "runtime/sampler.h"
#include "support/error.h"

namespace lg {

namespace {

size_t input_named(const ir::Graph& g, const std::string& name) {
  for (size_t k = 0; k < g.inputs.size(); ++k)
    if (g.inputs[k].name == name) return k;
  throw Error("the " + g.model + " forward has no input '" + name +
              "'; the cpu lane runs forwards declared as forward(tokens: i32[T], pos: i32[T])");
}

const ir::Graph& checked(const ir::Graph& g) {
  if (const auto problem = runtime::forward_inputs_problem(g)) throw Error("the " + g.model + " forward " + *problem);
  if (g.outputs.size() != 1 || g.at(g.outputs[0]).shape.size() != 2)
    throw Error("the " + g.model + " forward must return one value, logits f32[T, V]");
  return g;
}

ir::Graph batched(ir::Graph g, const LaneLimits& l) {
  ir::make_batched(g, {l.block_size, l.num_blocks, l.max_batch, l.max_tokens});
  return g;
}

ir::cpu::Tensor i32(std::vector<int64_t> shape, const std::vector<int32_t>& v) {
  return ir::cpu::Tensor::from_i32(std::move(shape), v);
}

}  // namespace

CpuLane::CpuLane(ir::Graph unbatched, std::vector<ir::cpu::Tensor> params, const LaneLimits& limits)
    : unbatched_(checked(unbatched)),
      params_(params),
      limits_(limits),
      executor_(batched(std::move(unbatched), limits), std::move(params)) {}

std::vector<SeqResult> CpuLane::step(std::span<const SeqStep> batch) {
  const FlatBatch f = flatten(batch, limits_);
  const ir::Graph& g = executor_.graph();
  std::vector<ir::cpu::Tensor> in(g.inputs.size());
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const std::string& n = g.inputs[k].name;
    if (n == "tokens") in[k] = i32({f.T}, f.tokens);
    else if (n == "pos") in[k] = i32({f.T}, f.pos);
    else if (n == "seq") in[k] = i32({f.T}, f.seq);
    else if (n == "block_table") in[k] = i32({f.B, limits_.blocks_per_seq()}, f.block_table);
    else if (n == "rows") in[k] = i32({f.B}, f.rows);
    else throw Error("cpu lane: the batched forward takes an input `" + n + "` the lane does not know");
  }
  const ir::cpu::Tensor logits = executor_.run(in)[0].contiguous();
  const int64_t V = logits.shape[1];
  std::vector<SeqResult> out(batch.size());
  for (size_t b = 0; b < batch.size(); ++b) {
    const std::span<const float> row(logits.fdata() + static_cast<int64_t>(b) * V, static_cast<size_t>(V));
    // One pass over V floats per sequence (the forward itself reads every weight): a NaN or Inf
    // here would otherwise pick a garbage token silently. It fails this sequence's request alone
    // (argmax -1: the scheduler's advance names the step), not the step: no op of the forward
    // mixes sequences, so the others' rows are what they would be without it.
    out[b].argmax = runtime::all_finite(row) ? runtime::argmax(row) : -1;
    if (batch[b].want_logits) out[b].logits.assign(row.begin(), row.end());
    if (batch[b].draw) out[b].drawn = runtime::draw_token(row, *batch[b].draw, batch[b].penalty, batch[b].logit_edits);
  }
  return out;
}

ir::cpu::Tensor CpuLane::forward(std::span<const int32_t> tokens) {
  if (tokens.empty()) throw Error("a step needs at least one token");
  const auto T = static_cast<int64_t>(tokens.size());
  ir::CpuExecutor alone(unbatched_, params_);
  std::vector<int32_t> pos(tokens.size());
  for (size_t k = 0; k < pos.size(); ++k) pos[k] = static_cast<int32_t>(k);
  std::vector<ir::cpu::Tensor> in(2);
  in[input_named(unbatched_, "tokens")] = i32({T}, {tokens.begin(), tokens.end()});
  in[input_named(unbatched_, "pos")] = i32({T}, pos);
  return alone.run(in)[0];
}

std::unique_ptr<CpuLane> make_cpu_lane_concrete(const model::ModelDir& dir, const LaneOptions& options) {
  runtime::ForwardGraph fg = runtime::forward_graph(dir, options.max_seq);
  std::vector<ir::cpu::Tensor> params = runtime::bind_params(fg.graph, dir.checkpoint);
  // The default pool holds two full contexts, fewer where that passes 1 GiB of fp32, never less
  // than one context.
  int64_t bytes_per_position = 0;
  for (const ir::StateInfo& s : fg.graph.states) {
    int64_t n = 4;
    for (const ir::Dim& d : s.shape) n *= d.coeff;
    bytes_per_position += n / fg.max_seq;
  }
  const int64_t fit = bytes_per_position > 0 ? (int64_t{1} << 30) / bytes_per_position : 2 * fg.max_seq;
  const LaneLimits limits = resolve_limits(options, fg.max_seq, std::max(fg.max_seq, std::min(2 * fg.max_seq, fit)));
  // The pool is allocated at once: say what it needs rather than die of std::bad_alloc.
  const double need = static_cast<double>(limits.pool_tokens()) * static_cast<double>(bytes_per_position);
  const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  char what[160];
  std::snprintf(what, sizeof what, "a KV cache of %lld tokens (--kv-tokens) needs %.1f GiB of fp32 on the cpu lane",
                static_cast<long long>(limits.pool_tokens()), need / (1 << 30));
  if (have > 0 && need > have) {
    char more[64];
    std::snprintf(more, sizeof more, ", more than this machine's %.1f GiB", have / (1 << 30));
    throw Error(std::string(what) + more);
  }
  try {
    return std::make_unique<CpuLane>(std::move(fg.graph), std::move(params), limits);
  } catch (const std::bad_alloc&) {
    throw Error(std::string(what) + ", which could not be allocated");
  }
}

std::unique_ptr<Lane> make_cpu_lane(const model::ModelDir& dir, const LaneOptions& options) {
  return make_cpu_lane_concrete(dir, options);
}

}  // namespace lg
