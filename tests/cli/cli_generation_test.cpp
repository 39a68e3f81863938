// What `lg run` generates and `lg inspect` shows of it: the eos ids generation stops on (the
// configs' and the tokenizer's) and the special tokens left out of the text, on copies of the 22M
// model that change one tokenizer file; the penalties and generation_config.json's defaults.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "common/model_copy.h"
#include "tokenizer/tokenizer.h"

namespace lg::cli_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::ModelCopy;


/// The first case of the 22M model's golden file: its prompt and transformers' greedy ids.
json first_golden() {
  return json::parse(std::ifstream(kShared + "/fixtures/qwen3-pycode-22m-golden.json")).at("cases").at(0);
}

/// `lg run` of `prompt` (written to a file: it holds a newline) on `model`, greedy, without echo.
CliRun run_greedy(const fs::path& model, const std::string& prompt, int max_tokens) {
  const fs::path file = fs::temp_directory_path() / ("lg_cli_prompt_" + std::to_string(::getpid()));
  std::ofstream(file, std::ios::binary) << prompt;
  const CliRun r = run_lg("run -q --no-echo -m " + model.string() + " -f " + file.string() + " -n " +
                          std::to_string(max_tokens));
  fs::remove(file);
  return r;
}

/// The generated text of a run: its output before the stats line lg run ends with on stderr.
std::string generated_text(const CliRun& r) { return r.out.substr(0, r.out.rfind("\nlg: prefill ")); }

// tokenizer_config.json's eos_token stops `lg run` too (as vLLM), once listed in lg inspect: the
// 22M model's own is <|im_end|> (151645), which its configs (151643) do not list; a copy whose
// eos_token is the fifth greedy token of the golden prompt stops there.
TEST(CliGeneration, TheTokenizersEosTokenStopsLgRunAndLgInspectListsIt) {
  const CliRun own = run_lg("inspect --json " + kModel);
  ASSERT_EQ(own.code, 0) << own.out;
  EXPECT_EQ(json::parse(own.out)["eos_token_ids"], json::array({151643, 151645}));

  const json golden = first_golden();
  const std::vector<int32_t> greedy = golden.at("fp32_cpu_greedy_ids");
  const int32_t eos = greedy.at(4);
  const auto first = std::find(greedy.begin(), greedy.end(), eos) - greedy.begin();
  ModelCopy m(kModel);
  const json vocab = json::parse(std::ifstream(m.dir / "tokenizer.json"))["model"]["vocab"];
  std::string token;
  for (const auto& [text, id] : vocab.items())
    if (id == eos) token = text;
  ASSERT_FALSE(token.empty());
  m.edit_json("tokenizer_config.json", [&](json& j) { j["eos_token"] = token; });

  const CliRun inspect = run_lg("inspect --json " + m.dir.string());
  ASSERT_EQ(inspect.code, 0) << inspect.out;
  EXPECT_EQ(json::parse(inspect.out)["eos_token_ids"], json::array({151643, eos}));
  const CliRun text = run_lg("inspect " + m.dir.string());
  EXPECT_NE(text.out.find("tokens:       eos [151643, " + std::to_string(eos) + "], bos 151643\n"), std::string::npos)
      << text.out;

  // The text of the tokens before it, as a run asked for just those gives; then "stop: eos".
  const std::string prompt = golden.at("prompt");
  const CliRun stops = run_greedy(m.dir, prompt, 16);
  ASSERT_EQ(stops.code, 0) << stops.out;
  EXPECT_NE(stops.out.find("| stop: eos\n"), std::string::npos) << stops.out;
  const CliRun before = run_greedy(kModel, prompt, static_cast<int>(first));
  ASSERT_EQ(before.code, 0) << before.out;
  EXPECT_NE(before.out.find("| stop: max_tokens\n"), std::string::npos) << before.out;
  EXPECT_EQ(generated_text(stops), generated_text(before));
  EXPECT_FALSE(generated_text(stops).empty());

  // An eos_token the configs list already is listed once.
  m.edit_json("tokenizer_config.json", [&](json& j) { j["eos_token"] = "<|endoftext|>"; });
  const CliRun once = run_lg("inspect --json " + m.dir.string());
  ASSERT_EQ(once.code, 0) << once.out;
  EXPECT_EQ(json::parse(once.out)["eos_token_ids"], json::array({151643}));
}

