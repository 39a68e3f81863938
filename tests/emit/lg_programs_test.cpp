// The acceptance check of emission: the CUDA programs of models/qwen3.lg and models/qwen2.lg for
// every fixture config and the 22M model, and of models/examples/cc_mlp.lg, gpt2.lg and gelu_mlp.lg,
// compile for sm_90 with NVRTC on a machine without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <nlohmann/json.hpp>

#include "emit/cuda/nvrtc.h"
#include "emit/cuda/program.h"
#include "ir/batch.h"
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

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// How many times `what` occurs in `src`.
size_t count(const std::string& src, const std::string& what) {
  size_t n = 0;
  for (size_t at = src.find(what); at != std::string::npos; at = src.find(what, at + 1)) ++n;
  return n;
}

/// `g` made batched (ir::make_batched: ragged steps, paged bf16 states), lifted, fused and emitted
/// as the compiled lane and `lg compile` emit it.
CudaProgram emit_batched(ir::Graph& g, const ir::BatchOptions& batch, const lift::FuseOptions& fusion = {}) {
  ir::make_batched(g, batch);
  lift::StagedProgram p = lift::lift(g);
  lift::fuse(p, fusion);
  return emit_program(p, {.bf16_states = true});
}

/// models/`lg` lowered for `config` with bf16 weights (the decode GEMV's fast path streams bf16;
/// the fixtures are fp32) and emitted as emit_batched does, with the A/B switch `knob` (an
/// environment variable) set to `value` while it emits; none when `knob` is null.
CudaProgram emit_bf16(const std::string& lg, nlohmann::json config, const char* knob = nullptr, const char* value = nullptr) {
  config["dtype"] = "bfloat16";
  if (knob) {
    EXPECT_EQ(setenv(knob, value, 1), 0);
  }
  ir::Graph g = lang::lower_file(kSource + "/models/" + lg, config, lang::BindOptions{128});
  CudaProgram prog = emit_batched(g, {16, 129, 64, 256});
  if (knob) unsetenv(knob);
  return prog;
}

TEST(EmitLgPrograms, QwenProgramsCompileForSm90) {
  compiles("qwen3.lg", config_of(kShared + "/fixtures/tiny-qwen3"));
  compiles("qwen3.lg", config_of(kShared + "/fixtures/tiny-qwen3-untied-mqa"));
  compiles("qwen2.lg", config_of(kShared + "/fixtures/tiny-qwen2"));
  compiles("qwen3.lg", config_of(kShared + "/models/qwen3-pycode-22m"));
}

TEST(EmitLgPrograms, OtherFamilyProgramsCompileForSm90) {
  compiles("llama.lg", config_of(kShared + "/fixtures/tiny-llama3"));
  compiles("mistral.lg", config_of(kShared + "/fixtures/tiny-mistral"));
  compiles("phi3.lg", config_of(kShared + "/fixtures/tiny-phi3"));
  compiles("gpt2.lg", config_of(kShared + "/fixtures/tiny-gpt2"));
  compiles("gemma3_text.lg", config_of(kShared + "/fixtures/tiny-gemma3"));
  nlohmann::json windowed = config_of(kShared + "/fixtures/tiny-mistral");
  windowed["sliding_window"] = 8;
  compiles("mistral.lg", windowed);
}

