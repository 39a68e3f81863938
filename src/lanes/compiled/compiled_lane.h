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
#include <vector>

#include "emit/cuda/program.h"
#include "runtime/lane.h"

namespace lg::model {
struct ModelDir;
struct ModelConfig;
}

namespace lg::lift {
struct StagedProgram;
}

namespace lg {

/// Builds the compiled lane for the model in `dir`: the batched program (ir/batch.h) for the
/// context, KV pool and step sizes of `options` (runtime/step.h; max_seq 0: the config's
/// max_position_embeddings; kv_tokens 0: most of the free device memory), its KV pool in bf16.
/// Prints progress (compiling, uploading) to stderr when it is a terminal. Throws lg::Error
/// without a CUDA device, for a program the lifter refuses, or when NVRTC or a load fails.
std::unique_ptr<Lane> make_compiled_lane(const model::ModelDir& dir, const LaneOptions& options);

/// One step of a compiled lane replayed launch by launch (probe_compiled_step): its inputs, the
/// states before it, and every value its stages stored in the arena, read back right after the
/// launch that stored it (later launches may reuse that memory).
struct ProbedStep {
  std::vector<std::vector<int32_t>> inputs;  ///< Graph::inputs' values as the step fed them (their rows for `symbols`)
  std::vector<int64_t> symbols;              ///< the runtime dims: T (the step's rows), B
  std::vector<std::vector<float>> states;    ///< every state before the step, f32 (a bf16 pool widened)
  struct Value {
    int32_t launch = -1;        ///< index in the program's launches
    int32_t node = -1;          ///< the stored node of compiled_lane_program()'s graph
    std::vector<float> values;  ///< row-major, its rows for `symbols`
  };
  std::vector<Value> values;  ///< in launch order
};

/// The staged program a compiled lane runs (ProbedStep::Value::node indexes its graph). Throws
/// lg::Error if `lane` is not a compiled lane.
const lift::StagedProgram& compiled_lane_program(const Lane& lane);

/// The CUDA program (kernels, launch plan) a compiled lane runs. Throws lg::Error if `lane` is not
/// a compiled lane.
const emit::cuda::CudaProgram& compiled_lane_plan(const Lane& lane);

/// Runs `batch` as one step of the compiled lane `lane` (state changes as step() makes them), but
/// launch by launch without a CUDA graph, synchronising after each to read back what it stored:
/// slow, for tests that compare every stage with the staged CPU executor. Throws lg::Error if
/// `lane` is not a compiled lane, and what step() throws.
ProbedStep probe_compiled_step(Lane& lane, std::span<const SeqStep> batch);

/// The compiled lane of `config`'s program with random weights made on the device (deterministic
/// in `seed` and the tensor names; bf16 matrices uniform with std 0.02, norm weights 1, other 1-D
/// params 0): `lg bench` at a real shape without a multi-GB checkpoint. Same errors, less the
/// checkpoint's; also refuses a .lg that declares a matrix param other than bf16.
std::unique_ptr<Lane> make_compiled_lane_random(const model::ModelConfig& config, uint64_t seed,
                                                const LaneOptions& options);

}  // namespace lg
