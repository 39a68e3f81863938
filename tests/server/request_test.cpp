// Request parsing: valid bodies give the fields; every kind of bad body names the field at fault
// (the fields lg serve refuses and the sampling ranges: request_fields_test.cpp).
#include <gtest/gtest.h>

#include <string>

#include "request_errors.h"
#include "server/request.h"

namespace {

using namespace lg::server;
using lg::server::test::message_of;
using lg::server::test::param_of;

TEST(CompletionRequest, ParsesTheFields) {
  const auto r = parse_completion_request(
      R"({"model":"m","prompt":"def ","max_tokens":5,"temperature":0.5,"top_p":0.9,"top_k":-1,"seed":7,)"
      R"("stop":["\n\n","END"],"stream":true,"stream_options":{"include_usage":true},"n":1,"logprobs":null})");
  EXPECT_EQ(r.prompt, "def ");
  EXPECT_EQ(r.gen.model, "m");
  EXPECT_EQ(r.gen.max_tokens, 5);
  EXPECT_EQ(r.gen.temperature, 0.5);
  EXPECT_EQ(r.gen.top_p, 0.9);
  EXPECT_EQ(r.gen.top_k, 0);  // vLLM's -1 means off, which is 0 here
  EXPECT_EQ(r.gen.seed, 7u);
  // An integral float is that integer (pydantic's lax mode, as OpenAI-compatible servers).
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","max_tokens":3.0})").gen.max_tokens, 3);
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","top_k":-1.0})").gen.top_k, 0);
  // Seeds past 2^63 as `lg run --seed` takes them.
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","seed":18446744073709551615})").gen.seed, UINT64_MAX);
  // A negative seed (OpenAI's API and vLLM take any 64-bit integer) seeds by its bits.
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","seed":-1})").gen.seed, UINT64_MAX);
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","seed":-9223372036854775808})").gen.seed, uint64_t{1} << 63);
  EXPECT_EQ(r.gen.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(r.gen.stream);
  EXPECT_TRUE(r.gen.include_usage);
}

TEST(CompletionRequest, AbsentAndNullFieldsStayUnset) {
  const auto r = parse_completion_request(R"({"prompt":["x"],"temperature":null,"max_tokens":null})");
  EXPECT_EQ(r.prompt, "x");
  EXPECT_FALSE(r.gen.max_tokens);
  EXPECT_FALSE(r.gen.temperature);
  EXPECT_FALSE(r.gen.stream);
}

