// Request fields of both endpoints that change the answer: the sampling fields taken in vLLM's
// ranges, and the fields lg serve does not implement, refused with a 400 naming them (never a 200
// that ignores them). Request parsing at large: request_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "request_errors.h"
#include "server/request.h"

namespace {

using namespace lg::server;
using lg::server::test::error_of;
using lg::server::test::message_of;
using lg::server::test::param_of;

// Fields lg serve does not implement but that change the answer: a value that asks for the
// feature is a 400 naming the field (never a 200 that ignores it); the default is accepted
// (clients send every field with its default); a wrong type is a 400 naming the field.
struct FieldCase {
  const char* field;
  const char* asks;      // a value that would change the answer
  const char* fallback;  // the OpenAI / vLLM default, accepted
  const char* wrong;     // a value of the wrong type (or range)
};

// OpenAI's fields of both endpoints and vLLM's extensions the server refuses.
const FieldCase kBothEndpoints[] = {
    {"echo", "true", "false", "1"},
    {"response_format", R"({"type":"json_object"})", R"({"type":"text"})", R"("json")"},
    {"include_stop_str_in_output", "true", "false", R"("no")"},
    {"use_beam_search", "true", "false", "0"},
    {"prompt_logprobs", "1", "null", "1.5"},  // 0 asks too (TEST below)
    {"allowed_token_ids", "[1,2]", "[]", "{}"},
    {"bad_words", R"(["x"])", "[]", R"("x")"},
};
const FieldCase kCompletionOnly[] = {
    {"suffix", R"("return x")", R"("")", "5"},
    {"best_of", "3", "1.0", "0"},
    {"add_special_tokens", "false", "true", "1"},  // vLLM's default is true here
};
const FieldCase kChatOnly[] = {
    {"tool_choice", R"("required")", R"("auto")", R"("always")"},
    {"function_call", R"({"name":"add"})", R"("none")", "3"},
    {"functions", R"([{"name":"add"}])", "[]", "{}"},
    {"continue_final_message", "true", "false", R"("yes")"},
    {"add_special_tokens", "true", "false", R"("yes")"},
    {"modalities", R"(["text","audio"])", R"(["text"])", R"("text")"},
};

std::string completion_with(const char* field, const char* value) {
  return std::string(R"({"prompt":"def ",")") + field + "\":" + value + "}";
}
std::string chat_with(const char* field, const char* value) {
  return std::string(R"({"messages":[{"role":"user","content":"a"}],")") + field + "\":" + value + "}";
}

void expect_refused_accepted_typed(const FieldCase& c, bool chat) {
  const auto body = [&](const char* value) { return chat ? chat_with(c.field, value) : completion_with(c.field, value); };
  const auto parse = [&](const std::string& b) {
    if (chat) parse_chat_request(b);
    else parse_completion_request(b);
  };
  SCOPED_TRACE(body(c.asks));
  const std::string refused = message_of([&] { parse(body(c.asks)); });
  EXPECT_EQ(param_of([&] { parse(body(c.asks)); }), c.field);
  EXPECT_NE(refused.find("'" + std::string(c.field) + "' is not supported by lg serve"), std::string::npos) << refused;
  EXPECT_EQ(param_of([&] { parse(body(c.fallback)); }), "<no error>") << body(c.fallback);
  EXPECT_EQ(param_of([&] { parse(body("null")); }), "<no error>");
  const std::string typed = message_of([&] { parse(body(c.wrong)); });
  EXPECT_NE(typed.find("'" + std::string(c.field) + "'"), std::string::npos) << typed;
  EXPECT_EQ(typed.find("not supported"), std::string::npos) << "a wrong type is named as such: " << typed;
}

// The penalties and min_p (vLLM's SamplingParams ranges) on both endpoints: values in range are
// taken, absent or null is "the model's default" (left for generation_config.json), and a value
// out of range or of the wrong type is a 400 naming the field.
TEST(SamplingFields, PenaltiesAndMinPAreTakenInVllmsRanges) {
  for (const bool chat : {false, true}) {
    SCOPED_TRACE(chat ? "chat" : "completions");
    const auto parse = [&](const char* field, const char* value) {
      return chat ? parse_chat_request(chat_with(field, value)).gen : parse_completion_request(completion_with(field, value)).gen;
    };
    EXPECT_EQ(parse("repetition_penalty", "1.05").repetition_penalty, 1.05);
    EXPECT_EQ(parse("repetition_penalty", "0.5").repetition_penalty, 0.5);
    EXPECT_EQ(parse("presence_penalty", "-2").presence_penalty, -2.0);
    EXPECT_EQ(parse("frequency_penalty", "2").frequency_penalty, 2.0);
    EXPECT_EQ(parse("min_p", "0.05").min_p, 0.05);
    EXPECT_EQ(parse("min_p", "1").min_p, 1.0);
    const GenerationRequest none = parse("user", R"("u")");
    EXPECT_FALSE(none.repetition_penalty || none.presence_penalty || none.frequency_penalty || none.min_p);
    EXPECT_FALSE(parse("repetition_penalty", "null").repetition_penalty);
    const auto refused = [&](const char* field, const char* value) {
      return error_of([&] { parse(field, value); });
    };
    for (const auto& [field, value, says] : {
             std::tuple{"repetition_penalty", "0", "'repetition_penalty' must be > 0, got 0"},
             std::tuple{"repetition_penalty", "-1.5", "'repetition_penalty' must be > 0, got -1.5"},
             std::tuple{"presence_penalty", "2.5", "'presence_penalty' must be in [-2, 2], got 2.5"},
             std::tuple{"frequency_penalty", "-3", "'frequency_penalty' must be in [-2, 2], got -3"},
             std::tuple{"min_p", "1.01", "'min_p' must be in [0, 1], got 1.01"},
             std::tuple{"min_p", "-0.1", "'min_p' must be in [0, 1], got -0.1"},
             std::tuple{"frequency_penalty", R"("0.5")", "'frequency_penalty' must be a number, got string"},
             std::tuple{"repetition_penalty", "true", "'repetition_penalty' must be a number, got boolean"}}) {
      const RequestError e = refused(field, value);
      EXPECT_EQ(e.param(), field) << value;
      EXPECT_EQ(std::string(e.what()), says);
    }
  }
}

// logit_bias (OpenAI's: decimal token ids to biases in [-100, 100]), min_tokens and
// stop_token_ids (vLLM's) on both endpoints: taken as sent, null is absent, a wrong type, range or
// key is a 400 naming the field (ids against the vocabulary: the engine, server_http_test.cpp).
TEST(SamplingFields, LogitBiasMinTokensAndStopTokenIdsAreTakenAndChecked) {
  for (const bool chat : {false, true}) {
    SCOPED_TRACE(chat ? "chat" : "completions");
    const auto parse = [&](const char* field, const char* value) {
      return chat ? parse_chat_request(chat_with(field, value)).gen : parse_completion_request(completion_with(field, value)).gen;
    };
    const GenerationRequest b = parse("logit_bias", R"({"2643": -100, "11": 2.5, "0": 100})");
    ASSERT_EQ(b.logit_bias.size(), 3u);
    EXPECT_EQ(b.logit_bias[0], (std::pair<int32_t, float>{0, 100.0f}));  // sorted by id
    EXPECT_EQ(b.logit_bias[1], (std::pair<int32_t, float>{11, 2.5f}));
    EXPECT_EQ(b.logit_bias[2], (std::pair<int32_t, float>{2643, -100.0f}));
    EXPECT_TRUE(parse("logit_bias", "{}").logit_bias.empty());
    EXPECT_TRUE(parse("logit_bias", "null").logit_bias.empty());
    EXPECT_EQ(parse("min_tokens", "4").min_tokens, 4);
    EXPECT_EQ(parse("min_tokens", "3.0").min_tokens, 3);
    EXPECT_EQ(parse("stop_token_ids", "[5, 2643]").stop_token_ids, (std::vector<int32_t>{5, 2643}));
    EXPECT_TRUE(parse("stop_token_ids", "[]").stop_token_ids.empty());
    for (const auto& [field, value, param, says] : {
             std::tuple{"logit_bias", "[1]", "logit_bias", "'logit_bias' must be an object mapping token ids to biases, got array"},
             std::tuple{"logit_bias", R"({"2643": 101})", "logit_bias", "'logit_bias' gives token 2643 the bias 101, outside [-100, 100]"},
             std::tuple{"logit_bias", R"({"7": "1"})", "logit_bias", "'logit_bias' maps token 7 to string; a bias must be a number in [-100, 100]"},
             std::tuple{"logit_bias", R"({"x": 1})", "logit_bias",
                        "'logit_bias' maps token ids (decimal strings such as \"50256\") to biases; \"x\" is not a token id"},
             std::tuple{"logit_bias", R"({"-3": 1})", "logit_bias",
                        "'logit_bias' maps token ids (decimal strings such as \"50256\") to biases; \"-3\" is not a token id"},
             std::tuple{"logit_bias", R"({"99999999999": 1})", "logit_bias",
                        "'logit_bias' maps token ids (decimal strings such as \"50256\") to biases; \"99999999999\" is not a token id"},
             std::tuple{"logit_bias", R"({"7": 1, "07": 2})", "logit_bias",
                        "'logit_bias' names token 7 twice (spelled with leading zeros once)"},
             std::tuple{"min_tokens", "-1", "min_tokens", "'min_tokens' must be >= 0, got -1"},
             std::tuple{"min_tokens", "1.5", "min_tokens", "'min_tokens' must be an integer, got 1.5"},
             std::tuple{"stop_token_ids", "2643", "stop_token_ids", "'stop_token_ids' must be an array of token ids, got number"},
             std::tuple{"stop_token_ids", "[1, -2]", "stop_token_ids[1]", "'stop_token_ids[1]' is -2, not a token id"},
             std::tuple{"stop_token_ids", R"([1, "2"])", "stop_token_ids[1]", "'stop_token_ids[1]' must be an integer, got string"}}) {
      const RequestError e = error_of([&] { parse(field, value); });
      EXPECT_EQ(e.param(), param) << value;
      EXPECT_EQ(std::string(e.what()), says);
    }
  }
}

TEST(UnsupportedFields, CompletionsRefuseWhatWouldChangeTheAnswer) {
  for (const FieldCase& c : kBothEndpoints) expect_refused_accepted_typed(c, false);
  for (const FieldCase& c : kCompletionOnly) expect_refused_accepted_typed(c, false);
}

TEST(UnsupportedFields, ChatRefusesWhatWouldChangeTheAnswer) {
  for (const FieldCase& c : kBothEndpoints) expect_refused_accepted_typed(c, true);
  for (const FieldCase& c : kChatOnly) expect_refused_accepted_typed(c, true);
}

TEST(UnsupportedFields, RefusalsSayWhatIsAccepted) {
  EXPECT_EQ(message_of([] { parse_completion_request(completion_with("echo", "true")); }),
            "'echo' is not supported by lg serve or lg batch (the answer does not repeat the prompt); leave it out or "
            "send false");
  EXPECT_EQ(message_of([] { parse_completion_request(completion_with("presence_penalty", R"("abc")")); }),
            "'presence_penalty' must be a number, got string");
  EXPECT_EQ(param_of([] { parse_chat_request(chat_with("response_format", "{}")); }), "response_format.type");
  // A forced call by object is refused like "required"; the guided_* extensions take any value.
  EXPECT_EQ(param_of([] { parse_chat_request(chat_with("tool_choice", R"({"type":"function","function":{"name":"f"}})")); }),
            "tool_choice");
  EXPECT_EQ(param_of([] { parse_completion_request(completion_with("guided_json", "{}")); }), "guided_json");
  EXPECT_EQ(param_of([] { parse_chat_request(chat_with("guided_choice", R"(["a","b"])")); }), "guided_choice");
  // Audio output (with modalities ["text", "audio"]): any value asks for it; it was answered in text.
  EXPECT_EQ(param_of([] { parse_chat_request(chat_with("audio", R"({"voice":"alloy","format":"wav"})")); }), "audio");
  EXPECT_EQ(param_of([] { parse_chat_request(chat_with("tool_choice", R"("none")")); }), "<no error>");
}

// vLLM's chat request may carry its own template and documents for it; lg serve rendered the
// model's template without the documents and answered 200 as if they had been used.
TEST(UnsupportedFields, ChatTemplateAndDocumentsOfARequestAreRefused) {
  const std::string tmpl = message_of([] { parse_chat_request(chat_with("chat_template", R"("{{ messages }}")")); });
  EXPECT_NE(tmpl.find("'chat_template' is not supported by lg serve"), std::string::npos) << tmpl;
  EXPECT_NE(tmpl.find("--chat-template"), std::string::npos) << tmpl;
  EXPECT_EQ(param_of([] { parse_chat_request(chat_with("documents", R"([{"title":"t","text":"x"}])")); }), "documents");
  EXPECT_EQ(param_of([] { parse_chat_request(chat_with("chat_template", "null")); }), "<no error>");
  EXPECT_EQ(param_of([] { parse_chat_request(chat_with("documents", "null")); }), "<no error>");
  // Completions have no template: there they are unknown fields, ignored as any other.
  EXPECT_EQ(param_of([] { parse_completion_request(completion_with("chat_template", R"("x")")); }), "<no error>");
}

// Log probabilities of the generated tokens: completions' `logprobs` N, chat's `logprobs` true
// with `top_logprobs` N (OpenAI's API; 0 is the sampled token's alone, which OpenAI's API "will
// always return"), up to 20 alternatives; prompt_logprobs (vLLM's, the prompt's) is refused, 0
// included (vLLM answers them for any non-null value).
TEST(LogprobsFields, EachEndpointAsksAsOpenAIsAPIDoes) {
  EXPECT_EQ(parse_completion_request(completion_with("logprobs", "0")).gen.logprobs, 0);
  EXPECT_EQ(parse_completion_request(completion_with("logprobs", "5.0")).gen.logprobs, 5);
  EXPECT_EQ(parse_completion_request(completion_with("logprobs", "20")).gen.logprobs, 20);
  EXPECT_EQ(parse_completion_request(completion_with("logprobs", "null")).gen.logprobs, -1);
  EXPECT_EQ(parse_completion_request(completion_with("user", R"("u")")).gen.logprobs, -1);
  EXPECT_EQ(message_of([] { parse_completion_request(completion_with("logprobs", "21")); }),
            "'logprobs' must be in [0, 20], got 21");
  EXPECT_EQ(message_of([] { parse_completion_request(completion_with("logprobs", "-1")); }),
            "'logprobs' must be in [0, 20], got -1");
  EXPECT_EQ(param_of([] { parse_completion_request(completion_with("logprobs", "true")); }), "logprobs");
  const auto chat = [](const char* fields) {
    return parse_chat_request(std::string(R"({"messages":[{"role":"user","content":"a"}],)") + fields + "}").gen.logprobs;
  };
  EXPECT_EQ(chat(R"("logprobs":true)"), 0);
  EXPECT_EQ(chat(R"("logprobs":true,"top_logprobs":3)"), 3);
  EXPECT_EQ(chat(R"("logprobs":false,"top_logprobs":0)"), -1);
  EXPECT_EQ(chat(R"("top_logprobs":0)"), -1);  // asks for nothing: clients send it with their defaults
  EXPECT_EQ(chat(R"("logprobs":null)"), -1);
  const auto chat_error = [&](const char* fields) { return message_of([&] { chat(fields); }); };
  EXPECT_EQ(chat_error(R"("top_logprobs":2)"), "'top_logprobs' needs 'logprobs' to be true");
  EXPECT_EQ(chat_error(R"("logprobs":false,"top_logprobs":2)"), "'top_logprobs' needs 'logprobs' to be true");
  EXPECT_EQ(chat_error(R"("logprobs":true,"top_logprobs":21)"), "'top_logprobs' must be in [0, 20], got 21");
  EXPECT_EQ(chat_error(R"("logprobs":3)"), "'logprobs' must be a boolean, got 3");
  for (const char* zero : {"0", "0.0"}) {
    const std::string m = message_of([&] { parse_completion_request(completion_with("prompt_logprobs", zero)); });
    EXPECT_NE(m.find("'prompt_logprobs' is not supported by lg serve"), std::string::npos) << m;
    EXPECT_NE(m.find("leave it out or send null"), std::string::npos) << m;
  }
  EXPECT_EQ(param_of([] { parse_chat_request(chat_with("prompt_logprobs", "0")); }), "prompt_logprobs");
}

// reasoning_effort reaches the template as its variable (transformers' apply_chat_template
// passes it so); it was accepted and dropped. chat_template_kwargs' own value wins.
TEST(ChatFields, ReasoningEffortIsATemplateVariable) {
  EXPECT_EQ(parse_chat_request(chat_with("reasoning_effort", R"("high")")).template_kwargs,
            nlohmann::ordered_json({{"reasoning_effort", "high"}}));
  EXPECT_TRUE(parse_chat_request(chat_with("reasoning_effort", "null")).template_kwargs.empty());
  const ChatRequest both = parse_chat_request(
      R"({"messages":[{"role":"user","content":"a"}],"reasoning_effort":"low",)"
      R"("chat_template_kwargs":{"reasoning_effort":"medium"}})");
  EXPECT_EQ(both.template_kwargs, nlohmann::ordered_json({{"reasoning_effort", "medium"}}));
  for (const char* bad : {R"("extreme")", "3", "true"}) {
    const std::string m = message_of([&] { parse_chat_request(chat_with("reasoning_effort", bad)); });
    EXPECT_EQ(m, std::string("'reasoning_effort' must be \"none\", \"minimal\", \"low\", \"medium\" or \"high\", got ") +
                     (std::string(bad) == "true" ? "boolean" : bad))
        << bad;
  }
}

TEST(UnsupportedFields, FieldsThatDoNotChangeTheAnswerStayAccepted) {
  // OpenAI clients send these; the answer is the same with or without them.
  EXPECT_NO_THROW(parse_completion_request(
      R"({"prompt":"x","user":"u1","metadata":{"k":"v"},"seed":3,"store":false,)"
      R"("logprobs":null,"echo":false,"best_of":1,"suffix":null,"frequency_penalty":0,"presence_penalty":0,)"
      R"("logit_bias":null})"));
  EXPECT_NO_THROW(parse_chat_request(
      R"({"messages":[{"role":"user","content":"a"}],"user":"u1","metadata":{},"parallel_tool_calls":true,)"
      R"("logprobs":false,"top_logprobs":0,"response_format":{"type":"text"},"tool_choice":"auto","logit_bias":{},)"
      R"("modalities":["text"],"prediction":{"type":"content","content":"x"}})"));
  // Fields of the other endpoint are not this one's: chat's top_logprobs on completions, and
  // completions' suffix / best_of on chat, are unknown there (and ignored, as any unknown field).
  EXPECT_NO_THROW(parse_completion_request(completion_with("top_logprobs", "2")));
  EXPECT_NO_THROW(parse_chat_request(chat_with("best_of", "3")));
}

}  // namespace
