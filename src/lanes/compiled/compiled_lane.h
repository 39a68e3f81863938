// The "compiled" lane: the model's .lg forward lifted, fused and emitted as CUDA (src/lift,
// src/emit), compiled with NVRTC (on-disk cache), loaded with cudaLibraryLoadData (runtime API:
// no libcuda link, so binaries start on machines without a driver), weights uploaded as the .lg
// declares them (bf16 stays bf16), KV cache on the device. Prefill launches the plan; decode
// steps replay it from a CUDA graph captured at the first decode.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "lanes/lane.h"

namespace lg::model {
struct ModelDir;
}

namespace lg {

/// Builds the compiled lane for the model in `dir` with a KV cache of `max_seq` tokens (0: the
/// config's max_position_embeddings). Prints progress (compiling, uploading) to stderr when it
/// is a terminal. Throws lg::Error without a CUDA device, for a program the lifter refuses, or
/// when NVRTC or a load fails.
std::unique_ptr<Lane> make_compiled_lane(const model::ModelDir& dir, int64_t max_seq);

}  // namespace lg
