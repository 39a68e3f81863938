// Human-readable views of a staged program: the stage listing that `lg compile` writes to
// stages.txt and prints with --explain, and the per-layer launch count.
#pragma once

#include <string>

#include "lift/stage.h"

namespace lg::lift {

/// One block per launch: each stage's kind, its nodes (by .lg binding name), what it stores,
/// and the source lines it covers ("qwen3.lg:31"); with `with_source`, the text of each line
/// too (read from Graph::files; files that cannot be read are listed without text).
std::string explain(const StagedProgram& p, bool with_source = false);

/// Launches of one decoder layer. Layers are unrolled in the IR, so a layer's launches repeat
/// with the same source lines: the count is the number of launches whose signature (kind, ops, source lines) repeats
/// a multiple of L times (L: the most common repeat count), divided by L. A program with no
/// repeated launches (one layer, or no layers) counts all its launches. `layers`, if given,
/// receives L (0 when nothing repeats).
int64_t launches_per_layer(const StagedProgram& p, int64_t* layers = nullptr);

}  // namespace lg::lift
