// lg serve end to end, what it refuses and survives: the server runs in-process on an ephemeral
// 127.0.0.1 port with the cpu lane on the repo's 22M model; httplib's client (or raw bytes on a
// socket) calls it. Bad input is a 400 naming the field, unknown paths and models 404s, a wrong
// method a 405, a body not declared JSON a 415, bytes that are not HTTP and Content-Length values
// that are not byte counts 400s at once; a bodyless request is answered at once, a second server
// on a busy port is refused, random bodies never crash it, and a client that hangs up frees the lane.
// What the server generates is server_test.cpp's.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>

#include "common/raw_http.h"
#include "server/server.h"
#include "server_test_fixture.h"
#include "support/error.h"

namespace {

using nlohmann::json;
using namespace std::string_literals;
using namespace lg::server;
using lg::test::kContext;
using lg::test::ServerTest;

TEST_F(ServerTest, BadInputIs400NamingTheField) {
  const std::string c = "/v1/completions", chat = "/v1/chat/completions";
  expect_400(c, "{\"prompt\": ", "", "not valid JSON");
  expect_400(c, "{\"prompt\": \"\xff\"}", "", "not valid JSON");
  // A NUL byte after a whole object: the rest of the body was dropped and the object answered.
  expect_400(c, "{\"prompt\": \"x\", \"max_tokens\": 2}\0 garbage"s, "", "a NUL byte");
  expect_400(chat, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\0"s, "", "a NUL byte");
  expect_400(c, "[]", "");
  expect_400(c, "{}", "prompt");
  expect_400(c, R"({"prompt": 5})", "prompt");
  expect_400(c, R"({"prompt": ""})", "prompt");
  // An id outside the vocabulary, in ids sent as an array of one array: named where it is.
  expect_400(c, R"({"prompt": [[750, 999999999]]})", "prompt[0][1]", "outside the model's vocabulary");
  expect_400(c, R"({"prompt": "x", "max_tokens": 0})", "max_tokens");
  expect_400(c, R"({"prompt": "x", "max_tokens": "3"})", "max_tokens");
  expect_400(c, R"({"prompt": "x", "temperature": -0.5})", "temperature");
  expect_400(c, R"({"prompt": "x", "top_p": 2})", "top_p");
  expect_400(c, R"({"prompt": "x", "top_k": "a"})", "top_k");
  expect_400(c, R"({"prompt": "x", "seed": 1.5})", "seed");  // any 64-bit integer is a seed, negative too
  expect_400(c, R"({"prompt": "x", "stop": {"a": 1}})", "stop");
  expect_400(c, R"({"prompt": "x", "stream": 1})", "stream");
  expect_400(c, R"({"prompt": "x", "skip_special_tokens": "false"})", "skip_special_tokens", "must be a boolean");
  expect_400(chat, R"({"messages": [{"role": "user", "content": "x"}], "skip_special_tokens": 0, "stream": true})",
             "skip_special_tokens", "must be a boolean");
  // Fields the server does not implement are refused when they would change the answer, streamed
  // or not; a wrong type is named too. Token ids past the vocabulary, and a min_tokens past what
  // the request may generate, are named too.
  expect_400(c, R"({"prompt": "x", "logit_bias": {"2643": 150}})", "logit_bias", "outside [-100, 100]");
  expect_400(c, R"({"prompt": "x", "logit_bias": {"999999": 1}})", "logit_bias", "outside the model's vocabulary");
  expect_400(c, R"({"prompt": "x", "stop_token_ids": [1, 999999]})", "stop_token_ids[1]", "outside the model's vocabulary");
  expect_400(c, R"({"prompt": "x", "min_tokens": 17})", "min_tokens", "more than the 16 tokens this request may generate");
  expect_400(c, R"({"prompt": "x", "min_tokens": 9, "max_tokens": 8, "stream": true})", "min_tokens", "its max_tokens");
  expect_400(c, R"({"prompt": "x", "echo": true, "stream": true})", "echo", "is not supported by lg serve");
  expect_400(c, R"({"prompt": "x", "logprobs": 21, "stream": true})", "logprobs", "must be in [0, 20]");
  expect_400(c, R"({"prompt": "x", "presence_penalty": "abc"})", "presence_penalty", "must be a number");
  // The penalties and min_p out of vLLM's ranges, named (streamed too).
  expect_400(c, R"({"prompt": "x", "repetition_penalty": 0, "stream": true})", "repetition_penalty", "must be > 0");
  expect_400(c, R"({"prompt": "x", "min_p": 1.5})", "min_p", "must be in [0, 1]");
  expect_400(chat, R"({"messages": [{"role": "user", "content": "x"}], "frequency_penalty": -2.5})", "frequency_penalty",
             "must be in [-2, 2]");
  expect_400(chat, R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs",
             "needs 'logprobs' to be true");
  expect_400(chat, R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", "tool_choice",
             "is not supported by lg serve");
  // A prompt longer than the context: the message gives both lengths. The stream flag must not
  // turn it into a 200 with an error event.
  std::string long_prompt;
  for (int i = 0; i < 300; ++i) long_prompt += " x";
  const size_t n = engine_->tokenizer().encode(long_prompt).size();
  ASSERT_GT(n, static_cast<size_t>(kContext));
  expect_400(c, json{{"prompt", long_prompt}, {"stream", true}}.dump(), "prompt",
             std::to_string(n) + " tokens, more than the context of " + std::to_string(kContext) + " tokens");
  expect_400(chat, "{", "");
  expect_400(chat, R"({"prompt": "x"})", "messages");
  expect_400(chat, R"({"messages": {}})", "messages");
  expect_400(chat, R"({"messages": []})", "messages");
  expect_400(chat, R"({"messages": [{"role": "user"}]})", "messages[0].content");
  expect_400(chat, R"({"messages": [{"content": "x"}]})", "messages[0].role");
  expect_400(chat, R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})", "max_tokens");
  expect_400(chat, json{{"messages", {{{"role", "user"}, {"content", long_prompt}}}}}.dump(), "messages",
             "more than the context of " + std::to_string(kContext));
}

TEST_F(ServerTest, UnknownPathsAndModelsAre404) {
  auto r = client().Get("/v1/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(json::parse(r->body).contains("error"));
  auto p = post("/v2/completions", R"({"prompt": "x"})");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 404);
  auto m = post("/v1/completions", R"({"prompt": "x", "model": "gpt-4"})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 404);
  EXPECT_EQ(json::parse(m->body)["error"]["param"], "model");
}

// A request target in absolute form, as sent through a forward proxy, is routed by its path (RFC
// 9112 3.2.2: servers must accept it); it was a 404 "no route GET http://...".
TEST_F(ServerTest, AbsoluteFormTargetsAreRoutedByTheirPath) {
  using namespace std::chrono_literals;
  const std::string host = "127.0.0.1:" + std::to_string(port_);
  const std::string health =
      lg::test::exchange(port_, "GET http://" + host + "/health HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 10s);
  EXPECT_EQ(lg::test::first_response(health).status, 200) << health;
  const std::string body = R"({"prompt": "x", "max_tokens": 1})";
  const std::string completion = lg::test::exchange(
      port_, "POST HTTP://" + host + "/v1/completions HTTP/1.1\r\nHost: " + host +
                 "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
      20s);
  EXPECT_EQ(lg::test::first_response(completion).status, 200) << completion;
  const std::string root = lg::test::exchange(port_, "GET http://" + host + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 10s);
  EXPECT_EQ(lg::test::first_response(root).status, 404) << root;  // "/": no route, as it would be
  EXPECT_NE(root.find("no route GET /\""), std::string::npos) << root;
}

// HTTP/1.0 has no chunked encoding (RFC 1945): a stream asked for in it is written as it is and
// ends with the connection, where HTTP/1.1 gets chunks.
TEST_F(ServerTest, AStreamAskedForInHttp10EndsWithTheConnectionNotInChunks) {
  using namespace std::chrono_literals;
  const std::string body = R"({"prompt": "def f(", "max_tokens": 3, "stream": true})";
  for (const std::string version : {"HTTP/1.0", "HTTP/1.1"}) {
    const int fd = lg::test::tcp_connect(port_);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(lg::test::send_all(fd, "POST /v1/completions " + version +
                                           "\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                                           std::to_string(body.size()) + "\r\n\r\n" + body));
    const auto t0 = std::chrono::steady_clock::now();
    // HTTP/1.0: everything up to the server's close; HTTP/1.1: up to the last chunk.
    const std::string got = lg::test::read_until(fd, version == "HTTP/1.0" ? std::string(1, '\0') : "0\r\n\r\n", 30s);
    ::close(fd);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 25s) << version << ": the stream did not end";
    EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
    const std::string payload = got.substr(got.find("\r\n\r\n") + 4);
    if (version == "HTTP/1.0") {
      EXPECT_EQ(lg::test::response_header(got, "Transfer-Encoding"), std::nullopt) << got;
      EXPECT_EQ(payload.rfind("data: {", 0), 0u) << payload;  // no chunk size before the event
      EXPECT_TRUE(payload.ends_with("data: [DONE]\n\n")) << payload;
    } else {
      EXPECT_EQ(lg::test::response_header(got, "Transfer-Encoding"), "chunked") << got;
    }
  }
}

TEST_F(ServerTest, UnknownModelIs404BeforeThePromptIsRead) {
  // A client pointed at the wrong model hears that first, as vLLM checks the model before the
  // prompt: a prompt too long for the context, or messages the template cannot render, answered
  // a 400 about the prompt (after tokenizing it and rendering the template) instead.
  const auto expect_404 = [](const std::string& path, const json& body) {
    auto r = post(path, body.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << r->body;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["error"]["param"], "model") << r->body;
    EXPECT_EQ(j["error"]["type"], "NotFoundError") << r->body;
  };
  std::string too_long;  // one token per " x": twice the context
  for (int64_t i = 0; i < 2 * kContext; ++i) too_long += " x";
  expect_404("/v1/completions", {{"model", "gpt-4"}, {"prompt", too_long}});
  expect_404("/v1/completions", {{"model", "gpt-4"}, {"prompt", json::array({999999999})}});
  expect_404("/v1/completions", {{"model", "gpt-4"}, {"prompt", "x"}, {"max_tokens", 10 * kContext}});
  expect_404("/v1/chat/completions",
             {{"model", "gpt-4"}, {"messages", {{{"role", "user"}, {"content", too_long}}}}});
  // A body that is not a request at all is still the 400 it was: its fields cannot be read.
  expect_400("/v1/completions", R"({"model": "gpt-4", "prompt": "x", "max_tokens": "8"})", "max_tokens");
}

TEST_F(ServerTest, SecondServerOnABusyPortIsRefused) {
  // httplib sets SO_REUSEPORT by default; with it a second server bound the same port and took
  // part of the connections. It must be refused instead.
  Server second(*engine_, {"127.0.0.1", port_});
  EXPECT_THROW(second.bind(), lg::Error);
  auto r = client().Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServerTest, RandomBodiesNeverCrashTheServer) {
  // Mutations of a valid body (bytes flipped, dropped, cut): each answer is a 200 or a 400 with
  // an error body, and the server stays up.
  std::mt19937 rng(std::random_device{}());
  const std::string valid_completion =
      R"({"prompt": "def f(x):", "max_tokens": 2, "temperature": 0.5, "stop": ["\n"], "seed": 3})";
  const std::string valid_chat =
      R"({"messages": [{"role": "user", "content": "def f(x):"}], "max_tokens": 2, "top_k": 5, "stream": false})";
  for (int i = 0; i < 150; ++i) {
    std::string body = i % 2 ? valid_completion : valid_chat;
    const int edits = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int e = 0; e < edits && !body.empty(); ++e) {
      const size_t at = std::uniform_int_distribution<size_t>(0, body.size() - 1)(rng);
      switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
        case 0: body[at] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng)); break;
        case 1: body.erase(at, 1); break;
        default: body.resize(at); break;
      }
    }
    auto r = post(i % 2 ? "/v1/completions" : "/v1/chat/completions", body);
    ASSERT_TRUE(r) << "no response to: " << body;
    EXPECT_TRUE(r->status == 200 || r->status == 400 || r->status == 404) << r->status << " for " << body;
    if (r->status != 200) {
      EXPECT_TRUE(json::parse(r->body).contains("error")) << body;
    }
  }
  EXPECT_EQ(client().Get("/health")->status, 200);
}

TEST_F(ServerTest, NonJsonContentTypeIs415AtAnySize) {
  // Plain `curl -d` sends application/x-www-form-urlencoded; httplib capped such bodies at 8 KB
  // with a 413 "too large" that hid the real cause. Every body not declared application/json is
  // a 415 saying which header to send (vLLM's answer), below and above 8 KB; a JSON body of the
  // same 9.8 KB (a valid request padded with whitespace) is served.
  const std::string small = R"({"prompt": "def f():", "max_tokens": 1, "temperature": 0})";
  const std::string big = small + std::string(9800, ' ');
  for (const std::string& type : {std::string("application/x-www-form-urlencoded"), std::string("text/plain")}) {
    for (const std::string* body : {&small, &big}) {
      auto r = client().Post("/v1/completions", *body, type.c_str());
      ASSERT_TRUE(r) << type;
      EXPECT_EQ(r->status, 415) << type << " " << body->size() << " bytes: " << r->body;
      json j;
      ASSERT_NO_THROW(j = json::parse(r->body)) << r->body;
      EXPECT_EQ(j["error"]["type"], "invalid_request_error");
      EXPECT_NE(j["error"]["message"].get<std::string>().find("Content-Type: application/json"), std::string::npos)
          << r->body;
    }
  }
  auto chat = client().Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})", "text/plain");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 415);
  // No Content-Type at all (httplib's client sends none for an empty type) is refused the same way.
  httplib::Headers none;
  auto untyped = client().Post("/v1/completions", none, small, "");
  ASSERT_TRUE(untyped);
  EXPECT_EQ(untyped->status, 415) << untyped->body;

  auto ok = client().Post("/v1/completions", big, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto charset = client().Post("/v1/completions", small, "Application/JSON; charset=utf-8");
  ASSERT_TRUE(charset);
  EXPECT_EQ(charset->status, 200) << charset->body;
  for (const char* type : {"application/json;charset=\"UTF-8\"", "application/json; charset='utf-8'",
                           "application/json; charset=us-ascii"}) {
    auto quoted = client().Post("/v1/completions", small, type);
    ASSERT_TRUE(quoted);
    EXPECT_EQ(quoted->status, 200) << type << ": " << quoted->body;
  }
  // Another charset (a UTF-16 body) is a 415 naming it; it was "not valid JSON at column 2".
  std::string utf16 = "\xff\xfe";
  for (char c : small) utf16 += std::string{c, '\0'};
  auto wide = client().Post("/v1/completions", utf16, "application/json; charset=utf-16");
  ASSERT_TRUE(wide);
  EXPECT_EQ(wide->status, 415) << wide->body;
  EXPECT_NE(json::parse(wide->body)["error"]["message"].get<std::string>().find("Unsupported charset 'utf-16'"),
            std::string::npos)
      << wide->body;
  // The server's own cap (ServerOptions::max_body_bytes, 4 MiB) still holds for JSON.
  auto huge = client().Post("/v1/completions", small + std::string(5 * 1024 * 1024, ' '), "application/json");
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 413);
  EXPECT_EQ(json::parse(huge->body)["error"]["message"], "the request body is too large: more than 4194304 bytes")
      << huge->body;
}