TEST(CompletionRequest, BadBodiesNameTheField) {
  auto p = [](const std::string& body) { return param_of([&] { parse_completion_request(body); }); };
  EXPECT_EQ(p("{"), "");
  EXPECT_EQ(p("[1]"), "");
  EXPECT_EQ(p(""), "");
  // A number beyond double is json's out_of_range, not parse_error: still a bad body.
  EXPECT_EQ(p(R"({"prompt":"x","temperature":1e309})"), "");
  EXPECT_EQ(p("{}"), "prompt");
  EXPECT_EQ(p(R"({"prompt":5})"), "prompt");
  EXPECT_EQ(p(R"({"prompt":""})"), "prompt");
  EXPECT_EQ(p(R"({"prompt":["a","b"]})"), "prompt");
  EXPECT_EQ(p(R"({"prompt":"x","max_tokens":0})"), "max_tokens");
  EXPECT_EQ(p(R"({"prompt":"x","max_tokens":"8"})"), "max_tokens");
  EXPECT_EQ(p(R"({"prompt":"x","max_tokens":1.5})"), "max_tokens");
  EXPECT_EQ(p(R"({"prompt":"x","max_tokens":18446744073709551615})"), "max_tokens");
  EXPECT_EQ(p(R"({"prompt":"x","temperature":-1})"), "temperature");
  EXPECT_EQ(p(R"({"prompt":"x","temperature":"hot"})"), "temperature");
  EXPECT_EQ(p(R"({"prompt":"x","temperature":1001})"), "temperature");
  EXPECT_EQ(p(R"({"prompt":"x","top_p":0})"), "top_p");
  EXPECT_EQ(p(R"({"prompt":"x","top_p":1.5})"), "top_p");
  EXPECT_EQ(p(R"({"prompt":"x","top_k":-2})"), "top_k");
  EXPECT_EQ(p(R"({"prompt":"x","top_k":2.5})"), "top_k");
  EXPECT_EQ(p(R"({"prompt":"x","seed":18446744073709551616})"), "seed");  // 2^64: past uint64
  EXPECT_EQ(p(R"({"prompt":"x","seed":7.5})"), "seed");
  EXPECT_EQ(p(R"({"prompt":"x","stop":5})"), "stop");
  EXPECT_EQ(p(R"({"prompt":"x","stop":[""]})"), "stop[0]");
  // A single stop string is `stop`: there is no array for an index to point into.
  EXPECT_EQ(p(R"({"prompt":"x","stop":""})"), "stop");
  EXPECT_EQ(message_of([] { parse_completion_request(R"({"prompt":"x","stop":""})"); }), "'stop' is empty");
  EXPECT_EQ(p(R"({"prompt":"x","stop":["a",1]})"), "stop[1]");
  EXPECT_EQ(p(R"({"prompt":"x","stream":"yes"})"), "stream");
  EXPECT_EQ(p(R"({"prompt":"x","stream_options":{"include_usage":1}})"), "stream_options.include_usage");
  EXPECT_EQ(p(R"({"prompt":"x","n":0})"), "n");
  EXPECT_EQ(p(R"({"prompt":"x","n":129})"), "n");  // OpenAI's limit is 128
  EXPECT_EQ(p(R"({"prompt":"x","n":"2"})"), "n");
  EXPECT_EQ(message_of([] { parse_completion_request(R"({"prompt":"x","n":0})"); }), "'n' must be in [1, 128], got 0");
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","n":3})").gen.n, 3);
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"n":128})").gen.n, 128);
  EXPECT_EQ(p(R"({"prompt":"x","model":3})"), "model");
  // An empty name is the served model, as null is (vLLM's _is_model_supported); it was a 404.
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","model":""})").gen.model.has_value());
  EXPECT_FALSE(parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"model":""})").gen.model.has_value());
}

// stream_options without "stream": true was taken and ignored; OpenAI's API and vLLM answer 400
// naming the field, so a client that meant to stream hears that it did not ask to.
TEST(CompletionRequest, StreamOptionsWithoutStreamIsRefused) {
  const std::string refused = "'stream_options' is only allowed when 'stream' is true";
  for (const char* stream : {"", R"("stream":false,)", R"("stream":null,)"}) {
    const std::string completion =
        std::string(R"({"prompt":"x",)") + stream + R"("stream_options":{"include_usage":true}})";
    EXPECT_EQ(param_of([&] { parse_completion_request(completion); }), "stream_options") << completion;
    EXPECT_EQ(message_of([&] { parse_completion_request(completion); }), refused) << completion;
    const std::string chat =
        std::string(R"({"messages":[{"role":"user","content":"a"}],)") + stream + R"("stream_options":{}})";
    EXPECT_EQ(param_of([&] { parse_chat_request(chat); }), "stream_options") << chat;
  }
  // With the stream asked for they are taken; a null stream_options is absent, as any null field.
  EXPECT_TRUE(parse_completion_request(R"({"prompt":"x","stream":true,"stream_options":{"include_usage":true}})")
                  .gen.include_usage);
  EXPECT_NO_THROW(parse_completion_request(R"({"prompt":"x","stream_options":null})"));
}

