// Choosing the .lg program from config.json and binding params to a checkpoint: the errors a
// user sees for an uncovered architecture and for a checkpoint that does not fit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <unistd.h>

#include "model/model_dir.h"
#include "model/safetensors.h"
#include "runtime/bind_params.h"
#include "runtime/forward_graph.h"
#include "runtime/model_source.h"
#include "support/error.h"
#include "common/model_copy.h"
#include "common/source_position.h"

namespace lg::runtime {
namespace {

const std::string kShared = LG_SHARED_DIR;

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelSource, PicksTheLgFileByModelTypeAndNamesAnUncoveredOne) {
  const auto tmp = std::filesystem::temp_directory_path() / ("lg_models_" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  std::ofstream(tmp / "qwen3.lg") << "# test\n";
  ::setenv("LG_MODELS_DIR", tmp.c_str(), 1);
  model::ModelConfig c;
  c.source = "some/config.json";
  c.model_type = "qwen3";
  EXPECT_EQ(find_model_source(c), tmp / "qwen3.lg");  // the environment comes first
  c.model_type = "mamba";
  c.architectures = {"MambaForCausalLM"};
  const std::string m = error_of([&] { find_model_source(c); });
  EXPECT_NE(m.find("no .lg program covers model_type 'mamba' (MambaForCausalLM) in some/config.json"), std::string::npos) << m;
  EXPECT_NE(m.find((tmp / "mamba.lg").string()), std::string::npos) << m;
  // The model_types there are programs for are listed (a user of a multimodal gemma3 or of
  // qwen2_5_vl learns that gemma3_text and qwen2 are; a new-user pass): the folder's qwen3 among
  // them, and the built-in ones.
  EXPECT_NE(m.find("(those folders have programs for the model_types "), std::string::npos) << m;
  EXPECT_NE(m.find(", qwen3,"), std::string::npos) << m;
  EXPECT_NE(m.find("gemma3_text, gpt2, llama, mistral, phi3, qwen2, qwen3, qwen3_moe)"), std::string::npos) << m;
  c.model_type = "../qwen3";
  EXPECT_NE(error_of([&] { find_model_source(c); }).find("not a valid model_type"), std::string::npos);
  ::unsetenv("LG_MODELS_DIR");
  std::filesystem::remove_all(tmp);
}

ir::Graph graph_with_params(std::vector<ir::ParamInfo> params) {
  ir::Graph g;
  g.model = "qwen3";
  g.params = std::move(params);
  return g;
}

TEST(BindParams, OneErrorListsEveryMissingAndMismatchedTensor) {
  const model::Checkpoint ck = model::Checkpoint::open(kShared + "/fixtures/tiny-qwen3");
  using ir::Dim;
  const ir::Graph g = graph_with_params({
      {"embed", "model.embed_tokens.weight", DType::BF16, {Dim::constant(512), Dim::constant(64)}},
      {"l0.wq", "model.layers.0.self_attn.q_proj.weigth", DType::BF16, {Dim::constant(128), Dim::constant(64)}},
      {"norm", "model.norm.weight", DType::BF16, {Dim::constant(65)}},
  });
  const std::string m = error_of([&] { check_params(g, ck); });
  EXPECT_NE(m.find("2 problems"), std::string::npos) << m;
  EXPECT_NE(m.find("missing tensor \"model.layers.0.self_attn.q_proj.weigth\" (param l0.wq [128,64]); nearest present: "
                   "model.layers.0.self_attn.q_proj.weight"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("tensor \"model.norm.weight\" is [64], param norm declares [65]"), std::string::npos) << m;
}

// The same mismatch in several layers (a config.json with a wrong head_dim: 6 a layer, 48 lines
// for the 22M model) is one line naming the layers; the count stays the problems'.
TEST(BindParams, TheSameProblemInSeveralLayersIsOneLine) {
  const model::Checkpoint ck = model::Checkpoint::open(kShared + "/fixtures/tiny-qwen3");
  using ir::Dim;
  const ir::Graph g = graph_with_params({
      {"l0.wq", "model.layers.0.self_attn.q_proj.weight", DType::BF16, {Dim::constant(256), Dim::constant(64)}},
      {"l1.wq", "model.layers.1.self_attn.q_proj.weight", DType::BF16, {Dim::constant(256), Dim::constant(64)}},
      {"l0.wk", "model.layers.0.self_attn.k_proj.weigth", DType::BF16, {Dim::constant(64), Dim::constant(64)}},
  });
  const std::string m = error_of([&] { check_params(g, ck); });
  EXPECT_NE(m.find("problems):\n  in layers 0-1: tensor \"model.layers.{l}.self_attn.q_proj.weight\" is [128,64], "
                   "param l{l}.wq declares [256,64]\n  missing tensor \"model.layers.0.self_attn.k_proj.weigth\""),
            std::string::npos)
      << m;
}

// A config.json that says the head is untied, for a checkpoint that ties it (no lm_head.weight),
// names the config field (new-user pass, session 22).
TEST(BindParams, AMissingLmHeadBesideAnEmbeddingNamesTieWordEmbeddings) {
  const model::Checkpoint ck = model::Checkpoint::open(kShared + "/fixtures/tiny-qwen3");
  using ir::Dim;
  const ir::Graph g = graph_with_params({
      {"embed", "model.embed_tokens.weight", DType::BF16, {Dim::constant(512), Dim::constant(64)}},
      {"head", "lm_head.weight", DType::BF16, {Dim::constant(512), Dim::constant(64)}},
  });
  const std::string m = error_of([&] { check_params(g, ck); });
  EXPECT_NE(m.find("missing tensor \"lm_head.weight\" (param head [512,64])"), std::string::npos) << m;
  EXPECT_NE(m.find("is config.json's tie_word_embeddings false where it should be true?"), std::string::npos) << m;
  // Another missing tensor gets no such hint.
  const ir::Graph other = graph_with_params({{"x", "model.layers.0.mlp.up_proj.weigth", DType::BF16, {Dim::constant(1)}}});
  EXPECT_EQ(error_of([&] { check_params(other, ck); }).find("tie_word_embeddings"), std::string::npos);
}

TEST(BindParams, WidensOnceAndSharesTiedTensors) {
  const model::Checkpoint ck = model::Checkpoint::open(kShared + "/fixtures/tiny-qwen3");
  using ir::Dim;
  const ir::Graph g = graph_with_params({
      {"embed", "model.embed_tokens.weight", DType::BF16, {Dim::constant(512), Dim::constant(64)}},
      {"head", "model.embed_tokens.weight", DType::BF16, {Dim::constant(512), Dim::constant(64)}},
      {"norm", "model.norm.weight", DType::F32, {Dim::constant(64)}},
  });
  const auto ps = bind_params(g, ck);
  ASSERT_EQ(ps.size(), 3u);
  EXPECT_EQ(ps[0].f.get(), ps[1].f.get());
  EXPECT_EQ(ps[2].to_f32(), ck.to_f32("model.norm.weight"));
}

// The checkpoint is checked against the params the program declares for its config (no family's
// tensor names in C++): every fixture fits its program; a config from another size is reported by
// tensor, its shape and the param's declared shape.
TEST(ParamProblems, FixtureCheckpointsFitTheirPrograms) {
  for (const char* name : {"tiny-qwen3", "tiny-qwen3-untied-mqa", "tiny-qwen2"}) {
    auto m = model::ModelDir::open(std::string(LG_SHARED_DIR) + "/fixtures/" + name);
    const auto fg = forward_graph(m.config, 0, program_source(m));
    EXPECT_EQ(param_problems(fg.graph, m.checkpoint), std::vector<std::string>{}) << name;
    resolve_program(m);
    EXPECT_EQ(m.context, m.config.max_position_embeddings) << name;
    EXPECT_EQ(m.vocab, m.config.vocab_size) << name;
  }
}

TEST(ParamProblems, ConfigFromAnotherSizeIsReportedByTensorAndParam) {
  auto m = model::ModelDir::open(std::string(LG_SHARED_DIR) + "/fixtures/tiny-qwen3");
  nlohmann::json j = m.config.raw;
  j["vocab_size"] = j["vocab_size"].get<int64_t>() + 7;
  j["num_attention_heads"] = j["num_attention_heads"].get<int64_t>() * 2;
  j["num_hidden_layers"] = j["num_hidden_layers"].get<int64_t>() - 1;
  j.erase("layer_types");  // one entry per layer
  const model::ModelConfig c = model::parse_config(j, "config.json");
  const auto fg = forward_graph(c, 0, program_source(m));
  const auto issues = param_problems(fg.graph, m.checkpoint);
  auto has = [&](const std::string& s) {
    for (const auto& i : issues)
      if (i.find(s) != std::string::npos) return true;
    return false;
  };
  // Each names the param's declaration, where a user would fix the program instead.
  const std::string lg = program_source(m).string();
  EXPECT_TRUE(has("tensor \"model.embed_tokens.weight\" is [512,64], param embed at " +
                  test::source_position(lg, "param embed:") + " declares [519,64]"));
  EXPECT_TRUE(has("tensor \"model.layers.0.self_attn.q_proj.weight\" is [128,64], param l0.wq at " +
                  test::source_position(lg, "param wq:") + " declares [256,64]"));
  EXPECT_TRUE(has("model.layers.0.self_attn.o_proj.weight"));
  EXPECT_FALSE(has("model.layers.0.self_attn.k_proj")) << "num_key_value_heads did not change";
  EXPECT_TRUE(has("tensor \"model.layers.2.input_layernorm.weight\" is bound by no param"));
  EXPECT_TRUE(has("(layer 2: a config.json from a shallower model: num_hidden_layers?)"));
  // resolve_program is the early refusal the commands that run a model make.
  m.dir = "tiny-qwen3";
  m.config = c;
  try {
    resolve_program(m);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit the qwen3 program"), std::string::npos) << e.what();
  }
}

// A config.json from a deeper model: the layers past the checkpoint's are one problem naming them
// (each of their tensors was a line of its own, eleven a layer, with a "nearest present" of
// another layer's), and the layers the checkpoint holds still fit.
TEST(ParamProblems, LayersTheCheckpointLacksAreOneProblem) {
  auto m = model::ModelDir::open(std::string(LG_SHARED_DIR) + "/fixtures/tiny-qwen3");
  nlohmann::json j = m.config.raw;
  const int64_t layers = j["num_hidden_layers"].get<int64_t>();
  j["num_hidden_layers"] = layers + 2;
  j.erase("layer_types");  // one entry per layer
  const auto fg = forward_graph(model::parse_config(j, "config.json"), 0, program_source(m));
  const std::string first = std::to_string(layers), last = std::to_string(layers + 1);
  EXPECT_EQ(param_problems(fg.graph, m.checkpoint),
            std::vector<std::string>{"layers " + first + "-" + last + " of the program: the checkpoint holds no tensor "
                                     "of them (its layers are 0-" + std::to_string(layers - 1) +
                                     "; a config.json from a deeper model: num_hidden_layers, GPT-2's n_layer?)"});
}

// A checkpoint tensor whose layer index passes int64 ("layers.99999999999999999999.") is one more
// problem, not a crash: the layer parse was std::stoll, which threw past the catch that names the
// checkpoint ("internal error (a bug...)").
TEST(ParamProblems, ALayerIndexPastInt64IsNoCrash) {
  auto m = model::ModelDir::open(std::string(LG_SHARED_DIR) + "/fixtures/tiny-qwen3");
  const auto dir = std::filesystem::temp_directory_path() / ("lg_huge_layer_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<model::OwnedTensor> ts{
      {"model.layers.99999999999999999999.mlp.up_proj.weight", DType::F32, {2}, std::vector<std::byte>(8)}};
  model::write_safetensors(dir / "model.safetensors", ts);
  const model::Checkpoint ck = model::Checkpoint::open(dir / "model.safetensors");
  const auto fg = forward_graph(m.config, 0, program_source(m));
  std::vector<std::string> problems;
  EXPECT_NO_THROW(problems = group_by_layer(param_problems(fg.graph, ck)));
  EXPECT_FALSE(problems.empty());
  std::filesystem::remove_all(dir);
}

// A checkpoint whose config.json names another family that reads a subset of its tensors is
// refused, naming the tensors the forward would run without: a Qwen3 checkpoint labelled
// model_type "llama" ran as Llama, its q/k norms silently unread, and answered with other tokens.
// Tensors of modules the program reads nothing of (a tied head's lm_head.weight) and saved
// buffers (rotary_emb.inv_freq) stay accepted, as transformers and vLLM accept them.
// A layer the config gives another form (Qwen3-MoE's mlp_only_layers makes layer 1 a dense MLP,
// where the checkpoint holds experts): its unbound tensors are counted and the hint is that form,
// not a shallower model's num_hidden_layers (new-user pass, session 46).
TEST(ParamProblems, ALayerOfAnotherFormIsNotCalledAShallowerModel) {
  auto m = model::ModelDir::open(std::string(LG_SHARED_DIR) + "/fixtures/tiny-qwen3-moe");
  nlohmann::json j = m.config.raw;
  j["mlp_only_layers"] = {1};
  const model::ModelConfig c = model::parse_config(j, "config.json");
  const auto issues = param_problems(forward_graph(c, 0, program_source(m)).graph, m.checkpoint);
  std::string all;
  for (const auto& i : issues) all += i + "\n";
  EXPECT_NE(all.find("form \"model.layers.#.mlp.experts.#.gate_proj.weight\" (8 of this form, layer 1: a config.json "
                     "that gives this layer another form than the checkpoint's?)"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("shallower"), std::string::npos) << all;
}

TEST(ParamProblems, TensorsBesideReadOnesThatNoParamBindsAreReported) {
  lg::test::ModelCopy copy(kShared + "/fixtures/tiny-qwen3");
  copy.edit_json("config.json", [](nlohmann::json& j) { j["model_type"] = "llama"; });
  auto m = model::ModelDir::open(copy.dir);
  const std::string e = error_of([&] { resolve_program(m); });
  EXPECT_NE(e.find("does not fit the llama program (2 problems)"), std::string::npos) << e;
  EXPECT_NE(e.find("tensor \"model.layers.0.self_attn.q_norm.weight\" (form \"model.layers.#.self_attn.q_norm.weight\") "
                   "is bound by no param, though the llama program reads tensors beside it in \"model.layers.#.self_attn\""),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("k_norm"), std::string::npos) << e;
  EXPECT_NE(e.find("is config.json's model_type this checkpoint's architecture?"), std::string::npos) << e;

  // A checkpoint of 2x2 tensors: lm_head.weight beside a head tied to the embedding (its module
  // is read by nothing) and a saved inverse-frequency buffer beside a read q_proj are no problem.
  const auto dir = std::filesystem::temp_directory_path() / ("lg_siblings_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    const std::vector<std::pair<std::string, int>> tensors = {{"model.embed_tokens.weight", 4},
                                                              {"lm_head.weight", 4},
                                                              {"model.layers.0.self_attn.q_proj.weight", 4},
                                                              {"model.layers.0.self_attn.rotary_emb.inv_freq", 2}};
    nlohmann::json header = nlohmann::json::object();
    size_t offset = 0;
    for (const auto& [name, n] : tensors) {
      header[name] = {{"dtype", "F32"},
                      {"shape", n == 4 ? std::vector<int>{2, 2} : std::vector<int>{2}},
                      {"data_offsets", {offset, offset + 4 * n}}};
      offset += 4 * n;
    }
    const std::string h = header.dump();
    const uint64_t len = h.size();
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << h << std::string(offset, '\0');
  }
  const model::Checkpoint ck = model::Checkpoint::open(dir);
  using ir::Dim;
  const ir::Graph g = graph_with_params({
      {"embed", "model.embed_tokens.weight", DType::F32, {Dim::constant(2), Dim::constant(2)}},
      {"head", "model.embed_tokens.weight", DType::F32, {Dim::constant(2), Dim::constant(2)}},
      {"l0.wq", "model.layers.0.self_attn.q_proj.weight", DType::F32, {Dim::constant(2), Dim::constant(2)}},
  });
  EXPECT_EQ(param_problems(g, ck), std::vector<std::string>{});
  // Floats where the program declares integers, as integers where it declares floats (a corrupt
  // checkpoint in a new-user pass), are a problem of the fit, named with the declaration: it was a
  // CPU executor's error naming no file.
  const ir::Graph gi = graph_with_params({
      {"embed", "model.embed_tokens.weight", DType::I32, {Dim::constant(2), Dim::constant(2)}},
      {"l0.wq", "model.layers.0.self_attn.q_proj.weight", DType::F32, {Dim::constant(2), Dim::constant(2)}},
  });
  EXPECT_EQ(param_problems(gi, ck),
            std::vector<std::string>{"tensor \"model.embed_tokens.weight\" has dtype f32, param embed declares i32"});
  std::filesystem::remove_all(dir);
}

// A --program whose forward does not return the logits [T, vocab_size] is refused by name before
// a lane is built: it used to run, sampling ids from a [T, D] output as if D were the vocabulary
// (or blaming tokenizer.json for ids >= D), and a fixed-T forward reported a context of 0 tokens.
TEST(ResolveProgram, RefusesAForwardThatDoesNotReturnLogitsOfTheVocabulary) {
  const auto tmp = std::filesystem::temp_directory_path() / ("lg_logits_" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  auto program = [&](const std::string& name, const std::string& signature, const std::string& result) {
    const auto path = tmp / (name + ".lg");
    std::ofstream(path) << "model x {\n  dims {\n    V = config.vocab_size\n    D = config.hidden_size\n  }\n"
                           "  param embed: bf16[V, D] = \"model.embed_tokens.weight\"\n"
                           // Declared, unread: a program that binds the embedding but not the final
                           // norm beside it is refused for that (ParamProblems above).
                           "  param norm: bf16[D] = \"model.norm.weight\"\n  forward("
                        << signature << " {\n    x = embed[tokens].to(f32)\n    return " << result << "\n  }\n}\n";
    return path;
  };
  const auto ok = program("ok", "tokens: i32[T], pos: i32[T]) -> f32[T, V]", "x @ embed.T");
  const auto narrow = program("narrow", "tokens: i32[T], pos: i32[T]) -> f32[T, D]", "x");
  const auto rank1 = program("rank1", "tokens: i32[T], pos: i32[T]) -> f32[T]", "(x @ embed.T)[:, 0]");
  const auto fixed = program("fixed", "tokens: i32[4], pos: i32[4]) -> f32[4, V]", "x @ embed.T");
  // Logits of another dtype were read as f32 past their end (a segfault on the cpu lane).
  const auto ints = program("ints", "tokens: i32[T], pos: i32[T]) -> i32[T, V]", "(x @ embed.T).to(i32)");
  const auto bools = program("bools", "tokens: i32[T], pos: i32[T]) -> bool[T, V]", "(x @ embed.T) > 0.0");
  auto error_for = [&](const std::filesystem::path& p) {
    auto m = model::ModelDir::open(kShared + "/fixtures/tiny-qwen3");
    return error_of([&] { resolve_program(m, p); });
  };
  {
    auto m = model::ModelDir::open(kShared + "/fixtures/tiny-qwen3");
    resolve_program(m, ok);
    EXPECT_EQ(m.vocab, m.config.vocab_size);
  }
  std::string e = error_for(narrow);
  EXPECT_NE(e.find(narrow.string() + ": the forward returns logits [T, 64], but"), std::string::npos) << e;
  EXPECT_NE(e.find("has vocab_size 512"), std::string::npos) << e;
  e = error_for(rank1);
  EXPECT_NE(e.find("the forward returns f32[T]; a model's forward returns the logits f32[T, V]"), std::string::npos) << e;
  e = error_for(ints);
  EXPECT_NE(e.find("the forward returns i32[T,512]; a model's forward returns the logits f32[T, V]"), std::string::npos)
      << e;
  e = error_for(bools);
  EXPECT_NE(e.find("the forward returns bool[T,512]; a model's forward returns the logits f32[T, V]"), std::string::npos)
      << e;
  e = error_for(fixed);
  EXPECT_NE(e.find("the forward has no runtime token count T"), std::string::npos) << e;
  // Inputs the runtime does not feed: named there (lg check notes the same), not at the cpu lane.
  const auto renamed = tmp / "renamed.lg";
  std::ofstream(renamed) << "model x {\n  dims {\n    V = config.vocab_size\n    D = config.hidden_size\n  }\n"
                            "  param embed: bf16[V, D] = \"model.embed_tokens.weight\"\n"
                            "  param norm: bf16[D] = \"model.norm.weight\"\n"
                            "  forward(ids: i32[T], pos: i32[T]) -> f32[T, V] {\n"
                            "    return embed[ids].to(f32) @ embed.T\n  }\n}\n";
  e = error_for(renamed);
  EXPECT_NE(e.find(renamed.string() + ": the forward is declared forward(ids: i32[T], pos: i32[T]); every lane feeds a "
                   "model's forward(tokens: i32[T], pos: i32[T])"),
            std::string::npos)
      << e;
  std::filesystem::remove_all(tmp);
}

// Opening a Qwen model directory whose config.json enables RoPE scaling the older way, with a
// top-level rope_scaling (Qwen's model cards' YaRN recipe), is refused with the field named.
// qwen2/qwen3 configs were refused by parse_config's Qwen reading already; a qwen3_moe one, which
// gets no such reading (no hand-written lane runs it), opened and ran as plain RoPE, since
// qwen3_moe.lg read only rope_parameters.rope_type.
TEST(ResolveProgram, AQwenConfigWithRopeScalingIsRefused) {
  for (const char* fixture : {"tiny-qwen3", "tiny-qwen2", "tiny-qwen3-moe"}) {
    test::ModelCopy copy(kShared + "/fixtures/" + fixture);
    copy.edit_json("config.json", [](nlohmann::json& j) {
      j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
    });
    const std::string e = error_of([&] {
      auto m = model::ModelDir::open(copy.dir);
      resolve_program(m);
    });
    EXPECT_NE(e.find("rope_scaling"), std::string::npos) << fixture << ": " << e;
    EXPECT_NE(e.find("default RoPE only"), std::string::npos) << fixture << ": " << e;
  }
}

// A checkpoint without the program's base prefix binds (drop_absent_base_prefix), and a tensor it
// genuinely lacks is still named, under the checkpoint's name, with the nearest names present:
// one problem, not every tensor of the program "missing".
TEST(ResolveProgram, ACheckpointWithoutTheBasePrefixStillNamesATensorItLacks) {
  test::ModelCopy bare(kShared + "/fixtures/tiny-gpt2");
  bare.drop_tensor_prefix("transformer.", "transformer.h.1.mlp.c_fc.weight");
  auto m = model::ModelDir::open(bare.dir);
  const std::string e = error_of([&] { resolve_program(m); });
  EXPECT_NE(e.find("the checkpoint does not fit the gpt2 program (1 problem):"), std::string::npos) << e;
  EXPECT_NE(e.find("missing tensor \"h.1.mlp.c_fc.weight\" (param l1.w_fc [64,256] at " +
                   test::source_position(program_source(m).string(), "param w_fc:") +
                   "); nearest present: h.0.mlp.c_fc.weight, h.2.mlp.c_fc.weight"),
            std::string::npos)
      << e;
  // The graph the lanes run names the checkpoint's tensors.
  test::ModelCopy whole(kShared + "/fixtures/tiny-gpt2");
  whole.drop_tensor_prefix("transformer.");
  const auto fg = forward_graph(model::ModelDir::open(whole.dir), 0);
  EXPECT_EQ(fg.graph.params.at(0).tensor, "wte.weight");
  // A checkpoint that holds the prefix keeps the program's names, and its missing tensor too.
  test::ModelCopy holed(kShared + "/fixtures/tiny-gpt2");
  holed.rename_tensors([](const std::string& name) { return name == "transformer.h.1.mlp.c_fc.weight" ? "" : name; });
  auto h = model::ModelDir::open(holed.dir);
  const std::string he = error_of([&] { resolve_program(h); });
  EXPECT_NE(he.find("(1 problem):\n  missing tensor \"transformer.h.1.mlp.c_fc.weight\""), std::string::npos) << he;
}

// Weights loaded and never read, or never loaded: the program runs and answers without them, so
// lg run warns at load and lg check notes it. Every shipped program reads every tensor of its
// fixture; a llama.lg that skips its final norm, or binds its head to the embedding of an untied
// checkpoint (which answered 511 511 511 with lm_head.weight unread), is named.
TEST(UnusedWeights, ShippedProgramsReadEveryTensorAndAMutationIsNamed) {
  for (const char* name : {"tiny-qwen3", "tiny-qwen3-untied-mqa", "tiny-qwen2", "tiny-llama3", "tiny-mistral",
                           "tiny-phi3", "tiny-gpt2", "tiny-gemma3", "tiny-qwen3-moe"}) {
    auto m = model::ModelDir::open(kShared + "/fixtures/" + name);
    ForwardGraph fg = forward_graph(m.config, 0, program_source(m));
    drop_absent_base_prefix(fg.graph, m.checkpoint);
    EXPECT_EQ(unused_weight_warnings(fg.graph, &m.checkpoint, m.config.tie_word_embeddings, name),
              std::vector<std::string>{})
        << name;
  }
  std::ifstream in(std::string(LG_SOURCE_DIR) + "/models/llama.lg");
  const std::string llama((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto m = model::ModelDir::open(kShared + "/fixtures/tiny-llama3");
  auto graph_of = [&](const std::string& from, const std::string& to) {
    std::string text = llama;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    const auto path = std::filesystem::temp_directory_path() / ("lg_unused_" + std::to_string(::getpid()) + ".lg");
    std::ofstream(path) << text;
    ForwardGraph fg = forward_graph(m.config, 0, path);
    std::filesystem::remove(path);
    return fg.graph;
  };
  auto warnings_of = [&](const std::string& from, const std::string& to) {
    return unused_weight_warnings(graph_of(from, to), &m.checkpoint, m.config.tie_word_embeddings, "llama.lg");
  };
  const std::string final_norm = "rms_norm(x, norm, eps) @ head.T";
  const auto skipped = warnings_of(final_norm, "x @ head.T");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("llama.lg: the forward never reads param norm at "), std::string::npos) << skipped[0];
  const auto head_at = llama.find("param head");
  ASSERT_NE(head_at, std::string::npos);
  const std::string head_line = llama.substr(head_at, llama.find('\n', head_at) - head_at);
  const std::string tied_head = "param head: W[V, D] = \"model.embed_tokens.weight\"";
  const auto tied = warnings_of(head_line, tied_head);
  ASSERT_EQ(tied.size(), 1u);
  EXPECT_EQ(tied[0], "llama.lg binds no param to 1 of the checkpoint's 30 tensors: lm_head.weight (the model runs "
                     "without it, as transformers warns: \"Some weights of the model checkpoint were not used\")");
  // A tied checkpoint (tie_word_embeddings) that also saved its head: transformers ties that to
  // the embedding, unread, and says nothing.
  EXPECT_EQ(unbound_tensors(graph_of(head_line, tied_head), m.checkpoint, true), std::vector<std::string>{});
}

}  // namespace
}  // namespace lg::runtime
