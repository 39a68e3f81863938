// A lane by the name a user types (`lg run --lane`, `lg lock check`, `lg bench`): the one place
// that knows every lane. Each lane adds itself in factory.cpp, behind its library's define.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/lane.h"
#include "runtime/step.h"

namespace lg::model {
struct ModelDir;
struct ModelConfig;
}

namespace lg {

/// The lane names this build provides ("cpu" always; "compiled"/"handwritten" with CUDA).
std::vector<std::string> lane_names();

/// True for the lanes that need a CUDA device ("compiled", "handwritten").
bool is_gpu_lane(const std::string& name);
/// Whether this build has GPU lanes and the machine a usable CUDA device (false, not a crash,
/// without a driver).
bool cuda_available();

/// Throws lg::Error "unknown lane 'NAME' (this build has: cpu, ...)" unless lane_names() holds
/// `name` ("lane 'NAME' is not in this build: lg was built without CUDA ..." for a GPU lane's
/// name): what make_lane says, for a command to say before it loads any model.
void check_lane_known(const std::string& name);
/// Throws lg::Error "lane 'NAME' runs on an NVIDIA GPU and this machine has no usable CUDA device"
/// followed by `advice` (e.g. "; use --lane cpu") when `name` is a GPU lane and cuda_available()
/// is false; nothing otherwise.
void check_gpu_present(const std::string& name, const std::string& advice = "");

/// Why lane `name` cannot run the model in `dir` at all (the hand-written lane runs the Qwen2/Qwen3
/// family only, with their own programs), or nullopt. `lg lock check` skips such locks; make_lane
/// throws the same sentence.
std::optional<std::string> lane_refuses(const std::string& name, const model::ModelDir& dir);

/// The GPU lane a model runs on when the user names none (lg bench, lg serve --shape): the
/// hand-written lane where its templates take the config (Qwen2/Qwen3 dense shapes that
/// qwen::qwen_shape_from_config accepts), else the compiled lane, which runs every program lg
/// compiles (bench/shapes/qwen3-30b-a3b, Llama, Gemma 3, ...), as vLLM picks a backend the model
/// supports.
std::string default_gpu_lane(const model::ModelConfig& config);

/// Builds lane `name` for the model in `dir` with the context, KV pool and step sizes of
/// `options` (runtime/step.h; zeros pick each lane's defaults). Throws lg::Error for an unknown
/// name (listing the known ones), for a GPU lane on a machine without a CUDA device, and whatever
/// the lane throws for a model it cannot run.
std::unique_ptr<Lane> make_lane(const std::string& name, const model::ModelDir& dir, const LaneOptions& options = {});

/// Builds GPU lane `name` for the model `config` describes with deterministic random weights made
/// on the device from `seed` (bf16 matrices uniform with std 0.02, norm weights 1, other 1-D
/// params 0): `lg bench` at a real shape without a checkpoint of many GB. `options` as for
/// make_lane (options.max_seq 0: the config's max_position_embeddings). Throws lg::Error for a lane that makes no
/// random weights ("cpu") or an unknown name, without a CUDA device, and what the lane throws.
std::unique_ptr<Lane> make_random_lane(const std::string& name, const model::ModelConfig& config, uint64_t seed,
                                       const LaneOptions& options = {});

}  // namespace lg
