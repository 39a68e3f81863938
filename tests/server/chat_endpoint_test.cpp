// /v1/chat/completions with the model's own chat template (src/chat/): what OpenAI clients send
// (developer role, tool calls with null content, tools, 5,000 content parts) renders to the text
// the template makes of it; a template that raises is a 400 with its message; one that loops or
// renders a huge text is stopped within its bound and the server keeps serving; a model without
// a template is a 400, a broken one a 500 naming the file. Servers run in-process on ephemeral
// 127.0.0.1 ports with the cpu lane on the 22M model (or a copy of its directory).
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "common/model_copy.h"
#include "server/openai.h"
#include "server/server.h"

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using namespace lg::server;

const fs::path kQwen = fs::path(LG_SOURCE_DIR) / "models" / "qwen3-pycode-22m";

/// The cpu lane with a context of `max_seq` tokens, every other option its default.
EngineOptions cpu_lane(int64_t max_seq) {
  EngineOptions o;
  o.lane = "cpu";
  o.max_seq = max_seq;
  return o;
}
constexpr int64_t kChatContext = 256;

struct ChatAnswer {
  int status = 0;
  ojson body;
};

ChatAnswer post(int port, const ojson& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  if (!r) return {};
  ChatAnswer a{r->status, ojson()};
  try {
    a.body = ojson::parse(r->body);
  } catch (const ojson::exception&) {
    ADD_FAILURE() << "not JSON: " << r->body;
  }
  return a;
}

ojson user(const std::string& text) { return ojson::array({{{"role", "user"}, {"content", text}}}); }

/// A temp file, removed at the end.
struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& text) {
    path = fs::temp_directory_path() / ("lg_chat_tmpl_" + std::to_string(std::random_device{}()) + ".jinja");
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { fs::remove(path); }
};

class ChatEndpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    engine_ = new Engine(kQwen.string(), cpu_lane(kChatContext));
    server_ = new Server(*engine_, {"127.0.0.1", 0});
    port_ = server_->start();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete engine_;
  }
  /// A request's prompt tokens must be those of `text`: the prompt the server rendered.
  static void expect_prompt(const ojson& body, const std::string& text) {
    ojson b = body;
    b["max_tokens"] = 1;
    b["temperature"] = 0;
    const ChatAnswer a = post(port_, b);
    ASSERT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(a.body["usage"]["prompt_tokens"], engine_->tokenizer().encode(text).size()) << text;
  }
  static void expect_error(int port, const ojson& body, int status, const std::string& in_message,
                           const std::string& param = "messages") {
    const ChatAnswer a = post(port, body);
    EXPECT_EQ(a.status, status) << a.body;
    const std::string msg = a.body.contains("error") ? a.body["error"].value("message", "") : a.body.dump();
    EXPECT_NE(msg.find(in_message), std::string::npos) << msg;
    if (status == 400) {
      EXPECT_EQ(a.body["error"]["type"], "invalid_request_error");
      EXPECT_EQ(a.body["error"]["param"], param);
    } else {
      EXPECT_EQ(a.body["error"]["type"], "server_error");
    }
  }
  static bool healthy(int port) {
    auto r = httplib::Client("127.0.0.1", port).Get("/health");
    return r && r->status == 200;
  }

  static inline Engine* engine_ = nullptr;
  static inline Server* server_ = nullptr;
  static inline int port_ = 0;
};

