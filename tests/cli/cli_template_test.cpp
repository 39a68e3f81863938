// `lg template` prints exactly what transformers' apply_chat_template(tokenize=False) returned
// for every case of shared/fixtures/tokenizers/*/chat_cases.json, and says clearly why it cannot
// (no template, the template refused the messages, a malformed messages file).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "cli_run.h"

namespace lg::cli_test {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

const fs::path kTokenizers = fs::path(kShared) / "fixtures" / "tokenizers";

struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& text) {
    path = fs::temp_directory_path() / ("lg_template_" + std::to_string(std::random_device{}()) + ".json");
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { fs::remove(path); }
};

CliRun run_template(const fs::path& model, const std::string& messages_json, const std::string& flags = "") {
  TempFile f(messages_json);
  return run_lg("template --model " + model.string() + " --messages " + f.path.string() + " " + flags);
}

TEST(CliTemplate, PrintsTheTransformersRenderingOfEveryFixtureCase) {
  int cases = 0;
  for (const char* name : {"llama3.1", "gemma3"}) {
    std::ifstream f(kTokenizers / name / "chat_cases.json");
    ASSERT_TRUE(f) << name;
    const ojson fixture = ojson::parse(f);
    for (const ojson& c : fixture.at("cases")) {
      const bool gen = c.at("add_generation_prompt").get<bool>();
      const CliRun r = run_template(kTokenizers / name, c.at("messages").dump(), gen ? "" : "--no-generation-prompt");
      EXPECT_EQ(r.code, 0) << r.out;
      EXPECT_EQ(r.out, c.at("text").get<std::string>()) << name << " " << c.at("messages").dump();
      ++cases;
    }
  }
  EXPECT_EQ(cases, 16);
}

TEST(CliTemplate, TakesAnObjectWithToolsAndKwargs) {
  // {"messages", "tools", other keys = template kwargs}: the 22M model's Qwen3 template.
  const std::string file = R"({"messages": [{"role": "user", "content": "hi"}], "enable_thinking": false})";
  const CliRun r = run_template(fs::path(kSource) / "models" / "qwen3-pycode-22m", file);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  const CliRun t = run_template(fs::path(kSource) / "models" / "qwen3-pycode-22m",
                                R"({"messages": [{"role": "user", "content": "hi"}],
                                    "tools": [{"type": "function", "function": {"name": "f"}}]})");
  EXPECT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"f\"}}\n</tools>"),
            std::string::npos)
      << t.out;
}

TEST(CliTemplate, AsServedRendersTheServersNormalizationOfAChatRequest) {
  // What OpenAI clients send and apply_chat_template does not take as such: a developer turn, text
  // parts, an assistant turn with only tool calls (content null, arguments a JSON string).
  const std::string messages = R"([{"role": "developer", "content": "Be terse."},
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "get", "arguments": "{\"city\":\"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])";
  const fs::path model = fs::path(kSource) / "models" / "qwen3-pycode-22m";
  const std::string served =
      "<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\na\nb<|im_end|>\n<|im_start|>assistant\n"
      "<tool_call>\n{\"name\": \"get\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n";
  CliRun r = run_template(model, messages, "--as-served");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, served);
  // The same messages as a request body, with the body's own generation-prompt switch.
  r = run_template(model, R"({"model": "m", "add_generation_prompt": false, "messages": )" + messages + "}",
                   "--as-served");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, served.substr(0, served.size() - std::string("<|im_start|>assistant\n").size()));
  // As the file holds them (apply_chat_template's input), Qwen3's template fails on the parts.
  r = run_template(model, messages);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("'list object' has no attribute 'startswith'"), std::string::npos) << r.out;
  // What the server refuses, refused with its words and the file's name.
  r = run_template(model, R"([{"role": "robot", "content": "x"}])", "--as-served");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(": lg serve would answer 400: 'messages[0].role' must be system, developer, user, assistant or "
                       "tool, got 'robot'"),
            std::string::npos)
      << r.out;
  r = run_template(model, "[{", "--as-served");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("lg serve would answer 400: the body is not valid JSON"), std::string::npos) << r.out;
}

TEST(CliTemplate, ExplainsWhatIsWrong) {
  const std::string hello = R"([{"role": "user", "content": "Hello!"}])";
  CliRun r = run_template(kTokenizers / "sentencepiece-bpe-32k", hello);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("lg: error: this model has no chat template"), std::string::npos) << r.out;
  // Gemma's template refuses two user turns in a row (its raise_exception).
  r = run_template(kTokenizers / "gemma3", R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(") failed on "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Conversation roles must alternate user/assistant/user/assistant/..."), std::string::npos)
      << r.out;
  r = run_template(kTokenizers / "gemma3", "[{\"role\": ");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("not valid JSON: parse error at line 1, column 11: "), std::string::npos) << r.out;
  // The position, without nlohmann's internal "[json.exception.parse_error.101]" id.
  EXPECT_EQ(r.out.find("json.exception"), std::string::npos) << r.out;
  r = run_template(kTokenizers / "gemma3", R"({"messages": [1]})");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("messages[0] must be an object"), std::string::npos) << r.out;
  r = run_template(kTokenizers / "gemma3", R"({"messages": [], "add_generation_prompt": true})");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--no-generation-prompt"), std::string::npos) << r.out;
  // Far past the nesting bound, as the whole file or as one kwarg: refused, not a stack overflow
  // while the document is copied into the template's input.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  r = run_template(kTokenizers / "gemma3", deep);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("nests arrays/objects more than 200 levels deep"), std::string::npos) << r.out;
  r = run_template(kTokenizers / "gemma3", R"({"messages": [{"role": "user", "content": "a"}], "x": )" + deep + "}");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("nests arrays/objects more than 200 levels deep"), std::string::npos) << r.out;
  // A messages file with no end (/dev/zero): reading stops at the 64 MiB cap and names the file
  // (it used to read until memory ran out; the limit keeps a regression from taking the machine's).
  r = run_lg("template --model " + (kTokenizers / "gemma3").string() + " --messages /dev/zero",
             "ulimit -v 1500000; ");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("lg: error: /dev/zero: larger than 64 MiB"), std::string::npos) << r.out;
  // An empty list (as lg serve says it; the templates would fail on messages[0] in their own
  // words) and a directory in place of the file.
  r = run_template(kTokenizers / "gemma3", "[]");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("'messages' is empty"), std::string::npos) << r.out;
  r = run_lg("template --model " + (kTokenizers / "gemma3").string() + " --messages " + kTokenizers.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("is a directory, not a messages file"), std::string::npos) << r.out;
  r = run_lg("template --model " + (kTokenizers / "gemma3").string());
  EXPECT_EQ(r.code, 2) << r.out;  // --messages is required: a usage error
}

}  // namespace
}  // namespace lg::cli_test
