// Fuzz target: a safetensors blob (header length + JSON header + data) parsed from memory. Every
// input must either parse, with every tensor's bytes inside the blob and of the size its shape
// says, or be refused with lg::Error; anything else (crash, other exception, sanitizer report)
// is a bug. Seeds: fuzz/corpus/safetensors_fuzz/ (small valid files and the corrupt kinds).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "model/safetensors.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using lg::model::SafetensorsFile;
  try {
    auto f = SafetensorsFile::from_memory(std::as_bytes(std::span(data, size)), "fuzz");
    uint64_t total = 0;
    for (const auto& t : f.tensors()) {
      auto b = f.bytes(t);
      if (b.size() != t.numel() * lg::dtype_size(t.dtype)) std::abort();
      // Touch the first and last byte so that ASan checks the span really lies in the blob.
      if (!b.empty()) total += static_cast<uint8_t>(b.front()) + static_cast<uint8_t>(b.back());
      if (f.find(t.name) != &t) std::abort();
    }
    if (f.tensors().size() > size) std::abort();  // each tensor needs header bytes
    (void)total;
  } catch (const lg::Error&) {
    // Refused with a message: the expected outcome for corrupt input.
  }
  return 0;
}
