// make_handwritten_lane(_random): the hand-written lane for a model directory or for a config
// with random weights (kept apart so the lane itself does not depend on the checkpoint reader).
#include "lanes/qwen/handwritten_lane.h"
#include "lanes/qwen/weight_source.h"
#include "model/model_dir.h"
#include "support/startup_clock.h"

namespace lg::qwen {

std::unique_ptr<Lane> make_handwritten_lane(const model::ModelDir& dir, const LaneOptions& options) {
  StartupClock clock("handwritten lane");  // LG_STARTUP_TIMES=1: what the start-up took
  const QwenShape shape = qwen_shape_from_config(dir.config);
  CheckpointWeights weights(dir.checkpoint);
  // 0 (the factory's "model default"): the config's max_position_embeddings.
  LaneOptions o = options;
  if (o.max_seq <= 0) o.max_seq = dir.config.max_position_embeddings;
  auto lane = std::make_unique<HandwrittenQwenLane>(shape, weights, o);
  clock.mark("weight upload and buffers");
  return lane;
}

std::unique_ptr<Lane> make_handwritten_lane_random(const model::ModelConfig& config, uint64_t seed,
                                                  const LaneOptions& options) {
  const QwenShape shape = qwen_shape_from_config(config);
  RandomWeights weights(seed);
  LaneOptions o = options;
  if (o.max_seq <= 0) o.max_seq = config.max_position_embeddings;
  return std::make_unique<HandwrittenQwenLane>(shape, weights, o);
}

}  // namespace lg::qwen
