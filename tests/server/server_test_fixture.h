// The fixture of lg serve's end-to-end tests (server_test.cpp: what it generates;
// server_http_test.cpp: what it refuses and survives): the 22M model served on the cpu lane with a
// 256-token context, started once for the suite, its request helpers, and the transformers golden.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "lanes/factory.h"
#include "model/model_dir.h"
#include "runtime/generate.h"
#include "served_model.h"
#include "server/engine.h"

namespace lg::test {

inline constexpr int64_t kContext = 256;

struct Golden {
  std::string prompt;
  std::vector<int32_t> prompt_ids, greedy_ids;
};

/// The runtime's generation after `prompt` on a cpu lane of the served 22M model at the suite's
/// context (one lane for the test binary): what a request to the server must answer.
inline lg::runtime::Generation runtime_generation(const std::vector<int32_t>& prompt,
                                                  const lg::runtime::GenerateOptions& options) {
  static const auto dir = std::make_unique<lg::model::ModelDir>(
      lg::model::ModelDir::open(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m"));
  static const std::unique_ptr<lg::Lane> lane = [] {
    lg::LaneOptions lo;
    lo.max_seq = kContext;
    return lg::make_lane("cpu", *dir, lo);
  }();
  return lg::runtime::generate(*lane, prompt, options);
}

inline Golden first_golden() {
  std::ifstream f(std::string(LG_SHARED_DIR) + "/fixtures/qwen3-pycode-22m-golden.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  const nlohmann::json& c = j.at("cases").at(0);
  return {c.at("prompt").get<std::string>(), c.at("prompt_ids").get<std::vector<int32_t>>(),
          c.at("fp32_cpu_greedy_ids").get<std::vector<int32_t>>()};
}

// One SSE stream split into its `data:` payloads.
inline std::vector<std::string> sse_events(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event at byte " << pos;
    if (end == std::string::npos) break;
    const std::string ev = body.substr(pos, end - pos);
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    out.push_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

class ServerTest : public lg::test::ServedModel {
 protected:
  using json = nlohmann::json;

  static void SetUpTestSuite() {
    lg::server::EngineOptions eo;
    eo.max_seq = kContext;
    serve(eo);
  }

  static httplib::Result post(const std::string& path, const std::string& body, int port = port_) {
    return client(port).Post(path.c_str(), body, "application/json");
  }
  static json post_ok(const std::string& path, const json& body, int port = port_) {
    auto r = post(path, body.dump(), port);
    EXPECT_TRUE(r) << "no response";
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }
  // The concatenated text of a stream and its last finish_reason; checks the SSE framing.
  static std::pair<std::string, std::string> post_stream(const std::string& path, json body, json* usage = nullptr,
                                                         int port = port_) {
    body["stream"] = true;
    auto r = post(path, body.dump(), port);
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
    const auto events = sse_events(r->body);
    EXPECT_GE(events.size(), 3u);
    if (events.empty()) return {};
    EXPECT_EQ(events.back(), "[DONE]");
    std::string text, finish;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      const json ev = json::parse(events[i]);
      if (ev.contains("usage") && ev["choices"].empty()) {
        if (usage) *usage = ev["usage"];
        continue;
      }
      EXPECT_TRUE(finish.empty()) << "a chunk after the finish_reason: " << events[i];
      const json& ch = ev.at("choices").at(0);
      if (path == "/v1/chat/completions") {
        EXPECT_EQ(ev["object"], "chat.completion.chunk");
        text += ch["delta"].value("content", "");
      } else {
        EXPECT_EQ(ev["object"], "text_completion");
        text += ch.at("text").get<std::string>();
      }
      if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    }
    return {text, finish};
  }
  static void expect_400(const std::string& path, const std::string& body, const std::string& param,
                         const std::string& in_message = "") {
    auto r = post(path, body);
    ASSERT_TRUE(r) << body;
    EXPECT_EQ(r->status, 400) << body << " -> " << r->body;
    json j;
    ASSERT_NO_THROW(j = json::parse(r->body)) << r->body;
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    if (param.empty()) {
      EXPECT_TRUE(j["error"]["param"].is_null()) << r->body;
    } else {
      EXPECT_EQ(j["error"]["param"], param) << body;
      EXPECT_NE(j["error"]["message"].get<std::string>().find(param), std::string::npos) << r->body;
    }
    if (!in_message.empty()) {
      EXPECT_NE(j["error"]["message"].get<std::string>().find(in_message), std::string::npos) << r->body;
    }
  }

};

}  // namespace lg::test
