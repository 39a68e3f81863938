// The acceptance check of emission: the CUDA programs of models/qwen3.lg and models/qwen2.lg for
// every fixture config and the 22M model, and of models/examples/cc_mlp.lg and gpt2.lg, compile for sm_90
// with NVRTC on a machine without a GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "emit/cuda/nvrtc.h"
#include "emit/cuda/program.h"
#include "lang/lower.h"
#include "lift/lift.h"
#include "lift/passes.h"

namespace lg::emit::cuda {
namespace {

const std::string kShared = LG_SHARED_DIR;
const std::string kSource = LG_SOURCE_DIR;

void compiles(const std::string& lg, const nlohmann::json& config) {
  SCOPED_TRACE(lg);
  ir::Graph g = lang::lower_file(kSource + "/models/" + lg, config, lang::BindOptions{128});
  lift::StagedProgram p = lift::lift(g);
  lift::fuse(p);
  CudaProgram prog = emit_program(p);
  EXPECT_GT(nvrtc_compile(prog.source(), g.model).size(), 1000u);
}

nlohmann::json config_of(const std::string& dir) {
  std::ifstream f(dir + "/config.json");
  return nlohmann::json::parse(f);
}

TEST(EmitLgPrograms, QwenProgramsCompileForSm90) {
  compiles("qwen3.lg", config_of(kShared + "/fixtures/tiny-qwen3"));
  compiles("qwen3.lg", config_of(kShared + "/fixtures/tiny-qwen3-untied-mqa"));
  compiles("qwen2.lg", config_of(kShared + "/fixtures/tiny-qwen2"));
  compiles("qwen3.lg", config_of(kShared + "/models/qwen3-pycode-22m"));
}

TEST(EmitLgPrograms, NonQwenProgramCompilesForSm90) {
  compiles("examples/cc_mlp.lg", {{"vocab_size", 50}, {"hidden_size", 32}, {"intermediate_size", 64},
                                  {"num_hidden_layers", 2}});
  compiles("examples/gpt2.lg", {{"model_type", "gpt2"}, {"vocab_size", 300}, {"n_embd", 48}, {"n_head", 3},
                                {"n_layer", 2}, {"n_positions", 128}, {"torch_dtype", "float32"}});
}

}  // namespace
}  // namespace lg::emit::cuda
