// The "compiled" lane: the model's .lg forward lifted, fused and emitted as CUDA (src/lift,
// src/emit), compiled with NVRTC (on-disk cache), loaded with cudaLibraryLoadData (runtime API:
// no libcuda link, so binaries start on machines without a driver), weights uploaded as the .lg
// declares them (bf16 stays bf16), a paged bf16 KV pool on the device. A step is a ragged batch
// of sequences (runtime/step.h); a step of one decode token per sequence replays a CUDA graph
// captured for its batch-size bucket (1, 2, 4, ... up to max_batch; the batch padded up to it),
// a step with a prefill chunk runs the launch plan.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "runtime/lane.h"

namespace lg::model {
struct ModelDir;
struct ModelConfig;
}

namespace lg {

/// Builds the compiled lane for the model in `dir`: the batched program (ir/batch.h) for the
/// context, KV pool and step sizes of `options` (runtime/step.h; max_seq 0: the config's
/// max_position_embeddings; kv_tokens 0: most of the free device memory), its KV pool in bf16.
/// Prints progress (compiling, uploading) to stderr when it is a terminal. Throws lg::Error
/// without a CUDA device, for a program the lifter refuses, or when NVRTC or a load fails.
std::unique_ptr<Lane> make_compiled_lane(const model::ModelDir& dir, const LaneOptions& options);

/// The compiled lane of `config`'s program with random weights made on the device (deterministic
/// in `seed` and the tensor names; bf16 matrices uniform with std 0.02, norm weights 1, other 1-D
/// params 0): `lg bench` at a real shape without a multi-GB checkpoint. Same errors, less the
/// checkpoint's; also refuses a .lg that declares a matrix param other than bf16.
std::unique_ptr<Lane> make_compiled_lane_random(const model::ModelConfig& config, uint64_t seed,
                                                const LaneOptions& options);

}  // namespace lg
