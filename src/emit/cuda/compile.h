// The compiler's one entry: a lowered forward (ir::Graph) lifted into stages, fused, and emitted as
// a CUDA program for one target architecture. `lg compile` and the compiled lane both go through
// it, so the program a user inspects is the program the lane runs.
#pragma once

#include <string>

#include "emit/cuda/program.h"
#include "ir/ir.h"
#include "lift/passes.h"
#include "lift/stage.h"

namespace lg {
class StartupClock;
}

namespace lg::emit::cuda {

/// Oldest architecture the emitted kernels compile for: every kernel begins with
/// griddepcontrol.wait (programmatic dependent launch, sm_90 and newer).
inline constexpr int kMinSm = 90;

struct CompileOptions {
  /// NVRTC target, "sm_NN" with NN >= kMinSm: the compiled lane passes its device's.
  std::string arch = "sm_90";
  /// false: lift only, one stage per compute node (`lg compile --no-fuse`).
  bool fuse = true;
  /// Which fusion passes run when `fuse` is on.
  lift::FuseOptions fusion;
  /// How the program stores its states (bf16 for the batched program's paged KV cache).
  EmitOptions emit;
  /// When given, each phase (lift, fuse, emit) is marked on it (LG_STARTUP_TIMES).
  StartupClock* clock = nullptr;
};

/// What compile() makes: the staged program (stage listing, launches per layer) and the CUDA
/// program rendered from it, for `arch`.
struct Compilation {
  lift::StagedProgram staged;
  CudaProgram program;
  std::string arch;
};

/// Lifts, fuses (unless opts.fuse is false) and emits `graph` (verified, as lowering returns it).
/// Throws lg::Error for an `arch` that is not "sm_NN" or older than sm_90, and what lift::lift and
/// emit_program throw (a statement or stage with no form, named by its source location).
Compilation compile(const ir::Graph& graph, const CompileOptions& opts = {});

/// Launches per decode layer of a compiled program and the layer count found, as `lg compile`
/// reports them (lift::launches_per_layer: launches whose signature repeats L times, over L;
/// every launch when nothing repeats, with layers = 0).
struct LayerLaunches {
  int64_t per_layer = 0;
  int64_t layers = 0;
};
LayerLaunches layer_launches(const Compilation& c);

}  // namespace lg::emit::cuda
