#include "server/cors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "support/error.h"

namespace lg::server {

namespace {

// What Starlette allows for "*" methods: a preflight for another method is refused.
const std::vector<std::string> kAllMethods = {"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"};
// Request headers a browser may always send (Fetch's CORS-safelisted ones, as Starlette lists them).
const std::vector<std::string> kSafelistedHeaders = {"Accept", "Accept-Language", "Content-Language", "Content-Type"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// An HTTP token (RFC 9110 tchar): what method and header names are made of.
bool is_token(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// The values of one option, checked; "*" is kept as is.
const std::vector<std::string>& checked(const std::vector<std::string>& values, const std::string& option,
                                        std::optional<std::string> (*problem)(const std::string&)) {
  for (const auto& v : values)
    if (const auto p = problem(v)) throw Error(option + ": " + *p);
  return values;
}

}  // namespace

std::optional<std::string> origin_problem(const std::string& value) {
  if (value == "*" || value == "null") return std::nullopt;
  // No path, query or user info: a browser's Origin never has them, so such a value never matches.
  static const std::regex origin(R"([A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s]+)");
  if (std::regex_match(value, origin)) return std::nullopt;
  return fmt::format("'{}' is not an origin: give scheme://host[:port] with no path and no trailing '/' (what a "
                     "browser sends as Origin, e.g. http://localhost:3000), 'null', or '*' for every origin",
                     value);
}

std::optional<std::string> method_problem(const std::string& value) {
  if (value == "*" || is_token(value)) return std::nullopt;
  return fmt::format("'{}' is not an HTTP method: give names such as GET POST, or '*' for every method", value);
}

std::optional<std::string> header_problem(const std::string& value) {
  if (value == "*" || is_token(value)) return std::nullopt;
  return fmt::format("'{}' is not a header name: give names such as Authorization Content-Type, or '*' for every "
                     "header",
                     value);
}

CorsPolicy::CorsPolicy(const CorsOptions& options) : credentials_(options.allow_credentials), max_age_s_(options.max_age_s) {
  if (options.max_age_s < 0) throw Error(fmt::format("CORS max age must be >= 0 seconds, got {}", options.max_age_s));
  for (const auto& o : checked(options.allowed_origins, "--allowed-origins", origin_problem)) {
    if (o == "*") any_origin_ = true;
    // Browsers serialize an origin's scheme and host in lowercase.
    else origins_.push_back(lower(o));
  }
  for (const auto& m : checked(options.allowed_methods, "--allowed-methods", method_problem)) {
    if (m == "*") any_method_ = true;
    else if (!contains(methods_, upper(m))) methods_.push_back(upper(m));
  }
  if (any_method_) methods_ = kAllMethods;
  std::vector<std::string> headers = kSafelistedHeaders;
  for (const auto& h : checked(options.allowed_headers, "--allowed-headers", header_problem)) {
    if (h == "*") any_header_ = true;
    else if (std::none_of(headers.begin(), headers.end(), [&](const auto& k) { return lower(k) == lower(h); }))
      headers.push_back(h);
  }
  std::sort(headers.begin(), headers.end());
  headers_ = headers;
}

bool CorsPolicy::origin_allowed(const std::string& origin) const { return any_origin_ || contains(origins_, origin); }

HeaderList CorsPolicy::response_headers(const std::string& origin) const {
  if (!origin_allowed(origin)) return {};
  HeaderList h;
  // With credentials a browser refuses `*`: the origin is named, and caches told it varies.
  if (any_origin_ && !credentials_) {
    h.emplace_back("Access-Control-Allow-Origin", "*");
  } else {
    h.emplace_back("Access-Control-Allow-Origin", origin);
    h.emplace_back("Vary", "Origin");
  }
  if (credentials_) h.emplace_back("Access-Control-Allow-Credentials", "true");
  return h;
}

PreflightAnswer CorsPolicy::preflight(const std::string& origin, const std::string& request_method,
                                      const std::optional<std::string>& request_headers) const {
  // A page not allowed learns nothing of the policy.
  if (!origin_allowed(origin)) return {400, "Disallowed CORS origin", {}};
  std::vector<std::string> failures;
  if (!contains(methods_, request_method)) failures.push_back("method");
  HeaderList h = response_headers(origin);
  h.emplace_back("Access-Control-Allow-Methods", join(methods_));
  if (any_header_) {
    // Every header is allowed: the requested ones are named back (`*` is not honoured with credentials).
    if (request_headers) h.emplace_back("Access-Control-Allow-Headers", *request_headers);
  } else {
    h.emplace_back("Access-Control-Allow-Headers", join(headers_));
    if (request_headers) {
      const std::string& list = *request_headers;
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const std::string name = lower(trim(list.substr(start, comma - start)));
        if (std::none_of(headers_.begin(), headers_.end(), [&](const auto& k) { return lower(k) == name; })) {
          failures.push_back("headers");
          break;
        }
        start = comma + 1;
      }
    }
  }
  h.emplace_back("Access-Control-Max-Age", std::to_string(max_age_s_));
  if (failures.empty()) return {200, "OK", h};
  return {400, "Disallowed CORS " + join(failures), h};
}

}  // namespace lg::server