TEST_F(ServerTest, WrongMethodOnAKnownPathIs405) {
  // `GET /v1/completions` is a method error, not a missing route: 405 with Allow, an OpenAI error body.
  auto expect_405 = [](const httplib::Result& r, const std::string& allow) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405) << r->body;
    EXPECT_EQ(r->get_header_value("Allow"), allow);
    json j;
    ASSERT_NO_THROW(j = json::parse(r->body)) << r->body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_NE(j["error"]["message"].get<std::string>().find("Method Not Allowed"), std::string::npos) << r->body;
  };
  expect_405(client().Get("/v1/completions"), "POST");
  expect_405(client().Get("/v1/chat/completions"), "POST");
  expect_405(client().Delete("/v1/completions"), "POST");
  expect_405(client().Put("/v1/chat/completions", "{}", "application/json"), "POST");
  expect_405(client().Post("/health", "{}", "application/json"), "GET, HEAD");
  expect_405(client().Post("/v1/models", "{}", "application/json"), "GET, HEAD");
  expect_405(client().Get("/tokenize"), "POST");
  expect_405(client().Get("/detokenize"), "POST");
  expect_405(client().Post("/version", "{}", "application/json"), "GET, HEAD");
  auto head = client().Head("/health");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
}

TEST_F(ServerTest, BytesThatAreNotHttpAre400WithAJsonError) {
  // Garbage (here the start of a TLS handshake, a client speaking https to the plain port) fails
  // httplib's request-line parse; the answer was a 400 whose body said only "HTTP 400".
  using namespace std::chrono_literals;
  for (const std::string& bytes : {std::string("\x16\x03\x01\x02\xfc\x01\x03\r\n\r\n"),
                                   std::string("hello there\r\n\r\n"), std::string("POST /v1/completions HTTP/9\r\n\r\n")}) {
    const std::string got = lg::test::exchange(port_, bytes, 10s);
    const auto r = lg::test::first_response(got);
    EXPECT_EQ(r.status, 400) << got;
    json j;
    ASSERT_NO_THROW(j = json::parse(r.body)) << got;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_NE(j["error"]["message"].get<std::string>().find("not valid HTTP/1.1"), std::string::npos) << r.body;
    // What follows on the connection is no request: the client is told to close it, once, and
    // not to keep it alive (it was "Keep-Alive: timeout=2").
    EXPECT_EQ(lg::test::response_header(got, "Connection").value_or(""), "close") << got;
    EXPECT_EQ(got.find("Keep-Alive"), std::string::npos) << got;
  }
  // A header line past httplib's 8,192 bytes is such a request; the message says so.
  const std::string long_header =
      lg::test::exchange(port_, "GET /health HTTP/1.1\r\nHost: x\r\nX-Long: " + std::string(8300, 'a') + "\r\n\r\n", 10s);
  EXPECT_EQ(lg::test::first_response(long_header).status, 400) << long_header;
  EXPECT_NE(long_header.find("a header line longer than 8192 bytes is refused too"), std::string::npos) << long_header;
  EXPECT_EQ(client().Get("/health")->status, 200);
}

