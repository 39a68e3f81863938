// What `lg inspect` and `lg run` say about a broken model directory: a config.json from another
// size (dims that disagree with the tensor shapes), and a checkpoint holding a NaN weight
// (`lg run` used to print "!!!" for it; now it stops with an error naming the step).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <iterator>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "cli_run.h"
#include "common/model_copy.h"
#include "common/source_position.h"
#include "common/safetensors_patch.h"

namespace lg::cli_test {
namespace {

namespace fs = std::filesystem;

/// A temp copy of model directory `src` (files copied, tokenizer.json symlinked), removed at the end.
struct CopiedModel {
  fs::path dir;
  explicit CopiedModel(const fs::path& src) {
    dir = fs::temp_directory_path() / ("lg_cli_model_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(src)) {
      if (e.path().filename() == "tokenizer.json") fs::create_symlink(e.path(), dir / "tokenizer.json");
      else fs::copy_file(e.path(), dir / e.path().filename());
    }
  }
  ~CopiedModel() { fs::remove_all(dir); }
  void edit_config(const std::function<void(nlohmann::json&)>& f) const {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(dir / "config.json"));
    f(j);
    std::ofstream(dir / "config.json") << j.dump(2);
  }
  /// Writes NaN into element `index` of `tensor` in model.safetensors.
  void put_nan(const std::string& tensor, uint64_t index) const { test::put_nan(dir / "model.safetensors", tensor, index); }
};

// A Hugging Face id given as the model (as vLLM takes `Qwen/Qwen3-0.6B`) is not downloaded: lg
// run, serve, batch and inspect say so, with the command that fetches it (they said "Directory
// does not exist", and lg inspect "model directory does not exist": a new-user pass).
TEST(CliModelChecks, AHuggingFaceIdGivenAsTheModelSaysHowToFetchIt) {
  const std::string hint = "Qwen/Qwen3-0.6B: model directory does not exist (lanegraph reads a local directory and "
                           "downloads nothing; for the Hugging Face model Qwen/Qwen3-0.6B: `huggingface-cli download "
                           "Qwen/Qwen3-0.6B --local-dir DIR`, then -m DIR)";
  ASSERT_FALSE(fs::exists("Qwen/Qwen3-0.6B"));
  for (const std::string cmd : {"run -p x -m ", "serve -m ", "batch -i - -o - -m "}) {
    const CliRun r = run_lg(cmd + "Qwen/Qwen3-0.6B < /dev/null");
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("--model: " + hint), std::string::npos) << cmd << "\n" << r.out;
  }
  const CliRun inspect = run_lg("inspect Qwen/Qwen3-0.6B");
  EXPECT_EQ(inspect.code, 1) << inspect.out;
  EXPECT_NE(inspect.out.find("lg: error: " + hint), std::string::npos) << inspect.out;
}

// A file given where a model directory goes (llama.cpp's model.gguf, a model.safetensors) is named
// as a file, with what to give instead; lg run, serve and batch said "Directory is actually a
// file" (CLI11's words), lg inspect nothing of GGUF.
TEST(CliModelChecks, AFileGivenAsTheModelDirectoryIsNamed) {
  const fs::path dir = fs::temp_directory_path() / ("lg_cli_gguf_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const std::string gguf = (dir / "qwen3-0.6b-q8_0.gguf").string();
  std::ofstream(gguf) << "GGUF";
  for (const std::string cmd : {"run -p x -m ", "serve -m ", "batch -i - -o - -m "}) {
    const CliRun r = run_lg(cmd + gguf + " < /dev/null");
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("--model: " + gguf + ": is a GGUF file (llama.cpp's format), not a model directory"),
              std::string::npos)
        << cmd << "\n" << r.out;
    EXPECT_EQ(r.out.find("Directory is actually a file"), std::string::npos) << r.out;
  }
  const CliRun inspect = run_lg("inspect " + gguf);
  EXPECT_EQ(inspect.code, 1) << inspect.out;
  EXPECT_NE(inspect.out.find(gguf + ": is a GGUF file (llama.cpp's format), not a model directory"), std::string::npos)
      << inspect.out;
  // Another file keeps the plain words, and says what a model directory holds.
  const std::string weights = (dir / "model.safetensors").string();
  std::ofstream(weights) << "x";
  const CliRun file = run_lg("run -p x -m " + weights);
  EXPECT_EQ(file.code, 2) << file.out;
  EXPECT_NE(file.out.find("--model: " + weights + ": is a file, not a model directory (give the directory holding "
                          "config.json)"),
            std::string::npos)
      << file.out;
  fs::remove_all(dir);
}

