// lg serve under load (issue 14), in-process on an ephemeral 127.0.0.1 port with the cpu lane on
// the repo's 22M model: 48 concurrent greedy requests get exactly their solo text for a fraction
// of the cost of one by one; bad requests and clients that hang up at the same moment leave the
// good answers exact and the server up; /health, /v1/models, /metrics and a 400 answer within
// 50 ms while 32 requests generate and hundreds of connections idle; the KV blocks come back
// (read from /metrics); a full waiting queue is a 503 with Retry-After; slow clients are cut at
// their deadline and shed when the threads run out.
#include <gtest/gtest.h>
#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <latch>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/raw_http.h"
#include "served_model.h"
#include "server/server.h"

namespace {

using nlohmann::json;
using namespace lg::server;
using lg::test::metric_value;
using clock_type = std::chrono::steady_clock;

double secs(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

/// Polls `pred` every 5 ms until it holds or `limit` passes; returns its last answer.
template <class Pred>
bool wait_for(Pred pred, std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = clock_type::now() + limit;
  while (!pred() && clock_type::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return pred();
}

/// An engine of the 22M model on the cpu lane that runs one sequence a step and queues at most
/// two: what the waiting-queue tests need.
EngineOptions one_at_a_time(int64_t max_seq) {
  EngineOptions eo;
  eo.max_seq = max_seq;
  eo.lane_options.max_batch = 1;
  eo.max_waiting = 2;
  return eo;
}

/// The 22M model served one sequence at a time (contexts of `max_seq`) with a request deadline
/// of 1 s (ServerOptions::request_timeout): what the slow-client tests watch being cut.
struct OneSecondDeadlineServer {
  Engine engine;
  Server server;
  int port;
  explicit OneSecondDeadlineServer(int64_t max_seq)
      : engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", one_at_a_time(max_seq)),
        server(engine, options()),
        port(server.start()) {}
  static ServerOptions options() {
    ServerOptions o{"127.0.0.1", 0};
    o.request_timeout = std::chrono::milliseconds(1000);
    return o;
  }
};

/// CPU seconds (user + system) of this process, all threads: the server's and the clients'.
double cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

std::vector<std::string> golden_prompts() {
  std::ifstream f(std::string(LG_SHARED_DIR) + "/fixtures/qwen3-pycode-22m-golden.json");
  const json j = json::parse(f);
  std::vector<std::string> out;
  for (const auto& c : j.at("cases")) out.push_back(c.at("prompt").get<std::string>());
  return out;
}

/// A request's answer: its text, finish_reason and completion tokens, streamed or not.
struct Answer {
  int status = 0;
  std::string text, finish;
  int64_t completion_tokens = -1;
  bool operator==(const Answer&) const = default;
};

std::ostream& operator<<(std::ostream& o, const Answer& a) {
  return o << a.status << " " << json(a.text).dump() << " " << a.finish << " " << a.completion_tokens;
}

class LoadTest : public lg::test::ServedModel {
 protected:
  static void SetUpTestSuite() {
    EngineOptions eo;
    eo.max_seq = 256;
    eo.lane_options.kv_tokens = 8192;  // every request of these tests at once, no preemption needed
    serve(eo);
  }

  static Answer ask(const json& body) {
    auto r = client().Post("/v1/completions", body.dump(), "application/json");
    Answer a;
    if (!r) return a;
    a.status = r->status;
    if (r->status != 200) return a;
    if (!body.value("stream", false)) {
      const json j = json::parse(r->body);
      a.text = j["choices"][0]["text"];
      a.finish = j["choices"][0]["finish_reason"];
      a.completion_tokens = j["usage"]["completion_tokens"];
      return a;
    }
    // SSE: text chunks, the finish chunk, the usage chunk, [DONE].
    size_t pos = 0;
    while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
      const size_t end = r->body.find("\n\n", pos);
      const std::string ev = r->body.substr(pos + 6, end - pos - 6);
      pos = end;
      if (ev == "[DONE]") break;
      const json j = json::parse(ev);
      if (j.contains("usage")) {
        a.completion_tokens = j["usage"]["completion_tokens"];
        continue;
      }
      a.text += j["choices"][0]["text"].get<std::string>();
      if (!j["choices"][0]["finish_reason"].is_null()) a.finish = j["choices"][0]["finish_reason"];
    }
    return a;
  }

  static std::string metrics() {
    auto r = client().Get("/metrics");
    return r && r->status == 200 ? r->body : std::string();
  }

  /// Waits until no request runs or waits (the hung-up ones are cancelled at the next step).
  static bool wait_idle(std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      const EngineStats s = engine_->stats();
      if (s.running == 0 && s.waiting == 0 && engine_->in_flight() == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  /// The KV blocks every request held are free again: read from /metrics, as an operator would.
  static void expect_blocks_returned() {
    ASSERT_TRUE(wait_idle());
    const std::string m = metrics();
    EXPECT_EQ(metric_value(m, "lg_kv_blocks_used"), 0.0) << m.substr(0, 600);
    EXPECT_EQ(metric_value(m, "lg_num_requests_running"), 0.0);
    EXPECT_EQ(metric_value(m, "lg_num_requests_waiting"), 0.0);
  }

};

// The bodies of the 48: the 8 golden prompts with 24-40 greedy tokens, every other one streamed.
std::vector<json> forty_eight() {
  const auto prompts = golden_prompts();
  std::vector<json> out;
  for (int k = 0; k < 48; ++k) {
    json b = {{"prompt", prompts[static_cast<size_t>(k) % prompts.size()]},
              {"max_tokens", 24 + (k % 5) * 4},
              {"temperature", 0},
              {"stream", k % 2 == 1}};
    if (b["stream"]) b["stream_options"] = {{"include_usage", true}};
    out.push_back(b);
  }
  return out;
}

// Continuous batching pays: the 48 requests sent at once cost at most 0.35x of sending them one
// by one. CPU time of the process (server and clients), not wall time, so that other tests on
// the 2-core CI machine do not decide it (as tests/cli/batch_cli_test.cpp); the wall times are
// printed beside it.
TEST_F(LoadTest, FortyEightConcurrentRequestsGetTheirSoloTextForAFractionOfTheCost) {
  const auto bodies = forty_eight();
  ask(bodies[0]);  // warm: the first request pays one-time costs
  // The ratio sits near 0.3 and the machine is shared with other tests: a timing is taken again
  // when the first misses, and the better of the two counts (each pair measured back to back).
  double best = 1e9;
  for (int attempt = 0; attempt < 2 && best > 0.35; ++attempt) {
    std::vector<Answer> alone(bodies.size()), together(bodies.size());
    const double c0 = cpu_seconds();
    const auto t0 = clock_type::now();
    for (size_t k = 0; k < bodies.size(); ++k) alone[k] = ask(bodies[k]);
    const double wall_alone = secs(clock_type::now() - t0), cpu_alone = cpu_seconds() - c0;

    std::latch go(static_cast<std::ptrdiff_t>(bodies.size()) + 1);
    std::vector<std::thread> threads;
    for (size_t k = 0; k < bodies.size(); ++k)
      threads.emplace_back([&, k] {
        go.arrive_and_wait();
        together[k] = ask(bodies[k]);
      });
    const double c1 = cpu_seconds();
    const auto t1 = clock_type::now();
    go.arrive_and_wait();
    for (auto& t : threads) t.join();
    const double wall_together = secs(clock_type::now() - t1), cpu_together = cpu_seconds() - c1;

    for (size_t k = 0; k < bodies.size(); ++k) {
      SCOPED_TRACE("request " + std::to_string(k) + ": " + bodies[k].dump());
      ASSERT_EQ(alone[k].status, 200);
      EXPECT_GT(alone[k].completion_tokens, 0);
      EXPECT_EQ(together[k], alone[k]);
    }
    std::cout << "[ serve load ] 48 requests one by one: " << wall_alone << " s wall, " << cpu_alone
              << " CPU s; together: " << wall_together << " s wall, " << cpu_together << " CPU s (wall "
              << wall_together / wall_alone << "x, CPU " << cpu_together / cpu_alone << "x)\n";
    RecordProperty("wall_ratio", std::to_string(wall_together / wall_alone));
    RecordProperty("cpu_ratio", std::to_string(cpu_together / cpu_alone));
    best = std::min(best, cpu_together / cpu_alone);
  }
  EXPECT_LE(best, 0.35);
  expect_blocks_returned();
}

// At one moment: good requests, bad ones (malformed JSON, wrong types, 5,000 nested brackets),
// streaming clients that hang up after their first bytes and non-streaming ones that hang up
// at once. The good ones get exactly their solo answers, the bad ones a 400, the hung-up ones
// are aborted, the server stays up and every KV block comes back.
TEST_F(LoadTest, BadRequestsAndHangUpsLeaveTheGoodAnswersExact) {
  const auto prompts = golden_prompts();
  std::vector<json> good;
  for (size_t k = 0; k < 8; ++k)
    good.push_back({{"prompt", prompts[k]}, {"max_tokens", 24}, {"temperature", 0}, {"stream", k % 2 == 1}});
  std::vector<Answer> solo;
  for (const auto& b : good) solo.push_back(ask(b));
  const std::string deep = std::string(5000, '[') + "1" + std::string(5000, ']');
  const std::vector<std::string> bad = {
      R"({"prompt": "def f(", "max_tokens": )",
      R"({"prompt": "x", "max_tokens": "8"})",
      R"({"prompt": 5})",
      R"({"prompt": "x", "stream": "yes"})",
      R"({"prompt": )" + deep + "}",
      std::string(5000, '['),
      R"({"prompt": "x", "stop": )" + deep + "}",
  };
  const double aborted_before = metric_value(metrics(), "lg_requests_finished_total{finished_reason=\"abort\"}").value();
  const json long_body = {{"prompt", "def f():"}, {"max_tokens", 200}, {"temperature", 0}, {"ignore_eos", true}};
  json long_stream = long_body;
  long_stream["stream"] = true;
  constexpr int kHangUps = 6;

  std::vector<Answer> got(good.size());
  std::vector<int> bad_status(bad.size());
  std::latch go(static_cast<std::ptrdiff_t>(good.size() + bad.size() + 2 * kHangUps));
  std::vector<std::thread> threads;
  for (size_t k = 0; k < good.size(); ++k)
    threads.emplace_back([&, k] {
      go.arrive_and_wait();
      got[k] = ask(good[k]);
    });
  for (size_t k = 0; k < bad.size(); ++k)
    threads.emplace_back([&, k] {
      go.arrive_and_wait();
      auto r = client().Post("/v1/completions", bad[k], "application/json");
      bad_status[k] = r ? r->status : -1;
    });
  for (int k = 0; k < kHangUps; ++k) {
    threads.emplace_back([&] {  // streams, reads its first event, hangs up
      go.arrive_and_wait();
      const int fd = lg::test::send_post(port_, "/v1/completions", long_stream.dump());
      lg::test::read_until(fd, "data: ", std::chrono::seconds(60));
      ::close(fd);
    });
    threads.emplace_back([&] {  // sends and hangs up before any answer
      go.arrive_and_wait();
      ::close(lg::test::send_post(port_, "/v1/completions", long_body.dump()));
    });
  }
  for (auto& t : threads) t.join();

  for (size_t k = 0; k < good.size(); ++k) EXPECT_EQ(got[k], solo[k]) << good[k].dump();
  for (size_t k = 0; k < bad.size(); ++k) EXPECT_EQ(bad_status[k], 400) << bad[k].substr(0, 80);
  EXPECT_EQ(client().Get("/health")->status, 200);
  expect_blocks_returned();
  const double aborted = metric_value(metrics(), "lg_requests_finished_total{finished_reason=\"abort\"}").value();
  EXPECT_EQ(aborted - aborted_before, 2 * kHangUps);
}

// The HTTP layer never waits on generation: while 32 requests generate, with 200 connections
// open and silent and 50 idle keep-alive connections, /health, /v1/models, /metrics and a 400
// each answer within 50 ms on a new connection. Then the 32 clients hang up and every KV block
// comes back.
TEST_F(LoadTest, QuickAnswersWithin50msWhile32RequestsGenerate) {
  const json body = {{"prompt", "def f():"}, {"max_tokens", 200}, {"temperature", 0}, {"ignore_eos", true},
                     {"stream", true}};
  std::vector<int> streams, idle;
  for (int k = 0; k < 32; ++k) streams.push_back(lg::test::send_post(port_, "/v1/completions", body.dump()));
  for (int k = 0; k < 200; ++k) idle.push_back(lg::test::tcp_connect(port_));
  for (int k = 0; k < 50; ++k) {  // served once, then left open (keep-alive)
    const int fd = lg::test::tcp_connect(port_);
    lg::test::send_all(fd, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    lg::test::read_until(fd, "\"ok\"}", std::chrono::seconds(10));
    idle.push_back(fd);
  }
  const auto deadline = clock_type::now() + std::chrono::seconds(60);
  while (engine_->stats().running < 32 && clock_type::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(engine_->stats().running, 32);

  double worst = 0;
  std::string worst_what;
  for (int round = 0; round < 5; ++round) {
    auto timed = [&](const std::string& what, const std::function<httplib::Result()>& call, int status) {
      const auto t = clock_type::now();
      auto r = call();
      const double s = secs(clock_type::now() - t);
      ASSERT_TRUE(r) << what;
      EXPECT_EQ(r->status, status) << what;
      if (s > worst) {
        worst = s;
        worst_what = what;
      }
      EXPECT_LT(s, 0.050) << what << " took " << s * 1000 << " ms while 32 requests generate";
    };
    timed("GET /health", [] { return client().Get("/health"); }, 200);
    timed("GET /v1/models", [] { return client().Get("/v1/models"); }, 200);
    timed("GET /metrics", [] { return client().Get("/metrics"); }, 200);
    timed("a 400", [] { return client().Post("/v1/completions", R"({"prompt": 5})", "application/json"); }, 400);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(engine_->stats().running, 32) << "the requests must still be generating";
  std::cout << "[ serve load ] slowest quick answer while 32 generate: " << worst * 1000 << " ms (" << worst_what
            << ")\n";
  RecordProperty("worst_quick_answer_ms", std::to_string(worst * 1000));
  for (int fd : streams) ::close(fd);
  for (int fd : idle) ::close(fd);
  expect_blocks_returned();
}

// A bounded waiting queue: with one sequence per step and room for two waiting requests, the
// fourth request (streamed or not) is a 503 with Retry-After, at once; the server stays up.
TEST(ServerQueueTest, FullQueueIs503WithRetryAfter) {
  Engine engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", one_at_a_time(256));
  Server server(engine, {"127.0.0.1", 0});
  const int port = server.start();
  const json body = {{"prompt", "def f():"}, {"max_tokens", 200}, {"temperature", 0}, {"ignore_eos", true}};
  std::vector<int> held;
  held.push_back(lg::test::send_post(port, "/v1/completions", body.dump()));
  ASSERT_TRUE(wait_for([&] { return engine.stats().running == 1; }));
  held.push_back(lg::test::send_post(port, "/v1/completions", body.dump()));
  held.push_back(lg::test::send_post(port, "/v1/completions", body.dump()));
  ASSERT_TRUE(wait_for([&] { return engine.stats().waiting == 2; }));

  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30, 0);
  for (bool stream : {false, true}) {
    json b = body;
    b["stream"] = stream;
    const auto t = clock_type::now();
    auto r = c.Post("/v1/completions", b.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503) << r->body;
    EXPECT_LT(secs(clock_type::now() - t), 1.0);
    EXPECT_EQ(r->get_header_value("Retry-After"), "1");
    const json j = json::parse(r->body);
    EXPECT_EQ(j["error"]["type"], "service_unavailable");
    EXPECT_NE(j["error"]["message"].get<std::string>().find("--max-waiting 2"), std::string::npos) << r->body;
  }
  // More choices than the batch (1) and the queue (2) hold together could never run: a 400
  // naming `n`, not a 503 a client would retry forever.
  json many = body;
  many["n"] = 4;
  auto r = c.Post("/v1/completions", many.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "n");
  EXPECT_NE(r->body.find("more choices than this server holds at once (1 running (--max-batch) and 2 waiting"),
            std::string::npos)
      << r->body;
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(metric_value(m->body, "lg_requests_rejected_total{reason=\"queue_full\"}"), 2.0);
  EXPECT_EQ(metric_value(m->body, "lg_num_requests_waiting"), 2.0);
  for (int fd : held) ::close(fd);
  // One snapshot of the worker's: no request left, and then no block held.
  ASSERT_TRUE(wait_for([&] {
    const EngineStats s = engine.stats();
    return engine.in_flight() == 0 && s.running == 0 && s.waiting == 0;
  }));
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

// Slow clients (a new-user pass): connections that send a request's head a byte at a time, or
// half of it and then nothing, each held an HTTP thread for 30 s a byte; as many of them as the
// pool has threads (1 running + 2 waiting + 256 spare here) and /health waited as long as they
// did. Now a connection that has to wait for a thread sheds the one reading longest, so /health
// answers at once; and a request not whole within ServerOptions::request_timeout is cut.
TEST(ServerSlowClientTest, StalledRequestHeadsAreShedForNewConnections) {
  Engine engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", one_at_a_time(256));
  Server server(engine, {"127.0.0.1", 0});
  const int port = server.start();
  std::vector<int> stalled;
  for (int k = 0; k < 300; ++k) {
    const int fd = lg::test::tcp_connect(port);
    ASSERT_GE(fd, 0) << "connection " << k;
    lg::test::send_all(fd, "GET /health HTTP/1.1\r\n");
    stalled.push_back(fd);
  }
  std::this_thread::sleep_for(RequestReadWatch::kShedMinAge + std::chrono::milliseconds(200));
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10, 0);
  for (int round = 0; round < 5; ++round) {
    const auto t = clock_type::now();
    auto h = c.Get("/health");
    ASSERT_TRUE(h) << "round " << round;
    EXPECT_EQ(h->status, 200);
    // The shed runs on the watch's thread (a scan of the process's sockets, then a shutdown):
    // milliseconds; 5 s is room for a loaded machine (ctest runs suites side by side), against
    // the 30 s read timeout it took.
    EXPECT_LT(secs(clock_type::now() - t), 5.0) << "round " << round;
    c.stop();  // a new connection each round: each must find a thread
  }
  auto r = c.Post("/v1/completions", R"({"prompt": "def f():", "max_tokens": 2})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  for (int fd : stalled) ::close(fd);
}

TEST(ServerSlowClientTest, ARequestNotWholeWithinTheTimeoutIsCut) {
  OneSecondDeadlineServer served(512);
  const int port = served.port;
  // A head trickled a byte every 100 ms: each byte well within the 30 s read timeout.
  const int fd = lg::test::tcp_connect(port);
  ASSERT_GE(fd, 0);
  const auto t0 = clock_type::now();
  lg::test::send_all(fd, "GET /health HTTP/1.1\r\nX-Slow: ");
  double cut_after = -1;
  while (secs(clock_type::now() - t0) < 15.0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    char b;
    const ssize_t n = ::recv(fd, &b, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || !lg::test::send_all(fd, "a")) {
      cut_after = secs(clock_type::now() - t0);
      break;
    }
  }
  ::close(fd);
  // Due at 1 s (the watch looks every 250 ms); never before it. Uncut, the trickle would go on
  // for ever (each byte within the 30 s read timeout): 10 s is room for a loaded machine.
  EXPECT_GT(cut_after, 0.0) << "not cut within 15 s";
  EXPECT_GE(cut_after, 0.9) << "cut before its deadline";
  EXPECT_LT(cut_after, 10.0) << "cut late";
  // A keep-alive client whose requests each come whole in time is never cut: its deadline starts
  // again at each answer (four requests over 1.4 s on one connection).
  httplib::Client c("127.0.0.1", port);
  c.set_keep_alive(true);
  for (int k = 0; k < 4; ++k) {
    auto h = c.Get("/health");
    ASSERT_TRUE(h) << "request " << k;
    EXPECT_EQ(h->status, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
  }
  // A POST body is within the deadline too: its head, then half its body, then nothing.
  const int post = lg::test::tcp_connect(port);
  ASSERT_GE(post, 0);
  const auto t1 = clock_type::now();
  lg::test::send_all(post, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           "Content-Length: 40\r\n\r\n{\"prompt\": \"def");
  const std::string got = lg::test::read_until(post, "\r\n\r\n", std::chrono::seconds(20));
  ::close(post);
  // Uncut, it waits for the 30 s read timeout.
  EXPECT_LT(secs(clock_type::now() - t1), 10.0) << "the half body was not cut";
  EXPECT_EQ(got.find("200 OK"), std::string::npos) << got;
  // An answer is never cut, however long it takes: a generation of 400 tokens, streamed and not,
  // each on a new connection, outlasts the 1 s deadline.
  for (bool stream : {false, true}) {
    httplib::Client g("127.0.0.1", port);
    g.set_read_timeout(60, 0);
    const json body = {{"prompt", "def f():"}, {"max_tokens", 400}, {"temperature", 0}, {"ignore_eos", true},
                       {"stream", stream}};
    const auto t = clock_type::now();
    auto r = g.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(r) << "stream " << stream;
    EXPECT_EQ(r->status, 200) << r->body.substr(0, 300);
    EXPECT_GT(secs(clock_type::now() - t), 1.5) << "the generation must outlast the deadline for this check";
    if (stream) {
      EXPECT_NE(r->body.find("data: [DONE]"), std::string::npos) << r->body.substr(r->body.size() > 300 ? r->body.size() - 300 : 0);
    } else {
      EXPECT_EQ(json::parse(r->body)["usage"]["completion_tokens"], 400) << r->body.substr(0, 300);
    }
  }
}

// A client that stops reading a large answer (a new-user pass: /detokenize answers of 6.5 MB to
// clients that never read held their threads 61 s each, httplib's 30 s write timeout being per
// write call, and a few hundred of them starved /health) is cut once its answer has not moved
// for ServerOptions::request_timeout; a client that reads gets the whole answer.
TEST(ServerSlowClientTest, AnAnswerItsClientStopsReadingIsCut) {
  OneSecondDeadlineServer served(256);
  const int port = served.port;
  // Token 89180 decodes to 114 characters: 57,000 of them make an answer of ~6.5 MB.
  const json body = {{"tokens", std::vector<int32_t>(57000, 89180)}};
  const std::string request = lg::test::post_text("/detokenize", body.dump());
  const auto answer = [&](bool reads) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;  // a small receive window: the server's send queue fills at once
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    lg::test::send_all(fd, request);
    if (!reads) std::this_thread::sleep_for(std::chrono::seconds(4));
    const std::string got = lg::test::read_until(fd, "never sent", std::chrono::seconds(60));  // to end-of-file
    ::close(fd);
    return got;
  };
  const std::string whole = answer(true);
  const auto r = lg::test::first_response(whole);
  ASSERT_EQ(r.status, 200) << whole.substr(0, 300);
  ASSERT_GT(r.body.size(), 6000000u);
  EXPECT_EQ(json::parse(r.body)["prompt"].get<std::string>().size() % 57000, 0u);
  // Stalled for 4 s, then read to the end: what was sent before the cut, then end-of-file.
  const std::string cut = answer(false);
  EXPECT_NE(cut.rfind("HTTP/1.1 200 ", 0), std::string::npos) << cut.substr(0, 300);
  // Shorter than the whole answer (the same request's): how much went out before the cut is the
  // kernel's send buffer, which autotuning may grow to megabytes on another host.
  EXPECT_LT(cut.size(), whole.size()) << "the stalled answer was not cut";
  // The server goes on serving.
  httplib::Client c("127.0.0.1", port);
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// A request's `n` choices are admitted together or not at all: with one running and room for two
// waiting, three choices are one 503 naming what they would make, and nothing of them runs, logs
// or counts as aborted (they did: the first two were queued, then cancelled, as "abort"); two
// choices still fit and answer once the running request's client has gone.
TEST(ServerQueueTest, ChoicesAreAdmittedAllOrNone) {
  Engine engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", one_at_a_time(256));
  Server server(engine, {"127.0.0.1", 0});
  const int port = server.start();
  // Running until its client hangs up below (240 tokens: far more than the checks take).
  json body = {{"prompt", "def f():"}, {"max_tokens", 240}, {"temperature", 0}, {"ignore_eos", true}};
  const int held = lg::test::send_post(port, "/v1/completions", body.dump());
  ASSERT_TRUE(wait_for([&] { return engine.stats().running == 1; }));
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  body["max_tokens"] = 4;
  body["n"] = 3;
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_NE(r->body.find("0 requests are waiting already, and this request's 3 choices ('n') would make 3 "
                         "(--max-waiting 2)"),
            std::string::npos)
      << r->body;
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(metric_value(m->body, "lg_requests_rejected_total{reason=\"queue_full\"}"), 1.0);
  EXPECT_EQ(metric_value(m->body, "lg_requests_finished_total{finished_reason=\"abort\"}").value_or(0.0), 0.0);
  EXPECT_EQ(engine.in_flight(), 1);
  ::close(held);
  ASSERT_TRUE(wait_for([&] { return engine.in_flight() == 0; }));
  body["n"] = 2;
  r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["choices"].size(), 2u);
}

// Clients that give up while their requests wait (a timeout, a closed tab) free their places in
// the queue at once, streamed or not: the queue held them until the running request ended (only
// its front was checked, and only when a slot was free; a stream's hang-up was seen only by a
// failed write, and a waiting stream writes nothing), so live requests got 503 queue_full.
TEST(ServerQueueTest, RequestsWhoseClientsLeaveWhileQueuedFreeTheirPlaces) {
  Engine engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", one_at_a_time(2048));
  Server server(engine, {"127.0.0.1", 0});
  const int port = server.start();
  const json body = {{"prompt", "def f():"}, {"max_tokens", 2000}, {"temperature", 0}, {"ignore_eos", true}};
  const int running = lg::test::send_post(port, "/v1/completions", body.dump());
  ASSERT_TRUE(wait_for([&] { return engine.stats().running == 1; }, std::chrono::seconds(30)));
  json streamed = body;
  streamed["stream"] = true;
  const int queued_plain = lg::test::send_post(port, "/v1/completions", body.dump());
  const int queued_stream = lg::test::send_post(port, "/v1/completions", streamed.dump());
  ASSERT_TRUE(wait_for([&] { return engine.stats().waiting == 2; }, std::chrono::seconds(30)));
  ::close(queued_plain);
  ::close(queued_stream);
  // 2,000 tokens of the running request take the cpu lane many seconds; the two leave long before.
  EXPECT_TRUE(wait_for([&] { return engine.stats().waiting == 0; }, std::chrono::seconds(3)))
      << engine.stats().waiting << " still waiting";
  EXPECT_EQ(engine.stats().running, 1);
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30, 0);
  json quick = body;
  quick["max_tokens"] = 1;
  quick["stream"] = true;
  std::thread after([&] {
    auto r = c.Post("/v1/completions", quick.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;  // admitted to the queue, answered once the slot frees
  });
  ASSERT_TRUE(wait_for([&] { return engine.stats().waiting == 1; }, std::chrono::seconds(10)));
  ::close(running);
  after.join();
  ASSERT_TRUE(wait_for(
      [&] {
        const EngineStats st = engine.stats();
        return engine.in_flight() == 0 && st.running == 0 && st.waiting == 0;
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

// A SIGTERM right after the port is bound (lg serve prints "listening on" before httplib's loop
// starts) ran the whole shutdown while httplib's stop() could do nothing (its loop was not running
// yet); run() then listened forever, answering 503, and only SIGKILL ended it. A shutdown before
// run() now makes run() return at once.
TEST(ServerShutdownTest, AShutdownBeforeTheListenLoopStartsEndsRun) {
  EngineOptions eo;
  eo.max_seq = 256;
  Engine engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", eo);
  Server server(engine, {"127.0.0.1", 0});
  server.bind();
  server.shutdown(std::chrono::milliseconds(0));
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    server.run();
    returned = true;
  });
  EXPECT_TRUE(wait_for([&] { return returned.load(); }, std::chrono::seconds(5))) << "run() listens after a shutdown";
  if (!returned) {  // let the test end: httplib's stop() works once its loop runs
    while (!returned) {
      server.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  runner.join();
}

// The prefix cache behind the server: the same ~1,500-token prompt sent again reaches its first
// token in under half the time (it prefills only its last block) with the same answer, and
// /metrics counts the hits. Wall time: the first run computes ~100x the positions of the second
// (2.05 s against 0.18 s when measured), so other load on the machine cannot decide it.
TEST(ServerPrefixCacheTest, RepeatedLongPromptReachesItsFirstTokenInUnderHalfTheTime) {
  EngineOptions eo;
  eo.max_seq = 2048;
  Engine engine(std::string(LG_SOURCE_DIR) + "/models/qwen3-pycode-22m", eo);
  Server server(engine, {"127.0.0.1", 0});
  const int port = server.start();
  std::string text;
  for (const auto& p : golden_prompts()) text += p + "    return None\n\n";
  std::vector<int32_t> ids;
  while (ids.size() < 1500) {
    const auto more = engine.tokenizer().encode(text);
    ids.insert(ids.end(), more.begin(), more.end());
  }
  ids.resize(1500);
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  const json body = {{"prompt", ids}, {"max_tokens", 4}, {"temperature", 0}, {"return_token_ids", true}};
  auto timed = [&] {
    const auto t = clock_type::now();
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    const double s = secs(clock_type::now() - t);
    EXPECT_TRUE(r && r->status == 200);
    return std::make_pair(s, r ? json::parse(r->body)["choices"][0]["token_ids"] : json());
  };
  const auto [first_s, first_ids] = timed();
  const auto [again_s, again_ids] = timed();
  EXPECT_EQ(again_ids, first_ids);
  std::cout << "[ serve prefix cache ] 1,500-token prompt: " << first_s << " s, again " << again_s << " s\n";
  EXPECT_LT(again_s, 0.5 * first_s);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(metric_value(m->body, "lg_prefix_cache_enabled"), 1.0);
  EXPECT_EQ(metric_value(m->body, "lg_prefix_cache_queries_total"), 3000.0);
  EXPECT_GE(metric_value(m->body, "lg_prefix_cache_hits_total").value_or(0), 1400.0) << m->body.substr(0, 2000);
  EXPECT_LE(metric_value(m->body, "lg_prompt_tokens_computed_total").value_or(1e9), 1600.0);
}

}  // namespace
