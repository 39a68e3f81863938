// A test suite's one `lg serve` of the 22M model on the cpu lane: the engine and an HTTP server on
// a free port, started once per suite (SetUpTestSuite) and shared by its tests.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <string>

#include "server/engine.h"
#include "server/server.h"

namespace lg::test {

/// Base of a suite that serves qwen3-pycode-22m; a derived suite's SetUpTestSuite calls serve().
class ServedModel : public ::testing::Test {
 protected:
  /// Starts the engine with `eo` and the server with `so` (127.0.0.1 at a free port by default).
  static void serve(const lg::server::EngineOptions& eo, const lg::server::ServerOptions& so = {"127.0.0.1", 0}) {
    engine_ = new lg::server::Engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", eo);
    server_ = new lg::server::Server(*engine_, so);
    port_ = server_->start();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete engine_;
    server_ = nullptr;
    engine_ = nullptr;
  }
  /// A client whose read timeout bounds every request: a hang fails the test instead of stalling it.
  /// `port`: another server's (a test's own) instead of the suite's.
  static httplib::Client client(int port = port_) {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(5, 0);
    c.set_read_timeout(120, 0);
    return c;
  }

  static inline lg::server::Engine* engine_ = nullptr;
  static inline lg::server::Server* server_ = nullptr;
  static inline int port_ = 0;
};

}  // namespace lg::test