TEST_F(ChatEndpointTest, WhatOpenAIClientsSendRendersThroughTheTemplate) {
  const std::string gen = "<|im_start|>assistant\n";
  // developer is a system message.
  expect_prompt(
      {{"messages", {{{"role", "developer"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "hi"}}}}},
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n" + gen);
  // A tool round trip: the assistant's call with "content": null, the tool's answer. Qwen3's
  // template writes the call's arguments string as is and the result as a user turn.
  const ojson tool_round = ojson::parse(R"([
      {"role": "user", "content": "add 1 and 2"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "3"}])");
  expect_prompt({{"messages", tool_round}},
                "<|im_start|>user\nadd 1 and 2<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"add\", "
                "\"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n3\n"
                "</tool_response><|im_end|>\n" +
                    gen);
  // chat_template_kwargs reach the template (Qwen3: enable_thinking=false closes the think block);
  // add_generation_prompt=false leaves the generation prompt out.
  expect_prompt({{"messages", user("hi")}, {"chat_template_kwargs", {{"enable_thinking", false}}}},
                "<|im_start|>user\nhi<|im_end|>\n" + gen + "<think>\n\n</think>\n\n");
  expect_prompt({{"messages", user("hi")}, {"add_generation_prompt", false}}, "<|im_start|>user\nhi<|im_end|>\n");
  // tools are described in a system turn, each as its JSON with the keys in the order sent.
  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "add", "description": "Adds.",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}])");
  expect_prompt(
      {{"messages", user("hi")}, {"tools", tools}},
      "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
      "{\"type\": \"function\", \"function\": {\"name\": \"add\", \"description\": \"Adds.\", \"parameters\": "
      "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}}}\n</tools>\n\n"
      "For each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
      "<args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nhi<|im_end|>\n" +
          gen);
}

TEST_F(ChatEndpointTest, FiveThousandContentPartsNestedOrNot) {
  // 5,000 text parts in a row are one message: the non-empty texts joined with "\n", as vLLM
  // joins them.
  ojson parts = ojson::array();
  for (int i = 0; i < 5000; ++i) parts.push_back({{"type", "text"}, {"text", i % 1000 == 0 ? "ab" : ""}});
  expect_prompt({{"messages", {{{"role", "user"}, {"content", parts}}}}},
                "<|im_start|>user\nab\nab\nab\nab\nab<|im_end|>\n<|im_start|>assistant\n");
  // 5,000 nested arrays as the content, or as a tool call: a 400 naming the field, at once.
  ojson deep = ojson::array({{{"type", "text"}, {"text", "x"}}});
  for (int i = 0; i < 5000; ++i) {
    ojson outer = ojson::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  expect_error(port_, {{"messages", {{{"role", "user"}, {"content", deep}}}}}, 400, "must be a",
               "messages[0].content[0]");
  expect_error(port_, {{"messages", {{{"role", "assistant"}, {"content", "x"}, {"tool_calls", deep}}}}}, 400,
               "nests more than 64 levels", "messages[0].tool_calls");
  EXPECT_TRUE(healthy(port_));
}

TEST_F(ChatEndpointTest, ATemplateThatRaisesIsA400WithItsMessage) {
  TempFile t(
      "{% if messages[0]['role'] != 'user' %}{{ raise_exception('Only user messages, please') }}{% endif %}"
      "{{ messages[0]['content'] }}");
  ServerOptions o{"127.0.0.1", 0};
  o.chat_template_file = t.path;
  Server s(*engine_, o);
  const int port = s.start();
  expect_error(port, {{"messages", {{{"role", "system"}, {"content", "x"}}}}}, 400,
               "refused by the model's chat template: Only user messages, please");
  const ChatAnswer ok = post(port, {{"messages", user("def f():")}, {"max_tokens", 2}, {"stream", false}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  // A template failing otherwise (here an undefined variable) is a 400 too, as vLLM answers.
  TempFile u("{{ messages[0].nothing.deeper }}");
  o.chat_template_file = u.path;
  Server s2(*engine_, o);
  expect_error(s2.start(), {{"messages", user("x")}}, 400, "'dict object' has no attribute 'nothing'");
}

TEST_F(ChatEndpointTest, LoopingOrHugeTemplatesAreBoundedAndTheServerStaysUp) {
  TempFile loop(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100000) %}{% endfor %}"
      "{% endfor %}{% endfor %}");
  ServerOptions o{"127.0.0.1", 0};
  o.chat_template_file = loop.path;
  o.chat_renderer.timeout = std::chrono::milliseconds(1000);
  Server s(*engine_, o);
  const int port = s.start();
  EXPECT_NO_THROW(s.chat_template().check());  // starts the worker, so the time below is the render's
  const auto t0 = std::chrono::steady_clock::now();
  expect_error(port, {{"messages", user("x")}}, 500, "did not finish rendering within 1 s");
  // 10^15 loop iterations stopped at the 1 s bound; the rest is room for a loaded machine.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_TRUE(healthy(port));
  httplib::Client c("127.0.0.1", port);
  auto comp = c.Post("/v1/completions", R"({"prompt": "def f():", "max_tokens": 2})", "application/json");
  ASSERT_TRUE(comp);
  EXPECT_EQ(comp->status, 200) << comp->body;

  TempFile huge("{% for i in range(100000) %}{{ messages[0].content * 1000 }}{% endfor %}");
  o.chat_template_file = huge.path;
  o.chat_renderer.max_output_bytes = 1 << 20;
  Server s2(*engine_, o);
  expect_error(s2.start(), {{"messages", user("0123456789")}}, 400, "larger than 1048576 bytes");
}

TEST_F(ChatEndpointTest, ToolCallArgumentsThatAreNotJsonAre400NamingThem) {
  const ojson messages = ojson::parse(R"([{"role": "user", "content": "add"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "add", "arguments": "{\"a\": 1,"}}]}])");
  expect_error(port_, {{"messages", messages}}, 400, "is not valid JSON",
               "messages[1].tool_calls[0].function.arguments");
}

