#include "model/weight_checks.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/error.h"

namespace lg::model {

namespace {

/// Counts NaN/Inf among `n` values of `bits` wide with exponent mask `exp` and mantissa mask `man`
/// (all exponent bits set: Inf if the mantissa is 0, else NaN).
template <typename U>
void scan(const std::byte* p, uint64_t n, U exp, U man, NonFiniteTensor& out) {
  for (uint64_t k = 0; k < n; ++k) {
    U v;
    std::memcpy(&v, p + k * sizeof(U), sizeof(U));
    if ((v & exp) != exp) continue;
    if (out.nan + out.inf == 0) out.first_index = k;
    if (v & man) ++out.nan;
    else ++out.inf;
  }
}

}  // namespace

std::vector<NonFiniteTensor> find_non_finite(const Checkpoint& ckpt) {
  std::vector<NonFiniteTensor> found;
  for (const auto& name : ckpt.names()) {
    const TensorInfo& t = ckpt.info(name);
    const auto bytes = ckpt.bytes(name);
    NonFiniteTensor r{name};
    const uint64_t n = t.numel();
    switch (t.dtype) {
      case DType::BF16: scan<uint16_t>(bytes.data(), n, 0x7F80, 0x007F, r); break;
      case DType::F16: scan<uint16_t>(bytes.data(), n, 0x7C00, 0x03FF, r); break;
      case DType::F32: scan<uint32_t>(bytes.data(), n, 0x7F800000u, 0x007FFFFFu, r); break;
      default: continue;
    }
    if (r.nan + r.inf) found.push_back(std::move(r));
  }
  return found;
}

}  // namespace lg::model