// stream_options.continuous_usage_stats (vLLM's) was accepted and ignored. It is read, on both
// endpoints; as in vLLM it comes with include_usage (absent: implied, as vLLM's default is true
// inside stream_options), and with include_usage false (or null) vLLM sends no usage at all
// (should_include_usage): so does lg serve, where that was a 400.
TEST(CompletionRequest, ContinuousUsageStatsIsRead) {
  auto gen = [](const std::string& options, bool chat = false) {
    const std::string body = std::string(chat ? R"({"messages":[{"role":"user","content":"a"}],)" : R"({"prompt":"x",)") +
                             R"("stream":true,"stream_options":)" + options + "}";
    return chat ? parse_chat_request(body).gen : parse_completion_request(body).gen;
  };
  for (const bool chat : {false, true}) {
    SCOPED_TRACE(chat ? "chat" : "completion");
    const GenerationRequest both = gen(R"({"include_usage":true,"continuous_usage_stats":true})", chat);
    EXPECT_TRUE(both.continuous_usage_stats);
    EXPECT_TRUE(both.include_usage);
    const GenerationRequest implied = gen(R"({"continuous_usage_stats":true})", chat);
    EXPECT_TRUE(implied.continuous_usage_stats);
    EXPECT_TRUE(implied.include_usage);
    const GenerationRequest off = gen(R"({"continuous_usage_stats":false})", chat);
    EXPECT_FALSE(off.continuous_usage_stats);
    EXPECT_FALSE(off.include_usage);  // as today without it
    EXPECT_FALSE(gen(R"({"include_usage":true,"continuous_usage_stats":null})", chat).continuous_usage_stats);
  }
  EXPECT_EQ(param_of([&] { gen(R"({"continuous_usage_stats":"yes"})"); }), "stream_options.continuous_usage_stats");
  EXPECT_EQ(message_of([&] { gen(R"({"continuous_usage_stats":1})"); }),
            "'stream_options.continuous_usage_stats' must be a boolean, got number");
  for (const bool chat : {false, true}) {
    SCOPED_TRACE(chat ? "chat" : "completion");
    for (const char* off : {R"({"include_usage":false,"continuous_usage_stats":true})",
                            R"({"include_usage":null,"continuous_usage_stats":true})"}) {
      SCOPED_TRACE(off);
      GenerationRequest none;
      EXPECT_NO_THROW(none = gen(off, chat));
      EXPECT_FALSE(none.include_usage);
      EXPECT_FALSE(none.continuous_usage_stats);
    }
  }
}

// An integer past uint64 arrives as a double (JSON has one number type): too large, not "not an
// integer"; the temperature bound is lg run's.
TEST(CompletionRequest, HugeNumbersSayTooLarge) {
  auto message = [](const std::string& body) {
    try {
      parse_completion_request(body);
    } catch (const RequestError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // Quoted in digits (2^64 up to 10^25), as written, not as the double's 1e+20 (a new-user pass).
  EXPECT_EQ(message(R"({"prompt":"x","max_tokens":100000000000000000000})"),
            "'max_tokens' is too large: 100000000000000000000");
  EXPECT_EQ(message(R"({"prompt":"x","max_tokens":1e20})"), "'max_tokens' is too large: 100000000000000000000");
  EXPECT_EQ(message(R"({"prompt":"x","max_tokens":1180591620717411303424})"),
            "'max_tokens' is too large: 1180591620717411303424");
  EXPECT_EQ(message(R"({"prompt":"x","max_tokens":16.0})"), "accepted");  // integral, as pydantic's lax mode
  EXPECT_EQ(message(R"({"prompt":"x","max_tokens":16.5})"), "'max_tokens' must be an integer, got 16.5");
  EXPECT_EQ(message(R"({"prompt":"x","max_tokens":-1e308})"), "'max_tokens' is too small: -1e+308");
  // A seed is any uint64, written as an integer or as an integral float below 2^64.
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","seed":1e19})").gen.seed, 10000000000000000000u);
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","seed":9.2e18})").gen.seed, 9200000000000000000u);
  EXPECT_EQ(message(R"({"prompt":"x","seed":1.9e19})"), "'seed' must be an integer in [-2^63, 2^64), got 19000000000000000000");
  EXPECT_EQ(message(R"({"prompt":"x","seed":18446744073709551616})"),
            "'seed' must be an integer in [-2^63, 2^64), got 18446744073709551616");
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","seed":-1})").gen.seed, UINT64_MAX);
  // -2^63 - 1 parses as the double -2^63 (an integer -2^63 stays one): past the range, not its end.
  EXPECT_EQ(message(R"({"prompt":"x","seed":-9223372036854775809})"),
            "'seed' must be an integer in [-2^63, 2^64), got one below -2^63");
  EXPECT_EQ(message(R"({"prompt":"x","top_k":-9223372036854775809})"), "'top_k' is too small: -9.223372036854776e+18");
  // Token ids as integral floats, as every integer field.
  EXPECT_EQ(parse_completion_request(R"({"prompt":[474.0,2643]})").prompt_ids, (std::vector<int32_t>{474, 2643}));
  EXPECT_EQ(message(R"({"prompt":[474.5]})"), "'prompt[0]' must be a token id (an integer), got 474.5");
  // JSON nested past kMaxJsonDepth is refused at parse time: copying it would recurse per level.
  const int deep = kMaxJsonDepth + 1;
  EXPECT_EQ(message(R"({"prompt":"x","stop":)" + std::string(deep, '[') + std::string(deep, ']') + "}"),
            "the JSON is nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
  const int ok = kMaxJsonDepth - 2;  // the body's object is one level, stop's value the rest
  EXPECT_EQ(message(R"({"prompt":"x","stop":)" + std::string(ok, '[') + std::string(ok, ']') + "}"),
            "'stop[0]' must be a string, got array");
  EXPECT_EQ(message(R"({"prompt":"x","temperature":5000})"),
            "'temperature' must be at most 1000 (higher is a uniform draw), got 5000");
  EXPECT_EQ(message(R"({"prompt":"x","temperature":1000})"), "accepted");
}