std::shared_ptr<lg::chat::JinjaRenderer> renderer() {
  static auto r = std::make_shared<lg::chat::JinjaRenderer>();
  return r;
}

// The prompt a chat request renders to (render_chat, what lg serve tokenizes) holds a call's
// arguments as the template writes the object they encode, as vLLM renders them (it ojson-parses
// the string first): Qwen3's template wrote the string itself, with the client's spacing, and a
// template writing `arguments | tojson` (Qwen2.5's, Llama 3.1's) wrote it quoted a second time.
TEST(ChatPrompt, ToolCallArgumentsRenderAsTheObjectTheyEncode) {
  const std::string body = R"({"messages": [{"role": "user", "content": "add 1 and 2"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "add", "arguments": "{\"b\":2,\"a\":1}"}}]},
      {"role": "assistant", "content": "ok", "tool_calls": []},
      {"role": "tool", "tool_call_id": "c1", "content": "3"}]})";
  // The conversation vLLM gives the template: parsed arguments, no empty tool_calls.
  lg::chat::ChatInput parsed;
  parsed.messages = ojson::parse(R"([{"role": "user", "content": "add 1 and 2"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "add", "arguments": {"b": 2, "a": 1}}}]},
      {"role": "assistant", "content": "ok"},
      {"role": "tool", "tool_call_id": "c1", "content": "3"}])");
  const ChatRequest r = parse_chat_request(body);

  const auto qwen3 = lg::chat::ChatTemplate::load(kQwen, std::nullopt, renderer());
  const std::string want = qwen3.render(parsed);
  EXPECT_EQ(render_chat(qwen3, r), want);
  EXPECT_NE(want.find("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"b\": 2, \"a\": 1}}\n</tool_call>"),
            std::string::npos)
      << want;

  // The arguments as Llama 3.1's and Qwen2.5's templates write them, and whether a message has
  // tool_calls at all.
  const TempFile tojson(
      "{% for m in messages %}{{ m.role }}:{{ 'calls ' if m.tool_calls is defined }}"
      "{% for c in m.tool_calls or [] %}{{ c.function.arguments | tojson }}{% endfor %}|{% endfor %}");
  const auto t = lg::chat::ChatTemplate::load(kQwen, tojson.path, renderer());
  EXPECT_EQ(render_chat(t, r), t.render(parsed));
  EXPECT_EQ(render_chat(t, r), "user:|assistant:calls {\"b\": 2, \"a\": 1}|assistant:|tool:|");
}

