// Checking a .lg program against a model's config.json and lowering its forward into the tensor
// IR (src/ir/ir.h). Dims, constants and param names are bound from the config; `T` (tokens in
// this step) stays a runtime symbol bounded by S, the KV-cache capacity. Layers are unrolled,
// fns inlined, dtype changes and broadcasts made explicit (see docs/language.md, "Lowering").
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "lang/diagnostics.h"

namespace lg::lang {

struct BindOptions {
  int64_t max_seq = 0;  ///< S, the KV-cache capacity; 0 = config max_position_embeddings
  /// Upper bound on IR nodes; a program that would unroll/inline past it is an error (keeps a
  /// hostile input from allocating without bound).
  int64_t max_nodes = 2'000'000;
};

/// What `lg check` prints: the bound declarations and every forward statement with its type.
struct CheckReport {
  struct Named {
    std::string name;
    std::string value;  ///< rendered: "128", "1e-06", "bf16"
  };
  struct Param {
    std::string name;    ///< "l3.wq" for layer params
    std::string tensor;  ///< checkpoint tensor name; empty if absent for this config
    DType dtype;
    ir::Shape shape;
  };
  struct Statement {
    Span span;
    int32_t layer = -1;   ///< first layer's copy for statements inside `for`; -1 outside
    std::string target;   ///< binding name, state write target or "return"
    std::string type;     ///< "f32[T, 4, 128]"
  };
  std::string model;
  std::vector<Named> dims;    ///< in declaration order, S included
  std::vector<Named> consts;  ///< consts and dtype declarations
  std::vector<Param> params;  ///< every declared param, layers expanded
  std::vector<Named> states;  ///< name -> type
  std::vector<Statement> statements;
  std::vector<std::string> symbols;  ///< runtime dims: "T <= 4096"
  ir::Graph graph;
};

/// The result of checking source text: the diagnostics (empty when ok) and, when ok, the report.
struct CheckOutcome {
  bool ok = false;
  std::vector<Diagnostic> diagnostics;
  std::string rendered;  ///< diagnostics rendered with source lines and carets
  CheckReport report;
};

/// Checks and lowers source `text` (named `file_name` in diagnostics) against `config`. Never
/// throws for bad input: errors are in the outcome.
CheckOutcome check_source(const std::string& file_name, const std::string& text, const nlohmann::json& config,
                          const BindOptions& opts);

/// Reads and checks an .lg file; throws lg::Error (message: the rendered diagnostics, or the
/// unreadable file) on failure.
CheckReport check_file(const std::filesystem::path& lg_file, const nlohmann::json& config, const BindOptions& opts);

/// Reads, checks and lowers an .lg file against a config.json (parsed JSON); throws lg::Error whose
/// message is the rendered diagnostics.
ir::Graph lower_file(const std::filesystem::path& lg_file, const nlohmann::json& config, const BindOptions& opts);

}  // namespace lg::lang
