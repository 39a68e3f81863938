#include "chat/jinja_renderer.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace lg::chat {

namespace {

using json = nlohmann::ordered_json;  // key order kept, as in Python dicts (tojson, items())
using Clock = std::chrono::steady_clock;
using Kind = ChatTemplateError::Kind;

// Starting Python and importing jinja2 takes ~50 ms warm; a cold disk can take seconds.
constexpr std::chrono::seconds kStartupTimeout{30};

std::string seconds_text(std::chrono::milliseconds d) { return fmt::format("{:g} s", d.count() / 1000.0); }

std::string exit_text(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "stopped";
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

enum class Io { ok, closed, timeout };

}  // namespace

/// One child process and its end of the socket pair.
struct JinjaRenderer::Worker {
  pid_t pid = -1;
  int fd = -1;
  std::string pending;  // bytes read past the last complete line
  std::string version;  // "Jinja2 3.1.2 on Python 3.11.2 (python3)"

  Worker() = default;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() {
    if (fd >= 0) ::close(fd);
    if (pid > 0) {
      ::kill(pid, SIGKILL);  // nothing to flush; a clean exit would only wait
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }

  /// Reaps the process if it has exited and says how (for a worker that closed its socket).
  std::string how_it_ended() {
    int status = 0;
    for (int i = 0; i < 50; ++i) {  // it closed the socket, so it is exiting: up to 0.5 s
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        pid = -1;
        return exit_text(status);
      }
      if (r < 0) {  // reaped elsewhere (SIGCHLD ignored): the pid is no longer ours to kill
        pid = -1;
        return "exited";
      }
      ::usleep(10000);
    }
    return "closed its pipe";
  }

  /// False if this idle worker has hung up (killed or out of memory between renders): it never
  /// writes unasked, so a hang-up or anything to read means it is gone.
  bool alive_when_idle() const {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, 0);
    return r == 0 || (r < 0 && errno == EINTR);
  }

  Io send_all(const std::string& data, Clock::time_point deadline) {
    size_t done = 0;
    while (done < data.size()) {
      // MSG_NOSIGNAL: a dead worker is an EPIPE here, never a SIGPIPE that ends the server.
      const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{fd, POLLOUT, 0};
        const int r = ::poll(&p, 1, remaining_ms(deadline));
        if (r == 0) return Io::timeout;
        if (r < 0 && errno != EINTR) return Io::closed;
        continue;
      }
      return Io::closed;
    }
    return Io::ok;
  }

  Io read_line(std::string& line, Clock::time_point deadline, size_t max_bytes) {
    size_t scanned = 0;
    for (;;) {
      const size_t nl = pending.find('\n', scanned);
      if (nl != std::string::npos) {
        line.assign(pending, 0, nl);
        pending.erase(0, nl + 1);
        return Io::ok;
      }
      scanned = pending.size();
      if (pending.size() > max_bytes) return Io::closed;  // not our protocol: treat as a dead worker
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, remaining_ms(deadline));
      if (r == 0) return Io::timeout;
      if (r < 0) {
        if (errno == EINTR) continue;
        return Io::closed;
      }
      char buf[65536];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) return Io::closed;
      pending.append(buf, static_cast<size_t>(n));
    }
  }
};

JinjaRenderer::JinjaRenderer(RendererOptions options) : options_(std::move(options)) {
  python_ = options_.python;
  if (python_.empty()) {
    const char* env = std::getenv("LG_PYTHON");
    python_ = env && *env ? env : "python3";
  }
  if (options_.max_workers == 0) options_.max_workers = 1;
}

JinjaRenderer::~JinjaRenderer() {
  std::lock_guard lock(mutex_);
  idle_.clear();
}