// Qwen3-MoE: the topk and experts kernels compile, on the tiny fixture (f32 weights: the generic
// dot loops) and batched at the Qwen3-30B-A3B configuration (bench/shapes/qwen3-30b-a3b: 128
// experts, top-8, hidden 2048, expert FFN 768, 48 layers; bf16 weights: 16-byte weight loads).
// Every sparse layer has its router top-k and two experts launches, and the experts kernels read
// the weights through the routed index (no kernel walks all 128 experts) and their stored
// activation rows (the normed hidden state, the SwiGLU products) as float4, not one float at a
// time through a lambda. The top-k stage's two outputs (values, indices) come from one loop: a
// loop each carried a copy of the whole routing computation's code.
TEST(EmitLgPrograms, Qwen3MoeCompilesForSm90AtTheTinyAnd30bA3bShapes) {
  compiles("qwen3_moe.lg", config_of(kShared + "/fixtures/tiny-qwen3-moe"));
  const nlohmann::json c = config_of(kSource + "/bench/shapes/qwen3-30b-a3b");
  ir::Graph g = lang::lower_file(kSource + "/models/qwen3_moe.lg", c, lang::BindOptions{4096});
  ir::make_batched(g, {16, 256, 64, 512});
  lift::StagedProgram p = lift::lift(g);
  lift::fuse(p);
  int topk = 0, experts = 0;
  for (const auto& st : p.stages) {
    topk += st.kind == lift::StageKind::TopK;
    experts += st.kind == lift::StageKind::Experts;
  }
  EXPECT_EQ(topk, 48);
  EXPECT_EQ(experts, 96);
  const CudaProgram prog = emit_program(p, {.bf16_states = true});
  int expert_kernels = 0;
  for (const auto& k : prog.kernels) {
    if (!k.name.ends_with("_experts")) continue;  // the decode form (not _experts_route, _mma, _combine)
    ++expert_kernels;
    EXPECT_NE(k.source.find("lg_ld_stream"), std::string::npos) << k.name << ": no 16-byte bf16 weight loads";
    EXPECT_NE(k.source.find("const long e = (long)"), std::string::npos) << k.name;
    EXPECT_NE(k.source.find("const float4 x0 = __ldg(xr), x1 = __ldg(xr + 1);"), std::string::npos) << k.name;
  }
  int topk_kernels = 0;
  for (const auto& k : prog.kernels) {
    if (k.name.find("_topk") == std::string::npos) continue;
    ++topk_kernels;
    size_t loops = 0;
    for (size_t at = k.source.find("for (long e = "); at != std::string::npos; at = k.source.find("for (long e = ", at + 1))
      ++loops;
    EXPECT_EQ(loops, 1u) << k.name;
    EXPECT_NE(k.source.find("const auto lg_v1 = "), std::string::npos) << k.name << ": one output per loop";
    EXPECT_NE(k.source.find("lg_warp_max_u32((unsigned)(b >> 32))"), std::string::npos) << k.name << ": redux rounds";
  }
  EXPECT_GE(topk_kernels, 1);
  // gate/up and down, shared by the first 47 layers; the last layer's run on the B rows the result
  // keeps (ir/batch.h), reading their inputs through the row gather: other kernels.
  EXPECT_GE(expert_kernels, 2);
  EXPECT_LE(expert_kernels, 4);
  // At many tokens every experts launch runs on the tensor cores: route, the grouped GEMM
  // (gate/up's SwiGLU written by the GEMM itself, two products from one activation tile), and
  // down's routing-weighted combine as its epilogue.
  int tensor_core_forms = 0;
  for (const auto& l : prog.launches) {
    if (!l.prefill || !l.prefill->experts) continue;
    ++tensor_core_forms;
    const auto& ex = *l.prefill->experts;
    EXPECT_EQ(ex.experts, 128);
    EXPECT_EQ(ex.slots, 8);
    EXPECT_NE(prog.kernels[static_cast<size_t>(ex.route_kernel)].source.find("lg_moe::route(lg_expert"), std::string::npos);
    const std::string& mma = prog.kernels[static_cast<size_t>(ex.gemm_kernel)].source;
    const bool up = mma.find("lg_moe::grouped_gemm<2>") != std::string::npos;
    EXPECT_TRUE(up || mma.find("lg_moe::grouped_gemm<1>") != std::string::npos) << mma;
    EXPECT_EQ(l.prefill->epilogue_kernel >= 0, !up) << "a combine for down only";
    EXPECT_EQ(ex.col_tiles, up ? 768 / 64 : 2048 / 64);
  }
  EXPECT_EQ(tensor_core_forms, 96);
  EXPECT_GT(nvrtc_compile(prog.source(), g.model).size(), 1000u);
}

