// FNV-1a, 64-bit (Fowler/Noll/Vo): a tiny, dependency-free byte hash. Used where speed on short
// keys or reproducibility matters more than collision resistance: the weights hash of a lock,
// the tokenizer's pre-token cache, per-tensor seeds of random weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lg {

/// The FNV-1a offset basis and prime (64-bit).
inline constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnv1a64Prime = 0x100000001b3ull;

/// Incremental FNV-1a over byte ranges; `h` is the hash of everything added so far.
struct Fnv1a64 {
  uint64_t h = kFnv1a64Basis;
  void add(const void* p, size_t n) {
    auto* b = static_cast<const unsigned char*>(p);
    uint64_t x = h;
    for (size_t i = 0; i < n; ++i) x = (x ^ b[i]) * kFnv1a64Prime;
    h = x;
  }
  void add_u64(uint64_t v) { add(&v, sizeof v); }
};

/// FNV-1a of `s`, starting from `basis` (a seed mixed into the basis gives a seeded hash).
inline uint64_t fnv1a64(std::string_view s, uint64_t basis = kFnv1a64Basis) {
  Fnv1a64 f{basis};
  f.add(s.data(), s.size());
  return f.h;
}

}  // namespace lg
