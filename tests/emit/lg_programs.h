// Helpers the emission tests of the .lg programs share (lg_programs_test.cpp,
// lg_programs_attention_test.cpp, lg_programs_gemv_test.cpp): the shared data and source
// directories, a fixture's config, a file's text, occurrence counts, and the batched emission
// (emit_batched; emit_bf16 with bf16 weights and an A/B knob).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <nlohmann/json.hpp>

#include "emit/cuda/program.h"
#include "ir/batch.h"
#include "lang/lower.h"
#include "lift/lift.h"
#include "lift/passes.h"

namespace lg::emit::cuda::test {

inline const std::string kShared = LG_SHARED_DIR;
inline const std::string kSource = LG_SOURCE_DIR;

inline nlohmann::json config_of(const std::string& dir) {
  std::ifstream f(dir + "/config.json");
  return nlohmann::json::parse(f);
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// How many times `what` occurs in `src`.
inline size_t count(const std::string& src, const std::string& what) {
  size_t n = 0;
  for (size_t at = src.find(what); at != std::string::npos; at = src.find(what, at + 1)) ++n;
  return n;
}

/// `g` made batched (ir::make_batched: ragged steps, paged bf16 states), lifted, fused and emitted
/// as the compiled lane and `lg compile` emit it.
inline CudaProgram emit_batched(ir::Graph& g, const ir::BatchOptions& batch, const lift::FuseOptions& fusion = {}) {
  ir::make_batched(g, batch);
  lift::StagedProgram p = lift::lift(g);
  lift::fuse(p, fusion);
  return emit_program(p, {.bf16_states = true});
}

/// models/`lg` lowered for `config` with bf16 weights (the decode GEMV's fast path streams bf16;
/// the fixtures are fp32) and emitted as emit_batched does, with the A/B switch `knob` (an
/// environment variable) set to `value` while it emits; none when `knob` is null.
inline CudaProgram emit_bf16(const std::string& lg, nlohmann::json config, const char* knob = nullptr, const char* value = nullptr) {
  config["dtype"] = "bfloat16";
  if (knob) {
    EXPECT_EQ(setenv(knob, value, 1), 0);
  }
  ir::Graph g = lang::lower_file(kSource + "/models/" + lg, config, lang::BindOptions{128});
  CudaProgram prog = emit_batched(g, {16, 129, 64, 256});
  if (knob) unsetenv(knob);
  return prog;
}

}  // namespace lg::emit::cuda::test
