#include "lanes/cpu/cpu_lane.h"

#include <string>

#include "model/model_dir.h"
#include "runtime/bind_params.h"
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
}  // namespace

CpuLane::CpuLane(ir::Graph graph, std::vector<ir::cpu::Tensor> params, int64_t max_seq)
    : executor_(std::move(graph), std::move(params)), max_seq_(max_seq) {
  const ir::Graph& g = executor_.graph();
  tokens_input_ = input_named(g, "tokens");
  pos_input_ = input_named(g, "pos");
  if (g.inputs.size() != 2) throw Error("the " + g.model + " forward takes " + std::to_string(g.inputs.size()) +
                                        " inputs; the cpu lane gives it tokens and pos");
  if (g.outputs.size() != 1 || g.at(g.outputs[0]).shape.size() != 2)
    throw Error("the " + g.model + " forward must return one value, logits f32[T, V]");
  if (max_seq_ < 1) throw Error("max_seq must be >= 1");
}

std::vector<ir::cpu::Tensor> CpuLane::inputs(std::span<const int32_t> tokens, int64_t start_pos) const {
  if (tokens.empty()) throw Error("a step needs at least one token");
  const auto T = static_cast<int64_t>(tokens.size());
  if (start_pos < 0 || start_pos + T > max_seq_)
    throw Error("positions " + std::to_string(start_pos) + ".." + std::to_string(start_pos + T - 1) +
                " do not fit the KV cache of " + std::to_string(max_seq_) + " tokens");
  std::vector<int32_t> pos(tokens.size());
  for (size_t k = 0; k < pos.size(); ++k) pos[k] = static_cast<int32_t>(start_pos) + static_cast<int32_t>(k);
  std::vector<ir::cpu::Tensor> in(2);
  in[tokens_input_] = ir::cpu::Tensor::from_i32({T}, {tokens.begin(), tokens.end()});
  in[pos_input_] = ir::cpu::Tensor::from_i32({T}, std::move(pos));
  return in;
}

ir::cpu::Tensor CpuLane::forward(std::span<const int32_t> tokens, int64_t start_pos) {
  return executor_.run(inputs(tokens, start_pos))[0];
}

StepResult CpuLane::step(std::span<const int32_t> tokens, int64_t start_pos, bool want_logits) {
  // Only the last position's logits are returned: the LM head runs on that row alone.
  const ir::cpu::Tensor logits = executor_.run_last_position(inputs(tokens, start_pos))[0];
  const int64_t T = logits.shape[0], V = logits.shape[1];
  const ir::cpu::Tensor last = ir::cpu::slice(logits, 0, T - 1, T, 1).contiguous();
  const std::span<const float> row(last.fdata(), static_cast<size_t>(V));
  // One pass over V floats per step (the forward itself reads every weight): a NaN or Inf here
  // would otherwise pick a garbage token silently.
  runtime::check_finite_logits(row, start_pos + static_cast<int64_t>(tokens.size()) - 1, tokens.size() > 1, "cpu");
  StepResult r;
  r.argmax = runtime::argmax(row);
  if (want_logits) r.logits.assign(row.begin(), row.end());
  return r;
}

std::unique_ptr<CpuLane> make_cpu_lane_concrete(const model::ModelDir& dir, int64_t max_seq) {
  runtime::ForwardGraph fg = runtime::forward_graph(dir, max_seq);
  std::vector<ir::cpu::Tensor> params = runtime::bind_params(fg.graph, dir.checkpoint);
  return std::make_unique<CpuLane>(std::move(fg.graph), std::move(params), fg.max_seq);
}

std::unique_ptr<Lane> make_cpu_lane(const model::ModelDir& dir, int64_t max_seq) {
  return make_cpu_lane_concrete(dir, max_seq);
}

}  // namespace lg
