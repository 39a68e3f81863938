// The one error type of chat-template rendering, with the kind the server maps to an HTTP status.
#pragma once

#include <string>

#include "support/error.h"

namespace lg::chat {

/// Why a chat prompt could not be rendered; what() says it for a user.
class ChatTemplateError : public Error {
 public:
  enum class Kind {
    missing,      ///< the model has no chat template
    broken,       ///< the model's template cannot be used: malformed tokenizer_config.json field, or
                  ///< the template does not compile (file, line and reason in the message)
    failed,       ///< the template failed on this input: raise_exception(msg), an undefined
                  ///< variable, a TypeError, ...
    too_large,    ///< the rendered text passed the size bound, or the worker ran out of memory
    timeout,      ///< the render did not finish within its time bound (the worker was killed)
    unavailable,  ///< no renderer: python3 missing, jinja2 missing or too old, a worker crashed
  };
  ChatTemplateError(Kind kind, const std::string& message) : Error(message), kind_(kind) {}
  Kind kind() const { return kind_; }
  /// True when the request's input is at fault (missing template, failed, too_large): an HTTP
  /// 400, as vLLM answers; the others are the server's (500).
  bool is_client_error() const { return kind_ == Kind::missing || kind_ == Kind::failed || kind_ == Kind::too_large; }

 private:
  Kind kind_;
};

}  // namespace lg::chat
