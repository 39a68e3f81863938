// ChatTemplate against transformers: every case of shared/fixtures/tokenizers/*/chat_cases.json
// (transformers 5.17 apply_chat_template, tokenize=False) must render to exactly its text; the
// model without a template is a clear `missing`; a broken tokenizer_config.json is a clear
// `broken` naming the file and field; the 22M Qwen3 model's own template gives, for plain
// conversations, exactly the ChatML text lg serve rendered before templates were read.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

namespace lg::chat {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using Kind = ChatTemplateError::Kind;

const fs::path kTokenizers = fs::path(LG_SHARED_DIR) / "fixtures" / "tokenizers";
const fs::path kQwen = fs::path(LG_SOURCE_DIR) / "models" / "qwen3-pycode-22m";

std::shared_ptr<JinjaRenderer> renderer() {
  static auto r = std::make_shared<JinjaRenderer>();
  return r;
}

json read_json(const fs::path& p) {
  std::ifstream f(p);
  EXPECT_TRUE(f) << "cannot read " << p;
  return json::parse(f);
}

/// A temporary directory with a tokenizer_config.json (and other files), removed at the end.
struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() / ("lg_chat_test_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((dir / name).parent_path());
    std::ofstream(dir / name, std::ios::binary) << text;
  }
  void config(const json& j) const { write("tokenizer_config.json", j.dump(2)); }
};

ChatTemplate load(const fs::path& dir) { return ChatTemplate::load(dir, std::nullopt, renderer()); }

ChatInput input(const json& messages, bool add_generation_prompt = true) {
  ChatInput in;
  in.messages = messages;
  in.add_generation_prompt = add_generation_prompt;
  return in;
}

Kind kind_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const ChatTemplateError& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no ChatTemplateError";
  return Kind::unavailable;
}

TEST(ChatTemplate, EveryFixtureCaseRendersExactly) {
  int dirs = 0, cases = 0;
  for (const auto& e : fs::directory_iterator(kTokenizers)) {
    const fs::path file = e.path() / "chat_cases.json";
    if (!fs::exists(file)) continue;
    ++dirs;
    const ChatTemplate t = load(e.path());
    ASSERT_TRUE(t.has_template()) << e.path();
    EXPECT_TRUE(t.problem().empty()) << t.problem();
    const json fixture = read_json(file);
    ASSERT_FALSE(fixture.at("cases").empty()) << file;
    for (const json& c : fixture.at("cases")) {
      SCOPED_TRACE(e.path().filename().string() + ": " + c.at("messages").dump());
      const std::string got = t.render(input(c.at("messages"), c.at("add_generation_prompt").get<bool>()));
      EXPECT_EQ(got, c.at("text").get<std::string>());
      ++cases;
    }
  }
  // Llama 3.1 and Gemma 3, 8 cases each: fewer means the fixtures were not found or changed.
  EXPECT_EQ(dirs, 2);
  EXPECT_EQ(cases, 16);
}