// moe_down's one-token form loads its routed rows before the wait on the previous launch: its
// indices come from the topk stage two launches back, final when the kernel starts (every kernel
// triggers its dependents only after its own wait). moe_gate_up reads the indices the launch just
// before it writes, so it waits first. LG_COMPILED_MOE_EARLY_ROWS=0 keeps the wait at the head.
TEST(EmitLgPrograms, MoeDownLoadsItsRoutedRowsBeforeTheWaitOnGateUp) {
  auto emit_30b = [](const char* knob) {
    if (knob) {
      EXPECT_EQ(setenv("LG_COMPILED_MOE_EARLY_ROWS", knob, 1), 0);
    }
    ir::Graph g = lang::lower_file(kSource + "/models/qwen3_moe.lg", config_of(kSource + "/bench/shapes/qwen3-30b-a3b"),
                                   lang::BindOptions{4096});
    CudaProgram prog = emit_batched(g, {16, 256, 64, 512});
    unsetenv("LG_COMPILED_MOE_EARLY_ROWS");
    return prog;
  };
  const std::string wait = "lg_wait_previous_launch();";
  int downs = 0, ups = 0;
  for (const auto& k : emit_30b(nullptr).kernels) {
    if (!k.name.ends_with("_experts")) continue;
    const size_t first_wait = k.source.find(wait), loop = k.source.find("else\n    for (long o = ");
    ASSERT_NE(first_wait, std::string::npos) << k.name;
    ASSERT_NE(loop, std::string::npos) << k.name;
    if (k.source.find("moe_down") != std::string::npos) {
      ++downs;
      // In the one-token loop: the routed index, the rows' loads, then the wait, then the
      // activations (gate/up's products) and the weighted sum.
      const size_t index = k.source.find("long e = (long)", loop), rows = k.source.find("lg_ld_stream(", loop),
                   waited = k.source.find("if (!lg_waited) { " + wait, loop), acts = k.source.find("__ldg(xr)", loop);
      ASSERT_NE(waited, std::string::npos) << k.name;
      EXPECT_LT(index, rows) << k.name;
      EXPECT_LT(rows, waited) << k.name;
      EXPECT_LT(waited, acts) << k.name;
      // The many-token form waits before anything: the kernel's first wait is that form's.
      EXPECT_EQ(k.source.rfind("\n", first_wait), k.source.find("\n    if (T > 1) { " + wait)) << k.name;
      // Two blocks an SM: without the bound, ptxas took the kernel to 170 registers (session 22).
      EXPECT_NE(k.source.find("__launch_bounds__(256, 2)"), std::string::npos) << k.name;
    } else {
      ++ups;
      EXPECT_LT(first_wait, k.source.find("lg_ld_stream(")) << k.name << ": gate/up reads the indices just written";
      EXPECT_EQ(k.source.find("lg_waited"), std::string::npos) << k.name;
    }
  }
  EXPECT_GE(downs, 1);
  EXPECT_GE(ups, 1);
  for (const auto& k : emit_30b("0").kernels)
    if (k.name.ends_with("_experts")) {
      EXPECT_EQ(k.source.find("lg_waited"), std::string::npos) << k.name;
    }
}