std::unique_ptr<JinjaRenderer::Worker> JinjaRenderer::acquire() {
  std::unique_lock lock(mutex_);
  for (;;) {
    while (!idle_.empty()) {
      auto w = std::move(idle_.back());
      idle_.pop_back();
      if (w->alive_when_idle()) return w;
      --running_;  // died between renders: not this request's fault, so a fresh one renders it
    }
    if (running_ < options_.max_workers) break;
    free_.wait(lock);  // every render ends within its timeout, so this wait is bounded too
  }
  ++running_;
  lock.unlock();

  auto w = std::make_unique<Worker>();
  auto fail = [&](const std::string& why) -> ChatTemplateError {
    w.reset();
    {
      std::lock_guard relock(mutex_);
      --running_;
    }
    free_.notify_one();
    return ChatTemplateError(Kind::unavailable, why);
  };
  const std::string hint =
      "chat templates are rendered by Jinja2 in Python 3: install python3 and python3-jinja2 "
      "(scripts/deps.sh), or set LG_PYTHON to a Python that has jinja2";
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw fail(fmt::format("cannot create a socket pair for the Jinja2 worker: {}", std::strerror(errno)));
  // The child gets its end as stdin and stdout (dup2 drops close-on-exec for those two); stderr
  // stays the server's, so an interpreter that breaks in an unforeseen way is seen in its log.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 0);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 1);
  // And nothing else: cpp-httplib opens its sockets without close-on-exec, so a worker would
  // otherwise hold client connections open (a client would not see its connection close) and
  // the listening socket (the port stays taken while a worker lives).
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  // Its own process group, so Ctrl-C at the terminal stops lg serve but not a render mid-way;
  // signals blocked in the server's threads are not inherited.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  const std::string limit = std::to_string(options_.max_worker_bytes);
  std::string dash_c = "-c";
  std::vector<char*> argv = {python_.data(), dash_c.data(), const_cast<char*>(kJinjaRenderScript),
                             const_cast<char*>(limit.c_str()), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, python_.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  w->fd = sv[0];
  if (rc != 0) throw fail(fmt::format("cannot start '{}': {}; {}", python_, std::strerror(rc), hint));
  w->pid = pid;

  std::string line;
  const Io io = w->read_line(line, Clock::now() + kStartupTimeout, 1 << 20);
  if (io == Io::timeout)
    throw fail(fmt::format("'{}' (the Jinja2 worker) did not start within {} s", python_, kStartupTimeout.count()));
  if (io == Io::closed)
    throw fail(
        fmt::format("'{}' (the Jinja2 worker) ended before it was ready ({}); {}", python_, w->how_it_ended(), hint));
  json hello;
  try {
    hello = json::parse(line);
  } catch (const json::exception&) {
    throw fail(fmt::format("'{}' answered '{}' instead of starting the Jinja2 worker; {}", python_, line.substr(0, 200),
                           hint));
  }
  if (!hello.is_object() || !hello.value("ready", false))
    throw fail(hello.is_object() && hello.contains("message") && hello["message"].is_string()
                   ? hello["message"].get<std::string>()
                   : fmt::format("'{}' could not start the Jinja2 worker: {}", python_, line.substr(0, 200)));
  w->version =
      fmt::format("Jinja2 {} on Python {} ({})", hello.value("jinja2", "?"), hello.value("python", "?"), python_);
  return w;
}

void JinjaRenderer::release(std::unique_ptr<Worker> worker) {
  {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(worker));
  }
  free_.notify_one();
}

void JinjaRenderer::discard(std::unique_ptr<Worker> worker) {
  worker.reset();  // kills and reaps it
  {
    std::lock_guard lock(mutex_);
    --running_;
  }
  free_.notify_one();
}

json JinjaRenderer::call(const json& request) {
  // Strings from nlohmann-parsed JSON are valid UTF-8; `replace` only guards a caller's raw text.
  const std::string line = request.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  auto w = acquire();
  const auto deadline = Clock::now() + options_.timeout;
  Io io = w->send_all(line, deadline);
  std::string answer;
  // A reply escapes non-ASCII (\uXXXX, 6 or 12 bytes per character of up to 4 UTF-8 bytes).
  if (io == Io::ok) io = w->read_line(answer, deadline, 6 * options_.max_output_bytes + (1 << 20));
  if (io == Io::timeout) {
    discard(std::move(w));
    throw ChatTemplateError(Kind::timeout, fmt::format("the chat template did not finish rendering within {} (the "
                                                       "renderer was stopped)",
                                                       seconds_text(options_.timeout)));
  }
  if (io == Io::closed) {
    const pid_t pid = w->pid;  // how_it_ended() reaps it and forgets the pid
    const std::string how =
        fmt::format("the Jinja2 worker ('{}', pid {}) ended while rendering ({})", python_, pid, w->how_it_ended());
    discard(std::move(w));
    throw ChatTemplateError(Kind::unavailable, how);
  }
  json reply;
  try {
    reply = json::parse(answer);
  } catch (const json::exception& e) {
    discard(std::move(w));
    throw ChatTemplateError(Kind::unavailable, std::string("the Jinja2 worker's answer is not JSON: ") + e.what());
  }
  release(std::move(w));
  if (reply.value("ok", false) && reply.contains("text") && reply["text"].is_string()) return reply;
  const std::string kind = reply.value("kind", "");
  const std::string message = reply.contains("message") && reply["message"].is_string()
                                  ? reply["message"].get<std::string>()
                                  : "the Jinja2 worker gave no reason";
  if (kind == "syntax") throw ChatTemplateError(Kind::broken, message);
  if (kind == "too_large") throw ChatTemplateError(Kind::too_large, message);
  throw ChatTemplateError(Kind::failed, message);
}

std::string JinjaRenderer::render(const std::string& source, const json& variables) {
  return call({{"template", source}, {"variables", variables}, {"max_bytes", options_.max_output_bytes}})["text"]
      .get<std::string>();
}

void JinjaRenderer::check_syntax(const std::string& source) {
  call({{"template", source}, {"variables", json::object()}, {"compile_only", true}});
}

std::string JinjaRenderer::engine_version() {
  auto w = acquire();
  std::string v = w->version;
  release(std::move(w));
  return v;
}

}  // namespace lg::chat