TEST(CompletionRequest, ABatchOfPromptsSaysOnePromptPerRequest) {
  try {
    parse_completion_request(R"({"prompt":["a","b"]})");
    FAIL() << "a batch of two prompts was accepted";
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("one prompt per request"), std::string::npos) << e.what();
  }
}

TEST(CompletionRequest, TokenIdPromptsAreOnePrompt) {
  // As in OpenAI's API: an array of ids is one prompt, and so is an array of one array of ids.
  for (const char* body : {R"({"prompt":[750,282,2075]})", R"({"prompt":[[750,282,2075]]})"}) {
    const auto r = parse_completion_request(body);
    EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{750, 282, 2075})) << body;
    EXPECT_TRUE(r.prompt.empty());
    EXPECT_TRUE(r.has_ids());
  }
  EXPECT_EQ(parse_completion_request(R"({"prompt":[0]})").prompt_ids, std::vector<int32_t>{0});
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x"})").has_ids(), false);
}

TEST(CompletionRequest, BadTokenIdPromptsNameTheId) {
  auto p = [](const std::string& body) { return param_of([&] { parse_completion_request(body); }); };
  EXPECT_EQ(p(R"({"prompt":[]})"), "prompt");
  EXPECT_EQ(p(R"({"prompt":[[]]})"), "prompt");
  EXPECT_EQ(p(R"({"prompt":[1,"a"]})"), "prompt[1]");
  EXPECT_EQ(p(R"({"prompt":[1,2.5]})"), "prompt[1]");
  EXPECT_EQ(p(R"({"prompt":[true]})"), "prompt[0]");
  EXPECT_EQ(p(R"({"prompt":[1,-1]})"), "prompt[1]");
  EXPECT_EQ(p(R"({"prompt":[2147483648]})"), "prompt[0]");
  EXPECT_EQ(p(R"({"prompt":[1,null]})"), "prompt[1]");
  // Ids sent as an array of one array are named where they are: prompt[0][i], not prompt[i].
  EXPECT_EQ(p(R"({"prompt":[[1,"a"]]})"), "prompt[0][1]");
  EXPECT_EQ(p(R"({"prompt":[[1,2,-3]]})"), "prompt[0][2]");
  EXPECT_NE(message_of([] { parse_completion_request(R"({"prompt":[[7,true]]})"); }).find("'prompt[0][1]' must be a token id"),
            std::string::npos);
  EXPECT_EQ(parse_completion_request(R"({"prompt":[[1,2]]})").prompt_param, "prompt[0]");
  EXPECT_EQ(parse_completion_request(R"({"prompt":[1,2]})").prompt_param, "prompt");
  EXPECT_EQ(p(R"({"prompt":[[1,2],[3]]})"), "prompt");
  EXPECT_EQ(p(R"({"prompt":{"ids":[1]}})"), "prompt");
  try {
    parse_completion_request(R"({"prompt":[[1,2],[3],[4]]})");
    FAIL() << "a batch of three id prompts was accepted";
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("an array of 3 prompts"), std::string::npos) << e.what();
  }
  try {
    parse_completion_request(R"({"prompt":[5,"x"]})");
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("'prompt[1]' must be a token id (an integer), got string"), std::string::npos)
        << e.what();
  }
}