TEST(CliModelChecks, InspectReportsConfigDimsThatDisagreeWithTheWeights) {
  CopiedModel m(kShared + "/fixtures/tiny-qwen3");
  const CliRun clean = run_lg("inspect " + m.dir.string());
  EXPECT_EQ(clean.code, 0) << clean.out;
  m.edit_config([](nlohmann::json& j) {
    j["vocab_size"] = j["vocab_size"].get<int64_t>() + 10;
    j["num_attention_heads"] = j["num_attention_heads"].get<int64_t>() * 2;
  });
  const CliRun r = run_lg("inspect " + m.dir.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("tensors ("), std::string::npos) << "the listing is still printed\n" << r.out;
  // The shapes the config implies are the ones the program's params declare for it, at their lines.
  const std::string qwen3 = kSource + "/models/qwen3.lg";
  EXPECT_NE(r.out.find("lg: error: " + m.dir.string() + ": tensor \"model.embed_tokens.weight\" is [512,64], param "
                       "embed at " + lg::test::source_position(qwen3, "param embed:") + " declares [522,64]"),
            std::string::npos)
      << r.out;
  // The same mismatch in each of the 3 layers: one line (runtime::group_by_layer); the JSON lists each.
  const std::string wq_at = " at " + lg::test::source_position(qwen3, "param wq:");
  EXPECT_NE(r.out.find("in layers 0-2: tensor \"model.layers.{l}.self_attn.q_proj.weight\" is [128,64], param "
                       "l{l}.wq" + wq_at + " declares [256,64]"),
            std::string::npos)
      << r.out;
  const CliRun j = run_lg("inspect --json " + m.dir.string() + " 2>/dev/null");
  EXPECT_NE(j.out.find("\"config_mismatches\": ["), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("is [128,64], param l2.wq" + wq_at + " declares [256,64]"), std::string::npos)
      << j.out;
}

// A program that does not check against the config (qwen3.lg implements silu only) used to be
// printed as "program: (none: ...)" with exit 0; `lg check` exits 1 for the same program.
TEST(CliModelChecks, InspectExitsOneWhenTheProgramDoesNotCheck) {
  CopiedModel m(kShared + "/fixtures/tiny-qwen3");
  m.edit_config([](nlohmann::json& j) { j["hidden_act"] = "relu6"; });
  for (const std::string json : {"", "--json "}) {
    const CliRun r = run_lg("inspect " + json + m.dir.string());
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("tensors"), std::string::npos) << "the summary is still printed\n" << r.out;
    EXPECT_NE(r.out.find("qwen3.lg implements hidden_act silu only"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("lg: error: " + m.dir.string() + ": its program " + kSource + "/models/qwen3.lg does not check"),
              std::string::npos)
        << r.out;
  }
  // An architecture no program covers is still inspected: the summary is what was asked for.
  m.edit_config([](nlohmann::json& j) {
    j["hidden_act"] = "silu";
    j["model_type"] = "no_such_family";
  });
  const CliRun none = run_lg("inspect " + m.dir.string());
  EXPECT_EQ(none.code, 0) << none.out;
  EXPECT_NE(none.out.find("program:      (none: no .lg program covers"), std::string::npos) << none.out;
  // The note says to pass --program, which inspect takes as lg run does: the program's dims, and
  // the weights checked against its params (a new family's .lg, tried before it runs).
  std::ifstream in(kQwen3);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("== \"qwen3\", \"qwen3.lg is");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "== \"no_such_family\"");
  const std::string program = (m.dir / "family.lg").string();
  std::ofstream(program) << text;
  const CliRun given = run_lg("inspect " + m.dir.string() + " --program " + program);
  EXPECT_EQ(given.code, 0) << given.out;
  EXPECT_NE(given.out.find("program:      " + program + "\n  its dims:   S 1024, V 512, D 64"), std::string::npos)
      << given.out;
  m.edit_config([](nlohmann::json& j) { j["intermediate_size"] = 100; });
  const CliRun misfit = run_lg("inspect " + m.dir.string() + " --program " + program);
  EXPECT_EQ(misfit.code, 1) << misfit.out;
  EXPECT_NE(misfit.out.find("param l{l}.wg at " + program + ":"), std::string::npos) << misfit.out;
}

