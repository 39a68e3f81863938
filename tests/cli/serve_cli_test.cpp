// `lg serve` as an operator runs it (issue 14): SIGTERM drains (/health and new requests answered
// 503), lets the running stream finish and exits 0, logging one line per finished request; with
// --shutdown-timeout a stream that would run long is cut (finish_reason "abort", the stream
// still well-formed) and the server still exits 0; -q turns the request log off.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "cli_run.h"
#include "common/raw_http.h"

namespace lg::cli_test {
namespace {

using clock_type = std::chrono::steady_clock;

/// A free TCP port on 127.0.0.1 (bound and let go: another process could take it in between,
/// which the tests would then report as a failure to start).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// `lg serve` in a child process, its stderr in a file; killed at the end if still running.
struct ServeProcess {
  pid_t pid = -1;
  int port = 0;
  std::string log_path;

  /// sigint_ignored: start it as a shell starts a background job (`lg serve ... &` in a script),
  /// with SIGINT ignored, and with OpenBLAS's thread pool (threads made before main()).
  explicit ServeProcess(const std::vector<std::string>& extra, bool sigint_ignored = false) {
    port = free_port();
    log_path = (std::filesystem::temp_directory_path() / ("lg_serve_cli_" + std::to_string(::getpid()) + "_" +
                                                          std::to_string(port) + ".log"))
                   .string();
    std::vector<std::string> args = {LG_BINARY, "serve", "--model", kSource + "/models/qwen3-pycode-22m", "--port",
                                     std::to_string(port)};
    args.insert(args.end(), extra.begin(), extra.end());
    pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, STDERR_FILENO);
      ::dup2(fd, STDOUT_FILENO);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::setenv("OPENBLAS_NUM_THREADS", sigint_ignored ? "2" : "1", 1);
      if (sigint_ignored) ::signal(SIGINT, SIG_IGN);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~ServeProcess() {
    if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    std::filesystem::remove(log_path);
  }
  /// True once it answers /health (the model is loaded).
  bool wait_ready(std::chrono::seconds limit = std::chrono::seconds(60)) const {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      const int fd = test::tcp_connect(port);
      if (fd >= 0) {
        test::send_all(fd, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        const std::string r = test::read_until(fd, "\"ok\"", std::chrono::seconds(5));
        ::close(fd);
        if (r.find("\"ok\"") != std::string::npos) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  /// The exit status once it ended within `limit`, else -1 (still running).
  int wait_exit(std::chrono::seconds limit) {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  std::string log() const { return read_text(log_path); }
};

std::string stream_body(int max_tokens) {
  return R"({"prompt": "def f():", "temperature": 0, "ignore_eos": true, "stream": true, )"
         R"("stream_options": {"include_usage": true}, "max_tokens": )" +
         std::to_string(max_tokens) + "}";
}

/// One request on a new keep-alive connection; the answer as read (up to 5 s), "" if it could
/// not connect.
std::string ask(int port, const std::string& request, const std::string& until) {
  const int fd = test::tcp_connect(port);
  if (fd < 0) return "";
  test::send_all(fd, request);
  std::string got = test::read_until(fd, until, std::chrono::seconds(5));
  ::close(fd);
  return got;
}

// While it drains, a load balancer's health check is answered 503 "draining" (it used to be a
// refused connection, which reads as a crash), and so is a new completion; both answers close
// their connection. 400 tokens keep the stream running on the cpu lane while the test asks.
TEST(ServeCli, SigtermLetsTheRunningStreamFinishThenExitsZero) {
  ServeProcess serve({"--max-seq", "512"});
  ASSERT_TRUE(serve.wait_ready()) << serve.log();
  const int fd = test::send_post(serve.port, "/v1/completions", stream_body(400));
  ASSERT_GE(fd, 0);
  std::string got = test::read_until(fd, "data: ", std::chrono::seconds(30));
  ASSERT_NE(got.find("data: "), std::string::npos) << got;
  ASSERT_EQ(::kill(serve.pid, SIGTERM), 0);
  // The watcher thread sees the signal within milliseconds; /health says 200 until then.
  const std::string health_request = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string health;
  for (int i = 0; i < 100 && health.find(" 503 ") == std::string::npos; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    health = ask(serve.port, health_request, "}");
  }
  EXPECT_NE(health.find("HTTP/1.1 503 "), std::string::npos) << health;
  EXPECT_NE(health.find(R"("status":"draining")"), std::string::npos) << health;
  EXPECT_NE(health.find(R"("message":"the server is shutting down")"), std::string::npos) << health;
  EXPECT_NE(health.find("Connection: close\r\n"), std::string::npos) << health;
  EXPECT_EQ(health.find("Keep-Alive"), std::string::npos) << health;
  const std::string post = ask(serve.port, test::post_text("/v1/completions", R"({"prompt": "def f():", "max_tokens": 2})"),
                               "}}");
  EXPECT_NE(post.find("HTTP/1.1 503 "), std::string::npos) << post;
  EXPECT_NE(post.find("the server is shutting down"), std::string::npos) << post;
  EXPECT_NE(post.find("Connection: close\r\n"), std::string::npos) << post;
  got += test::read_until(fd, "data: [DONE]", std::chrono::seconds(60));
  ::close(fd);
  EXPECT_NE(got.find("\"completion_tokens\":400"), std::string::npos) << got.substr(got.size() > 400 ? got.size() - 400 : 0);
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(serve.wait_exit(std::chrono::seconds(30)), 0) << serve.log();
  // Stopped: the listening socket is closed.
  EXPECT_LT(test::tcp_connect(serve.port), 0);
  const std::string log = serve.log();
  EXPECT_NE(log.find("lg: SIGTERM: no new requests; waiting up to 30 s for the 1 in flight, running or queued"), std::string::npos) << log;
  EXPECT_NE(log.find("prompt_tokens=3 completion_tokens=400 finish_reason=length ttft_s="), std::string::npos) << log;
  EXPECT_NE(log.find("lg: stopped"), std::string::npos) << log;
}

// 2,000 tokens take the cpu lane well over 5 s; the timeout of 0.5 s cuts a stream and a
// non-streamed request. Both say finish_reason "abort", as vLLM does for a request the server
// aborts ("length" would say max_tokens was reached); the stream still ends with its finish chunk,
// usage and [DONE]; the log (off with -q) stays quiet.
TEST(ServeCli, ShutdownTimeoutCutsALongStreamAndQuietLogsNoRequests) {
  ServeProcess serve({"--max-seq", "2048", "--shutdown-timeout", "0.5", "-q"});
  ASSERT_TRUE(serve.wait_ready()) << serve.log();
  const std::string whole_body = R"({"prompt": "def f():", "temperature": 0, "ignore_eos": true, "max_tokens": 2000})";
  const int whole = test::send_post(serve.port, "/v1/completions", whole_body);
  ASSERT_GE(whole, 0);
  const int fd = test::send_post(serve.port, "/v1/completions", stream_body(2000));
  ASSERT_GE(fd, 0);
  std::string got = test::read_until(fd, "data: ", std::chrono::seconds(30));
  const auto t0 = clock_type::now();
  ASSERT_EQ(::kill(serve.pid, SIGINT), 0);
  got += test::read_until(fd, "data: [DONE]", std::chrono::seconds(60));
  ::close(fd);
  const std::string answer = test::read_until(whole, "\"total_tokens\"", std::chrono::seconds(60));
  ::close(whole);
  EXPECT_EQ(serve.wait_exit(std::chrono::seconds(30)), 0) << serve.log();
  const double took = std::chrono::duration<double>(clock_type::now() - t0).count();
  EXPECT_LT(took, 5.0) << "the drain was not cut at its timeout";
  EXPECT_NE(got.find("\"finish_reason\":\"abort\""), std::string::npos) << got.substr(got.size() > 600 ? got.size() - 600 : 0);
  EXPECT_EQ(got.find("\"finish_reason\":\"length\""), std::string::npos);
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(got.find("\"completion_tokens\":2000"), std::string::npos) << "the stream ran to its end";
  EXPECT_NE(answer.find("HTTP/1.1 200 "), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"finish_reason\":\"abort\""), std::string::npos) << answer;
  EXPECT_EQ(answer.find("\"completion_tokens\":2000"), std::string::npos) << answer;
  const std::string log = serve.log();
  EXPECT_NE(log.find("lg: SIGINT"), std::string::npos) << log;
  EXPECT_EQ(log.find("lg: request "), std::string::npos) << log;
}

// A script's `lg serve ... &` inherits SIGINT ignored, and OpenBLAS's threads exist before main()
// with no signal blocked: `kill -INT` must still drain and stop it (a signal mask + sigwait() lost
// it to such a thread, and the GPU load run of bench/RESULTS.md hung until its call's limit).
TEST(ServeCli, SigintStopsAServerStartedAsABackgroundJob) {
  ServeProcess serve({"-q"}, /*sigint_ignored=*/true);
  ASSERT_TRUE(serve.wait_ready()) << serve.log();
  ASSERT_EQ(::kill(serve.pid, SIGINT), 0);
  EXPECT_EQ(serve.wait_exit(std::chrono::seconds(30)), 0) << serve.log();
  EXPECT_NE(serve.log().find("lg: SIGINT: no new requests"), std::string::npos) << serve.log();
}

// Clients still sending a request (headers a line at a time, a chunked body, a Content-Length body
// not yet whole) when SIGTERM comes: each read waited up to 30 s for its next byte, so a client
// that kept trickling held the exit (and "lg: stopped" was printed long before it). The server
// now exits within a second or two whatever they send, and a request answered before still is.
TEST(ServeCli, SigtermExitsWhileClientsAreStillSendingTheirRequests) {
  ServeProcess serve({"-q", "--shutdown-timeout", "1"});
  ASSERT_TRUE(serve.wait_ready()) << serve.log();
  const std::vector<std::pair<std::string, std::string>> trickles = {
      {"GET /health HTTP/1.1\r\nHost: x\r\n", "X-Slow: 1\r\n"},
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: "
       "chunked\r\n\r\n5\r\n{\"pro\r\n",
       "1\r\n \r\n"},
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"pro",
       " "}};
  std::vector<int> fds;
  for (const auto& [head, more] : trickles) {
    fds.push_back(test::tcp_connect(serve.port));
    ASSERT_GE(fds.back(), 0);
    ASSERT_TRUE(test::send_all(fds.back(), head));
  }
  const std::string ok = ask(serve.port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", "\"ok\"");
  EXPECT_NE(ok.find("\"ok\""), std::string::npos) << ok;
  std::atomic<bool> stop{false};
  std::thread trickler([&] {  // a byte or a line on each connection every 100 ms, until the test ends
    while (!stop) {
      for (size_t k = 0; k < fds.size(); ++k) test::send_all(fds[k], trickles[k].second);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = clock_type::now();
  ASSERT_EQ(::kill(serve.pid, SIGTERM), 0);
  const int status = serve.wait_exit(std::chrono::seconds(15));
  const double took = std::chrono::duration<double>(clock_type::now() - t0).count();
  stop = true;
  trickler.join();
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(status, 0) << "still running " << took << " s after SIGTERM: " << serve.log();
  EXPECT_LT(took, 5.0);
}

// A port in use is found before the model loads (a new user waited for a model to load to learn
// it): the error names the address, and the model is never loaded (the "serving" line follows
// the load).
// The CORS options reach the server: origins given as vLLM's JSON list are each allowed (named
// back, with credentials), another origin gets no CORS header.
TEST(ServeCli, AllowedOriginsAsAJsonListReachTheServer) {
  ServeProcess serve({"-q", "--allowed-origins", R"(["http://a.test", "http://b.test"])", "--allow-credentials"});
  ASSERT_TRUE(serve.wait_ready()) << serve.log();
  const auto health = [&](const std::string& origin) {
    return ask(serve.port, "GET /health HTTP/1.1\r\nHost: x\r\nOrigin: " + origin + "\r\n\r\n", "\"ok\"");
  };
  for (const std::string origin : {"http://a.test", "http://b.test"}) {
    const std::string got = health(origin);
    EXPECT_EQ(test::response_header(got, "Access-Control-Allow-Origin"), origin) << got;
    EXPECT_EQ(test::response_header(got, "Access-Control-Allow-Credentials"), "true") << got;
  }
  const std::string other = health("http://c.test");
  EXPECT_NE(other.find("\"ok\""), std::string::npos) << other;
  EXPECT_EQ(test::response_header(other, "Access-Control-Allow-Origin"), std::nullopt) << other;
}

// The address it listens on is a URL to paste into a client: an IPv6 host goes in brackets
// (http://[::1]:8000); "http://::1:8000" is not a URL any client reads.
TEST(ServeCli, ListeningLineIsAUrlAlsoForAnIpv6Host) {
  ServeProcess serve({"-q", "--host", "::1"});
  const auto deadline = clock_type::now() + std::chrono::seconds(60);
  std::string log;
  while (clock_type::now() < deadline && serve.wait_exit(std::chrono::seconds(0)) == -1) {
    log = serve.log();
    if (log.find("lg: listening on") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  log = serve.log();
  if (log.find("cannot listen on") != std::string::npos) GTEST_SKIP() << "no IPv6 loopback here: " << log;
  EXPECT_NE(log.find("lg: listening on http://[::1]:" + std::to_string(serve.port) + " "), std::string::npos) << log;
}

TEST(ServeCli, PortInUseIsRefusedBeforeTheModelLoads) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  const CliRun r = run_lg("serve --model " + kSource + "/models/qwen3-pycode-22m --host 127.0.0.1 --port " +
                          std::to_string(port));
  ::close(fd);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("cannot listen on 127.0.0.1:" + std::to_string(port) + " (the port is in use)"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("lg: serving"), std::string::npos) << r.out;
  // The other causes are told apart (a new user's pass: one message named both for each): an
  // address no interface here holds (TEST-NET-1, RFC 5737), and a host that does not resolve.
  const CliRun foreign = run_lg("serve --model " + kSource + "/models/qwen3-pycode-22m --host 192.0.2.1 --port 8000");
  EXPECT_NE(foreign.out.find("cannot listen on 192.0.2.1:8000 (the host is not an address of this machine)"),
            std::string::npos)
      << foreign.out;
  const CliRun bad = run_lg("serve --model " + kSource + "/models/qwen3-pycode-22m --host 999.1.1.1 --port 8000");
  EXPECT_NE(bad.out.find("cannot listen on 999.1.1.1:8000 (the host does not resolve: "), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace lg::cli_test
