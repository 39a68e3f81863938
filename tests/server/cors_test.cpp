// CorsPolicy, the pure logic: which headers an answer gets for an origin, what a preflight is
// answered, and which option values are refused. Expected values are Starlette's CORSMiddleware
// answers (vLLM's), except where docs/server.md says lg serve differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "server/cors.h"
#include "support/error.h"

namespace {

using lg::server::CorsOptions;
using lg::server::CorsPolicy;
using lg::server::HeaderList;

std::optional<std::string> value(const HeaderList& h, const std::string& name) {
  for (const auto& [n, v] : h)
    if (n == name) return v;
  return std::nullopt;
}

// The message lg::Error carries for `options`, or "" when they are accepted.
std::string refusal(const CorsOptions& options) {
  try {
    CorsPolicy p(options);
  } catch (const lg::Error& e) {
    return e.what();
  }
  return "";
}

CorsOptions explicit_page() {
  CorsOptions o;
  o.allowed_origins = {"http://page.test"};
  o.allowed_methods = {"post"};
  o.allowed_headers = {"Authorization"};
  return o;
}

TEST(CorsPolicy, DefaultAllowsEveryOriginWithAStarAndNoVary) {
  const CorsPolicy p(CorsOptions{});
  const HeaderList h = p.response_headers("https://anything.example:8443");
  EXPECT_EQ(h, (HeaderList{{"Access-Control-Allow-Origin", "*"}}));
  const auto a = p.preflight("http://x.test", "POST", "content-type, authorization");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "OK");
  EXPECT_EQ(value(a.headers, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(value(a.headers, "Access-Control-Allow-Methods"), "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
  EXPECT_EQ(value(a.headers, "Access-Control-Allow-Headers"), "content-type, authorization");  // named back
  EXPECT_EQ(value(a.headers, "Access-Control-Max-Age"), "600");
  EXPECT_EQ(value(a.headers, "Vary"), std::nullopt);
  EXPECT_EQ(value(a.headers, "Access-Control-Allow-Credentials"), std::nullopt);
  // Without Access-Control-Request-Headers there is nothing to name back.
  EXPECT_EQ(value(p.preflight("http://x.test", "GET", std::nullopt).headers, "Access-Control-Allow-Headers"),
            std::nullopt);
  // "*" methods are Starlette's list, not any token.
  EXPECT_EQ(p.preflight("http://x.test", "PROPFIND", std::nullopt).body, "Disallowed CORS method");
}

// A browser refuses `Access-Control-Allow-Origin: *` on a credentialed request: every origin is
// still allowed, but each is named back, and caches are told the answer varies with it.
TEST(CorsPolicy, EveryOriginWithCredentialsEchoesTheOrigin) {
  CorsOptions o;
  o.allow_credentials = true;
  const CorsPolicy p(o);
  EXPECT_EQ(p.response_headers("http://a.test"), (HeaderList{{"Access-Control-Allow-Origin", "http://a.test"},
                                                             {"Vary", "Origin"},
                                                             {"Access-Control-Allow-Credentials", "true"}}));
  const auto a = p.preflight("http://b.test", "POST", "authorization");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(value(a.headers, "Access-Control-Allow-Origin"), "http://b.test");
  EXPECT_EQ(value(a.headers, "Vary"), "Origin");
  EXPECT_EQ(value(a.headers, "Access-Control-Allow-Credentials"), "true");
  EXPECT_EQ(value(a.headers, "Access-Control-Allow-Headers"), "authorization");
}

TEST(CorsPolicy, ListedOriginsAreEchoedAndOthersGetNothing) {
  CorsOptions o;
  o.allowed_origins = {"http://Page.Test:3000", "null"};  // a browser sends scheme and host lowercase
  const CorsPolicy p(o);
  EXPECT_TRUE(p.origin_allowed("http://page.test:3000"));
  EXPECT_TRUE(p.origin_allowed("null"));  // a file:// page
  EXPECT_EQ(p.response_headers("http://page.test:3000"),
            (HeaderList{{"Access-Control-Allow-Origin", "http://page.test:3000"}, {"Vary", "Origin"}}));
  for (const std::string other : {"http://page.test", "https://page.test:3000", "http://page.test:3000.evil.test", ""}) {
    EXPECT_FALSE(p.origin_allowed(other)) << other;
    EXPECT_TRUE(p.response_headers(other).empty()) << other;
    const auto a = p.preflight(other, "POST", std::nullopt);
    EXPECT_EQ(a.status, 400) << other;
    EXPECT_EQ(a.body, "Disallowed CORS origin") << other;
    EXPECT_TRUE(a.headers.empty()) << other;
  }
}

TEST(CorsPolicy, PreflightChecksTheMethodAndEveryRequestedHeader) {
  const CorsPolicy p(explicit_page());
  const auto ok = p.preflight("http://page.test", "POST", " Authorization ,content-type");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(value(ok.headers, "Access-Control-Allow-Methods"), "POST");  // "post" as given, uppercased
  // The safelisted headers are always allowed, and listed with the given ones, sorted.
  EXPECT_EQ(value(ok.headers, "Access-Control-Allow-Headers"),
            "Accept, Accept-Language, Authorization, Content-Language, Content-Type");
  const auto method = p.preflight("http://page.test", "GET", std::nullopt);
  EXPECT_EQ(method.status, 400);
  EXPECT_EQ(method.body, "Disallowed CORS method");
  // A refusal still names the origin, so that the page's console shows which check failed.
  EXPECT_EQ(value(method.headers, "Access-Control-Allow-Origin"), "http://page.test");
  const auto both = p.preflight("http://page.test", "PUT", "authorization, x-api-key");
  EXPECT_EQ(both.status, 400);
  EXPECT_EQ(both.body, "Disallowed CORS method, headers");
}

// No origin listed: every cross-origin request is refused.
TEST(CorsPolicy, NoListedOriginAllowsNone) {
  CorsOptions o;
  o.allowed_origins = {};
  const CorsPolicy none(o);
  EXPECT_FALSE(none.origin_allowed("http://a.test"));
  EXPECT_TRUE(none.response_headers("http://a.test").empty());
  EXPECT_EQ(none.preflight("http://a.test", "POST", std::nullopt).status, 400);
}

TEST(CorsPolicy, InvalidValuesAreRefusedNamingTheOption) {
  const auto with = [](auto set) {
    CorsOptions o;
    set(o);
    return refusal(o);
  };
  EXPECT_EQ(with([](CorsOptions&) {}), "");
  EXPECT_EQ(with([](CorsOptions& o) { o.allowed_origins = {"http://localhost:3000/"}; }).rfind(
                "--allowed-origins: 'http://localhost:3000/' is not an origin: give scheme://host[:port] with no path", 0),
            0u);
  for (const std::string bad : {"localhost:3000", "http://a.test/app", "", "http://", "http://a b"})
    EXPECT_NE(with([&](CorsOptions& o) { o.allowed_origins = {bad}; }).find("--allowed-origins: '" + bad + "' is not an origin"),
              std::string::npos)
        << bad;
  EXPECT_NE(with([](CorsOptions& o) { o.allowed_methods = {"PO ST"}; }).find("--allowed-methods: 'PO ST' is not an HTTP method"),
            std::string::npos);
  EXPECT_NE(with([](CorsOptions& o) { o.allowed_headers = {"X-Key:"}; }).find("--allowed-headers: 'X-Key:' is not a header name"),
            std::string::npos);
}

}  // namespace