TEST_F(ServerTest, ContentLengthThatIsNotAByteCountIs400AtOnce) {
  // httplib took "-5" for 2^64 - 5 (strtoull), tried to read and discard that many bytes, and
  // answered 413 when its 30 s read timeout ended. Each value here is a 400 naming the header,
  // well within that timeout.
  using namespace std::chrono_literals;
  for (const std::string length : {"-5", "abc", "5x", "99999999999999999999999"}) {
    const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                "application/json\r\nContent-Length: " +
                                length + "\r\n\r\n{\"prompt\": \"x\"}";
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = lg::test::exchange(port_, request, 20s);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << length;
    const auto r = lg::test::first_response(got);
    EXPECT_EQ(r.status, 400) << length << ": " << got;
    EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
    json j;
    ASSERT_NO_THROW(j = json::parse(r.body)) << got;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_NE(j["error"]["message"].get<std::string>().find("'Content-Length: " + length + "'"), std::string::npos)
        << r.body;
  }
  // A well-formed length on the same raw path is served.
  const std::string ok = lg::test::exchange(
      port_, lg::test::post_text("/v1/completions", R"({"prompt": "x", "max_tokens": 1})"), 20s);
  EXPECT_EQ(lg::test::first_response(ok).status, 200) << ok;
  // Two lengths that differ: httplib framed the body by the first, where a proxy in front may
  // take another (request smuggling). A 400 naming both; the same length twice is served.
  const std::string body = R"({"prompt": "x", "max_tokens": 1})";
  const auto twice = [&](const std::string& second) {
    return "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\nContent-Length: " + second + "\r\n\r\n" + body;
  };
  const std::string differ = lg::test::exchange(port_, twice("5"), 20s);
  const auto r = lg::test::first_response(differ);
  EXPECT_EQ(r.status, 400) << differ;
  EXPECT_EQ(lg::test::response_header(differ, "Connection").value_or(""), "close") << differ;
  // Once, also when the client asked to close (it came twice, httplib's and ours).
  const std::string asked = lg::test::exchange(
      port_, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: -5\r\n\r\n{}", 20s);
  EXPECT_EQ(lg::test::first_response(asked).status, 400) << asked;
  const std::string head = asked.substr(0, asked.find("\r\n\r\n"));
  EXPECT_EQ(head.find("Connection: close"), head.rfind("Connection: close")) << head;
  EXPECT_NE(r.body.find(fmt::format("two Content-Length headers that differ ({} and 5)", body.size())), std::string::npos)
      << r.body;
  const std::string same = lg::test::exchange(port_, twice(std::to_string(body.size())), 20s);
  EXPECT_EQ(lg::test::first_response(same).status, 200) << same;
}

// An answer that says "Connection: close" closes the connection (RFC 9112 9.6): httplib decided
// from the request's own header, so a request sent behind a framing error was served (request
// smuggling through a proxy that frames the body otherwise), and the connection held its thread
// for the keep-alive wait. Each case ends at once, with one answer and nothing after it.
TEST_F(ServerTest, AnAnswerThatClosesItsConnectionServesNothingAfterIt) {
  using namespace std::chrono_literals;
  const std::string next = "GET /v1/models/SMUGGLED HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::vector<std::pair<std::string, int>> cases = {
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400},
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length : 2\r\n\r\n{}", 400},
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
       400}};
  for (const auto& [request, status] : cases) {
    const int fd = lg::test::tcp_connect(port_);
    ASSERT_GE(fd, 0);
    lg::test::send_all(fd, request);
    const auto t0 = std::chrono::steady_clock::now();
    std::string got = lg::test::read_until(fd, "\"code\":null}}", 10s);  // the error body's end
    // After the answer (httplib serves no pipelined requests), as a proxy's next request would come.
    lg::test::send_all(fd, next);
    got += lg::test::read_until(fd, "never sent", 10s);  // to end-of-file
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ::close(fd);
    EXPECT_EQ(lg::test::first_response(got).status, status) << request << "\n" << got;
    EXPECT_EQ(got.find("SMUGGLED"), std::string::npos) << request << "\n" << got;
    EXPECT_EQ(got.find("HTTP/1.1", 1), std::string::npos) << "a second answer: " << got;
    // At once, not after the 2 s keep-alive wait (1.5 s is room for a loaded machine).
    EXPECT_LT(took, 1.5) << request;
  }
  // A body past the cap that waits for "100 Continue" is refused before it is sent.
  const std::string expect = lg::test::exchange(
      port_, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 99999999999\r\n\r\n",
      10s);
  EXPECT_EQ(expect.rfind("HTTP/1.1 413 ", 0), 0u) << expect;
  EXPECT_NE(expect.find("Connection: close"), std::string::npos) << expect;
  // A keep-alive connection without such an error still serves its next request (sent after
  // the answer: httplib serves no pipelined requests).
  const int fd = lg::test::tcp_connect(port_);
  ASSERT_GE(fd, 0);
  lg::test::send_all(fd, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string first = lg::test::read_until(fd, "\"ok\"}", 10s);
  EXPECT_EQ(lg::test::first_response(first).status, 200) << first;
  lg::test::send_all(fd, next);
  const std::string second = lg::test::read_until(fd, "SMUGGLED", 10s);
  ::close(fd);
  EXPECT_NE(second.find("SMUGGLED"), std::string::npos) << second;
}