// lg run leaves special tokens out of the text, as vLLM's default skip_special_tokens: a copy of
// the 22M model whose tokenizer.json marks a token of the golden greedy answer special prints the
// same answer without that token's text.
TEST(CliGeneration, LgRunLeavesSpecialTokensOutOfTheText) {
  const json golden = first_golden();
  const std::vector<int32_t> all = golden.at("fp32_cpu_greedy_ids");
  const std::vector<int32_t> greedy(all.begin(), all.begin() + 16);
  ModelCopy m(kModel);
  const int32_t marked = m.mark_special_token(greedy);
  ASSERT_GE(marked, 0);
  std::vector<int32_t> shown;
  for (const int32_t id : greedy)
    if (id != marked) shown.push_back(id);
  const auto tok = tokenizer::Tokenizer::from_file(fs::path(kModel) / "tokenizer.json");
  const std::string prompt = golden.at("prompt");
  const CliRun plain = run_greedy(kModel, prompt, 16);
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(generated_text(plain), tok.decode(greedy));
  const CliRun skipped = run_greedy(m.dir, prompt, 16);
  ASSERT_EQ(skipped.code, 0) << skipped.out;
  EXPECT_EQ(generated_text(skipped), tok.decode(shown));
  EXPECT_NE(tok.decode(shown), tok.decode(greedy));
}

/// `lg run` of `prompt` (written to a file) on `model` with `flags`, without echo.
CliRun run_with(const fs::path& model, const std::string& prompt, const std::string& flags) {
  const fs::path file = fs::temp_directory_path() / ("lg_cli_prompt_" + std::to_string(::getpid()));
  std::ofstream(file, std::ios::binary) << prompt;
  const CliRun r = run_lg("run --no-echo -m " + model.string() + " -f " + file.string() + " " + flags);
  fs::remove(file);
  return r;
}

// lg run's penalty options change a greedy run, and generation_config.json's repetition_penalty
// and max_new_tokens are the defaults of a run that sets none (as vLLM's generation config
// supplies them); an option given wins. A run says which defaults the model's config set.
TEST(CliGeneration, LgRunTakesPenaltiesAndTheGenerationConfigsDefaults) {
  const json golden = first_golden();
  const std::string prompt = golden.at("prompt");
  const CliRun plain = run_with(kModel, prompt, "-q -n 16");
  const CliRun penalised = run_with(kModel, prompt, "-q -n 16 --repetition-penalty 1.3");
  const CliRun penalised5 = run_with(kModel, prompt, "-q -n 5 --repetition-penalty 1.3");
  const CliRun others = run_with(kModel, prompt, "-q -n 16 --presence-penalty 0.8 --frequency-penalty 0.6");
  for (const CliRun* r : {&plain, &penalised, &penalised5, &others}) ASSERT_EQ(r->code, 0) << r->out;
  EXPECT_NE(generated_text(penalised), generated_text(plain));
  EXPECT_NE(generated_text(others), generated_text(plain));
  EXPECT_NE(generated_text(others), generated_text(penalised));

  ModelCopy m(kModel);
  m.edit_json("generation_config.json", [](json& j) {
    j["repetition_penalty"] = 1.3;
    j["max_new_tokens"] = 5;
  });
  const CliRun by_default = run_with(m.dir, prompt, "");
  ASSERT_EQ(by_default.code, 0) << by_default.out;
  EXPECT_NE(by_default.out.find("lg: defaults from generation_config.json where no option sets them: "
                                "repetition_penalty 1.3, max_new_tokens 5\n"),
            std::string::npos)
      << by_default.out;
  EXPECT_NE(by_default.out.find("decode 4 tokens"), std::string::npos) << by_default.out;  // 5 tokens
  EXPECT_NE(by_default.out.find("| stop: max_tokens\n"), std::string::npos) << by_default.out;
  const std::string text = by_default.out.substr(0, by_default.out.rfind("\nlg: prefill "));
  EXPECT_TRUE(text.ends_with(generated_text(penalised5))) << by_default.out;
  const CliRun off = run_with(m.dir, prompt, "-q -n 16 --repetition-penalty 1");
  ASSERT_EQ(off.code, 0) << off.out;
  EXPECT_EQ(generated_text(off), generated_text(plain));
}