TEST(CliModelChecks, NanWeightIsFoundByInspectCheckAndStopsRun) {
  CopiedModel m(kSource + "/models/qwen3-pycode-22m");
  const CliRun clean = run_lg("inspect --check " + m.dir.string());
  EXPECT_EQ(clean.code, 0) << clean.out;
  EXPECT_NE(clean.out.find("all finite"), std::string::npos) << clean.out;
  m.put_nan("model.layers.3.mlp.down_proj.weight", 1234);
  const CliRun found = run_lg("inspect --check " + m.dir.string());
  EXPECT_EQ(found.code, 1) << found.out;
  EXPECT_NE(found.out.find("tensor model.layers.3.mlp.down_proj.weight has 1 NaN and 0 Inf values (first at flat "
                           "index 1234)"),
            std::string::npos)
      << found.out;
  EXPECT_EQ(run_lg("inspect " + m.dir.string()).code, 0) << "without --check no weight is read";

  const CliRun r = run_lg("run -q -m " + m.dir.string() + " -p 'def add(a, b):' -n 4");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("lg: error: lane cpu: the prefill step at position "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gave non-finite logits"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lg inspect --check"), std::string::npos) << r.out;
}

// A vocab_size of 2^40 used to compile, planning a petabyte arena; no GPU holds a buffer past 1 TiB,
// so `lg compile` refuses it, naming the buffer, the .lg line declaring it and the config field to check.
TEST(CliModelChecks, CompileRefusesABufferNoGpuHolds) {
  CopiedModel m(kShared + "/fixtures/tiny-qwen3");
  m.edit_config([](nlohmann::json& j) { j["vocab_size"] = int64_t{1} << 40; });
  const fs::path out = m.dir / "compiled";
  const CliRun r = run_lg("compile " + kSource + "/models/qwen3.lg --config " + (m.dir / "config.json").string() +
                          " -o " + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("model.embed_tokens.weight would need more than 1 TiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vocab_size"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(lg::test::source_position(kSource + "/models/qwen3.lg", "param embed:") + ": emit: the weight buffer"),
            std::string::npos) << r.out;
  m.edit_config([](nlohmann::json& j) { j["vocab_size"] = 512; });
  EXPECT_EQ(run_lg("compile " + kSource + "/models/qwen3.lg --config " + (m.dir / "config.json").string() + " -o " +
                   out.string()).code, 0);
}

// A RoPE scaling factor of 0 used to run: NaN logits, blamed on the weights ("the weights likely hold
// NaN/Inf values"); a negative factor, or a llama3 original_max_position_embeddings of 0, ran and
// answered with scrambled positions. The programs now refuse them, naming the config field.
TEST(CliModelChecks, NonPositiveRopeScalingIsRefusedByTheProgram) {
  CopiedModel llama(kShared + "/fixtures/tiny-llama3");
  const std::string check_llama = "check " + kSource + "/models/llama.lg --config " + (llama.dir / "config.json").string();
  EXPECT_EQ(run_lg(check_llama).code, 0);
  for (const double factor : {0.0, -1.0}) {
    llama.edit_config([&](nlohmann::json& j) { j["rope_parameters"]["factor"] = factor; });
    const CliRun r = run_lg(check_llama);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("requirement failed: RoPE scaling needs a positive factor (rope_parameters.factor"),
              std::string::npos)
        << r.out;
  }
  llama.edit_config([](nlohmann::json& j) {
    j["rope_parameters"]["factor"] = 8.0;
    j["rope_parameters"]["original_max_position_embeddings"] = 0;
  });
  const CliRun old = run_lg(check_llama);
  EXPECT_EQ(old.code, 1) << old.out;
  EXPECT_NE(old.out.find("llama3 RoPE needs original_max_position_embeddings > 0"), std::string::npos) << old.out;
  // Equal high and low frequency factors divide by zero in llama3 scaling only: the default RoPE
  // does not read them (a Llama 2 config may carry a rope_scaling block of another kind).
  llama.edit_config([](nlohmann::json& j) {
    j["rope_parameters"]["original_max_position_embeddings"] = 8192;
    j["rope_parameters"]["low_freq_factor"] = 2.0;
    j["rope_parameters"]["high_freq_factor"] = 2.0;
  });
  const CliRun tie = run_lg(check_llama);
  EXPECT_EQ(tie.code, 1) << tie.out;
  EXPECT_NE(tie.out.find("llama3 RoPE needs high_freq_factor != low_freq_factor"), std::string::npos) << tie.out;
  llama.edit_config([](nlohmann::json& j) { j["rope_parameters"]["rope_type"] = "default"; });
  const CliRun plain = run_lg(check_llama);
  EXPECT_EQ(plain.code, 0) << plain.out;

  CopiedModel gemma(kShared + "/fixtures/tiny-gemma3");
  const std::string check_gemma =
      "check " + kSource + "/models/gemma3_text.lg --config " + (gemma.dir / "config.json").string();
  gemma.edit_config([](nlohmann::json& j) {
    j["rope_parameters"]["full_attention"]["rope_type"] = "linear";
    j["rope_parameters"]["full_attention"]["factor"] = 8.0;
  });
  EXPECT_EQ(run_lg(check_gemma).code, 0);
  gemma.edit_config([](nlohmann::json& j) { j["rope_parameters"]["full_attention"]["factor"] = 0.0; });
  const CliRun g = run_lg(check_gemma);
  EXPECT_EQ(g.code, 1) << g.out;
  EXPECT_NE(g.out.find("the global RoPE scaling factor (rope_parameters.full_attention.factor"), std::string::npos)
      << g.out;
}