// A header value holding NUL or CR (RFC 9110 5.5: reject or replace; h11 rejects) and a
// Transfer-Encoding header sent twice (RFC 9112 6.1: chunked once) are a 400 naming the header,
// where httplib kept the bytes and read the first coding: a proxy in front may cut the value or
// frame the body otherwise.
TEST_F(ServerTest, HeadersAProxyMayReadOtherwiseAre400) {
  using namespace std::chrono_literals;
  const std::string body = R"({"prompt": "x", "max_tokens": 1})";
  const auto post = [&](const std::string& extra) {
    return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {post(std::string("X-Note: a\0b\r\n", 13)), "the header 'X-Note' of POST /v1/completions holds a NUL or CR byte"},
      {post("X-Note: a\rb\r\n"), "the header 'X-Note' of POST /v1/completions holds a NUL or CR byte"},
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: "
       "chunked\r\nTransfer-Encoding: chunked\r\n\r\n" +
           fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", body.size(), body),
       "POST /v1/completions has 2 Transfer-Encoding headers: send one"}};
  for (const auto& [request, message] : cases) {
    const std::string got = lg::test::exchange(port_, request, 10s);
    const auto r = lg::test::first_response(got);
    EXPECT_EQ(r.status, 400) << got;
    EXPECT_NE(r.body.find(message), std::string::npos) << r.body;
    EXPECT_EQ(lg::test::response_header(got, "Connection").value_or(""), "close") << got;
  }
  // The same request with a plain value in that header is served.
  EXPECT_EQ(lg::test::first_response(lg::test::exchange(port_, post("X-Note: ab\r\n"), 10s)).status, 200);
}

