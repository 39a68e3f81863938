// A parsed .lg program: the model file and the prelude, parsed into one set of functions and
// one model, with the checks that need the whole program (duplicate names, recursion).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lang/ast.h"
#include "lang/diagnostics.h"

namespace lg::lang {

/// The largest .lg program read: 4 MiB, about four hundred times the largest shipped one (11 KB),
/// with room for the deep-program tests' 3 MB chains of 200,000 terms; past it a program is
/// refused before it is lexed. What the cap bounds (session 38, `lg check -q` of 260,000 lines of
/// `x = x + 1.0`, 4.0 MB, RelWithDebInfo on the 2-core dev machine): 3.3 s and 0.7 GB. Without it
/// a file up to the 64 MiB text cap was lexed, parsed and elaborated until the IR node bound.
inline constexpr size_t kMaxProgramBytes = size_t{4} << 20;

/// The prelude (src/lang/prelude.lg), compiled into the library: rms_norm, silu, rope, ...
std::string_view prelude_source();

/// Names of the primitives (exp, sum, attention, ...): a `fn` may not redefine them.
bool is_primitive(std::string_view name);
/// The primitives' names (is_primitive's), sorted.
std::vector<std::string> primitive_names();

struct Program {
  SourceManager sources;
  Diagnostics diags{sources};
  Module prelude;
  Module main;
  const Model* model = nullptr;                          ///< the file's model block
  std::unordered_map<std::string, const FnDecl*> fns;    ///< the file's fns shadow the prelude's
  std::unordered_set<std::string> recursive;             ///< fns on a call cycle (already reported)
  size_t syntax_errors = 0;  ///< errors from lexing and parsing: later checks skip what they may cause

  /// Every name a call may use: the primitives, the prelude's fns and the file's (an unknown
  /// function's suggestion is drawn from them).
  std::vector<std::string> function_names() const {
    std::vector<std::string> names = primitive_names();
    for (const auto& [n, f] : fns) names.push_back(n);
    return names;
  }
};

/// Lexes and parses `text` (shown as `name` in diagnostics) and the prelude, resolves the function
/// table and reports recursion, duplicate fns and a missing or repeated model block. Errors are in
/// the result's `diags`; the result is usable (for further checking) even when there are errors.
std::unique_ptr<Program> load_program(std::string name, std::string text);

}  // namespace lg::lang
