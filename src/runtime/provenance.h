// How a CUDA program was produced. Every program carries one; `lg run` and `lg compile` print it
// and provenance.json records it.
#pragma once

#include <string>
#include <variant>

namespace lg {

/// Lifted from the .lg forward by the compiler (src/lift, src/emit).
struct Compiled {};
/// Written by hand for a model family: e.g. {model: "qwen3", lane: "decode"}. Such a program is
/// not compiled from the .lg forward; golden-token locks hold it to it.
struct HandWritten {
  std::string model;
  std::string lane;
};
/// The CPU reference executor of the .lg program (no CUDA program at all).
struct Reference {};

using Provenance = std::variant<Compiled, HandWritten, Reference>;

/// "Compiled", "HandWritten{model: qwen3, lane: decode}", "Reference".
std::string to_string(const Provenance& p);
/// {"kind": "Compiled"} / {"kind": "HandWritten", "model": ..., "lane": ...} as JSON text.
std::string to_json(const Provenance& p);

}  // namespace lg
