// Device code that emitted programs paste and instantiate, embedded as text at build time
// (src/emit/CMakeLists.txt). A kernel template is library code the emitter specialises, as
// cuBLASLt is for GEMMs: the stage it serves is still lifted from the source's statement.
#pragma once

namespace lg::emit::cuda {

/// src/kernels/flash_attention.cuh, whole: causal GQA attention on the tensor cores (namespace
/// lg_fa), used by attention stages at T > 1.
extern const char* const kFlashAttentionTemplate;
/// src/kernels/grouped_gemm.cuh, whole: the experts' route and grouped GEMM on the tensor cores
/// (namespace lg_moe, after kFlashAttentionTemplate, whose mma helpers it uses), used by experts
/// stages at steps of many tokens.
extern const char* const kGroupedGemmTemplate;
/// The body of src/kernels/attention_policies.cuh: the compiled program's policies for
/// lg_fa::attention_block (after kFlashAttentionTemplate).
extern const char* const kAttentionPolicies;
/// The body of src/kernels/device_helpers.cuh: the device helpers both lanes share (bf16
/// widening, warp and block reductions, the PDL wait, the streaming load).
extern const char* const kDeviceHelpers;
/// The body of src/kernels/decode_attention_mma.cuh: the split-KV attention's chunk on the tensor
/// cores (namespace lg_dmma, after kFlashAttentionTemplate and kDeviceHelpers, whose fragments
/// and bf16 widening it uses), used by attention stages' tensor-core split-KV form.
extern const char* const kDecodeAttentionMma;

}  // namespace lg::emit::cuda