// RFC 9112 3.2: an HTTP/1.1 request without a Host header, or with two, is a 400 (vLLM's h11
// refuses it too); HTTP/1.0 may omit it.
TEST_F(ServerTest, AnHttp11RequestNeedsOneHostHeader) {
  using namespace std::chrono_literals;
  const std::string none = lg::test::exchange(port_, "GET /health HTTP/1.1\r\n\r\n", 10s);
  EXPECT_EQ(lg::test::first_response(none).status, 400) << none;
  EXPECT_NE(none.find("GET /health is an HTTP/1.1 request without a Host header"), std::string::npos) << none;
  const std::string body = R"({"prompt": "x", "max_tokens": 1})";
  const std::string two = lg::test::exchange(
      port_,
      "POST /v1/completions HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body,
      10s);
  EXPECT_EQ(lg::test::first_response(two).status, 400) << two;
  EXPECT_NE(two.find("POST /v1/completions has 2 Host headers: send one"), std::string::npos) << two;
  EXPECT_EQ(lg::test::response_header(two, "Connection").value_or(""), "close") << two;
  const std::string old = lg::test::exchange(port_, "GET /health HTTP/1.0\r\n\r\n", 10s);
  EXPECT_EQ(lg::test::first_response(old).status, 200) << old;
}

