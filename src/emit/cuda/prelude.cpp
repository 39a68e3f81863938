// The device prelude of every emitted program, from src/kernels: the flash-attention template, the
// experts' grouped GEMM, the compiled program's attention policies, the device helpers both lanes
// share, and the split-KV attention's tensor-core chunk.
#include "emit/cuda/render.h"
#include "emit/cuda/templates.h"

namespace lg::emit::cuda {

std::string device_prelude() {
  return "// lanegraph compiled program: device helpers shared by every kernel, after the flash-attention\n"
         "// template (src/kernels/flash_attention.cuh) that attention stages instantiate at T > 1 and the\n"
         "// grouped GEMM (src/kernels/grouped_gemm.cuh) of experts stages at many tokens.\n" +
         std::string(kFlashAttentionTemplate) + "\n" + kGroupedGemmTemplate + "\n" + kAttentionPolicies +
         kDeviceHelpers + kDecodeAttentionMma;
}

}  // namespace lg::emit::cuda
