// The acceptance check of emission: the CUDA programs of models/qwen3.lg and models/qwen2.lg for
// every fixture config and the 22M model, and of models/examples/cc_mlp.lg, gpt2.lg and gelu_mlp.lg,
// compile for sm_90 with NVRTC on a machine without a GPU. Here too: Qwen3-MoE's topk and experts
// kernels, the batched programs, and the programs' plans (every layer's launches run the same
// kernels; at T > 1 the projection GEMMs on cuBLASLt, stacked over one activation, and every
// family's prefill plan keeping its invariants). The decode step's kernels are checked in
// lg_programs_attention_test.cpp (split-KV attention, sliding windows) and lg_programs_gemv_test.cpp
// (decode GEMVs, row reductions).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "emit/cuda/nvrtc.h"
#include "emit/cuda/program.h"
#include "ir/batch.h"
#include "lang/lower.h"
#include "lift/lift.h"
#include "lift/passes.h"
#include "lg_programs.h"

namespace lg::emit::cuda {
namespace {

using namespace test;

void compiles(const std::string& lg, const nlohmann::json& config) {
  SCOPED_TRACE(lg);
  ir::Graph g = lang::lower_file(kSource + "/models/" + lg, config, lang::BindOptions{128});
  lift::StagedProgram p = lift::lift(g);
  lift::fuse(p);
  CudaProgram prog = emit_program(p);
  EXPECT_GT(nvrtc_compile(prog.source(), g.model).size(), 1000u);
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

// A statement whose value nothing reads (left over while editing a program) changes nothing: it
// gets no stage, and its read of the gate projection neither splits that GEMM from its SwiGLU
// epilogue nor keeps the last layer from computing only the rows the logits need (it was two
// launches more and the gate GEMM over every token).
TEST(EmitLgPrograms, AnUnusedStatementChangesNothingEmitted) {
  const std::string text = read_text(kSource + "/models/llama.lg");
  const std::string gate = "      g = mlp_bias ? h @ l.wg.T + l.bg : h @ l.wg.T";
  const size_t at = text.find(gate);
  ASSERT_NE(at, std::string::npos) << "llama.lg's gate projection moved: update the test";
  const size_t eol = text.find('\n', at);
  const std::filesystem::path edited =
      std::filesystem::temp_directory_path() / ("lg_unused_" + std::to_string(::getpid()) + ".lg");
  std::ofstream(edited) << text.substr(0, eol + 1) << "      zz = sum(g, axis=-1)\n" << text.substr(eol + 1);
  const nlohmann::json config = config_of(kShared + "/fixtures/tiny-llama3");
  auto emitted = [&](const std::filesystem::path& file) {
    ir::Graph g = lang::lower_file(file, config, lang::BindOptions{128});
    return emit_batched(g, {16, 129, 64, 256});
  };
  const CudaProgram want = emitted(kSource + "/models/llama.lg"), got = emitted(edited);
  std::filesystem::remove(edited);
  EXPECT_EQ(got.launches.size(), want.launches.size());
  EXPECT_EQ(got.source(), want.source());
  EXPECT_EQ(got.plan_json(), want.plan_json());
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
