// Attention in the emitted programs (the acceptance check of emission, lg_programs_test.cpp, for the
// decode step's attention): every attention launch of the batched program is split-KV and GQA-aware
// at the Qwen3-8B head shape, the split-KV chunk loop scores in base-2 units and masks only its last
// iteration, and a sliding window bounds the keys of decode and prefill attention. The kernels
// compile for sm_90 with NVRTC on a machine without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <nlohmann/json.hpp>

#include "emit/cuda/nvrtc.h"
#include "emit/cuda/program.h"
#include "lang/lower.h"
#include "lift/lift.h"
#include "lift/passes.h"
#include "lg_programs.h"

namespace lg::emit::cuda {
namespace {

using namespace test;

// Attention at the Qwen3-8B head shape (32 query heads, 8 KV heads, head_dim 128) in the batched
// program: every attention launch is split-KV (grid (T * items, splits), its scratch after the
// buffers), a block serves 2 query heads of one KV head (K/V rows loaded once for both; 2 x 8
// registers of q and accumulators per head is what two 256-thread blocks per SM leave room for),
// reads the bf16 cache rows 16 bytes a lane, and the launch has as many splits as chunks of
// min_chunk fit the context. From 64 rows on the wide form takes all 4: on the tensor cores
// (lg_dmma, 2-warp blocks, its own split target), or with LG_COMPILED_ATTN_WIDE_FORM=heads the
// CUDA-core kernel with the round's K/V halved to make room. One row (one sequence's decode) runs
// a third kernel: the queries read from shared memory, three blocks an SM (not at a group of 2,
// where one block serves the whole group). The kernels compile for sm_90.
TEST(EmitLgPrograms, DecodeAttentionIsSplitKvAndGqaAware) {
  nlohmann::json c = config_of(kShared + "/fixtures/tiny-qwen3");
  c["num_attention_heads"] = 32;
  c["num_key_value_heads"] = 8;
  c["head_dim"] = 128;
  c["num_hidden_layers"] = 1;
  ir::Graph g = lang::lower_file(kSource + "/models/qwen3.lg", c, lang::BindOptions{1024});
  const CudaProgram prog = emit_batched(g, {16, 129, 64, 256});
  setenv("LG_COMPILED_ATTN_WIDE_FORM", "heads", 1);
  ir::Graph gh = lang::lower_file(kSource + "/models/qwen3.lg", c, lang::BindOptions{1024});
  const CudaProgram heads = emit_batched(gh, {16, 129, 64, 256});
  unsetenv("LG_COMPILED_ATTN_WIDE_FORM");
  int attn = 0;
  for (const auto& l : prog.launches) {
    const Kernel& k = prog.kernels[static_cast<size_t>(l.kernel)];
    if (k.name.find("_attention") == std::string::npos) {
      EXPECT_FALSE(l.split) << k.name;
      EXPECT_EQ(k.source.find("lg_part"), std::string::npos) << k.name;
      continue;
    }
    ++attn;
    ASSERT_TRUE(l.split) << k.name;
    EXPECT_EQ(l.split->heads_per_item, 2);
    EXPECT_EQ(l.split->items_per_row, 16);
    EXPECT_EQ(l.grid(3), 3 * 16);
    EXPECT_NE(k.source.find("QG = 2, NE = 8, LK = 16, KPW = 2, R = 4;"), std::string::npos);
    EXPECT_FALSE(l.split->tensor_cores);
    EXPECT_EQ(l.split->threads, 256);
    EXPECT_EQ(l.split->blocks_per_sm, 0);
    ASSERT_TRUE(l.wide) << k.name;
    EXPECT_EQ(l.wide->min_rows, 64);
    EXPECT_EQ(l.wide->split.heads_per_item, 4);
    EXPECT_EQ(l.wide->split.items_per_row, 8);
    EXPECT_EQ(l.wide->split.part_floats, l.split->part_floats);
    EXPECT_TRUE(l.wide->split.tensor_cores);
    EXPECT_EQ(l.wide->split.threads, 64);
    EXPECT_EQ(l.wide->split.blocks_per_sm, 4);
    EXPECT_EQ(l.wide->split.min_chunk, 128);
    EXPECT_EQ(l.wide->split.max_splits, 1024 / 128);
    const std::string& wide = prog.kernels[static_cast<size_t>(l.wide->kernel)].source;
    EXPECT_NE(wide.find("__launch_bounds__(64)"), std::string::npos);
    EXPECT_NE(wide.find("lg_dmma::chunk<128, false>(qf, (int)QG, key_row, "), std::string::npos);
    EXPECT_NE(wide.find("float* __restrict__ lg_part,\n    int* __restrict__ lg_count"), std::string::npos);
    EXPECT_EQ(l.split->part_floats, 32 * (128 + 2));
    ASSERT_GT(l.split->min_chunk, 0);
    EXPECT_EQ(l.split->max_splits, (1024 + l.split->min_chunk - 1) / l.split->min_chunk);
    EXPECT_NE(k.source.find("float* __restrict__ lg_part,\n    int* __restrict__ lg_count"), std::string::npos);
    EXPECT_NE(k.source.find("__ldcg(reinterpret_cast<const uint4*>"), std::string::npos) << "no 16-byte row loads";
    EXPECT_NE(k.source.find("atomicAdd(lg_count + item, 1)"), std::string::npos);
    // One sequence's decode runs the one-row form: the same heads and chunks, three blocks an SM.
    ASSERT_TRUE(l.one_row) << k.name;
    EXPECT_EQ(l.one_row->split.heads_per_item, 2);
    EXPECT_EQ(l.one_row->split.items_per_row, 16);
    EXPECT_EQ(l.one_row->split.min_chunk, l.split->min_chunk);
    EXPECT_EQ(l.one_row->split.part_floats, l.split->part_floats);
    EXPECT_EQ(l.one_row->split.blocks_per_sm, 3);
    EXPECT_FALSE(l.one_row->split.tensor_cores);
    const std::string& one = prog.kernels[static_cast<size_t>(l.one_row->kernel)].source;
    EXPECT_NE(one.find("__launch_bounds__(256, 3)"), std::string::npos);
    EXPECT_NE(one.find("float acc[QG][NE], m[QG], l[QG];"), std::string::npos) << "queries not in registers";
    EXPECT_NE(k.source.find("__launch_bounds__(256, 2)"), std::string::npos);
    EXPECT_NE(k.source.find("float q[QG][NE], acc[QG][NE], m[QG], l[QG];"), std::string::npos);
  }
  EXPECT_EQ(attn, 1);
  EXPECT_NE(prog.plan_json().find("\"one_row_split_kv\""), std::string::npos);
  // A group of 2 in one block (Qwen3-0.6B's 16 query heads over 8 KV heads) has no one-row form.
  nlohmann::json c2 = c;
  c2["num_attention_heads"] = 16;
  ir::Graph gtwo = lang::lower_file(kSource + "/models/qwen3.lg", c2, lang::BindOptions{1024});
  const CudaProgram two = emit_batched(gtwo, {16, 129, 64, 256});
  int split_launches = 0;
  for (const auto& l : two.launches) {
    if (!l.split) continue;
    ++split_launches;
    EXPECT_EQ(l.split->heads_per_item, 2);
    EXPECT_FALSE(l.one_row) << two.kernels[static_cast<size_t>(l.kernel)].name;
  }
  EXPECT_EQ(split_launches, 1);
  EXPECT_NE(prog.plan_json().find("\"split_kv\""), std::string::npos);
  EXPECT_NE(prog.plan_json().find("\"wide_split_kv\""), std::string::npos);
  EXPECT_NE(prog.plan_json().find("\"tensor_cores\": true"), std::string::npos);
  EXPECT_GT(nvrtc_compile(prog.source(), g.model).size(), 1000u);
  int heads_wide = 0;
  for (const auto& l : heads.launches) {
    if (!l.wide) continue;
    ++heads_wide;
    EXPECT_FALSE(l.wide->split.tensor_cores);
    EXPECT_EQ(l.wide->split.heads_per_item, 4);
    EXPECT_EQ(l.wide->split.threads, 256);
    const std::string& wide = heads.kernels[static_cast<size_t>(l.wide->kernel)].source;
    EXPECT_NE(wide.find("QG = 4, NE = 8, LK = 16, KPW = 2, R = 2;"), std::string::npos);
  }
  EXPECT_EQ(heads_wide, 1);
  EXPECT_GT(nvrtc_compile(heads.source(), gh.model).size(), 1000u);
  // LG_COMPILED_ATTN_WIDE_ROWS=0: no wide form; a GQA group of 2 at head_dim 128 has none either
  // (both heads fit the one form, which then reads each K/V row once).
  setenv("LG_COMPILED_ATTN_WIDE_ROWS", "0", 1);
  ir::Graph g0 = lang::lower_file(kSource + "/models/qwen3.lg", c, lang::BindOptions{1024});
  const CudaProgram narrow = emit_batched(g0, {16, 129, 64, 256});
  unsetenv("LG_COMPILED_ATTN_WIDE_ROWS");
  c["num_key_value_heads"] = 16;
  ir::Graph g2 = lang::lower_file(kSource + "/models/qwen3.lg", c, lang::BindOptions{1024});
  const CudaProgram pairs = emit_batched(g2, {16, 129, 64, 256});
  for (const CudaProgram* pr : {&narrow, &pairs})
    for (const auto& l : pr->launches) EXPECT_FALSE(l.wide);
  // LG_COMPILED_ATTN_WIDE_FORM=mma: the pair gets the tensor-core form (tests run it so); a
  // head_dim the mma does not take (256) still gets no wide form.
  setenv("LG_COMPILED_ATTN_WIDE_FORM", "mma", 1);
  ir::Graph gm = lang::lower_file(kSource + "/models/qwen3.lg", c, lang::BindOptions{1024});
  const CudaProgram forced = emit_batched(gm, {16, 129, 64, 256});
  c["head_dim"] = 256;
  ir::Graph g256 = lang::lower_file(kSource + "/models/qwen3.lg", c, lang::BindOptions{1024});
  const CudaProgram wide256 = emit_batched(g256, {16, 129, 64, 256});
  unsetenv("LG_COMPILED_ATTN_WIDE_FORM");
  int forced_wide = 0;
  for (const auto& l : forced.launches)
    if (l.wide) {
      ++forced_wide;
      EXPECT_TRUE(l.wide->split.tensor_cores);
      EXPECT_EQ(l.wide->split.heads_per_item, 2);
    }
  EXPECT_EQ(forced_wide, 1);
  for (const auto& l : wide256.launches) EXPECT_FALSE(l.wide);
}

// The split-KV chunk loop (8B head shape, one KV head's 2 query heads a block): the queries are
// formed once a block into shared memory; keys and row offsets in 32-bit arithmetic; scores in
// base-2 units (scale * log2(e) = 0.0883883476 * 1.44269504) exponentiated by ex2.approx, the
// state handed to the shared merge in natural units; the rescale only when the max rises; the
// iterations whose keys are all in the chunk neither clamp nor mask, a warp's last one does.
// LG_COMPILED_ATTN_EXP2=0 and LG_COMPILED_ATTN_LAZY=0 give the natural-units, always-rescaling loop
// back. All compile for sm_90.
TEST(EmitLgPrograms, SplitKvChunkLoopScoresInBase2AndMasksOnlyItsLastIteration) {
  nlohmann::json c8 = config_of(kShared + "/models/qwen3-pycode-22m");
  c8.update({{"hidden_size", 4096}, {"intermediate_size", 12288}, {"num_hidden_layers", 2}, {"num_attention_heads", 32},
             {"num_key_value_heads", 8}, {"head_dim", 128}, {"vocab_size", 1024}});
  // The first split-KV launch's own kernel and its one-row form.
  auto attention = [](const CudaProgram& prog, bool one_row) {
    for (const auto& l : prog.launches)
      if (l.split && (!one_row || l.one_row))
        return prog.kernels[static_cast<size_t>(one_row ? l.one_row->kernel : l.kernel)].source;
    return std::string();
  };
  const CudaProgram prog = emit_bf16("qwen3.lg", c8);
  for (const bool one_row : {false, true}) {
    SCOPED_TRACE(one_row ? "one-row form" : "narrow form");
    const std::string k = attention(prog, one_row);
    ASSERT_FALSE(k.empty());
    EXPECT_EQ(count(k, "split-KV (flash-decoding), 2 query head(s) per block"), 1u);
    EXPECT_EQ(count(k, "s_q[i] = "), 1u);
    EXPECT_EQ(count(k, "const int k0i = (int)k0, k1i = (int)k1;"), 1u);
    EXPECT_EQ(count(k, "(unsigned)row * (unsigned)DH"), 1u);
    EXPECT_EQ(count(k, "sc[r] = full || j0 + r * KPW + sub < k1i ? d * 0.127517431f : NEG_INF;"), 1u);
    EXPECT_EQ(count(k, "lg_fa::exp2_approx(sc[r] - mu)"), 1u);
    EXPECT_EQ(count(k, "s_m[wid][g] = m[g] * 0.6931471805599453f;"), 1u);
    EXPECT_EQ(count(k, "if (mx > m[g]) {"), 1u);
    EXPECT_EQ(count(k, "use_rounds(j0, kr, vr, true);"), 1u);
    EXPECT_EQ(count(k, "use_rounds(j0, kr, vr, false);"), 1u);
    EXPECT_EQ(count(k, "for (; j0 + KPW * R <= k1i; j0 += NW * KPW * R) {"), 1u);
    // The one-row form reads the queries from shared memory, 4 at a time, every head's dots first.
    EXPECT_EQ(count(k, "float dots[QG][R];"), one_row ? 1u : 0u);
    EXPECT_EQ(count(k, "float q[QG][NE]"), one_row ? 0u : 1u);
  }
  EXPECT_GT(nvrtc_compile(prog.source(), "qwen3").size(), 1000u);
  setenv("LG_COMPILED_ATTN_LAZY", "0", 1);
  const CudaProgram natural = emit_bf16("qwen3.lg", c8, "LG_COMPILED_ATTN_EXP2", "0");
  unsetenv("LG_COMPILED_ATTN_LAZY");
  const std::string kn = attention(natural, false);
  EXPECT_EQ(count(kn, "exp2_approx"), 0u);
  EXPECT_EQ(count(kn, "if (mx > m[g])"), 0u);
  EXPECT_EQ(count(kn, "d * 0.0883883476f"), 1u);
  EXPECT_EQ(count(kn, "const float pr = __expf(sc[r] - mu);"), 1u);
  EXPECT_GT(nvrtc_compile(natural.source(), "qwen3").size(), 1000u);
}

// Gemma 3's local layers (sliding window 8) and a soft-capped Gemma 2-style variant: the decode
// attention of a local layer starts its chunks at the window's first key (lo = len - 8) and sizes
// its splits by the window, not the context; the flash prefill kernel gets the window and the cap;
// the K/V pack copies from the window's first row on; the global layers' kernels have neither. No
// attention kernel scores the whole cache (the masked full-cache form a window must not fall back to).
TEST(EmitLgPrograms, SlidingWindowBoundsTheKeysOfDecodeAndPrefillAttention) {
  nlohmann::json c = config_of(kShared + "/fixtures/tiny-gemma3");
  ir::Graph g = lang::lower_file(kSource + "/models/gemma3_text.lg", c, lang::BindOptions{1024});
  const CudaProgram prog = emit_batched(g, {16, 129, 64, 256});
  int local = 0, global = 0;
  for (const auto& l : prog.launches) {
    const Kernel& k = prog.kernels[static_cast<size_t>(l.kernel)];
    if (k.name.find("_attention") == std::string::npos) continue;
    ASSERT_TRUE(l.split) << k.name;
    const bool windowed = k.source.find("max(0L, len - 8L)") != std::string::npos;
    EXPECT_NE(k.source.find("k0 = max(lo, k1 - chunk)"), std::string::npos);
    (windowed ? local : global) += 1;
    EXPECT_EQ(windowed, l.layer % 2 == 0) << "layer " << l.layer;  // layer_types: sliding, full, sliding, full
    // Splits: as many as chunks of min_chunk fill the window (8 positions: one), or the context.
    EXPECT_EQ(l.split->max_splits, windowed ? 1 : (1024 + l.split->min_chunk - 1) / l.split->min_chunk) << k.name;
    ASSERT_TRUE(l.prefill) << k.name;
    const std::string& fa = prog.kernels[static_cast<size_t>(l.prefill->epilogue_kernel)].source;
    EXPECT_NE(fa.find(windowed ? ", sm, 8, 0.0f);" : ", sm, 0, 0.0f);"), std::string::npos) << fa;
    ASSERT_FALSE(l.prefill->packs.empty());
  }
  EXPECT_EQ(local, 2);
  EXPECT_EQ(global, 2);
  int packs_from_lo = 0;
  for (const auto& k : prog.kernels)
    if (k.source.find("K/V cache rows of a prefill attention") != std::string::npos &&
        k.source.find("(long)mn - 7L") != std::string::npos)
      ++packs_from_lo;
  EXPECT_GE(packs_from_lo, 1);
  EXPECT_GT(nvrtc_compile(prog.source(), g.model).size(), 1000u);

  // Soft-capped scores (attn_logit_softcapping as Gemma 2 applies it), through a program that asks.
  const std::string lg = read_text(kSource + "/models/gemma3_text.lg");
  const std::string call = "window=local ? sw : none, scale=scale)";
  ASSERT_NE(lg.find(call), std::string::npos);
  std::string capped = lg;
  capped.replace(capped.find(call), call.size(), "window=local ? sw : none, scale=scale, softcap=50.0)");
  const auto out = lang::check_source("capped.lg", capped, c, lang::BindOptions{256});
  ASSERT_TRUE(out.ok) << out.rendered;
  ir::Graph gc = out.report.graph;
  lift::StagedProgram pc = lift::lift(gc);
  lift::fuse(pc);
  const CudaProgram progc = emit_program(pc);
  int tanh_decode = 0, tanh_flash = 0;
  for (const auto& k : progc.kernels) {
    // The split-KV kernel scores in base-2 units: the cap times log2(e).
    if (k.source.find("72.134752f * tanhf(d * ") != std::string::npos) ++tanh_decode;
    if (k.source.find(", 50.0f);") != std::string::npos) ++tanh_flash;  // attention_block(..., sm, window, softcap)
  }
  EXPECT_GE(tanh_decode, 1);
  EXPECT_GE(tanh_flash, 1);
  EXPECT_GT(nvrtc_compile(progc.source(), gc.model).size(), 1000u);
}

}  // namespace
}  // namespace lg::emit::cuda
