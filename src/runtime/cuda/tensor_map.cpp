#include "runtime/cuda/tensor_map.h"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <string>

#include "support/error.h"

namespace lg::cuda {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_fn(const char* what) {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    return e == cudaSuccess && q == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p)
                                                                 : nullptr;
  }();
  if (!fn) throw Error(std::string(what) + ": the CUDA driver has no cuTensorMapEncodeTiled (needs CUDA 12+)");
  return fn;
}

}  // namespace

CUtensorMap tensor_map_bf16_2d(const void* base, uint64_t rows, uint64_t inner, uint32_t box_rows, uint32_t box_inner,
                               const char* what) {
  CUtensorMap m{};
  const cuuint64_t dims[2] = {inner, rows};
  const cuuint64_t strides[1] = {inner * 2};  // bytes between rows; the inner stride is the element
  const cuuint32_t box[2] = {box_inner, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode_fn(what)(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides,
                                     box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(std::string(what) + ": cuTensorMapEncodeTiled refused a [" + std::to_string(rows) + ", " +
                std::to_string(inner) + "] bf16 map with boxes of " + std::to_string(box_rows) + " x " +
                std::to_string(box_inner) + " (CUresult " + std::to_string(static_cast<int>(r)) + ")");
  return m;
}

}  // namespace lg::cuda