// lg run's --top-k -1 meant "generation_config.json's top_k", where lg serve's top_k -1 (and
// vLLM's) is off: a Qwen3 run given --top-k -1 kept the config's 20. -1 is off, as 0 is; no
// option takes the config's (found by a new-user pass).
TEST(CliGeneration, LgRunTopKMinusOneIsOffAsInServe) {
  const json golden = first_golden();
  const std::string prompt = golden.at("prompt");
  ModelCopy m(kModel);
  m.edit_json("generation_config.json", [](json& j) {
    j["do_sample"] = true;
    j["temperature"] = 1.5;
    j["top_k"] = 1;  // sampling from the top token alone: the greedy text
  });
  const CliRun greedy = run_with(kModel, prompt, "-q -n 16");
  const CliRun by_default = run_with(m.dir, prompt, "-q -n 16 --seed 3");
  const CliRun minus_one = run_with(m.dir, prompt, "-q -n 16 --seed 3 --top-k -1");
  const CliRun zero = run_with(m.dir, prompt, "-q -n 16 --seed 3 --top-k 0");
  for (const CliRun* r : {&greedy, &by_default, &minus_one, &zero}) ASSERT_EQ(r->code, 0) << r->out;
  EXPECT_EQ(generated_text(by_default), generated_text(greedy));
  EXPECT_EQ(generated_text(minus_one), generated_text(zero));
  EXPECT_NE(generated_text(minus_one), generated_text(greedy));
}