TEST(CompletionRequest, IgnoreEosAndReturnTokenIdsAreBooleans) {
  const auto r = parse_completion_request(R"({"prompt":"x","ignore_eos":true,"return_token_ids":true})");
  EXPECT_TRUE(r.gen.ignore_eos);
  EXPECT_TRUE(r.gen.return_token_ids);
  const auto d = parse_completion_request(R"({"prompt":"x","ignore_eos":null})");
  EXPECT_FALSE(d.gen.ignore_eos);
  EXPECT_FALSE(d.gen.return_token_ids);
  auto p = [](const std::string& body) { return param_of([&] { parse_completion_request(body); }); };
  EXPECT_EQ(p(R"({"prompt":"x","ignore_eos":1})"), "ignore_eos");
  EXPECT_EQ(p(R"({"prompt":"x","return_token_ids":"yes"})"), "return_token_ids");
}

// skip_special_tokens (vLLM's, as OpenAI clients send it in extra_body): true unless sent false,
// on both endpoints; another type is a 400 naming it.
TEST(GenerationRequest, SkipSpecialTokensIsABooleanThatDefaultsToTrue) {
  EXPECT_TRUE(parse_completion_request(R"({"prompt":"x"})").gen.skip_special_tokens);
  EXPECT_TRUE(parse_completion_request(R"({"prompt":"x","skip_special_tokens":null})").gen.skip_special_tokens);
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","skip_special_tokens":false})").gen.skip_special_tokens);
  const std::string chat = R"({"messages":[{"role":"user","content":"x"}])";
  EXPECT_TRUE(parse_chat_request(chat + "}").gen.skip_special_tokens);
  EXPECT_FALSE(parse_chat_request(chat + R"(,"skip_special_tokens":false})").gen.skip_special_tokens);
  for (const std::string bad : {R"("no")", "0", "[]"}) {
    try {
      parse_chat_request(chat + R"(,"skip_special_tokens":)" + bad + "}");
      ADD_FAILURE() << bad;
    } catch (const RequestError& e) {
      EXPECT_EQ(e.param(), "skip_special_tokens");
      EXPECT_NE(std::string(e.what()).find("'skip_special_tokens' must be a boolean"), std::string::npos) << e.what();
    }
  }
}

// Text parts become one string, their texts joined with "\n" and empty ones left out, as vLLM's
// "string" content format renders them ("\n".join of the non-empty texts). This test pinned plain
// concatenation ("hi " + "there" = "hi there") before: a prompt vLLM never builds for this request.
TEST(ChatRequest, ParsesMessagesAndTextParts) {
  const auto r = parse_chat_request(
      R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":""},{"type":"text","text":"there"}]}],"max_completion_tokens":3})");
  EXPECT_EQ(r.messages, nlohmann::ordered_json::parse(R"([{"role":"system","content":"be brief"},{"role":"user","content":"hi \nthere"}])"));
  EXPECT_EQ(r.gen.max_tokens, 3);
  EXPECT_TRUE(r.tools.is_null());
  EXPECT_TRUE(r.add_generation_prompt);
  EXPECT_EQ(r.template_kwargs, nlohmann::ordered_json::object());
  // No part, or only empty ones: "" (vLLM's join of nothing).
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":[]}]})").messages[0]["content"], "");
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":[{"type":"text","text":""}]}]})")
                .messages[0]["content"],
            "");
}

