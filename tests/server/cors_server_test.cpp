// CORS over HTTP, as a browser meets it: raw requests carrying Origin (and preflights) to a served
// 22M model, once with the defaults (every origin, as vLLM) and once with one listed origin,
// method and header and credentials. The headers must be on every kind of answer: JSON, error
// pages, the 405 of a wrong method and a Server-Sent Events stream.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/raw_http.h"
#include "served_model.h"

namespace {

using namespace std::chrono_literals;
using lg::test::exchange;
using lg::test::response_header;

constexpr const char* kPage = "http://page.test:5173";

std::string get(const std::string& path, const std::string& headers) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "\r\n";
}

std::string preflight(const std::string& path, const std::string& origin, const std::string& method,
                      const std::string& asked_headers = "") {
  return "OPTIONS " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: " + origin +
         "\r\nAccess-Control-Request-Method: " + method + "\r\n" +
         (asked_headers.empty() ? "" : "Access-Control-Request-Headers: " + asked_headers + "\r\n") + "\r\n";
}

// A JSON POST with `extra` header lines ("Name: value\r\n").
std::string post(const std::string& path, const std::string& body, const std::string& extra) {
  std::string text = lg::test::post_text(path, body);
  return text.insert(text.find("\r\n") + 2, extra);
}

// How many times `name` starts a header line of the first response's head.
size_t header_count(const std::string& text, const std::string& name) {
  const std::string head = text.substr(0, text.find("\r\n\r\n"));
  size_t n = 0;
  for (size_t at = head.find("\r\n" + name + ":"); at != std::string::npos; at = head.find("\r\n" + name + ":", at + 1)) ++n;
  return n;
}

// A streamed completion's whole answer, up to its last event.
std::string stream(int port, const std::string& origin) {
  const int fd = lg::test::tcp_connect(port);
  EXPECT_GE(fd, 0);
  if (fd < 0) return {};
  lg::test::send_all(fd, post("/v1/completions", R"({"prompt": "def f():", "max_tokens": 4, "stream": true})",
                              "Origin: " + origin + "\r\n"));
  std::string got = lg::test::read_until(fd, "data: [DONE]", 60s);
  ::close(fd);
  return got;
}

class CorsDefaultServerTest : public lg::test::ServedModel {
 protected:
  static void SetUpTestSuite() {
    lg::server::EngineOptions eo;
    eo.max_seq = 64;
    serve(eo);
  }
};

TEST_F(CorsDefaultServerTest, EveryAnswerToAPageCarriesTheStar) {
  const std::string health = exchange(port_, get("/health", std::string("Origin: ") + kPage + "\r\n"), 10s);
  EXPECT_EQ(lg::test::first_response(health).status, 200) << health;
  EXPECT_EQ(response_header(health, "Access-Control-Allow-Origin"), "*") << health;
  EXPECT_EQ(response_header(health, "Vary"), std::nullopt) << health;
  EXPECT_EQ(response_header(health, "Access-Control-Allow-Credentials"), std::nullopt) << health;
  // Without Origin (curl, the OpenAI SDK) nothing changes.
  const std::string plain = exchange(port_, get("/health", ""), 10s);
  EXPECT_EQ(lg::test::first_response(plain).status, 200) << plain;
  EXPECT_EQ(response_header(plain, "Access-Control-Allow-Origin"), std::nullopt) << plain;
  // A page reads the error bodies too: a 400 from the route, a 404 and a 405 from the error handler.
  const std::string origin = std::string("Origin: ") + kPage + "\r\n";
  const std::string bad = exchange(port_, post("/v1/completions", R"({"prompt": "x", "max_tokens": 0})", origin), 10s);
  EXPECT_EQ(lg::test::first_response(bad).status, 400) << bad;
  EXPECT_EQ(response_header(bad, "Access-Control-Allow-Origin"), "*") << bad;
  const std::string missing = exchange(port_, get("/v2/nothing", origin), 10s);
  EXPECT_EQ(lg::test::first_response(missing).status, 404) << missing;
  EXPECT_EQ(response_header(missing, "Access-Control-Allow-Origin"), "*") << missing;
  const std::string wrong = exchange(port_, get("/v1/completions", origin), 10s);
  EXPECT_EQ(lg::test::first_response(wrong).status, 405) << wrong;
  EXPECT_EQ(response_header(wrong, "Access-Control-Allow-Origin"), "*") << wrong;
}

