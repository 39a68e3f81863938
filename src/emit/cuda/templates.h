// Device templates that emitted programs instantiate, embedded as text at build time (a kernel
// template is library code the emitter specialises, as cuBLASLt is for GEMMs: the stage it serves
// is still lifted from the source's statement).
#pragma once

namespace lg::emit::cuda {

/// src/kernels/flash_attention.cuh: causal GQA attention on the tensor cores (namespace lg_fa),
/// used by attention stages at T > 1.
extern const char* const kFlashAttentionTemplate;

}  // namespace lg::emit::cuda