// OpenAI's chat API deprecates max_tokens for max_completion_tokens, and vLLM's chat endpoint takes
// max_completion_tokens when a request has both; a completion request has only max_tokens.
TEST(ChatRequest, MaxCompletionTokensWinsOverMaxTokens) {
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"a"}],"max_tokens":9,"max_completion_tokens":4})")
                .gen.max_tokens,
            4);
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"a"}],"max_tokens":9})").gen.max_tokens, 9);
  EXPECT_EQ(parse_completion_request(R"({"prompt":"a","max_tokens":9,"max_completion_tokens":4})").gen.max_tokens, 9);
  // The field that loses is still checked.
  try {
    parse_chat_request(R"({"messages":[{"role":"user","content":"a"}],"max_tokens":1.5,"max_completion_tokens":4})");
    FAIL() << "max_tokens 1.5 was accepted beside max_completion_tokens";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.param(), "max_tokens") << e.what();
  }
}

TEST(ChatRequest, AcceptsWhatOpenAIClientsSend) {
  // The developer role (a system message under OpenAI's newer name), an assistant turn that only
  // calls tools ("content": null, or no content), the tool's answer, tools, and vLLM's
  // add_generation_prompt / chat_template_kwargs. Fields the server does not know are kept for
  // the template. A call's arguments string reaches it parsed, and an empty tool_calls not at
  // all, as vLLM passes them (this test pinned the string and the [] as sent before; the next
  // test says why that differed from vLLM).
  const auto r = parse_chat_request(R"({"messages":[
      {"role":"developer","content":"be brief"},
      {"role":"user","content":"add 1 and 2"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}}]},
      {"role":"assistant","tool_calls":[]},
      {"role":"tool","tool_call_id":"c1","content":"3"}],
    "tools":[{"type":"function","function":{"name":"add","parameters":{"type":"object"}}}],
    "tool_choice":"auto","add_generation_prompt":false,"chat_template_kwargs":{"enable_thinking":false}})");
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[0], nlohmann::ordered_json::parse(R"({"role":"system","content":"be brief"})"));
  EXPECT_EQ(r.messages[2]["content"], "");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"], nlohmann::ordered_json::parse(R"({"a":1})"));
  EXPECT_EQ(r.messages[3], nlohmann::ordered_json::parse(R"({"role":"assistant","content":""})"));
  EXPECT_EQ(r.messages[4]["tool_call_id"], "c1");
  EXPECT_EQ(r.tools.size(), 1u);
  EXPECT_FALSE(r.add_generation_prompt);
  EXPECT_EQ(r.template_kwargs, nlohmann::ordered_json::parse(R"({"enable_thinking":false})"));
}

// vLLM json-parses each assistant tool call's arguments string before the template sees it
// (chat_utils.py, _postprocess_messages), so that `arguments | tojson` (Qwen2.5, Llama 3.1)
// writes the object rather than the string quoted again; absent, null or "" arguments are {};
// `tool_calls` that is [] or null is not passed. Other roles' fields are left as sent.
TEST(ChatRequest, ToolCallArgumentsReachTheTemplateParsedAsVllmPassesThem) {
  using oj = nlohmann::ordered_json;
  const auto calls_of = [](const std::string& tool_calls) {
    return parse_chat_request(R"({"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":)" +
                              tool_calls + "}]}")
        .messages[1];
  };
  const auto args_of = [&](const std::string& function) {
    return calls_of(R"([{"id":"c1","type":"function","function":)" + function + "}]")["tool_calls"][0]["function"]["arguments"];
  };
  // Parsed with the client's key order (Python's json.loads keeps it); the rest of the call stays.
  const oj m = calls_of(R"([{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"b\": [1, 2.5], \"a\": {\"x\": null}}"}}])");
  EXPECT_EQ(m["tool_calls"].dump(), R"([{"id":"c1","type":"function","function":{"name":"f","arguments":{"b":[1,2.5],"a":{"x":null}}}}])");
  EXPECT_EQ(args_of(R"({"name":"f","arguments":""})"), oj::object());
  EXPECT_EQ(args_of(R"({"name":"f","arguments":null})"), oj::object());
  EXPECT_EQ(args_of(R"({"name":"f"})"), oj::object());
  EXPECT_EQ(args_of(R"({"name":"f","arguments":"[1]"})"), oj::parse("[1]"));  // json.loads' value, whatever it is
  EXPECT_EQ(args_of(R"({"name":"f","arguments":{"a":1}})"), oj::parse(R"({"a":1})"));  // an object sent as one stays
  EXPECT_FALSE(calls_of("[]").contains("tool_calls"));
  EXPECT_FALSE(calls_of("null").contains("tool_calls"));
  // A user message's fields are not an assistant's tool calls: as sent.
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"q","tool_calls":[]}]})").messages[0]["tool_calls"],
            oj::array());
}

