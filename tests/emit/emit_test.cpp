// CUDA emission on a machine without a GPU: every kernel of the emitted program compiles for
// sm_90 with NVRTC; the device prelude is src/kernels' shared headers; identical layers share
// kernels; the arena reuses memory by liveness.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../lift/tiny_models.h"
#include "emit/cuda/nvrtc.h"
#include "emit/cuda/program.h"
#include "emit/cuda/render.h"

namespace lg::emit::cuda {
namespace {

using lift::test::QwenShape;

CudaProgram emit_qwen(const QwenShape& c) {
  lift::StagedProgram p = lift::lift(lift::test::qwen_like(c));
  lift::fuse(p);
  return emit_program(p);
}

TEST(Emit, QwenLikeProgramCompilesForSm90) {
  for (bool qk : {true, false}) {
    QwenShape c;
    c.L = 3;
    c.Dh = 64;
    c.D = 64;
    c.qk_norm = qk;
    c.qkv_bias = !qk;
    CudaProgram prog = emit_qwen(c);
    auto cubin = nvrtc_compile(prog.source(), "qwen_like");
    EXPECT_GT(cubin.size(), 1000u);
  }
}

// The device prelude is the files under src/kernels, as the hand-written lane includes them: the
// flash-attention template whole, then the bodies (after `#pragma once` and a blank line) of
// attention_policies.cuh, device_helpers.cuh and decode_attention_mma.cuh, in that order.
TEST(Emit, PreludeIsTheSharedDeviceHeaders) {
  auto read = [](const std::string& name) {
    std::ifstream f(std::string(LG_SOURCE_DIR) + "/src/kernels/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  auto body = [&](const std::string& name) {
    const std::string text = read(name);
    const size_t at = text.find("#pragma once\n\n");
    EXPECT_NE(at, std::string::npos) << name;
    return text.substr(at + 14);
  };
  const std::string prelude = device_prelude();
  const std::string fa = read("flash_attention.cuh"), policies = body("attention_policies.cuh"),
                    helpers = body("device_helpers.cuh"), mma = body("decode_attention_mma.cuh");
  ASSERT_FALSE(fa.empty());
  const size_t a = prelude.find(fa), b = prelude.find(policies), c = prelude.find(helpers), d = prelude.find(mma);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(c, std::string::npos);
  ASSERT_NE(d, std::string::npos);
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_LT(c, d);  // lg_dmma names lg_fa's fragments and the helpers' lg_bf16_lo
  EXPECT_EQ(d + mma.size(), prelude.size());
  EXPECT_NE(helpers.find("lg_warp_sum"), std::string::npos);
  EXPECT_NE(mma.find("namespace lg_dmma"), std::string::npos);
  EXPECT_EQ(mma.find("#include"), std::string::npos);
}

TEST(Emit, IdenticalLayersShareKernels) {
  QwenShape c;
  c.L = 4;
  CudaProgram prog = emit_qwen(c);
  EXPECT_LT(prog.kernels.size(), prog.launches.size());
  c.L = 6;
  CudaProgram more = emit_qwen(c);
  // Layers 2.. reuse the norm, o-proj and MLP kernels: two more layers add fewer kernels than launches.
  EXPECT_LT(more.kernels.size() - prog.kernels.size(), more.launches.size() - prog.launches.size());
}

// A float cast to i32 converts as the host executors do (ir/cpu_ops.cpp, lift/staged_executor.cpp):
// toward zero, NaN 0, saturated at the i32 range's ends. The kernels used truncf alone, which keeps
// NaN and infinities.
TEST(Emit, CastToI32SaturatesAndNanIsZero) {
  lift::test::Builder b;
  ir::ValueId tokens = b.input("tokens", {lift::test::T()});
  b.input("pos", {lift::test::T()});
  ir::ValueId x = b.gather(b.param("table", {lift::test::C(10), lift::test::C(4)}), tokens, "x");
  b.output(b.cast(b.cast(b.binary(ir::Op::Mul, x, x), DType::I32), DType::F32));
  lift::StagedProgram p = lift::lift(b.g);
  lift::fuse(p);
  const CudaProgram prog = emit_program(p);
  const std::string cast =
      "x != x ? 0.0f : x >= 2147483648.0f ? 2147483648.0f : x <= -2147483648.0f ? -2147483648.0f : truncf(x)";
  EXPECT_NE(prog.source().find(cast), std::string::npos) << prog.source();
  EXPECT_EQ(prog.source().find("return truncf("), std::string::npos);
  EXPECT_GT(nvrtc_compile(prog.source(), "cast").size(), 1000u);
}

TEST(Emit, ArenaReusesMemoryByLiveness) {
  QwenShape c;
  c.L = 4;
  CudaProgram prog = emit_qwen(c);
  int64_t total = 0;
  for (const auto& b : prog.buffers)
    if (b.kind == BufferKind::Arena) total += b.bytes;
  EXPECT_LT(prog.arena_bytes, total / 2);
  // No two buffers live at the same time overlap.
  for (const auto& a : prog.buffers)
    for (const auto& b : prog.buffers) {
      if (&a == &b || a.kind != BufferKind::Arena || b.kind != BufferKind::Arena) continue;
      bool live = a.first_launch <= b.last_launch && b.first_launch <= a.last_launch;
      bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(live && overlap) << a.name << " and " << b.name;
    }
}

TEST(Emit, DecodeGemvStreamsBf16WeightsWith16ByteLoads) {
  QwenShape c;
  c.D = 64;
  lift::StagedProgram p = lift::lift(lift::test::qwen_like(c));
  for (auto& prm : p.graph.params) prm.dtype = DType::BF16;
  for (auto& n : p.graph.nodes)
    if (n.op == ir::Op::Param) n.dtype = DType::BF16;
  lift::fuse(p);
  CudaProgram prog = emit_program(p);
  EXPECT_NE(prog.source().find("reinterpret_cast<const uint4*>"), std::string::npos);
  EXPECT_GT(nvrtc_compile(prog.source(), "bf16").size(), 1000u);
}

}  // namespace
}  // namespace lg::emit::cuda