TEST_F(ServerTest, BodylessRequestWithoutContentLengthIsAnsweredAtOnce) {
  // `curl -X POST URL` sends neither Content-Length nor Transfer-Encoding: such a request has no
  // body (RFC 9112 6.3), but httplib 0.11 read one until its 30 s read timeout ended and only then
  // answered (a 400 "could not be read", on every path). Each is now answered at once, as it
  // would be with 'Content-Length: 0'.
  using namespace std::chrono_literals;
  struct Case {
    std::string method, path, headers;
    int status;
  };
  for (const Case& c : {Case{"POST", "/v1/completions", "Content-Type: application/json\r\n", 400},
                        Case{"POST", "/v1/chat/completions", "", 415}, Case{"POST", "/health", "", 405},
                        Case{"PUT", "/v1/completions", "", 405}, Case{"PATCH", "/nope", "", 404}}) {
    const std::string request = c.method + " " + c.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + c.headers + "\r\n";
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = lg::test::exchange(port_, request, 20s);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << c.method << " " << c.path;
    const auto r = lg::test::first_response(got);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.path << ": " << got;
    json j;
    ASSERT_NO_THROW(j = json::parse(r.body)) << got;
    EXPECT_TRUE(j.contains("error")) << r.body;
  }
}

TEST_F(ServerTest, ChunkedBodiesAreCappedOrNotReadAtAll) {
  // httplib 0.11 caps a Content-Length body only: a chunked body was read whole into memory (200
  // MiB to POST /nope before its 404; 64 MiB to /v1/completions, then tokenized), and one in
  // another transfer coding until the connection closed. Past the cap a chunked body is now
  // counted and dropped, then a 413; where no route reads a body, the bodies here are left
  // unfinished (no last chunk), so each answer comes only from a server that did not wait.
  using namespace std::chrono_literals;
  const auto chunk = [](const std::string& data) { return fmt::format("{:x}\r\n{}\r\n", data.size(), data); };
  const auto head = [](const std::string& method, const std::string& path, const std::string& coding) {
    return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: " +
           coding + "\r\n\r\n";
  };
  const auto expect_answer = [](const std::string& request, int status, const std::string& what,
                                 bool closes = true) -> json {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = lg::test::exchange(port_, request, 20s);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << what;
    const auto r = lg::test::first_response(got);
    EXPECT_EQ(r.status, status) << what << ": " << got.substr(0, 300);
    if (closes) {
      EXPECT_EQ(lg::test::response_header(got, "Connection").value_or(""), "close") << what;
    }
    if (status == 200) return json::object();
    const json j = json::parse(r.body, nullptr, false);
    EXPECT_TRUE(!j.is_discarded() && j.contains("error")) << what << ": " << r.body;
    return j.is_discarded() ? json::object() : j;
  };
  // Past the server's cap (4 MiB) on a route that reads its body: 413 (it was a 400 for the JSON
  // of a 4 MiB prompt, read whole), naming the size read.
  std::string big = head("POST", "/v1/completions", "chunked") + chunk(R"({"prompt": ")");
  size_t sent = 12;
  for (; sent <= ServerOptions{}.max_body_bytes; sent += 64 * 1024) big += chunk(std::string(64 * 1024, 'a'));
  big += chunk(R"("})") + "0\r\n\r\n";
  const json too_large = expect_answer(big, 413, "4 MiB + 64 KiB chunked", /*closes=*/false);
  EXPECT_NE(too_large.value("error", json::object())
                .value("message", "")
                .find(fmt::format("too large: {} bytes, more than {}", sent + 2, ServerOptions{}.max_body_bytes)),
            std::string::npos)
      << too_large.dump();
  // A route that reads no body never waits for one.
  const std::string part = chunk(std::string(1000, 'x'));
  expect_answer(head("POST", "/nope", "chunked") + part, 404, "POST /nope");
  expect_answer(head("POST", "/health", "chunked") + part, 405, "POST /health");
  expect_answer(head("GET", "/health", "chunked") + part, 200, "GET /health");
  // Both framings at once: a 400, and the connection closed (RFC 9112 6.1), where the body was
  // read as chunked and the connection kept.
  const std::string both = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                           "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk("{}") + "0\r\n\r\n";
  const json two = expect_answer(both, 400, "Content-Length and Transfer-Encoding");
  EXPECT_NE(two.value("error", json::object()).value("message", "").find("both Content-Length and Transfer-Encoding"),
            std::string::npos)
      << two.dump();
  // A transfer coding httplib cannot frame (it read such a body until the connection closed).
  expect_answer(head("POST", "/v1/completions", "gzip") + part, 501, "Transfer-Encoding: gzip");
  // A whole chunked request within the cap is served as before.
  const std::string whole = head("POST", "/v1/completions", "chunked") + chunk(R"({"prompt": "x", )") +
                            chunk(R"("max_tokens": 1})") + "0\r\n\r\n";
  const std::string ok = lg::test::exchange(port_, whole, 20s);
  EXPECT_EQ(lg::test::first_response(ok).status, 200) << ok;
  // So are /tokenize's and /detokenize's (they were read as empty bodies: a new-user pass).
  for (const auto& [path, body] : std::vector<std::pair<std::string, std::string>>{
           {"/tokenize", R"({"prompt": "def f():"})"}, {"/detokenize", R"({"tokens": [750, 282]})"}}) {
    const std::string got = lg::test::exchange(port_, head("POST", path, "chunked") + chunk(body) + "0\r\n\r\n", 20s);
    EXPECT_EQ(lg::test::first_response(got).status, 200) << path << ": " << got;
  }
  EXPECT_EQ(client().Get("/health")->status, 200);
}

}  // namespace