TEST(ChatRequest, BadToolCallsNameTheField) {
  auto p = [](const std::string& tool_calls) {
    return param_of([&] {
      parse_chat_request(R"({"messages":[{"role":"assistant","content":"x","tool_calls":)" + tool_calls + "}]}");
    });
  };
  // Arguments that are not JSON: json.loads raises in vLLM's releases, a 400 here naming the field.
  EXPECT_EQ(p(R"([{"type":"function","function":{"name":"f","arguments":"{\"a\": 1"}}])"),
            "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(p(R"([{"function":{"name":"f","arguments":"{}"}},{"function":{"name":"g","arguments":"a=1"}}])"),
            "messages[0].tool_calls[1].function.arguments");
  EXPECT_EQ(p(R"([{"function":{"name":"f","arguments":"   "}}])"), "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(p(R"([{"function":{"name":"f","arguments":5}}])"), "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(p(R"({"function":{"name":"f"}})"), "messages[0].tool_calls");
  EXPECT_EQ(p(R"(["f"])"), "messages[0].tool_calls[0]");
  EXPECT_EQ(p(R"([{"id":"c1"}])"), "messages[0].tool_calls[0].function");
  EXPECT_EQ(p(R"([{"function":"f"}])"), "messages[0].tool_calls[0].function");
  const std::string msg = message_of([] {
    parse_chat_request(R"({"messages":[{"role":"assistant","content":"x","tool_calls":[{"function":{"name":"f","arguments":"{\"a\": 1"}}]}]})");
  });
  EXPECT_NE(msg.find("'messages[0].tool_calls[0].function.arguments' is not valid JSON"), std::string::npos) << msg;
  // JSON text nested past the bound, in the string or with the call's own levels around it.
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  EXPECT_EQ(p(R"([{"function":{"name":"f","arguments":")" + nested(5000) + "\"}}]"),
            "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(p(R"([{"function":{"name":"f","arguments":")" + nested(63) + "\"}}]"), "messages[0].tool_calls");
  EXPECT_EQ(p(R"([{"function":{"name":"f","arguments":")" + nested(61) + "\"}}]"), "<no error>");
}

// vLLM validates each tool into its pydantic model and gives the template tool.model_dump(): the
// fields in the model's order, null for the ones not sent, other fields dropped; the parameters
// schema as sent.
TEST(ChatRequest, ToolsReachTheTemplateAsVllmDumpsThem) {
  const auto r = parse_chat_request(R"({"messages":[{"role":"user","content":"a"}],"tools":[
      {"function":{"parameters":{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}}},"name":"f","x-extra":1}},
      {"function":{"name":"g","strict":true,"description":"Gets."},"type":"function","cache_control":{}},
      {"type":"function","function":{"name":"h","description":null,"parameters":null,"strict":null}}]})");
  EXPECT_EQ(r.tools.dump(),
            R"([{"type":"function","function":{"name":"f","description":null,"parameters":{"type":"object","properties":)"
            R"({"b":{"type":"integer"},"a":{"type":"string"}}}}},)"
            R"({"type":"function","function":{"name":"g","description":"Gets.","parameters":null,"strict":true}},)"
            R"({"type":"function","function":{"name":"h","description":null,"parameters":null}}])");
  EXPECT_EQ(param_of([] {
              parse_chat_request(
                  R"({"messages":[{"role":"user","content":"a"}],"tools":[{"function":{"name":"f","strict":"yes"}}]})");
            }),
            "tools[0].function.strict");
}

