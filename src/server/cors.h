// Cross-origin resource sharing (CORS) for lg serve: which web pages may call the server from a
// browser. The behaviour is vLLM's (FastAPI/Starlette CORSMiddleware, same defaults: every origin,
// method and header, no credentials), so a page written against vLLM works here. Pure logic over
// header values, no HTTP: server.cpp applies it to every request and answer.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lg::server {

/// lg serve's --allowed-origins, --allowed-methods, --allowed-headers and --allow-credentials.
struct CorsOptions {
  std::vector<std::string> allowed_origins{"*"};  ///< "*", or origins as browsers send them; none: no page
  std::vector<std::string> allowed_methods{"*"};  ///< "*", or method names
  std::vector<std::string> allowed_headers{"*"};  ///< "*", or request header names
  /// Answers carry `Access-Control-Allow-Credentials: true`, so a page may send cookies or HTTP auth.
  bool allow_credentials = false;
  int max_age_s = 600;  ///< how long a browser may cache a preflight's answer (Starlette's default)
};

/// Why `value` is not a valid --allowed-origins value, or nullopt. An origin is what a browser
/// sends as `Origin`: scheme://host[:port] without a path (a trailing '/' never matches), or
/// "null" (file:// pages); "*" allows every origin.
std::optional<std::string> origin_problem(const std::string& value);
/// Why `value` is not a valid --allowed-methods value ("*" or an HTTP method token), or nullopt.
std::optional<std::string> method_problem(const std::string& value);
/// Why `value` is not a valid --allowed-headers value ("*" or a header name), or nullopt.
std::optional<std::string> header_problem(const std::string& value);

using HeaderList = std::vector<std::pair<std::string, std::string>>;

/// The answer to a preflight (an OPTIONS request with `Origin` and `Access-Control-Request-Method`).
struct PreflightAnswer {
  int status;         ///< 200, or 400 when the origin, method or headers are not allowed
  std::string body;   ///< "OK", or Starlette's "Disallowed CORS origin, method" (text/plain)
  HeaderList headers;
};

class CorsPolicy {
 public:
  /// Checks and normalizes `options` (origins lowercased as browsers send them, methods
  /// uppercased; header names compare case-insensitively). Throws lg::Error naming the option
  /// (e.g. "--allowed-origins: ...") for an invalid value.
  explicit CorsPolicy(const CorsOptions& options);

  /// Whether a request is a CORS preflight, which the policy answers on every path.
  static bool is_preflight(const std::string& method, bool has_origin, bool has_request_method) {
    return method == "OPTIONS" && has_origin && has_request_method;
  }
  bool origin_allowed(const std::string& origin) const;
  /// The headers to add to the answer of a request (not a preflight) that carried `Origin:
  /// origin`: none when the origin is not allowed. The origin is echoed, with `Vary: Origin`,
  /// unless every origin is allowed without credentials (then `*`, the same for every page).
  HeaderList response_headers(const std::string& origin) const;
  /// The answer to a preflight; `request_headers` is its `Access-Control-Request-Headers`, if any.
  PreflightAnswer preflight(const std::string& origin, const std::string& request_method,
                            const std::optional<std::string>& request_headers) const;

 private:
  bool any_origin_ = false, any_method_ = false, any_header_ = false;
  std::vector<std::string> origins_, methods_, headers_;  // headers_: sorted, the safelisted ones too
  bool credentials_ = false;
  int max_age_s_ = 600;
};

}  // namespace lg::server