// The Qwen programs read only rope_parameters.rope_type, so a config with the older top-level
// rope_scaling (the long-context recipe of Qwen's model cards: {"rope_type": "yarn", "factor": 4.0,
// "original_max_position_embeddings": 32768}; Qwen2.5's cards write "type") checked, compiled and
// ran as plain RoPE: silently wrong past the first positions. Now `lg check` and `lg compile`
// refuse it at the program's require, naming the field; a rope_scaling of the default kind (or
// null) is still accepted.
TEST(CliModelChecks, RopeScalingIsRefusedByTheQwenPrograms) {
  const std::pair<std::string, std::string> cases[] = {
      {"qwen3", "tiny-qwen3"}, {"qwen2", "tiny-qwen2"}, {"qwen3_moe", "tiny-qwen3-moe"}};
  for (const auto& [name, fixture] : cases) {
    SCOPED_TRACE(name);
    CopiedModel m(kShared + "/fixtures/" + fixture);
    const std::string config = (m.dir / "config.json").string();
    const std::string check = "check " + kSource + "/models/" + name + ".lg --config " + config;
    const std::string compile =
        "compile " + kSource + "/models/" + name + ".lg --config " + config + " -o " + (m.dir / "compiled").string();
    for (const char* key : {"rope_type", "type"}) {
      m.edit_config([&](nlohmann::json& j) {
        j["rope_scaling"] = {{key, "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
      });
      for (const std::string& cmd : {check, compile}) {
        const CliRun r = run_lg(cmd);
        EXPECT_EQ(r.code, 1) << key << ": lg " << cmd << "\n" << r.out;
        EXPECT_NE(r.out.find("error: requirement failed: " + name + ".lg implements the default RoPE only: config.json's "
                             "rope_scaling or rope_parameters.rope_type asks for a scaled one"),
                  std::string::npos)
            << key << ": lg " << cmd << "\n" << r.out;
      }
    }
    for (const nlohmann::json& plain : {nlohmann::json{{"rope_type", "default"}}, nlohmann::json()}) {
      m.edit_config([&](nlohmann::json& j) { j["rope_scaling"] = plain; });
      const CliRun r = run_lg(check);
      EXPECT_EQ(r.code, 0) << plain.dump() << "\n" << r.out;
    }
  }
}

// A config with transformers 5's rope_parameters and the older rope_scaling both (hand-edited: a
// Phi-3 config given a longrope rope_scaling) ran as rope_parameters said, where transformers reads
// rope_scaling alone (Gemma 3: laid over rope_parameters.full_attention). The programs whose RoPE
// reads fall back from one key to the other refuse such a config, naming both keys; a null
// rope_scaling is still no scaling.
TEST(CliModelChecks, RopeScalingBesideRopeParametersIsRefused) {
  const std::pair<std::string, std::string> cases[] = {
      {"llama", "tiny-llama3"}, {"mistral", "tiny-mistral"}, {"phi3", "tiny-phi3"}, {"gemma3_text", "tiny-gemma3"}};
  for (const auto& [name, fixture] : cases) {
    SCOPED_TRACE(name);
    CopiedModel m(kShared + "/fixtures/" + fixture);
    const std::string check = "check " + kSource + "/models/" + name + ".lg --config " + (m.dir / "config.json").string();
    for (const char* key : {"rope_type", "type"}) {
      m.edit_config([&](nlohmann::json& j) { j["rope_scaling"] = {{key, "linear"}, {"factor", 2.0}}; });
      const CliRun r = run_lg(check);
      EXPECT_EQ(r.code, 1) << key << "\n" << r.out;
      EXPECT_NE(r.out.find("requirement failed: " + name + ".lg: config.json has both rope_scaling (the older key) and " +
                           (name == "gemma3_text" ? "rope_parameters.full_attention" : "rope_parameters")),
                std::string::npos)
          << key << "\n" << r.out;
    }
    m.edit_config([&](nlohmann::json& j) { j["rope_scaling"] = nullptr; });
    const CliRun r = run_lg(check);
    EXPECT_EQ(r.code, 0) << r.out;
  }
}

// `lg inspect` and `lg check` fit the params to a checkpoint saved without the model's base prefix
// as `lg run` binds them (openai-community/gpt2's "wte.weight" for gpt2.lg's
// "transformer.wte.weight"): both listed every tensor as missing; a tensor such a checkpoint lacks
// is still named, under its checkpoint name.
TEST(CliModelChecks, InspectAndCheckFitACheckpointWithoutTheBasePrefix) {
  lg::test::ModelCopy bare(kShared + "/fixtures/tiny-gpt2");
  bare.drop_tensor_prefix("transformer.");
  const std::string check = "check " + kSource + "/models/gpt2.lg --config " + (bare.dir / "config.json").string();
  const CliRun inspect = run_lg("inspect " + bare.dir.string());
  EXPECT_EQ(inspect.code, 0) << inspect.out;
  EXPECT_NE(inspect.out.find("h.0.attn.c_attn.weight"), std::string::npos) << inspect.out;
  EXPECT_EQ(inspect.out.find("missing tensor"), std::string::npos) << inspect.out;
  const CliRun checked = run_lg(check);
  EXPECT_EQ(checked.code, 0) << checked.out;
  EXPECT_EQ(checked.out.find("do not fit the checkpoint"), std::string::npos) << checked.out;
  bare.rename_tensors([](const std::string& name) { return name == "h.2.ln_2.bias" ? "" : name; });
  const CliRun holed = run_lg("inspect " + bare.dir.string());
  EXPECT_EQ(holed.code, 1) << holed.out;
  EXPECT_NE(holed.out.find("missing tensor \"h.2.ln_2.bias\" (param l2.ln2_b [64] at " +
                           lg::test::source_position(kSource + "/models/gpt2.lg", "param ln2_b:") + ")"),
            std::string::npos)
      << holed.out;
  const CliRun noted = run_lg(check);
  EXPECT_NE(noted.out.find("do not fit the checkpoint"), std::string::npos) << noted.out;
  EXPECT_NE(noted.out.find("missing tensor \"h.2.ln_2.bias\""), std::string::npos) << noted.out;
}

// A config.json eos_token_id outside [0, vocab_size) was accepted silently, though generation
// never stops on it; loading the model warns, naming the file, the field, the id and vocab_size.
// Not an error: some checkpoints list added tokens' ids that are handled elsewhere.
TEST(CliModelChecks, EosTokenIdOutsideTheVocabularyIsAWarning) {
  CopiedModel m(kShared + "/fixtures/tiny-qwen3");
  const std::string config = (m.dir / "config.json").string();
  m.edit_config([](nlohmann::json& j) { j["eos_token_id"] = nlohmann::json::array({1, 600}); });
  const CliRun r = run_lg("inspect " + m.dir.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("lg: warning: " + config + ": eos_token_id 600 is outside [0, vocab_size 512)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("eos_token_id 1 "), std::string::npos) << r.out;
  m.edit_config([](nlohmann::json& j) { j["eos_token_id"] = 512; });
  const CliRun one = run_lg("inspect " + m.dir.string());
  EXPECT_NE(one.out.find("lg: warning: " + config + ": eos_token_id 512 is outside [0, vocab_size 512)"),
            std::string::npos)
      << one.out;
  m.edit_config([](nlohmann::json& j) { j["eos_token_id"] = 511; });
  EXPECT_EQ(run_lg("inspect " + m.dir.string()).out.find("lg: warning:"), std::string::npos);
  // generation_config.json's ids are merged with config.json's: one outside is named with its file.
  const fs::path gen = m.dir / "generation_config.json";
  std::ofstream(gen) << R"({"eos_token_id": [511, 700]})";
  const CliRun g = run_lg("inspect " + m.dir.string());
  EXPECT_NE(g.out.find("lg: warning: " + gen.string() + ": eos_token_id 700 is outside [0, vocab_size 512)"),
            std::string::npos)
      << g.out;
  EXPECT_EQ(g.out.find("eos_token_id 511 "), std::string::npos) << g.out;
}

// A golden prompt id outside the vocabulary used to fail inside the forward as an IR gather
// error ("qwen3.lg:47:5: %3 = gather ..."); now the golden file's case and index are named.
TEST(CliModelChecks, LockNewNamesTheGoldenPromptIdOutsideTheVocabulary) {
  const fs::path golden = fs::temp_directory_path() / ("lg_cli_golden_" + std::to_string(std::random_device{}()) + ".json");
  const std::string model = kSource + "/models/qwen3-pycode-22m";
  for (const std::string id : {"999999999", "-1", "151936", "4294967296"}) {
    std::ofstream(golden) << R"({"cases":[{"prompt_ids":[1,2]},{"prompt_ids":[3,)" << id << "]}]}";
    const CliRun r = run_lg("lock new --model " + model + " --golden " + golden.string() + " -o /dev/null");
    EXPECT_EQ(r.code, 1) << id << "\n" << r.out;
    EXPECT_NE(r.out.find("lg: error: " + golden.string() + ": cases[1].prompt_ids[1] is " + id +
                         ", outside the model's vocabulary of 151936 ids"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("gather"), std::string::npos) << r.out;
  }
  std::ofstream(golden) << R"({"cases":[{"prompt_ids":[1, "x"]}]})";
  const CliRun text = run_lg("lock new --model " + model + " --golden " + golden.string() + " -o /dev/null");
  EXPECT_NE(text.out.find(": cases[0].prompt_ids[1] is \"x\", not an integer token id"), std::string::npos) << text.out;
  // In range, one case of one token: recorded, and counted in the singular.
  std::ofstream(golden) << R"({"cases":[{"prompt_ids":[1, 151935]}]})";
  const fs::path lock = golden.string() + ".lock.json";
  const CliRun ok = run_lg("lock new --model " + model + " --golden " + golden.string() + " -o " + lock.string() +
                           " --new-tokens 1");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find(": 1 case x 1 token, weights "), std::string::npos) << ok.out;
  fs::remove(lock);
  fs::remove(golden);
}

// A relative -m is read from the current directory and recorded relative to the lock's folder's
// parent, where lg lock check reads it: recorded as typed, a lock written from another directory
// failed its first check ("its model ... is not at ...").
TEST(CliModelChecks, ALockWrittenFromAnyDirectoryChecks) {
  const fs::path work = fs::temp_directory_path() / ("lg_cli_lockdir_" + std::to_string(std::random_device{}()));
  fs::create_directories(work / "deep" / "L");
  const std::string model = fs::relative(kShared + "/fixtures/tiny-qwen3", work).string();
  const CliRun made = run_lg("lock new -m " + model + " --golden " + kShared + "/fixtures/tiny-qwen3/golden.json " +
                                 "--new-tokens 2 -o deep/L/rel.lock.json",
                             "cd " + work.string() + " && ");
  EXPECT_EQ(made.code, 0) << made.out;
  EXPECT_NE(made.out.find("the lock records the model as ../"), std::string::npos) << made.out;
  const CliRun checked = run_lg("lock check --lane cpu --locks deep/L", "cd " + work.string() + " && ");
  EXPECT_EQ(checked.code, 0) << checked.out;
  EXPECT_NE(checked.out.find("ok   rel.lock.json"), std::string::npos) << checked.out;
  fs::remove_all(work);
}

// A golden prompt longer than the model's context failed making the lane for the longest prompt,
// naming no case; the case is named, as a lock file's is (lg lock check).
TEST(CliModelChecks, LockNewNamesTheGoldenPromptLongerThanTheContext) {
  const fs::path golden = fs::temp_directory_path() / ("lg_cli_golden_" + std::to_string(std::random_device{}()) + ".json");
  const nlohmann::json cases = {{"cases", {{{"prompt_ids", {1, 2}}}, {{"prompt_ids", std::vector<int>(1010, 7)}}}}};
  std::ofstream(golden) << cases.dump();
  const CliRun r = run_lg("lock new --model " + kShared + "/fixtures/tiny-qwen3 --golden " + golden.string() +
                          " -o /dev/null --new-tokens 24");  // its context: 1024
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(golden.string() + ": cases[1].prompt_ids holds 1010 ids; with --new-tokens 24 the case needs "
                                         "1034 positions, more than the model's context of 1024"),
            std::string::npos)
      << r.out;
  fs::remove(golden);
}

// `"num_hidden_layers": 8.0` was refused by the .lg binder at the program's line ("dim 'L' must be
// a positive integer ... found float 8"), naming no config field. transformers keeps the float and
// its range() refuses it: refused too, naming config.json's field, by every command that reads it.
TEST(CliModelChecks, AModuleSizeWrittenAsAFloatNamesTheConfigField) {
  CopiedModel m(kShared + "/fixtures/tiny-qwen3");
  int layers = 0;
  m.edit_config([&](nlohmann::json& j) {
    layers = j["num_hidden_layers"];
    j["num_hidden_layers"] = static_cast<double>(layers);
  });
  const std::string config = (m.dir / "config.json").string();
  const std::string message = config + ": field 'num_hidden_layers' must be an integer, got float " +
                              std::to_string(layers) + ".0: transformers sizes the model's modules by it (range(), "
                              "nn.Linear), which refuse a float (write " + std::to_string(layers) + ")";
  for (const std::string& args : {"check " + kSource + "/models/qwen3.lg --config " + config,
                                  "inspect " + m.dir.string(), "run --model " + m.dir.string() + " --prompt x"}) {
    const CliRun r = run_lg(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
    EXPECT_EQ(r.out.find("dim 'L'"), std::string::npos) << args << "\n" << r.out;
  }
}

// config.json's vocab_size 1000 against a 151936-row embedding: `lg run` used to blame the
// tokenizer for "import os" (id 2643 >= 1000); the shape mismatch is now reported first, from the
// header alone, by `lg run` and `lg lock`.
TEST(CliModelChecks, RunAndLockReportConfigDimsThatDisagreeWithTheWeightsFirst) {
  CopiedModel m(kSource + "/models/qwen3-pycode-22m");
  m.edit_config([](nlohmann::json& j) { j["vocab_size"] = 1000; });
  const std::string want = "the checkpoint does not fit the qwen3 program (1 problem):\n  tensor "
                           "\"model.embed_tokens.weight\" is [151936,128], param embed at " +
                           lg::test::source_position(kSource + "/models/qwen3.lg", "param embed:") +
                           " declares [1000,128]";
  const CliRun r = run_lg("run -q -m " + m.dir.string() + " -p 'import os' -n 2");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("tokenizer.json belong"), std::string::npos) << r.out;
  const fs::path golden = m.dir / "golden.json";
  std::ofstream(golden) << R"({"cases":[{"prompt_ids":[1,2]}]})";
  const CliRun l = run_lg("lock new --model " + m.dir.string() + " --golden " + golden.string() + " -o /dev/null");
  EXPECT_EQ(l.code, 1) << l.out;
  EXPECT_NE(l.out.find(want), std::string::npos) << l.out;
}

}  // namespace
}  // namespace lg::cli_test