namespace {

// Sends a raw HTTP/1.1 POST to 127.0.0.1:port and returns the open socket (-1 on failure).
int send_raw_post(int port, const std::string& path, const std::string& body) {
  const int fd = lg::test::tcp_connect(port);
  if (fd < 0) return -1;
  const std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  if (!lg::test::send_all(fd, req)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A non-streaming client that hangs up must not keep the lane: its generation stops at the next
// token and the next request is served at once. Before the fix the abandoned request ran to
// max_tokens (a 3-token request then waited 26-35 s behind a 3000-token one).
TEST(ServerHangUpTest, ClientThatHangsUpFreesTheLane) {
  using clock = std::chrono::steady_clock;
  const auto secs = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  constexpr int64_t kLongContext = 2048;
  EngineOptions eo;
  eo.max_seq = kLongContext;
  Engine engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", eo);
  Server server(engine, {"127.0.0.1", 0});
  const int port = server.start();
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(300, 0);
  auto post = [&](const json& body) { return c.Post("/v1/completions", body.dump(), "application/json"); };

  // The machine's decode speed, and proof that greedy "def f():" does not end early: 64 tokens,
  // finish "length" (the prompt runs to the end of the context without eos, checked when this
  // test was written: a full run gives finish_reason "length").
  const json calib = {{"prompt", "def f():"}, {"max_tokens", 64}, {"temperature", 0}};
  const auto t0 = clock::now();
  auto r64 = post(calib);
  const double t64 = secs(clock::now() - t0);
  ASSERT_TRUE(r64);
  ASSERT_EQ(r64->status, 200) << r64->body;
  ASSERT_EQ(json::parse(r64->body)["usage"]["completion_tokens"], 64);

  // The abandoned request: the rest of the 2048-token context, >= 2000 tokens, so at least
  // 2000/64 = 31x the calibration time (attention grows with length, so more in fact).
  const json long_body = {{"prompt", "def f():"}, {"max_tokens", kLongContext - 8}, {"temperature", 0}};
  const int fd = send_raw_post(port, "/v1/completions", long_body.dump());
  ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it is generating now
  ::close(fd);

  const auto t1 = clock::now();
  auto short_r = post({{"prompt", "def f():"}, {"max_tokens", 3}, {"temperature", 0}});
  const double t_short = secs(clock::now() - t1);
  ASSERT_TRUE(short_r);
  EXPECT_EQ(short_r->status, 200) << short_r->body;
  // Had the abandoned request run on, the short one would wait >= ~31 * t64 minus the 0.3 s
  // already spent. A quarter of that (about 8 x t64) leaves wide room for a loaded machine and
  // the short request itself (3 tokens, far less than t64), and still fails without the fix.
  const double bound = 0.25 * (static_cast<double>(kLongContext - 8) / 64.0) * t64;
  EXPECT_LT(t_short, bound) << "t64 " << t64 << " s, short request " << t_short << " s";
  RecordProperty("t64_s", std::to_string(t64));
  RecordProperty("short_after_hang_up_s", std::to_string(t_short));
  server.stop();
}

}  // namespace