TEST(ChatTemplate, ATokenizerWithoutATemplateIsMissingNamingTheFiles) {
  const ChatTemplate t = load(kTokenizers / "sentencepiece-bpe-32k");
  EXPECT_FALSE(t.has_template());
  std::string msg;
  EXPECT_EQ(kind_of([&] { t.render(input(json::parse(R"([{"role": "user", "content": "hi"}])"))); }, &msg),
            Kind::missing);
  EXPECT_NE(msg.find("has no chat template"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sentencepiece-bpe-32k/tokenizer_config.json"), std::string::npos) << msg;
  EXPECT_EQ(kind_of([&] { t.check(); }), Kind::missing);
}

TEST(ChatTemplate, SpecialTokensComeFromTheTokenizerConfig) {
  const ChatTemplate gemma = load(kTokenizers / "gemma3");
  EXPECT_EQ(
      gemma.special_tokens(),
      json({{"bos_token", "<bos>"}, {"eos_token", "<end_of_turn>"}, {"unk_token", "<unk>"}, {"pad_token", "<pad>"}}));
  // AddedToken objects, and special_tokens_map.json filling what tokenizer_config.json lacks.
  TempDir d;
  d.config({{"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}, {"special", true}}},
            {"eos_token", nullptr},
            {"chat_template", "{{ bos_token }}|{{ eos_token }}|{{ pad_token is defined }}"}});
  d.write("special_tokens_map.json", R"({"bos_token": "<not-this>", "eos_token": "</s>"})");
  const ChatTemplate t = load(d.dir);
  EXPECT_EQ(t.render(input(json::array())), "<s>|</s>|False");
  // kwargs override special tokens, as {**special_tokens_map, **kwargs}.
  ChatInput in = input(json::array());
  in.kwargs = {{"eos_token", "<eot>"}};
  EXPECT_EQ(t.render(in), "<s>|<eot>|False");
}

TEST(ChatTemplate, TheEnvironmentIsTransformers) {
  TempDir d;
  // trim_blocks/lstrip_blocks, loopcontrols, tojson without HTML escaping and with its options,
  // {% generation %}, strftime_now, tools/documents as None, add_generation_prompt.
  d.config({{"chat_template",
             "{% for m in messages %}\n"
             "  {% if loop.index > 2 %}{% break %}{% endif %}\n"
             "{{ m.content | tojson }};\n"
             "{% endfor %}\n"
             "{% generation %}{{ {'b': 1, 'a': '<é>'} | tojson(sort_keys=True) }}{% endgeneration %}\n"
             "{{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} "
             "{{ strftime_now('%Y') | length }}"}});
  const ChatTemplate t = load(d.dir);
  const std::string got = t.render(input(json::parse(R"([{"content": "a\"<"}, {"content": "ü"}, {"content": "x"}])")));
  // (trim_blocks eats the newline after each block tag, lstrip_blocks the indentation before one.)
  EXPECT_EQ(got, "\"a\\\"<\";\n\"ü\";\n{\"a\": \"<é>\", \"b\": 1}True True True 4");
}

TEST(ChatTemplate, RaiseExceptionIsAFailureWithTheTemplatesMessage) {
  const ChatTemplate gemma = load(kTokenizers / "gemma3");
  std::string msg;
  const json two_users = json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
  EXPECT_EQ(kind_of([&] { gemma.render(input(two_users)); }, &msg), Kind::failed);
  EXPECT_EQ(msg, "Conversation roles must alternate user/assistant/user/assistant/...");
  // Other runtime errors are failures too, with Python's reason.
  TempDir d;
  d.config({{"chat_template", "{{ messages[0].content + 1 }}"}});
  EXPECT_EQ(kind_of([&] { load(d.dir).render(input(json::parse(R"([{"content": "x"}])"))); }, &msg), Kind::failed);
  EXPECT_NE(msg.find("TypeError"), std::string::npos) << msg;
}

TEST(ChatTemplate, AMalformedTemplateIsBrokenNamingFileAndField) {
  std::string msg;
  {  // Jinja syntax error: file, field and the template's line.
    TempDir d;
    d.config({{"chat_template", "{% for m in messages %}\n{{ m.content }\n{% endfor %}"}});
    const ChatTemplate t = load(d.dir);
    EXPECT_TRUE(t.problem().empty());
    EXPECT_EQ(kind_of([&] { t.render(input(json::array())); }, &msg), Kind::broken);
    EXPECT_NE(msg.find("tokenizer_config.json (chat_template)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
    EXPECT_EQ(kind_of([&] { t.check(); }), Kind::broken);
  }
  {  // chat_template of the wrong type
    TempDir d;
    d.config({{"chat_template", 42}});
    const ChatTemplate t = load(d.dir);
    EXPECT_TRUE(t.has_template());
    EXPECT_EQ(kind_of([&] { t.render(input(json::array())); }, &msg), Kind::broken);
    EXPECT_NE(msg.find("'chat_template' must be a string or a list"), std::string::npos) << msg;
  }
  {  // a named list with a bad entry
    TempDir d;
    d.config({{"chat_template", json::array({{{"name", "default"}, {"template", "x"}}, {{"name", 3}}})}});
    EXPECT_EQ(kind_of([&] { load(d.dir).render(input(json::array())); }, &msg), Kind::broken);
    EXPECT_NE(msg.find("'chat_template[1]'"), std::string::npos) << msg;
  }
  {  // not JSON at all
    TempDir d;
    d.write("tokenizer_config.json", "{\"chat_template\": \"x\",");
    const ChatTemplate t = load(d.dir);
    EXPECT_EQ(kind_of([&] { t.render(input(json::array())); }, &msg), Kind::broken);
    EXPECT_NE(msg.find("tokenizer_config.json: malformed JSON"), std::string::npos) << msg;
  }
  {  // a special token of the wrong type
    TempDir d;
    d.config({{"chat_template", "x"}, {"bos_token", 7}});
    EXPECT_EQ(kind_of([&] { load(d.dir).render(input(json::array())); }, &msg), Kind::broken);
    EXPECT_NE(msg.find("'bos_token' must be a string"), std::string::npos) << msg;
  }
  {  // 100,000 nested arrays as a special token: printing it into that message overflowed the stack
    TempDir d;
    d.write("tokenizer_config.json", R"({"chat_template": "x", "bos_token": )" + std::string(100000, '[') +
                                         std::string(100000, ']') + "}");
    EXPECT_EQ(kind_of([&] { load(d.dir).render(input(json::array())); }, &msg), Kind::broken);
    EXPECT_NE(msg.find((d.dir / "tokenizer_config.json").string() + ": the JSON is nested more than 10000 levels deep"),
              std::string::npos)
        << msg.substr(0, 300);
  }
}

TEST(ChatTemplate, NamedTemplatesChooseToolUseWhenToolsAreGiven) {
  TempDir d;
  d.config({{"chat_template", json::array({{{"name", "default"}, {"template", "plain"}},
                                           {{"name", "tool_use"}, {"template", "{{ tools | length }} tools"}}})}});
  const ChatTemplate t = load(d.dir);
  ChatInput in = input(json::array());
  EXPECT_EQ(t.render(in), "plain");
  in.tools = json::array({{{"type", "function"}}});
  EXPECT_EQ(t.render(in), "1 tools");
}

TEST(ChatTemplate, ChatTemplateJinjaWinsOverTheConfigAndAFileWinsOverBoth) {
  TempDir d;
  d.config({{"chat_template", "from config"}, {"bos_token", "<s>"}});
  d.write("chat_template.jinja", "from jinja {{ bos_token }}");
  EXPECT_EQ(load(d.dir).render(input(json::array())), "from jinja <s>");
  d.write("mine.jinja", "mine");
  EXPECT_EQ(ChatTemplate::load(d.dir, d.dir / "mine.jinja", renderer()).render(input(json::array())), "mine");
  EXPECT_THROW(ChatTemplate::load(d.dir, d.dir / "nope.jinja", renderer()), Error);
  d.write("latin1.jinja", "caf\xe9");
  EXPECT_THROW(ChatTemplate::load(d.dir, d.dir / "latin1.jinja", renderer()), Error);
}

// The ChatML lg serve rendered before it read templates.
std::string chatml(const json& messages) {
  std::string out;
  for (const auto& m : messages)
    out += "<|im_start|>" + m["role"].get<std::string>() + "\n" + m["content"].get<std::string>() + "<|im_end|>\n";
  return out + "<|im_start|>assistant\n";
}

TEST(ChatTemplate, QwenTemplateEqualsTheOldChatMLForPlainConversations) {
  const ChatTemplate t = load(kQwen);
  ASSERT_TRUE(t.has_template());
  EXPECT_NE(t.origin().find("tokenizer_config.json"), std::string::npos);
  for (
      const char* conv :
      {R"([{"role": "user", "content": "def add(a, b):"}])",
       R"([{"role": "system", "content": "You write Python."}, {"role": "user", "content": "def add(a, b):"}])",
       R"([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}])",
       R"([{"role": "system", "content": "s"}, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
               {"role": "system", "content": "t"}, {"role": "user", "content": "c"}])"}) {
    const json m = json::parse(conv);
    EXPECT_EQ(t.render(input(m)), chatml(m)) << conv;
  }
  // Where Qwen3's template differs from plain ChatML: a final assistant turn gets the (empty)
  // thinking block, and tool results travel in a user turn.
  const json last_assistant =
      json::parse(R"([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])");
  EXPECT_EQ(t.render(input(last_assistant, false)),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nb<|im_end|>\n");
  const json tool = json::parse(R"([{"role": "user", "content": "a"}, {"role": "tool", "content": "42"}])");
  EXPECT_EQ(t.render(input(tool)),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
  // enable_thinking=False (a kwarg) closes the thinking block in the generation prompt.
  ChatInput in = input(json::parse(R"([{"role": "user", "content": "a"}])"));
  in.kwargs = {{"enable_thinking", false}};
  EXPECT_EQ(t.render(in), "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplate, QwenTemplateRendersToolsAndToolCalls) {
  const ChatTemplate t = load(kQwen);
  ChatInput in = input(json::parse(R"([
    {"role": "user", "content": "add 1 and 2"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "3"}])"));
  in.tools = json::parse(R"([{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}])");
  const std::string got = t.render(in);
  EXPECT_EQ(got.rfind("<|im_start|>system\n# Tools\n", 0), 0u) << got;
  // tojson as transformers: ", " and ": " separators, key order kept.
  EXPECT_NE(got.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"add\", \"parameters\": {\"type\": "
                     "\"object\"}}}\n</tools>"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n"
                     "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n3\n</tool_response><|im_end|>\n"
                     "<|im_start|>assistant\n"),
            std::string::npos)
      << got;
}

TEST(ChatTemplate, NestingDepthIsMeasuredCheaply) {
  json deep = "x";
  for (int i = 0; i < 5000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  EXPECT_TRUE(nested_deeper_than(deep, 64));
  EXPECT_FALSE(nested_deeper_than(json::parse(R"({"a": [{"b": 1}]})"), 3));
  EXPECT_TRUE(nested_deeper_than(json::parse(R"({"a": [{"b": 1}]})"), 2));
  EXPECT_FALSE(nested_deeper_than(json("s"), 0));
}

}  // namespace
}  // namespace lg::chat
