// The compiled lane's weights into their device buffers: from a checkpoint (bytes as stored where
// the dtypes agree, widened or narrowed otherwise, stacked experts part by part) or made random
// at a shape (lg bench --shape with a config only).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "emit/cuda/program.h"
#include "ir/ir.h"
#include "model/checkpoint.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/pinned_upload.h"

namespace lg::compiled {

/// Copies parameter `prm` of `ckpt` into `dst`, the device memory of buffer `b` (dtype b.dtype,
/// b.bytes): a tensor whose dtype is b's as its bytes, through `uploader` (pinned staging, async
/// on `stream`); a bf16 tensor into an f32 buffer widened on the device (exact); a tensor stored
/// [in, out] (`"name".T` in the .lg) transposed on the host; stacked experts (prm.parts) part
/// after part; anything else converted on the host (bf16 rounded to nearest even). Throws
/// lg::Error from the checkpoint (a missing tensor) or CUDA.
void upload_weight(const model::Checkpoint& ckpt, const ir::ParamInfo& prm, const emit::cuda::Buffer& b, void* dst,
                   cuda::PinnedUploader& uploader, cudaStream_t stream);

/// Fills `dst` (buffer `b`) as a fresh Hugging Face model would be: matrices (bf16 only; throws
/// lg::Error otherwise) uniform with std 0.02 (transformers' initializer_range) from a stream
/// the tensor name and `seed` pick, so reruns are identical; 1-D weights named *norm* 1, other
/// 1-D params 0.
void random_weight(const ir::ParamInfo& prm, const emit::cuda::Buffer& b, void* dst, uint64_t seed,
                   cudaStream_t stream);

}  // namespace lg::compiled
