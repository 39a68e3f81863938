// JinjaRenderer's bounds and failures: each is an error for that render only, and the next render
// works. A template that loops forever is stopped at the time bound; a huge output at the size
// bound; a missing interpreter, one without jinja2, and a worker that dies are `unavailable`.
#include "chat/jinja_renderer.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

namespace lg::chat {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using Kind = ChatTemplateError::Kind;
using Clock = std::chrono::steady_clock;

Kind render_error_kind(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const ChatTemplateError& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no ChatTemplateError";
  return Kind::failed;
}

/// An executable shell script in a temp file, removed at the end.
struct Script {
  fs::path path;
  explicit Script(const std::string& body) {
    path = fs::temp_directory_path() / ("lg_fake_python_" + std::to_string(std::random_device{}()));
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(path, fs::perms::owner_all);
  }
  ~Script() { fs::remove(path); }
};

TEST(JinjaRenderer, RendersAndReportsItsVersion) {
  JinjaRenderer r;
  EXPECT_EQ(r.render("{{ a }}-{{ b | length }}", {{"a", "x"}, {"b", {1, 2, 3}}}), "x-3");
  EXPECT_EQ(r.render("{{ s }}", {{"s", "naïve 🚀 \n\t\"q\""}}), "naïve 🚀 \n\t\"q\"");
  const std::string v = r.engine_version();
  EXPECT_EQ(v.rfind("Jinja2 3.", 0), 0u) << v;
  EXPECT_NE(v.find("on Python 3."), std::string::npos) << v;
}

TEST(JinjaRenderer, ATemplateThatLoopsForeverIsStoppedAtTheTimeBound) {
  RendererOptions o;
  o.timeout = std::chrono::milliseconds(1000);
  JinjaRenderer r(o);
  EXPECT_EQ(r.render("warm", json::object()), "warm");  // the worker's start is not timed here
  const auto t0 = Clock::now();
  std::string msg;
  // 10^15 iterations (the sandbox caps one range at 100,000 items, not their nesting).
  EXPECT_EQ(render_error_kind(
                [&] {
                  r.render(
                      "{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100000) %}"
                      "{% endfor %}{% endfor %}{% endfor %}",
                      json::object());
                },
                &msg),
            Kind::timeout);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GE(s, 0.9);
  EXPECT_LT(s, 10.0) << "the bound is 1 s (the rest is room for a loaded machine)";
  EXPECT_NE(msg.find("within 1 s"), std::string::npos) << msg;
  // The killed worker is replaced: the next render works.
  EXPECT_EQ(r.render("{{ 1 + 1 }}", json::object()), "2");
}

TEST(JinjaRenderer, AHugeOutputIsStoppedAtTheSizeBound) {
  RendererOptions o;
  o.max_output_bytes = 1 << 20;
  JinjaRenderer r(o);
  std::string msg;
  // 10^10 bytes if it ran to the end; stopped after the first MiB (too_large, not the 5 s timeout
  // that would end it otherwise).
  EXPECT_EQ(render_error_kind(
                [&] {
                  r.render("{% for i in range(100000) %}{% for j in range(100000) %}{{ 'x' }}{% endfor %}{% endfor %}",
                           json::object());
                },
                &msg),
            Kind::too_large);
  EXPECT_NE(msg.find("larger than 1048576 bytes"), std::string::npos) << msg;
  // A single huge string: one piece over the bound, or a MemoryError under RLIMIT_AS.
  EXPECT_EQ(render_error_kind([&] { r.render("{{ 'x' * 4000000000 }}", json::object()); }, &msg), Kind::too_large) << msg;
  // A huge value the template only measures: its output is 10 bytes, so the message is the
  // memory's, not the output's size (it said "larger than 1048576 bytes").
  EXPECT_EQ(render_error_kind([&] { r.render("{{ ('x' * 3000000000)|length }}", json::object()); }, &msg),
            Kind::too_large);
  EXPECT_NE(msg.find("the template ran out of memory building a value"), std::string::npos) << msg;
  // Just under the bound is fine.
  EXPECT_EQ(r.render("{{ 'y' * 1048576 }}", json::object()).size(), 1048576u);
}

TEST(JinjaRenderer, SyntaxErrorsAreBrokenWithTheLine) {
  JinjaRenderer r;
  std::string msg;
  EXPECT_EQ(render_error_kind([&] { r.render("ok\n{% if %}", json::object()); }, &msg), Kind::broken);
  EXPECT_EQ(msg.rfind("line 2: ", 0), 0u) << msg;
  EXPECT_EQ(render_error_kind([&] { r.check_syntax("{% endfor %}"); }), Kind::broken);
  EXPECT_NO_THROW(r.check_syntax("{{ messages[0]['content'] }}"));  // compiles; not rendered
}

TEST(JinjaRenderer, TheSandboxRefusesMutationAndTheTemplateSeesNoFiles) {
  JinjaRenderer r;
  std::string msg;
  EXPECT_EQ(render_error_kind([&] { r.render("{% set x = [] %}{{ x.append(1) }}", json::object()); }, &msg), Kind::failed);
  EXPECT_NE(msg.find("unsafe"), std::string::npos) << msg;
  EXPECT_EQ(render_error_kind([&] { r.render("{{ ''.__class__.__mro__[1].__subclasses__() }}", json::object()); }), Kind::failed);
  EXPECT_EQ(r.render("{{ lipsum is defined }} {{ open is defined }}", json::object()), "True False");
  // A lone surrogate cannot travel as UTF-8: a failure, not a broken protocol.
  EXPECT_EQ(render_error_kind([&] { r.render("{{ '\\ud800' }}", json::object()); }, &msg), Kind::failed);
  EXPECT_EQ(r.render("{{ 'ok' }}", json::object()), "ok");
}

TEST(JinjaRenderer, AMissingInterpreterIsUnavailableWithAHint) {
  RendererOptions o;
  o.python = "/nonexistent/python3";
  JinjaRenderer r(o);
  std::string msg;
  EXPECT_EQ(render_error_kind([&] { r.render("x", json::object()); }, &msg), Kind::unavailable);
  EXPECT_NE(msg.find("cannot start '/nonexistent/python3'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("python3-jinja2"), std::string::npos) << msg;
  EXPECT_EQ(render_error_kind([&] { r.engine_version(); }), Kind::unavailable);  // and again: nothing cached
}

TEST(JinjaRenderer, APythonWithoutJinja2IsUnavailableSayingSo) {
  // -S drops site-packages (where jinja2 lives), -I the environment's paths.
  Script no_jinja("exec python3 -I -S \"$@\"");
  RendererOptions o;
  o.python = no_jinja.path.string();
  JinjaRenderer r(o);
  std::string msg;
  EXPECT_EQ(render_error_kind([&] { r.render("x", json::object()); }, &msg), Kind::unavailable);
  EXPECT_NE(msg.find("cannot import jinja2"), std::string::npos) << msg;
}

TEST(JinjaRenderer, AWorkerThatDiesIsUnavailableForThatRenderOnly) {
  // Says it is ready, then dies on the first request, as a crashed interpreter would.
  Script dies(R"(echo '{"ready": true, "jinja2": "3.1.9", "python": "3.0"}'; read line; kill -9 $$)");
  RendererOptions o;
  o.python = dies.path.string();
  JinjaRenderer r(o);
  EXPECT_EQ(r.engine_version(), "Jinja2 3.1.9 on Python 3.0 (" + dies.path.string() + ")");
  std::string msg;
  EXPECT_EQ(render_error_kind([&] { r.render("x", json::object()); }, &msg), Kind::unavailable);
  EXPECT_NE(msg.find("ended while rendering (killed by signal 9"), std::string::npos) << msg;
  EXPECT_EQ(render_error_kind([&] { r.render("x", json::object()); }), Kind::unavailable);
  // Something that is not the worker at all.
  Script not_python("echo hello");
  o.python = not_python.path.string();
  JinjaRenderer r2(o);
  EXPECT_EQ(render_error_kind([&] { r2.render("x", json::object()); }, &msg), Kind::unavailable);
  EXPECT_NE(msg.find("answered 'hello'"), std::string::npos) << msg;
}

// A worker that dies between renders (killed, out of memory) is replaced before the next render
// rather than failing it: nothing of that request's was running.
TEST(JinjaRenderer, AWorkerThatDiedWhileIdleIsReplacedBeforeTheNextRender) {
  const fs::path gone = fs::temp_directory_path() / ("lg_jinja_gone_" + std::to_string(::getpid()));
  fs::remove(gone);
  // Answers one request, closes its socket, then leaves a mark (so the test knows it hung up).
  Script once("echo '{\"ready\": true, \"jinja2\": \"3.1.9\", \"python\": \"3.0\"}'; read line; "
              "echo '{\"ok\": true, \"text\": \"a\"}'; exec 0<&- 1>&-; touch '" + gone.string() + "'");
  RendererOptions o;
  o.python = once.path.string();
  o.max_workers = 1;
  JinjaRenderer r(o);
  EXPECT_EQ(r.render("x", json::object()), "a");
  for (int i = 0; i < 500 && !fs::exists(gone); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(gone)) << "the worker did not hang up";
  fs::remove(gone);
  EXPECT_EQ(r.render("x", json::object()), "a");  // a fresh worker (which hangs up in turn)
  fs::remove(gone);
}

TEST(JinjaRenderer, WorkersInheritNoDescriptorsBeyondStdio) {
  // A descriptor without close-on-exec (as cpp-httplib's sockets are) must not stay open in a
  // worker: here a pipe whose write end, once closed by us, must read as closed.
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  JinjaRenderer r;
  EXPECT_EQ(r.render("{{ 1 }}", json::object()), "1");  // a worker now runs
  ::close(p[1]);
  pollfd pf{p[0], POLLIN, 0};
  ASSERT_EQ(::poll(&pf, 1, 5000), 1) << "the worker holds the pipe's write end";
  char c;
  EXPECT_EQ(::read(p[0], &c, 1), 0);
  ::close(p[0]);
}

TEST(JinjaRenderer, ConcurrentRendersShareTheWorkers) {
  RendererOptions o;
  o.max_workers = 2;
  JinjaRenderer r(o);
  std::vector<std::thread> threads;
  std::vector<std::string> got(16);
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&, i] {
      got[i] = r.render("{{ n * 2 }}{% for k in range(2000) %}{% endfor %}", {{"n", i}});
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(got[i], std::to_string(2 * i));
}

}  // namespace
}  // namespace lg::chat
