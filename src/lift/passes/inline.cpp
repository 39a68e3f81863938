// pass_inline_elementwise and pass_gemm_prologue: an elementwise stage read by one stage is
// recomputed inside it instead of going through memory (tinygrad/Luminal's elementwise fusion).
// This is what turns x*x into a reduction's prologue, RoPE's rotate-half into the expression of
// its reader, and a chain of maps into one.
#include "lift/passes.h"
#include "lift/passes/helpers.h"

namespace lg::lift {

/// Dissolves every Map stage whose values are read by exactly one other stage (any number of
/// stages when it reads only sources, e.g. RoPE's cos/sin of pos), unless that reader is a GEMM
/// (gemm_epilogue gets the first chance at those) or the map reads a state (the read must stay
/// ordered before the state's overwrite). Graph outputs stay stored.
void pass_inline_elementwise(StagedProgram& p, const FuseOptions&) { detail::inline_maps(p, /*into_gemm=*/false); }

/// Like pass_inline_elementwise but lets a GEMM be the reader: what remains of an operand's
/// elementwise producer (e.g. silu(gate)*up when gate/up could not be merged) becomes the GEMM's
/// prologue, evaluated as the GEMM loads its operand.
void pass_gemm_prologue(StagedProgram& p, const FuseOptions&) { detail::inline_maps(p, /*into_gemm=*/true); }

}  // namespace lg::lift
