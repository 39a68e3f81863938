#include "lanes/factory.h"

#include <algorithm>
#include <string>

#include "model/config.h"
#include "model/model_dir.h"
#include "support/error.h"

#if defined(LG_HAVE_LG_LANE_CPU)
#include "lanes/cpu/cpu_lane.h"
#endif
#if defined(LG_HAVE_LG_LANE_COMPILED)
#include "lanes/compiled/compiled_lane.h"
#endif
#if defined(LG_HAVE_LG_LANE_QWEN)
#include "lanes/qwen/handwritten_lane.h"
#include "lanes/qwen/qwen_shape.h"
#endif
#if defined(LG_HAVE_LG_LANE_COMPILED) || defined(LG_HAVE_LG_LANE_QWEN)
#include "runtime/cuda/device.h"
#endif

namespace lg {

namespace {

Error unknown_lane(const std::string& name) {
  std::string known;
  for (const auto& n : lane_names()) known += (known.empty() ? "" : ", ") + n;
  known = known.empty() ? "none" : known;
  // A GPU lane is no typo where lg was built without the CUDA toolkit (LG_WITH_CUDA off or no nvcc).
  if (is_gpu_lane(name))
    return Error("lane '" + name + "' is not in this build: lg was built without CUDA (this build has: " + known + ")");
  return Error("unknown lane '" + name + "' (this build has: " + known + ")");
}

}  // namespace

void check_lane_known(const std::string& name) {
  const auto names = lane_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) throw unknown_lane(name);
}

void check_gpu_present(const std::string& name, const std::string& advice) {
  if (is_gpu_lane(name) && !cuda_available())
    throw Error("lane '" + name + "' runs on an NVIDIA GPU and this machine has no usable CUDA device" + advice);
}

std::vector<std::string> lane_names() {
  std::vector<std::string> names;
#if defined(LG_HAVE_LG_LANE_CPU)
  names.push_back("cpu");
#endif
#if defined(LG_HAVE_LG_LANE_COMPILED)
  names.push_back("compiled");
#endif
#if defined(LG_HAVE_LG_LANE_QWEN)
  names.push_back("handwritten");
#endif
  return names;
}

bool is_gpu_lane(const std::string& name) { return name == "compiled" || name == "handwritten"; }

bool cuda_available() {
#if defined(LG_HAVE_LG_LANE_COMPILED) || defined(LG_HAVE_LG_LANE_QWEN)
  return cuda::cuda_device_available();
#else
  return false;
#endif
}

std::optional<std::string> lane_refuses(const std::string& name, const model::ModelDir& dir) {
  if (name != "handwritten") return std::nullopt;
  // The hand-written lane is CUDA templates for one family (docs/handwritten_lane.md); every
  // other family runs on the lanes made from its .lg program.
  const std::string& type = dir.config.model_type;
  if (type != "qwen2" && type != "qwen3")
    return "the hand-written lane runs the Qwen2/Qwen3 family only, not model_type '" + type +
           "'; use --lane compiled (or cpu)";
  if (!dir.program.empty())
    return "the hand-written lane does not run a .lg program (--program " + dir.program.string() +
           "); use --lane compiled (or cpu)";
  return std::nullopt;
}

std::string default_gpu_lane(const model::ModelConfig& config) {
  const bool family = config.model_type == "qwen2" || config.model_type == "qwen3";
#if defined(LG_HAVE_LG_LANE_QWEN)
  if (!family) return "compiled";
  try {
    qwen::qwen_shape_from_config(config);  // the templates' limits: head_dim, GQA ratio, sizes
    return "handwritten";
  } catch (const Error&) {
    return "compiled";
  }
#else
  return family ? "handwritten" : "compiled";  // a build without CUDA names the lane it lacks
#endif
}

std::unique_ptr<Lane> make_lane(const std::string& name, const model::ModelDir& dir, const LaneOptions& options) {
  if (const auto why = lane_refuses(name, dir)) throw Error(dir.dir.string() + ": " + *why);
#if defined(LG_HAVE_LG_LANE_CPU)
  if (name == "cpu") return make_cpu_lane(dir, options);
#endif
#if defined(LG_HAVE_LG_LANE_COMPILED) || defined(LG_HAVE_LG_LANE_QWEN)
  // Say it plainly before any CUDA call fails with a driver error code.
  check_gpu_present(name, "; use --lane cpu (the CPU reference), or --fallback-cpu with lg run");
#endif
#if defined(LG_HAVE_LG_LANE_COMPILED)
  if (name == "compiled") return make_compiled_lane(dir, options);
#endif
#if defined(LG_HAVE_LG_LANE_QWEN)
  if (name == "handwritten") return qwen::make_handwritten_lane(dir, options);
#endif
  (void)dir;
  (void)options;
  throw unknown_lane(name);
}

std::unique_ptr<Lane> make_random_lane(const std::string& name, const model::ModelConfig& config, uint64_t seed,
                                       const LaneOptions& options) {
  if (name == "cpu") throw Error("lane 'cpu' runs on a checkpoint only: random weights are made for the GPU lanes");
#if defined(LG_HAVE_LG_LANE_COMPILED) || defined(LG_HAVE_LG_LANE_QWEN)
  check_gpu_present(name);
#endif
#if defined(LG_HAVE_LG_LANE_COMPILED)
  if (name == "compiled") return make_compiled_lane_random(config, seed, options);
#endif
#if defined(LG_HAVE_LG_LANE_QWEN)
  if (name == "handwritten") return qwen::make_handwritten_lane_random(config, seed, options);
#endif
  (void)config;
  (void)seed;
  (void)options;
  throw unknown_lane(name);
}

}  // namespace lg