// The post-attention RMSNorm of Qwen3-MoE is the router GEMM's prologue
// (pass_gemm_reduce_prologue_shared), and that stage writes the normed rows the experts read: the
// decode GEMV's grid after its prologue, and at T > 1 the pack kernel beside the bf16 copy it
// packs for cuBLASLt. Without the pass the norm is a launch of its own.
TEST(EmitLgPrograms, MoeRouterGemmWritesTheNormedRowsForTheExperts) {
  auto emit_30b = [](bool shared) {
    ir::Graph g = lang::lower_file(kSource + "/models/qwen3_moe.lg", config_of(kSource + "/bench/shapes/qwen3-30b-a3b"),
                                   lang::BindOptions{4096});
    lift::FuseOptions fusion;
    fusion.gemm_reduce_prologue_shared = shared;
    return emit_batched(g, {16, 256, 64, 512}, fusion);
  };
  const std::string row_write = "// a row the prologue computed, for other stages";
  auto count = [&](const CudaProgram& prog, bool packs) {
    int n = 0;
    for (const auto& k : prog.kernels) {
      if (packs != k.name.ends_with("_pack")) continue;
      if (packs ? k.source.find("packed[e] = lg_v0; p") != std::string::npos : k.source.find(row_write) != std::string::npos)
        ++n;
    }
    return n;
  };
  const CudaProgram on = emit_30b(true), off = emit_30b(false);
  EXPECT_GE(count(on, false), 1) << "a decode GEMV writes the normed rows";
  EXPECT_GE(count(on, true), 1) << "a pack kernel writes the normed rows beside the bf16 ones";
  EXPECT_EQ(count(off, false), 0);
  EXPECT_EQ(count(off, true), 0);
  EXPECT_EQ(on.launches.size() + 48, off.launches.size()) << "one launch fewer a sparse layer";
}

// The batched programs the compiled lane and `lg compile` make (ir::make_batched: paged states in
// bf16, the step's sequence and block-table inputs, T and B row counts): every kernel, the prefill
// forms' pack kernels that read the paged cache included, compiles. Blocks of 16 (the default) and
// of 4 with a small pool (other constants in the index arithmetic).
TEST(EmitLgPrograms, BatchedQwenProgramsCompileForSm90) {
  struct Case {
    std::string lg, config;
    ir::BatchOptions batch;
  };
  // Head dims 32, 16 (MQA too) and 128: the split-KV attention's 16-byte row loads with 4, 2 and
  // 16 lanes per key.
  for (const Case& c : {Case{"qwen3.lg", kShared + "/fixtures/tiny-qwen3", {16, 64, 32, 256}},
                        Case{"qwen2.lg", kShared + "/fixtures/tiny-qwen2", {4, 100, 3, 24}},
                        Case{"qwen3.lg", kShared + "/fixtures/tiny-qwen3-untied-mqa", {16, 65, 8, 64}},
                        Case{"qwen3.lg", kShared + "/models/qwen3-pycode-22m", {16, 33, 16, 128}},
                        Case{"llama.lg", kShared + "/fixtures/tiny-llama3", {16, 64, 32, 256}},
                        Case{"mistral.lg", kShared + "/fixtures/tiny-mistral", {4, 100, 3, 24}},
                        Case{"phi3.lg", kShared + "/fixtures/tiny-phi3", {16, 64, 32, 256}},
                        Case{"gpt2.lg", kShared + "/fixtures/tiny-gpt2", {4, 100, 3, 24}},
                        Case{"gemma3_text.lg", kShared + "/fixtures/tiny-gemma3", {16, 64, 32, 256}},
                        Case{"gemma3_text.lg", kShared + "/fixtures/tiny-gemma3", {4, 100, 3, 24}}}) {
    SCOPED_TRACE(c.lg + " on " + c.config);
    ir::Graph g = lang::lower_file(kSource + "/models/" + c.lg, config_of(c.config), lang::BindOptions{128});
    const CudaProgram prog = emit_batched(g, c.batch);
    EXPECT_NE(prog.source().find("unsigned short* __restrict__"), std::string::npos) << "no bf16 state";
    // A bf16 state's element is read through lg_bf16 (widened), never as a raw 16-bit integer: a
    // `return pN[...]` of such a pointer compiles and reads garbage (found on the H200).
    for (const auto& k : prog.kernels) {
      const std::regex decl(R"(unsigned short\* __restrict__ (p[0-9]+))");
      for (std::sregex_iterator it(k.source.begin(), k.source.end(), decl), end; it != end; ++it)
        EXPECT_EQ(k.source.find("return " + (*it)[1].str() + "["), std::string::npos)
            << k.name << " reads bf16 " << (*it)[1] << " as a number";
    }
    EXPECT_GT(nvrtc_compile(prog.source(), g.model).size(), 1000u);
  }
}

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