TEST(ChatRequest, BadBodiesNameTheField) {
  auto p = [](const std::string& body) { return param_of([&] { parse_chat_request(body); }); };
  EXPECT_EQ(p("{\"messages\":"), "");
  EXPECT_EQ(p("{}"), "messages");
  EXPECT_EQ(p(R"({"messages":"hi"})"), "messages");
  EXPECT_EQ(p(R"({"messages":[]})"), "messages");
  EXPECT_EQ(p(R"({"messages":[5]})"), "messages[0]");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a"},{"role":"user"}]})"), "messages[1].content");
  EXPECT_EQ(p(R"({"messages":[{"role":1,"content":"a"}]})"), "messages[0].role");
  EXPECT_EQ(p(R"({"messages":[{"role":"wizard","content":"a"}]})"), "messages[0].role");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":5}]})"), "messages[0].content");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})"), "messages[0].content[0]");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a"}],"max_tokens":0})"), "max_tokens");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a"}],"max_completion_tokens":-3})"), "max_completion_tokens");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":null}]})"), "messages[0].content");
  EXPECT_EQ(p(R"({"messages":[{"role":"tool"}]})"), "messages[0].content");
  // name and tool_call_id are strings (a number reached the template, which printed it).
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a","name":5}]})"), "messages[0].name");
  EXPECT_EQ(p(R"({"messages":[{"role":"tool","content":"4","tool_call_id":{}}]})"), "messages[0].tool_call_id");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a","name":"ann"},{"role":"tool","content":"4","tool_call_id":"c1"}]})"),
            "<no error>");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a"}],"tools":{}})"), "tools");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a"}],"tools":[1]})"), "tools[0]");
  // A tool is {"type": "function", "function": {"name": string, ...}}, as OpenAI and vLLM require
  // (it reached the template without a function, a nameless tool in the prompt, or a 500).
  auto tool = [&](const std::string& t) { return p(R"({"messages":[{"role":"user","content":"a"}],"tools":[)" + t + "]}"); };
  EXPECT_EQ(tool(R"({"type":"function"})"), "tools[0].function");
  EXPECT_EQ(tool(R"({"type":"function","function":"add"})"), "tools[0].function");
  EXPECT_EQ(tool(R"({"type":"function","function":{}})"), "tools[0].function.name");
  EXPECT_EQ(tool(R"({"type":"function","function":{"name":5}})"), "tools[0].function.name");
  EXPECT_EQ(tool(R"({"type":"function","function":{"name":"f","description":[]}})"), "tools[0].function.description");
  EXPECT_EQ(tool(R"({"type":"function","function":{"name":"f","parameters":"{}"}})"), "tools[0].function.parameters");
  EXPECT_EQ(tool(R"({"type":"retrieval","function":{"name":"f"}})"), "tools[0].type");
  EXPECT_EQ(tool(R"({"function":{"name":"f"}},{"type":"function"})"), "tools[1].function");
  EXPECT_EQ(tool(R"({"function":{"name":"f","description":null,"parameters":null}})"), "<no error>");  // type: function
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a"}],"add_generation_prompt":1})"), "add_generation_prompt");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a"}],"chat_template_kwargs":[]})"), "chat_template_kwargs");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a"}],"chat_template_kwargs":{"messages":[]}})"),
            "chat_template_kwargs.messages");
  // Nesting past kMaxChatNesting, in a message field, a tool or a kwarg, names the field.
  std::string deep = "1";
  for (int i = 0; i < 5000; ++i) deep = "[" + deep + "]";
  EXPECT_EQ(p(R"({"messages":[{"role":"assistant","content":"a","tool_calls":)" + deep + "}]}"), "messages[0].tool_calls");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a"}],"tools":[{"x":)" + deep + "}]}"), "tools[0]");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":"a"}],"chat_template_kwargs":{"k":)" + deep + "}}"),
            "chat_template_kwargs.k");
  EXPECT_EQ(p(R"({"messages":[{"role":"user","content":)" + deep + "}]}"), "messages[0].content[0]");
}

}  // namespace