// Qwen3's template writes each tool with tojson, so the prompt holds the tool as the template
// gets it: vLLM gives it tool.model_dump(), {"type", "function": {"name", "description",
// "parameters"}} in that order with null for what was not sent. A tool sent without a
// description, its keys in another order, renders as vLLM renders it.
TEST(ChatPrompt, ToolsRenderAsVllmDumpsThem) {
  const ChatRequest r = parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}],
      "tools": [{"function": {"parameters": {"type": "object", "properties": {"b": {"type": "integer"},
        "a": {"type": "integer"}}}, "name": "add"}, "type": "function"}]})");
  const auto qwen3 = lg::chat::ChatTemplate::load(kQwen, std::nullopt, renderer());
  const std::string got = render_chat(qwen3, r);
  EXPECT_EQ(got,
            "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            "{\"type\": \"function\", \"function\": {\"name\": \"add\", \"description\": null, \"parameters\": "
            "{\"type\": \"object\", \"properties\": {\"b\": {\"type\": \"integer\"}, \"a\": {\"type\": "
            "\"integer\"}}}}}\n</tools>\n\n"
            "For each function call, return a json object with function name and arguments within "
            "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
            "<args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

// A copy of the 22M model directory (files linked) with its own tokenizer_config.json.
struct ModelWithConfig : lg::test::ModelCopy {
  explicit ModelWithConfig(const ojson& tokenizer_config) : ModelCopy(kQwen) {
    write("tokenizer_config.json", tokenizer_config.dump());
  }
};

TEST(ChatEndpointModels, WithoutATemplateChatIs400AndBrokenIs500) {
  {
    ModelWithConfig m(ojson{{"eos_token", "<|im_end|>"}});
    Engine engine(m.dir.string(), cpu_lane(64));
    Server s(engine, {"127.0.0.1", 0});
    const int port = s.start();
    const ChatAnswer a = post(port, {{"messages", user("x")}, {"stream", true}});
    EXPECT_EQ(a.status, 400) << a.body;
    EXPECT_EQ(a.body["error"]["param"], "messages");
    const std::string msg = a.body["error"]["message"];
    EXPECT_NE(msg.find("this model has no chat template"), std::string::npos) << msg;
    EXPECT_NE(msg.find("/v1/completions"), std::string::npos) << msg;
    httplib::Client c("127.0.0.1", port);
    auto comp = c.Post("/v1/completions", R"({"prompt": "def f():", "max_tokens": 2})", "application/json");
    ASSERT_TRUE(comp);
    EXPECT_EQ(comp->status, 200) << comp->body;
  }
  {
    ModelWithConfig m(ojson{{"chat_template", {{"oops", 1}}}});
    Engine engine(m.dir.string(), cpu_lane(64));
    Server s(engine, {"127.0.0.1", 0});
    EXPECT_FALSE(s.chat_template().problem().empty());
    const ChatAnswer a = post(s.start(), {{"messages", user("x")}});
    EXPECT_EQ(a.status, 500) << a.body;
    const std::string msg = a.body["error"]["message"];
    EXPECT_NE(msg.find("tokenizer_config.json: 'chat_template' must be a string"), std::string::npos) << msg;
  }
  {
    ModelWithConfig m(ojson{{"chat_template", "{% for m in messages %}{{ m.content }"}});
    Engine engine(m.dir.string(), cpu_lane(64));
    Server s(engine, {"127.0.0.1", 0});
    const ChatAnswer a = post(s.start(), {{"messages", user("x")}});
    EXPECT_EQ(a.status, 500) << a.body;
    const std::string msg = a.body["error"]["message"];
    EXPECT_NE(msg.find("tokenizer_config.json (chat_template): line 1:"), std::string::npos) << msg;
  }
}

}  // namespace