TEST_F(CorsDefaultServerTest, PreflightIsAnsweredOnEveryPath) {
  for (const std::string path : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/not/a/route"}) {
    const std::string got = exchange(port_, preflight(path, kPage, "POST", "content-type, authorization"), 10s);
    const auto r = lg::test::first_response(got);
    EXPECT_EQ(r.status, 200) << path << "\n" << got;
    EXPECT_EQ(r.body, "OK") << path;
    EXPECT_EQ(response_header(got, "Access-Control-Allow-Origin"), "*") << got;
    EXPECT_EQ(header_count(got, "Access-Control-Allow-Origin"), 1u) << got;  // not added again after routing
    EXPECT_EQ(response_header(got, "Access-Control-Allow-Methods"), "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
    EXPECT_EQ(response_header(got, "Access-Control-Allow-Headers"), "content-type, authorization");
    EXPECT_EQ(response_header(got, "Access-Control-Max-Age"), "600");
  }
  // OPTIONS that is not a preflight (no Access-Control-Request-Method) is still the route's 405.
  const std::string plain = exchange(
      port_, "OPTIONS /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: " + std::string(kPage) + "\r\n\r\n", 10s);
  EXPECT_EQ(lg::test::first_response(plain).status, 405) << plain;
  EXPECT_EQ(response_header(plain, "Allow"), "POST") << plain;
}

TEST_F(CorsDefaultServerTest, AStreamCarriesTheHeaders) {
  const std::string got = stream(port_, kPage);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_EQ(response_header(got, "Content-Type"), "text/event-stream") << got;
  EXPECT_EQ(response_header(got, "Access-Control-Allow-Origin"), "*") << got;
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos) << got;
}

// One page allowed, with credentials: its origin is named back (with Vary), every other origin
// gets no CORS header at all and its preflight is a 400.
class CorsListedOriginServerTest : public lg::test::ServedModel {
 protected:
  static void SetUpTestSuite() {
    lg::server::EngineOptions eo;
    eo.max_seq = 64;
    lg::server::ServerOptions so{"127.0.0.1", 0};
    so.cors.allowed_origins = {kPage};
    so.cors.allowed_methods = {"POST"};
    so.cors.allowed_headers = {"Authorization"};
    so.cors.allow_credentials = true;
    serve(eo, so);
  }
};

TEST_F(CorsListedOriginServerTest, TheListedPageIsNamedBackOnAnswersAndStreams) {
  const std::string origin = std::string("Origin: ") + kPage + "\r\n";
  const std::string got =
      exchange(port_, post("/v1/completions", R"({"prompt": "def f():", "max_tokens": 2})", origin), 60s);
  EXPECT_EQ(lg::test::first_response(got).status, 200) << got;
  EXPECT_EQ(response_header(got, "Access-Control-Allow-Origin"), kPage) << got;
  EXPECT_EQ(response_header(got, "Vary"), "Origin") << got;
  EXPECT_EQ(response_header(got, "Access-Control-Allow-Credentials"), "true") << got;
  const std::string streamed = stream(port_, kPage);
  EXPECT_EQ(response_header(streamed, "Access-Control-Allow-Origin"), kPage) << streamed;
  EXPECT_EQ(response_header(streamed, "Vary"), "Origin") << streamed;
  EXPECT_NE(streamed.find("data: [DONE]"), std::string::npos) << streamed;

  const std::string pre = exchange(port_, preflight("/v1/completions", kPage, "POST", "Authorization, Content-Type"), 10s);
  EXPECT_EQ(lg::test::first_response(pre).status, 200) << pre;
  EXPECT_EQ(response_header(pre, "Access-Control-Allow-Origin"), kPage) << pre;
  EXPECT_EQ(response_header(pre, "Access-Control-Allow-Methods"), "POST") << pre;
  EXPECT_EQ(response_header(pre, "Access-Control-Allow-Headers"),
            "Accept, Accept-Language, Authorization, Content-Language, Content-Type")
      << pre;
  EXPECT_EQ(response_header(pre, "Access-Control-Allow-Credentials"), "true") << pre;
  // A method or header not listed: Starlette's 400, naming which.
  const auto method = lg::test::first_response(exchange(port_, preflight("/v1/models", kPage, "DELETE"), 10s));
  EXPECT_EQ(method.status, 400);
  EXPECT_EQ(method.body, "Disallowed CORS method");
  const auto header = lg::test::first_response(exchange(port_, preflight("/v1/models", kPage, "POST", "X-Api-Key"), 10s));
  EXPECT_EQ(header.status, 400);
  EXPECT_EQ(header.body, "Disallowed CORS headers");
}

TEST_F(CorsListedOriginServerTest, AnotherOriginGetsNoCorsHeaders) {
  const std::string other = "Origin: http://elsewhere.test\r\n";
  const std::string got =
      exchange(port_, post("/v1/completions", R"({"prompt": "def f():", "max_tokens": 2})", other), 60s);
  // The server still answers (CORS is the browser's check): without the headers the page cannot read it.
  EXPECT_EQ(lg::test::first_response(got).status, 200) << got;
  EXPECT_EQ(got.substr(0, got.find("\r\n\r\n")).find("Access-Control-"), std::string::npos) << got;
  const std::string streamed = stream(port_, "http://elsewhere.test");
  EXPECT_EQ(streamed.substr(0, streamed.find("\r\n\r\n")).find("Access-Control-"), std::string::npos) << streamed;
  const std::string pre = exchange(port_, preflight("/v1/completions", "http://elsewhere.test", "POST"), 10s);
  const auto r = lg::test::first_response(pre);
  EXPECT_EQ(r.status, 400) << pre;
  EXPECT_EQ(r.body, "Disallowed CORS origin");
  EXPECT_EQ(pre.substr(0, pre.find("\r\n\r\n")).find("Access-Control-"), std::string::npos) << pre;
}

}  // namespace