CudaProgram program_of(const std::string& lg, const nlohmann::json& config) {
  ir::Graph g = lang::lower_file(kSource + "/models/" + lg, config, lang::BindOptions{128});
  lift::StagedProgram p = lift::lift(g);
  lift::fuse(p);
  return emit_program(p);
}

// Every layer's launches run the same kernels (the KV cache's layer index is the parameter lg_l,
// not a constant): the kernel count does not grow with num_hidden_layers, and the per-layer
// launches pass their own layer.
TEST(EmitLgPrograms, LayersShareKernelsThroughTheLayerParameter) {
  nlohmann::json c = config_of(kShared + "/fixtures/tiny-qwen3");
  c["num_hidden_layers"] = 2;
  const CudaProgram two = program_of("qwen3.lg", c);
  c["num_hidden_layers"] = 6;
  const CudaProgram six = program_of("qwen3.lg", c);
  EXPECT_EQ(two.kernels.size(), six.kernels.size());
  std::set<int64_t> layers;
  for (const auto& l : six.launches)
    if (l.layer >= 0) layers.insert(l.layer);
  EXPECT_EQ(layers, (std::set<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_NE(six.source().find("const long lg_l"), std::string::npos);
}

// At T > 1 every projection GEMM of the Qwen program has the tensor-core form (pack kernels,
// cuBLASLt GEMMs, epilogue) and the attention its flash-attention form; plan.json says so.
TEST(EmitLgPrograms, QwenPrefillRunsGemmsOnCublasLtAndAttentionOnTensorCores) {
  const CudaProgram prog = program_of("qwen3.lg", config_of(kShared + "/models/qwen3-pycode-22m"));
  int gemm = 0, lt = 0, attn = 0, flash = 0;
  for (const auto& l : prog.launches) {
    const std::string& k = prog.kernels[static_cast<size_t>(l.kernel)].name;
    if (k.find("_gemm") != std::string::npos) {
      ++gemm;
      if (l.prefill && !l.prefill->gemms.empty()) ++lt;  // down_proj has no pack: see GateUpEpilogue...
    }
    if (k.find("_attention") != std::string::npos) {
      ++attn;
      if (l.prefill &&
          prog.kernels[static_cast<size_t>(l.prefill->epilogue_kernel)].source.find("lg_fa::attention_block") !=
              std::string::npos)
        ++flash;
    }
  }
  EXPECT_GT(gemm, 0);
  EXPECT_EQ(lt, gemm);
  EXPECT_GT(attn, 0);
  EXPECT_EQ(flash, attn);
  EXPECT_NE(prog.plan_json().find("cublaslt"), std::string::npos);
}

// At T > 1 the projections over one activation run as one cuBLASLt GEMM (q, k and v; gate and
// up): their weights lie one after another in the first one's allocation, and the epilogue reads
// each projection's columns of the shared output. LG_COMPILED_GEMM_STACK=0 keeps a GEMM a weight.
TEST(EmitLgPrograms, ProjectionsOverOneActivationShareAStackedGemm) {
  const nlohmann::json c = config_of(kShared + "/models/qwen3-pycode-22m");
  const int64_t D = c["hidden_size"], F = c["intermediate_size"], hd = c["head_dim"];
  const int64_t nq = hd * c["num_attention_heads"].get<int64_t>(), nkv = hd * c["num_key_value_heads"].get<int64_t>();
  const CudaProgram prog = program_of("qwen3.lg", c);
  int qkv = 0, gate_up = 0, residual = 0;
  for (const auto& l : prog.launches) {
    if (!l.prefill || l.prefill->gemms.empty()) continue;
    ASSERT_EQ(l.prefill->gemms.size(), 1u) << "launch of kernel " << prog.kernels[static_cast<size_t>(l.kernel)].name;
    const auto& gm = l.prefill->gemms[0];
    const Buffer& head = prog.buffers[static_cast<size_t>(gm.w)];
    EXPECT_EQ(head.stack, -1);
    if (gm.c >= 0) {  // o_proj, down_proj: residual + dot, no epilogue; not stacked
      ++residual;
      EXPECT_EQ(head.stack_bytes, 0);
      continue;
    }
    // The stack's members: the buffers placed in the head's allocation, in order of offset.
    std::vector<const Buffer*> members{&head};
    for (const auto& b : prog.buffers)
      if (b.stack == gm.w) members.push_back(&b);
    std::sort(members.begin() + 1, members.end(), [](auto* a, auto* b) { return a->stack_offset < b->stack_offset; });
    int64_t offset = 0, rows = 0;
    for (const Buffer* b : members) {
      EXPECT_EQ(b == &head ? 0 : b->stack_offset, offset) << b->name;
      offset += b->bytes;
      rows += b->elems_const / D;
    }
    EXPECT_EQ(head.stack_bytes, members.size() > 1 ? offset : 0);  // the LM head: a weight alone
    EXPECT_EQ(gm.N, rows);
    const std::string& epi = prog.kernels[static_cast<size_t>(l.prefill->epilogue_kernel)].source;
    if (head.name.find("q_proj") != std::string::npos) {
      ++qkv;
      ASSERT_EQ(members.size(), 3u);
      EXPECT_NE(members[1]->name.find("k_proj"), std::string::npos);
      EXPECT_NE(members[2]->name.find("v_proj"), std::string::npos);
      EXPECT_EQ(gm.N, nq + 2 * nkv);
      // v's columns start after q's and k's.
      EXPECT_NE(epi.find(" * " + std::to_string(gm.N) + "L + " + std::to_string(nq + nkv) + "L + "), std::string::npos);
    } else if (head.name.find("gate_proj") != std::string::npos) {
      ++gate_up;
      ASSERT_EQ(members.size(), 2u);
      EXPECT_NE(members[1]->name.find("up_proj"), std::string::npos);
      EXPECT_EQ(gm.N, 2 * F);
      EXPECT_NE(epi.find(" * " + std::to_string(2 * F) + "L + " + std::to_string(F) + "L + "), std::string::npos);
    }
  }
  const int layers = c["num_hidden_layers"];
  EXPECT_EQ(qkv, layers);
  EXPECT_EQ(gate_up, layers);
  EXPECT_EQ(residual, 2 * layers);
  EXPECT_NE(prog.plan_json().find("\"stack_bytes\""), std::string::npos);

  setenv("LG_COMPILED_GEMM_STACK", "0", 1);
  const CudaProgram apart = program_of("qwen3.lg", c);
  unsetenv("LG_COMPILED_GEMM_STACK");
  size_t gemms = 0;
  for (const auto& l : apart.launches)
    if (l.prefill) gemms += l.prefill->gemms.size();
  EXPECT_EQ(gemms, static_cast<size_t>(7 * layers + 1));  // q, k, v, o, gate, up, down; the LM head
  for (const auto& b : apart.buffers) EXPECT_TRUE(b.stack < 0 && b.stack_bytes == 0) << b.name;
}

// At T > 1 the gate/up epilogue writes the SwiGLU product as bf16 too, and down_proj's GEMM reads
// that copy as its A operand: no pack kernel for it. LG_COMPILED_EPILOGUE_PACK=0 packs it apart.
TEST(EmitLgPrograms, GateUpEpilogueWritesDownProjectionsOperand) {
  const nlohmann::json c = config_of(kShared + "/models/qwen3-pycode-22m");
  const int64_t F = c["intermediate_size"];
  auto down_launches = [&](const CudaProgram& prog, bool copied) {
    int n = 0;
    for (size_t i = 1; i < prog.launches.size(); ++i) {
      // down_proj: the launch after gate/up.
      const auto& gu = prog.launches[i - 1];
      const auto& l = prog.launches[i];
      if (!gu.prefill || gu.prefill->gemms.empty() || !l.prefill ||
          prog.buffers[static_cast<size_t>(gu.prefill->gemms[0].w)].name.find("gate_proj") == std::string::npos)
        continue;
      ++n;
      EXPECT_EQ(l.prefill->gemms[0].K, F);
      const int32_t a = l.prefill->gemms[0].a;
      if (!copied) {
        ASSERT_EQ(l.prefill->packs.size(), 1u);
        EXPECT_EQ(l.prefill->packs[0].args.back(), a);
        continue;
      }
      EXPECT_TRUE(l.prefill->packs.empty());
      // gate/up writes `a` from its epilogue, after its dot buffer.
      ASSERT_GE(gu.prefill->epilogue_kernel, 0);
      EXPECT_EQ(gu.prefill->epilogue_args.back(), a);
      const Buffer& b = prog.buffers[static_cast<size_t>(a)];
      EXPECT_EQ(b.dtype, DType::BF16);
      EXPECT_LE(b.first_launch, static_cast<int32_t>(i - 1));
      EXPECT_GE(b.last_launch, static_cast<int32_t>(i));
      const std::string& epi = prog.kernels[static_cast<size_t>(gu.prefill->epilogue_kernel)].source;
      EXPECT_NE(epi.find("unsigned short* __restrict__ c0"), std::string::npos);
      EXPECT_NE(epi.find("= lg_to_bf16(o);"), std::string::npos);
    }
    EXPECT_EQ(n, c["num_hidden_layers"].get<int>());
  };
  down_launches(program_of("qwen3.lg", c), true);
  setenv("LG_COMPILED_EPILOGUE_PACK", "0", 1);
  const CudaProgram apart = program_of("qwen3.lg", c);
  unsetenv("LG_COMPILED_EPILOGUE_PACK");
  down_launches(apart, false);
}

/// The plan's invariants for the prefill forms' weights and operands: a stacked GEMM's weights
/// lie one after another inside the first one's allocation and fill it, and N covers them all;
/// every GEMM's bf16 A operand is written earlier in the step (by a pack kernel of its launch, or
/// by an earlier launch's epilogue as a copy of its store) and live until the GEMM. Counts the
/// stacked GEMMs and the epilogue-written operands.
void check_prefill_plan(const CudaProgram& prog, int& stacks, int& copies) {
  std::map<int32_t, std::vector<const Buffer*>> members;
  for (const auto& b : prog.buffers)
    if (b.stack >= 0) {
      EXPECT_EQ(b.kind, BufferKind::Weight) << b.name;
      EXPECT_EQ(prog.buffers.at(static_cast<size_t>(b.stack)).stack, -1) << b.name;
      members[b.stack].push_back(&b);
    }
  for (auto& [h, ms] : members) {
    const Buffer& head = prog.buffers.at(static_cast<size_t>(h));
    std::sort(ms.begin(), ms.end(), [](auto* a, auto* b) { return a->stack_offset < b->stack_offset; });
    int64_t end = head.bytes;
    for (const Buffer* b : ms) {
      EXPECT_EQ(b->stack_offset, end) << b->name;
      end = b->stack_offset + b->bytes;
    }
    EXPECT_EQ(head.stack_bytes, end) << head.name;
  }
  for (size_t i = 0; i < prog.launches.size(); ++i) {
    const auto& l = prog.launches[i];
    if (!l.prefill) continue;
    for (const auto& gm : l.prefill->gemms) {
      const Buffer& w = prog.buffers.at(static_cast<size_t>(gm.w));
      EXPECT_EQ(gm.N * gm.K * 2, w.stack_bytes > 0 ? w.stack_bytes : w.bytes) << w.name;
      stacks += w.stack_bytes > 0;
      bool packed = false;
      for (const auto& pk : l.prefill->packs) packed = packed || pk.args.back() == gm.a;
      if (packed) continue;
      bool written = false;  // by an earlier launch's epilogue
      for (size_t j = 0; j < i && !written; ++j) {
        const auto& e = prog.launches[j].prefill;
        written = e && e->epilogue_kernel >= 0 &&
                  std::find(e->epilogue_args.begin(), e->epilogue_args.end(), gm.a) != e->epilogue_args.end();
      }
      const Buffer& a = prog.buffers.at(static_cast<size_t>(gm.a));
      EXPECT_TRUE(written) << "launch " << i << ": A operand " << a.name << " is written by no earlier launch";
      EXPECT_EQ(a.dtype, DType::BF16) << a.name;
      EXPECT_GE(a.last_launch, static_cast<int32_t>(i)) << a.name;
      copies += written;
    }
  }
}

// Every bf16 family program (two layers of its real shape), one sequence and batched, keeps the
// prefill plan's invariants; those with separate q/k/v and gate/up projections stack them, and
// every SwiGLU/GeGLU MLP hands down_proj its operand from the gate/up epilogue.
TEST(EmitLgPrograms, PrefillPlansOfEveryFamilyHoldTheirInvariants) {
  const std::vector<std::pair<std::string, std::string>> programs = {
      {"qwen3.lg", kShared + "/models/qwen3-pycode-22m"},
      {"llama.lg", kSource + "/bench/shapes/llama-3.1-8b"},
      {"mistral.lg", kSource + "/bench/shapes/mistral-7b-v0.3"},
      {"gemma3_text.lg", kSource + "/bench/shapes/gemma-3-12b-text"},
      {"qwen3_moe.lg", kSource + "/bench/shapes/qwen3-30b-a3b"}};
  for (const auto& [lg, dir] : programs)
    for (const bool batched : {false, true}) {
      SCOPED_TRACE(lg + (batched ? " batched" : ""));
      nlohmann::json c = config_of(dir);
      c["num_hidden_layers"] = 2;
      if (c.contains("layer_types")) c.erase("layer_types");
      if (c.contains("mlp_only_layers")) c["mlp_only_layers"] = nlohmann::json::array();
      ir::Graph g = lang::lower_file(kSource + "/models/" + lg, c, lang::BindOptions{256});
      CudaProgram prog;
      if (batched) {
        prog = emit_batched(g, {16, 129, 64, 256});
      } else {
        lift::StagedProgram p = lift::lift(g);
        lift::fuse(p);
        prog = emit_program(p);
      }
      int stacks = 0, copies = 0;
      check_prefill_plan(prog, stacks, copies);
      const bool moe = lg == "qwen3_moe.lg";
      EXPECT_EQ(stacks, moe ? 2 : 4);  // q/k/v a layer, and gate/up a layer but in the MoE's experts
      EXPECT_EQ(copies, moe ? 0 : 2);  // down_proj's operand a layer (the MoE's experts have their own form)
    }
}

TEST(EmitLgPrograms, NonQwenProgramCompilesForSm90) {
  compiles("examples/cc_mlp.lg", {{"vocab_size", 50}, {"hidden_size", 32}, {"intermediate_size", 64},
                                  {"num_hidden_layers", 2}});
  compiles("gpt2.lg", {{"model_type", "gpt2"}, {"vocab_size", 300}, {"n_embd", 48}, {"n_head", 3},
                                {"n_layer", 2}, {"n_positions", 128}, {"torch_dtype", "float32"}});
}

// The `erf` primitive (exact GELU): its kernels, decode GEMV epilogue and prefill epilogue alike,
// compile with erff.
TEST(EmitLgPrograms, ErfProgramCompilesForSm90) {
  const nlohmann::json config = {{"vocab_size", 50}, {"hidden_size", 32}, {"intermediate_size", 64},
                                 {"num_hidden_layers", 2}, {"max_position_embeddings", 128}};
  compiles("examples/gelu_mlp.lg", config);
  const CudaProgram prog = program_of("examples/gelu_mlp.lg", config);
  int with_erf = 0;
  for (const auto& k : prog.kernels) with_erf += k.source.find("erff(") != std::string::npos ? 1 : 0;
  EXPECT_GE(with_erf, 2);  // the fused GEMM kernel and the prefill epilogue of fc1
}

}  // namespace
}  // namespace lg::emit::cuda
