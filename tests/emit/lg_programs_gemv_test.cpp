// The decode step's GEMVs and row reductions in the emitted programs (the acceptance check of
// emission, lg_programs_test.cpp, for those kernels): row norms of a decode step reduce block-wide,
// gate and up of a stored row share one decode loop, and decode GEMV kernels launch their successor
// early, prefetch their first weight rows before the wait, batch their prologues' loads, keep two
// batches of a long row's loads in flight, read a stored row in place (not through a rounding cast)
// and split K across warps when they have few outputs. They compile for sm_90 with NVRTC on a
// machine without a GPU.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "emit/cuda/nvrtc.h"
#include "emit/cuda/program.h"
#include "lang/lower.h"
#include "lg_programs.h"

namespace lg::emit::cuda {
namespace {

using namespace test;

// Reductions of a decode step's few rows: a reduce stage whose every reduction is a row's (an
// RMSNorm: [T, D] -> [T, 1], elementwise around it) also gets the block-wide path, where all of a
// block's threads reduce one row (Gemma 3's two chained norms after the attention took 39 us at
// T = 1 with a warp per row on the H200, 9 us this way: bench/RESULTS.md); a stage with a reduction
// keyed below the row (the q/k norm of each head, [T, H, Dh] under a reshape) keeps the warp path,
// since the threads of a block would ask for different keys and the block-wide barriers deadlock.
TEST(EmitLgPrograms, RowNormsOfADecodeStepReduceBlockWide) {
  ir::Graph g = lang::lower_file(kSource + "/models/gemma3_text.lg", config_of(kShared + "/fixtures/tiny-gemma3"),
                                 lang::BindOptions{128});
  const CudaProgram prog = emit_batched(g, {16, 129, 64, 256});
  int block_wide = 0, warp_only = 0;
  for (const auto& k : prog.kernels) {
    if (k.name.find("_reduce") == std::string::npos) continue;
    const bool block = k.source.find("lg_block_coop = true") != std::string::npos;
    // The per-head q/k norms store [T, H, Dh] values: their element loops index a third axis.
    const bool per_head = k.source.find("long i2") != std::string::npos;
    if (block) {
      ++block_wide;
      EXPECT_FALSE(per_head) << k.name;
      EXPECT_NE(k.source.find("lg_block_sum(acc, lg_red)"), std::string::npos) << k.name;
    } else {
      ++warp_only;
    }
  }
  EXPECT_GT(block_wide, 0);
  EXPECT_GT(warp_only, 0);
  EXPECT_GT(nvrtc_compile(prog.source(), g.model).size(), 1000u);
}

// The pack kernels of the prefill form (T > 1: a decode batch too) whose operand holds an RMSNorm
// prologue (q/k/v's, gate/up's) reduce each row block-wide when the step has few rows; the packs
// of stored values (o_proj's attention output) have no reduction and stay plain loops;
// LG_COMPILED_PACK_BLOCK_ROWS=0 keeps the warp spans.
TEST(EmitLgPrograms, NormPacksOfADecodeBatchReduceBlockWide) {
  auto packs = [](const CudaProgram& prog, int& block_wide, int& other) {
    block_wide = other = 0;
    for (const auto& k : prog.kernels) {
      if (k.name.find("_pack") == std::string::npos) continue;
      if (k.source.find("lg_block_coop = true") != std::string::npos) {
        ++block_wide;
        EXPECT_NE(k.source.find("lg_block_sum(acc, lg_red)"), std::string::npos) << k.name;
      } else {
        ++other;
      }
    }
  };
  const nlohmann::json c = config_of(kShared + "/models/qwen3-pycode-22m");
  ir::Graph g = lang::lower_file(kSource + "/models/qwen3.lg", c, lang::BindOptions{128});
  const CudaProgram prog = emit_batched(g, {16, 129, 64, 256});
  int block_wide = 0, other = 0;
  packs(prog, block_wide, other);
  EXPECT_GE(block_wide, 2);  // the input and post-attention RMSNorms (layer kernels are shared)
  EXPECT_GE(other, 1);       // o_proj's
  EXPECT_GT(nvrtc_compile(prog.source(), g.model).size(), 1000u);
  setenv("LG_COMPILED_PACK_BLOCK_ROWS", "0", 1);
  ir::Graph g2 = lang::lower_file(kSource + "/models/qwen3.lg", c, lang::BindOptions{128});
  const CudaProgram spans = emit_batched(g2, {16, 129, 64, 256});
  unsetenv("LG_COMPILED_PACK_BLOCK_ROWS");
  packs(spans, block_wide, other);
  EXPECT_EQ(block_wide, 0);
}

// Gemma 3's gate and up read one stored activation row (its pre-feedforward norm's output): their
// decode GEMVs share one loop, each lane streaming both weight rows; LG_COMPILED_GEMV_JOIN=0 keeps
// them apart (the A/B knob). Qwen 3's gate/up input is staged in shared memory by the RMSNorm
// prologue and stays apart unless LG_COMPILED_GEMV_JOIN=1. Every decode GEMV loads in batches.
TEST(EmitLgPrograms, GateAndUpOfAStoredRowShareOneDecodeLoop) {
  auto emit = [&](const std::string& lg, const std::string& fixture, const char* join) {
    return emit_bf16(lg, config_of(kShared + "/fixtures/" + fixture), join ? "LG_COMPILED_GEMV_JOIN" : nullptr, join).source();
  };
  const std::string pair = "decode: 2 GEMV(s) over one activation row", one = "decode: 1 GEMV(s) over one activation row";
  const std::string gemma = emit("gemma3_text.lg", "tiny-gemma3", nullptr);
  // The gate/up kernels (the first and last layers' fuse differently from the middle ones').
  const size_t pairs = count(gemma, pair);
  EXPECT_GE(pairs, 1u);
  EXPECT_NE(gemma.find("w1[u] = lg_ld_stream(wr1 + c0 + 32 * u);"), std::string::npos);
  EXPECT_GT(count(gemma, one), 2u);
  EXPECT_EQ(count(gemma, "for (long c = lane;"), 0u);  // no plain loop unrolled by 4 (LG_COMPILED_GEMV_BATCH=0)
  const std::string gemma_apart = emit("gemma3_text.lg", "tiny-gemma3", "0");
  EXPECT_EQ(count(gemma_apart, pair), 0u);
  EXPECT_EQ(count(gemma_apart, one), count(gemma, one) + 2 * pairs);
  const std::string qwen = emit("qwen3.lg", "tiny-qwen3", nullptr);
  EXPECT_EQ(count(qwen, pair), 0u);
  EXPECT_GE(count(emit("qwen3.lg", "tiny-qwen3", "1"), pair), 1u);
}

// Programmatic dependent launch: every kernel lets the next launch be scheduled right after its
// own wait (LG_COMPILED_EARLY_LAUNCH=0 drops it). A GEMM stage with a prefill form (cuBLASLt at
// T > 1) runs its fused kernel only at T == 1, so its decode GEMVs come without the any-T fallback
// (the weight read beside the activation's lambda, 8 weights a load), whose registers cost the
// q/k/v kernel of Qwen3-30B-A3B an occupancy step (113 -> 76 registers), and the kernel traps if
// ever launched at T > 1; LG_COMPILED_GEMV_DECODE_ONLY=0 keeps the fallback (the A/B knob).
TEST(EmitLgPrograms, DecodeGemvKernelsLaunchTheirSuccessorEarlyAndServeOnlyT1) {
  auto emit = [&](const char* knob, const char* value) {
    return emit_bf16("qwen3.lg", config_of(kShared + "/fixtures/tiny-qwen3"), knob, value);
  };
  const std::string wait = "lg_wait_previous_launch();\n", early = wait + "  lg_launch_dependents();\n";
  const std::string trap = "if (T != 1) __trap();", fallback = "for (long k0 = (long)lane * 8;";
  // A kernel with a prologue reduction (the RMSNorm) also tells the compiler T is 1 past it.
  const std::string unreachable = "if (T != 1) { __trap(); __builtin_unreachable(); }";
  const CudaProgram prog = emit(nullptr, nullptr);
  const std::string src = prog.source();
  EXPECT_GE(count(src, wait), prog.kernels.size());
  EXPECT_EQ(count(src, early), count(src, wait));
  EXPECT_EQ(count(emit("LG_COMPILED_EARLY_LAUNCH", "0").source(), "lg_launch_dependents();"), 0u);
  // q/k/v, o_proj, gate/up, down and the LM head have prefill forms: no fallback is left.
  EXPECT_GE(count(src, trap) + count(src, unreachable), 4u);
  for (const Kernel& k : prog.kernels)
    EXPECT_EQ(count(k.source, unreachable), count(k.source, "lg_block_sum(") > 0 && count(k.source, "__trap()") > 0 ? 1u : 0u)
        << k.name;
  EXPECT_GE(count(src, unreachable), 2u);  // q/k/v, gate/up
  EXPECT_EQ(count(src, fallback), 0u);
  const std::string kept = emit("LG_COMPILED_GEMV_DECODE_ONLY", "0").source();
  EXPECT_EQ(count(kept, "__trap()"), 0u);
  EXPECT_GE(count(kept, fallback), 5u);
  EXPECT_GT(nvrtc_compile(src, "qwen3").size(), 1000u);
}

// Weights are written by no launch, so a decode GEMV kernel starts its first weight rows into L2
// before the wait on the previous launch (lane 0 of each warp, the rows of its first output, at
// most LG_COMPILED_GEMV_PREFETCH bytes of each): the wait then follows the prefetches, and every
// kernel still waits exactly once, before anything an earlier launch writes is read (the RMSNorm
// prologue's row, the staging). The split form (Qwen3-0.6B's o_proj and down: 4 slices of K)
// prefetches each warp's own slice. =0 leaves the wait at the kernel's head and prefetches nothing.
TEST(EmitLgPrograms, DecodeGemvsPrefetchTheirFirstWeightRowsBeforeTheWait) {
  auto emit = [&](const nlohmann::json& config, const char* prefetch) {
    return emit_bf16("qwen3.lg", config, prefetch ? "LG_COMPILED_GEMV_PREFETCH" : nullptr, prefetch);
  };
  const std::string wait = "lg_wait_previous_launch();", pf = "lg_prefetch_l2(";
  const nlohmann::json c22 = config_of(kShared + "/models/qwen3-pycode-22m");
  const CudaProgram prog = emit(c22, nullptr);
  size_t prefetching = 0;
  for (const Kernel& k : prog.kernels) {
    SCOPED_TRACE(k.name);
    EXPECT_EQ(count(k.source, wait), 1u);
    if (count(k.source, pf) == 0) continue;
    ++prefetching;
    EXPECT_NE(k.name.find("gemm"), std::string::npos);
    const std::string before = k.source.substr(0, k.source.find(wait));
    EXPECT_GE(count(before, pf), 1u);
    EXPECT_EQ(count(k.source.substr(before.size()), pf), 0u);
    // Nothing an earlier launch writes is read before the wait: no reduction, staging, barrier or
    // weight stream there, only the lambdas' definitions and the prefetches.
    for (const char* read : {"lg_block_sum(", "__syncthreads()", "lg_ld_stream(", "__ldg("})
      EXPECT_EQ(count(before, read), 0u) << read;
    EXPECT_EQ(count(before, "if (T == 1 && lane == 0) {  // weight rows into L2 before the wait"), 1u);
  }
  // q/k/v, o_proj, gate/up, down, the LM head.
  EXPECT_GE(prefetching, 5u);
  // The 22M model's hidden size is 128 (a 256-byte row), under the 8,192-byte default; a
  // smaller cap clips each row's prefetch.
  EXPECT_GE(count(prog.source(), ", 256u);"), 3u);
  const std::string clipped = emit(c22, "128").source();
  EXPECT_EQ(count(clipped, ", 256u);"), 0u);
  EXPECT_GE(count(clipped, ", 128u);"), 5u);
  EXPECT_GT(nvrtc_compile(prog.source(), "qwen3").size(), 1000u);
  const CudaProgram off = emit(c22, "0");
  for (const Kernel& k : off.kernels) {
    EXPECT_EQ(count(k.source, pf), 0u) << k.name;
    EXPECT_EQ(k.source.find(wait) + wait.size() - 1, k.source.find(";")) << k.name;  // its first statement
  }

  nlohmann::json c06 = c22;
  c06.update({{"hidden_size", 1024}, {"intermediate_size", 3072}, {"num_hidden_layers", 2}, {"num_attention_heads", 16},
              {"num_key_value_heads", 8}, {"head_dim", 128}});
  const std::string split = emit(c06, nullptr).source();
  // o_proj (K = 2,048) and down (K = 3,072) in 4 slices, gate/up (K = 1,024) in 2: 1,024,
  // 1,536 and 1,024 bytes a warp.
  EXPECT_GE(count(split, " + lg_slice * 512L, 1024u);"), 3u);
  EXPECT_GE(count(split, " + lg_slice * 768L, 1536u);"), 1u);
  EXPECT_GT(nvrtc_compile(split, "qwen3").size(), 1000u);
}

// The RMSNorm prologue of a decode GEMV: its block-wide loops (the sum of squares, the staging)
// compute 8 values a thread before using any (LG_COMPILED_PROLOGUE_BATCH=0: the plain loops), and
// it stages its row in shared memory by halves of each 8-element chunk, read as xa[c] and
// xa[c + K / 8] (a warp's lanes on consecutive float4s); LG_COMPILED_GEMV_HALVES=0 stores it in
// order, read as xa[2 c] and xa[2 c + 1]. All compile for sm_90.
TEST(EmitLgPrograms, DecodeGemvProloguesBatchTheirLoadsAndStageRowsByHalves) {
  nlohmann::json c8 = config_of(kShared + "/models/qwen3-pycode-22m");
  c8.update({{"hidden_size", 4096}, {"intermediate_size", 12288}, {"num_hidden_layers", 2}, {"num_attention_heads", 32},
             {"num_key_value_heads", 8}, {"head_dim", 128}, {"vocab_size", 1024}});
  size_t qkv = 0;
  const CudaProgram prog = emit_bf16("qwen3.lg", c8);
  for (const Kernel& k : prog.kernels) {
    if (count(k.source, "decode: 1 GEMV(s)") != 3 || count(k.source, "sa0[") == 0) continue;  // q/k/v
    ++qkv;
    EXPECT_EQ(count(k.source, "sa0[((k >> 3) + ((k >> 2) & 1) * 512L) * 4 + (k & 3)] = "), 1u) << k.name;
    EXPECT_EQ(count(k.source, "const float4 x0 = xa[c], x1 = xa[c + 4096L / 8];"), 6u) << k.name;  // 2 batches x 3
    // 8 x 256 threads tile K = 4,096 exactly: no bound test on a batch's elements.
    EXPECT_EQ(count(k.source, "for (long r0 = threadIdx.x; r0 < 4096L; r0 += 2048L) {"), 1u) << k.name;
    EXPECT_EQ(count(k.source, "for (long k0 = threadIdx.x; k0 < 4096L; k0 += 2048L) {"), 1u) << k.name;
    EXPECT_EQ(count(k.source, "{ const long r = r0 + u * 256L; lg_b[u] = "), 1u) << k.name;
    EXPECT_EQ(count(k.source, "{ const long r = r0 + u * 256L; acc = acc + lg_b[u]; }"), 1u) << k.name;
  }
  EXPECT_GE(qkv, 1u);
  // 22M: K = 128 is no multiple of 256 threads, so each element is tested against it.
  const std::string small = emit_bf16("qwen3.lg", config_of(kShared + "/models/qwen3-pycode-22m")).source();
  EXPECT_GE(count(small, "for (long r0 = threadIdx.x; r0 < 128L; r0 += 2048L) {"), 2u);
  EXPECT_GE(count(small, "{ const long r = r0 + u * 256L; if (r < 128L) lg_b[u] = "), 2u);
  EXPECT_GT(nvrtc_compile(small, "qwen3").size(), 1000u);
  const std::string plain = emit_bf16("qwen3.lg", c8, "LG_COMPILED_PROLOGUE_BATCH", "0").source();
  EXPECT_EQ(count(plain, "lg_b["), 0u);
  EXPECT_GE(count(plain, "for (long r = threadIdx.x; r < 4096L; r += blockDim.x) acc = acc + "), 2u);  // q/k/v, gate/up
  EXPECT_GT(nvrtc_compile(plain, "qwen3").size(), 1000u);
  EXPECT_GT(nvrtc_compile(prog.source(), "qwen3").size(), 1000u);
  const std::string in_order = emit_bf16("qwen3.lg", c8, "LG_COMPILED_GEMV_HALVES", "0").source();
  EXPECT_EQ(count(in_order, "xa[c + "), 0u);
  EXPECT_GE(count(in_order, "const float4 x0 = xa[2 * c], x1 = xa[2 * c + 1];"), 6u);
  EXPECT_GT(nvrtc_compile(in_order, "qwen3").size(), 1000u);
}

// A decode GEMV whose lane streams more than two batches of a row (Qwen3-8B: K = 4,096 and 12,288,
// 16 and 48 loads a lane) keeps two batches in flight, the next batch's loads issued before the
// current one's math; shorter rows (the 22M model's K = 128 and 512) keep one batch.
// LG_COMPILED_GEMV_PIPE=2 pipelines every row (the short rows' predicated batches then run the
// second buffer empty), =0 none; both compile for sm_90.
TEST(EmitLgPrograms, LongDecodeGemvRowsKeepTwoBatchesOfLoadsInFlight) {
  auto emit = [&](const nlohmann::json& config, const char* pipe) {
    return emit_bf16("qwen3.lg", config, pipe ? "LG_COMPILED_GEMV_PIPE" : nullptr, pipe).source();
  };
  const std::string piped = "two batches of loads in flight";
  nlohmann::json c8 = config_of(kShared + "/models/qwen3-pycode-22m");
  c8.update({{"hidden_size", 4096}, {"intermediate_size", 12288}, {"num_hidden_layers", 2}, {"num_attention_heads", 32},
             {"num_key_value_heads", 8}, {"head_dim", 128}, {"vocab_size", 1024}});
  const std::string src8 = emit(c8, nullptr);
  // q, k, v, o_proj, gate/up, down and the LM head, in each kernel that renders them.
  EXPECT_GE(count(src8, piped), 7u);
  EXPECT_GE(count(src8, "wb0[u] = lg_ld_stream(wr0 + c0 + 128 + 32 * u);"), 4u);
  EXPECT_GE(count(src8, "c0 < 12288L / 8; c0 += 256) {"), 1u);  // down: two batches of 4 a round
  EXPECT_GT(nvrtc_compile(src8, "qwen3").size(), 1000u);
  EXPECT_EQ(count(emit(c8, "0"), piped), 0u);
  const nlohmann::json c22 = config_of(kShared + "/models/qwen3-pycode-22m");
  EXPECT_EQ(count(emit(c22, nullptr), piped), 0u);
  const std::string forced = emit(c22, "2");
  EXPECT_GE(count(forced, piped), 5u);
  EXPECT_GT(nvrtc_compile(forced, "qwen3").size(), 1000u);
}

// o_proj's activation is a row-major view of the attention's stored output (`a.view(T, H*Dh)`
// of [T, H, Dh]): its decode GEMV reads that buffer in place through L1, as it reads any stored
// row, instead of first copying it into shared memory. LG_COMPILED_ROW_VIEWS=0 stages it again.
TEST(EmitLgPrograms, OProjReadsTheAttentionOutputInPlace) {
  nlohmann::json c8 = config_of(kShared + "/models/qwen3-pycode-22m");
  c8.update({{"hidden_size", 4096}, {"intermediate_size", 12288}, {"num_hidden_layers", 2}, {"num_attention_heads", 32},
             {"num_key_value_heads", 8}, {"head_dim", 128}, {"vocab_size", 1024}});
  const std::string view = "long o2 = lin % 128L; lin /= 128L; long o1 = lin % 32L;";  // [T, 4096] of [T, 32, 128]
  auto o_proj_kernels = [&](const CudaProgram& prog) {
    std::vector<std::string> out;
    for (const Kernel& k : prog.kernels)
      if (k.name.find("gemm") != std::string::npos && count(k.source, view) > 0 && count(k.source, "decode: 1 GEMV(s)") > 0)
        out.push_back(k.source);
    return out;
  };
  const CudaProgram in_place = emit_bf16("qwen3.lg", c8);
  const auto ks = o_proj_kernels(in_place);
  ASSERT_GE(ks.size(), 1u);
  for (const std::string& k : ks) {
    EXPECT_EQ(count(k, "__shared__ __align__(16) float sa"), 0u);
    EXPECT_EQ(count(k, "const float4 x0 = __ldg(xa + 2 * c)"), 2u);  // the pipelined loop's two batches
  }
  EXPECT_GT(nvrtc_compile(in_place.source(), "qwen3").size(), 1000u);
  for (const std::string& k : o_proj_kernels(emit_bf16("qwen3.lg", c8, "LG_COMPILED_ROW_VIEWS", "0")))
    EXPECT_EQ(count(k, "__shared__ __align__(16) float sa0[4096];"), 1u);
}

// A decode GEMV reads a stored row in place only when its activation is that row's exact value:
// with o_proj's input rounded to bf16 on the way (`a.view(T, H*Dh).to(bf16).to(f32)`), reading
// the attention's stored f32 output would skip the rounding, so the GEMV stages the rounded row.
TEST(EmitLgPrograms, ARoundingCastKeepsADecodeGemvFromReadingTheUnroundedRow) {
  nlohmann::json c8 = config_of(kShared + "/models/qwen3-pycode-22m");
  c8.update({{"hidden_size", 4096}, {"intermediate_size", 12288}, {"num_hidden_layers", 2}, {"num_attention_heads", 32},
             {"num_key_value_heads", 8}, {"head_dim", 128}, {"vocab_size", 1024}, {"dtype", "bfloat16"}});
  std::string lg = read_text(kSource + "/models/qwen3.lg");
  const std::string o_proj = "x = x + a.view(T, H*Dh) @ l.wo.T";
  ASSERT_EQ(count(lg, o_proj), 1u);
  lg.replace(lg.find(o_proj), o_proj.size(), "x = x + a.view(T, H*Dh).to(bf16).to(f32) @ l.wo.T");
  const std::string path = testing::TempDir() + "/qwen3_rounded_o_proj.lg";
  std::ofstream(path) << lg;
  ir::Graph g = lang::lower_file(path, c8, lang::BindOptions{128});
  const CudaProgram prog = emit_batched(g, {16, 129, 64, 256});
  const std::string view = "long o2 = lin % 128L; lin /= 128L; long o1 = lin % 32L;";  // [T, 4096] of [T, 32, 128]
  size_t o_projs = 0;
  for (const Kernel& k : prog.kernels) {
    if (k.name.find("gemm") == std::string::npos || count(k.source, view) == 0 || count(k.source, "decode: 1 GEMV(s)") == 0)
      continue;
    ++o_projs;
    EXPECT_EQ(count(k.source, "__shared__ __align__(16) float sa0[4096];"), 1u) << k.name;
    EXPECT_EQ(count(k.source, "__ldg(xa + "), 0u) << k.name;
  }
  EXPECT_GE(o_projs, 1u);
  EXPECT_GT(nvrtc_compile(prog.source(), "qwen3").size(), 1000u);
}

// A decode-only stage with few outputs (o_proj, down, a MoE router: under 4,096 at T = 1) gives
// each output several warps of a block, each a slice of K, summed in shared memory before the
// epilogue; stages with many outputs keep a warp each. At Qwen3-0.6B's shape: o_proj and down
// (1,024 outputs) take 4 warps, gate/up (2 x 3,072) 2, q/k/v (4,096) and the LM head 1.
// LG_COMPILED_GEMV_SPLIT=0 turns it off; =8 lets the 22M model's short rows take 8 (its locks run
// that form on a GPU).
TEST(EmitLgPrograms, FewOutputDecodeGemvsSplitKAcrossWarps) {
  nlohmann::json c06 = config_of(kShared + "/models/qwen3-pycode-22m");
  c06.update({{"hidden_size", 1024}, {"intermediate_size", 3072}, {"num_hidden_layers", 2}, {"num_attention_heads", 16},
              {"num_key_value_heads", 8}, {"head_dim", 128}});
  auto emit = [&](const nlohmann::json& config, const char* knob) {
    return emit_bf16("qwen3.lg", config, knob ? "LG_COMPILED_GEMV_SPLIT" : nullptr, knob).source();
  };
  const std::string src = emit(c06, nullptr);
  EXPECT_GE(count(src, "// decode: 4 warps per output, each a slice of K"), 2u);  // o_proj, down
  EXPECT_GE(count(src, "// decode: 2 warps per output, each a slice of K"), 1u);  // gate/up
  EXPECT_EQ(count(src, "// decode: 8 warps per output"), 0u);
  // The first slice's warp sums the slices of each dot product before the epilogue.
  EXPECT_GE(count(src, "dot0 = 0.0f; for (int s = 0; s < 4; ++s) dot0 += lg_part[(lg_wib + s) * 1 + 0];"), 2u);
  EXPECT_GE(count(src, "dot1 = 0.0f; for (int s = 0; s < 2; ++s) dot1 += lg_part[(lg_wib + s) * 2 + 1];"), 1u);
  EXPECT_GT(nvrtc_compile(src, "qwen3").size(), 1000u);
  EXPECT_EQ(count(emit(c06, "0"), "warps per output"), 0u);
  const nlohmann::json c22 = config_of(kShared + "/models/qwen3-pycode-22m");
  EXPECT_EQ(count(emit(c22, nullptr), "// decode: 8 warps per output"), 0u);
  const std::string forced = emit(c22, "8");
  EXPECT_GE(count(forced, "// decode: 8 warps per output, each a slice of K"), 2u);
  EXPECT_GT(nvrtc_compile(forced, "qwen3").size(), 1000u);
}

}  // namespace
}  // namespace lg::emit::cuda
