#include "emit/cuda/compile.h"

#include <cctype>

#include "emit/cuda/renderer.h"
#include "lift/explain.h"
#include "lift/lift.h"
#include "support/error.h"
#include "support/startup_clock.h"

namespace lg::emit::cuda {

namespace {

void check_arch(const std::string& arch) {
  bool digits = arch.size() >= 5 && arch.size() <= 6 && arch.compare(0, 3, "sm_") == 0;
  for (size_t i = 3; digits && i < arch.size(); ++i) digits = std::isdigit(static_cast<unsigned char>(arch[i])) != 0;
  if (!digits) throw Error("compile: target architecture '" + arch + "' is not of the form sm_NN (e.g. sm_90)");
  if (std::stoi(arch.substr(3)) < kMinSm)
    throw Error("compile: target architecture " + arch + " is older than sm_" + std::to_string(kMinSm) +
                ", which the emitted kernels need (programmatic dependent launch)");
}

}  // namespace

Compilation compile(const ir::Graph& graph, const CompileOptions& opts) {
  check_arch(opts.arch);
  Compilation c;
  c.arch = opts.arch;
  c.staged = lift::lift(graph);
  if (opts.clock) opts.clock->mark("lift");
  if (opts.fuse) {
    lift::FuseOptions fusion = opts.fusion;
    // The A/B switch of session 22's call 5 (bench/RESULTS.md): =0 keeps a reduction with several
    // readers in a launch of its own.
    if (knob_off("LG_COMPILED_SHARED_PROLOGUE")) fusion.gemm_reduce_prologue_shared = false;
    lift::fuse(c.staged, fusion);
    if (opts.clock) opts.clock->mark("fuse");
  }
  c.program = emit_program(c.staged, opts.emit);
  if (opts.clock) opts.clock->mark("emit", std::to_string(c.program.kernels.size()) + " kernels, " +
                                               std::to_string(c.program.launches.size()) + " launches");
  return c;
}

LayerLaunches layer_launches(const Compilation& c) {
  LayerLaunches r;
  r.per_layer = lift::launches_per_layer(c.staged, &r.layers);
  return r;
}

}  // namespace lg::emit::cuda