// LG_STARTUP_TIMES=1: the first steps' lines come after the generated text and its speed line; they
// were printed as the steps ended, inside the streaming text ("hilg: startup: lg run: first step").
TEST(CliGeneration, LgRunStartupTimesOfTheFirstStepsFollowTheText) {
  const CliRun r = run_lg("run -m " + kModel + " -p hi -n 4 --temperature 0", "LG_STARTUP_TIMES=1 ");
  ASSERT_EQ(r.code, 0) << r.out;
  const size_t speeds = r.out.find("lg: prefill"), first = r.out.find("lg: startup: lg run: first step");
  ASSERT_NE(speeds, std::string::npos) << r.out;
  ASSERT_NE(first, std::string::npos) << r.out;
  EXPECT_LT(speeds, first) << r.out;
  EXPECT_NE(r.out.find("lg: startup: lg run: first decode step", first), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lg: startup: lg run: make lane"), std::string::npos) << r.out;  // the others as before
}

// --prompt-ids runs a model with no tokenizer.json (the fixtures): stdout is the ids. On
// tiny-qwen3 they are transformers' greedy ids (golden.json): the smallest margin between the top
// two logits there is 3.5e-4, the fp32 CPU lane within about 1e-5 of transformers' logits. Its
// `generate` masked token id 0 as padding, so the prompt is sent as it attended to it, without
// the zeros (tests/lanes_qwen/test_util.h, prompt_generate_attended).
TEST(CliGeneration, LgRunPromptIdsGivesTransformersGreedyIds) {
  const nlohmann::json golden = nlohmann::json::parse(std::ifstream(kTiny + "/golden.json"));
  for (const auto& c : golden["cases"]) {
    std::string ids, want;
    for (const auto& id : c["prompt_ids"])
      if (id.get<int>() != 0) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
    for (const auto& id : c["greedy_ids"]) want += (want.empty() ? "" : " ") + std::to_string(id.get<int>());
    const CliRun r = run_lg("run -m " + kTiny + " --prompt-ids " + ids + " -n " +
                            std::to_string(c["greedy_ids"].size()) + " --no-echo -q --temperature 0");
    EXPECT_EQ(r.code, 0) << r.out;
    // stdout's line, then stderr's speeds (run_lg reads both).
    EXPECT_EQ(r.out.substr(0, r.out.find('\n') + 1), want + "\n") << "prompt " << ids;
    EXPECT_NE(r.out.find("\nlg: prefill "), std::string::npos) << r.out;
  }
  // With echo, the prompt's ids come first; an id past the vocabulary is named.
  const CliRun echoed = run_lg("run -m " + kTiny + " --prompt-ids 175 -n 2 -q --temperature 0");
  EXPECT_EQ(echoed.out.substr(0, echoed.out.find('\n') + 1), "175 342 342\n") << echoed.out;
  const CliRun bad = run_lg("run -m " + kTiny + " --prompt-ids 5,512");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("--prompt-ids: id 512 is outside the model's vocabulary of 512 ids"), std::string::npos) << bad.out;
  // Piped into lg detokenize (`-`: ids from stdin), the ids are the text lg run prints for the prompt.
  const CliRun piped = run_lg("detokenize --no-newline -m " + kModel + " -",
                              std::string(LG_BINARY) + " run -m " + kModel +
                                  " --prompt-ids 750,282 -n 6 -q --temperature 0 2>/dev/null | ");
  const CliRun as_text = run_lg("run -m " + kModel + " -p 'def f' -n 6 -q --temperature 0 2>/dev/null");
  EXPECT_EQ(piped.code, 0) << piped.out;
  // (run_lg reads stderr too: lg run's speed line follows its text, after a newline of its own.)
  EXPECT_EQ(piped.out, as_text.out.substr(0, as_text.out.find("\nlg: prefill"))) << "the ids of 'def f' are 750 282";
  // No ids on stdin decode to "", as HF's decode([]).
  const CliRun none = run_lg("detokenize -m " + kModel + " -", "printf '  \\n' | ");
  EXPECT_EQ(none.code, 0) << none.out;
  EXPECT_EQ(none.out, "\n");
  const CliRun spaced = run_lg("run -m " + kTiny + " --prompt-ids '1 2'");
  EXPECT_NE(spaced.out.find("ids in one argument are separated by commas"), std::string::npos) << spaced.out;
  const CliRun text = run_lg("run -m " + kTiny + " -p hi");
  EXPECT_NE(text.out.find("no tokenizer.json; lg run needs one to read the prompt (or give the prompt as token ids: "
                          "--prompt-ids)"),
            std::string::npos)
      << text.out;
}

// A one-token prompt with -n 1 runs at a context of one position; on a model with one KV head
// (tiny-qwen3-untied-mqa) the batching rewrite refused that cache's view ("read only whole ... by
// attention", found by a new-user pass). Its first greedy token is transformers'.
TEST(CliGeneration, LgRunOneTokenPromptOneNewTokenOnOneKvHead) {
  const std::string mqa = kShared + "/fixtures/tiny-qwen3-untied-mqa";
  const nlohmann::json first = nlohmann::json::parse(std::ifstream(mqa + "/golden.json"))["cases"][0];
  ASSERT_EQ(first["prompt_ids"].size(), 1u);
  const std::string prompt = std::to_string(first["prompt_ids"][0].get<int>());
  const CliRun r = run_lg("run -m " + mqa + " --prompt-ids " + prompt + " -n 1 --no-echo -q --temperature 0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n') + 1), std::to_string(first["greedy_ids"][0].get<int>()) + "\n") << r.out;
}

}  // namespace
}  // namespace lg::cli_test
