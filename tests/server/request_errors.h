// What a request parser threw, for the request tests: its RequestError's param and message.
#pragma once

#include <functional>
#include <string>

#include "server/request.h"

namespace lg::server::test {

/// The RequestError `f` throws (param and message "<no error>" when it throws none).
inline RequestError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const RequestError& e) {
    return e;
  }
  return RequestError("<no error>", "<no error>");
}

inline std::string param_of(const std::function<void()>& f) { return error_of(f).param(); }
inline std::string message_of(const std::function<void()>& f) { return error_of(f).what(); }

}  // namespace lg::server::test
