// `lg serve --model DIR`: an OpenAI-compatible HTTP server (docs/server.md) over one lane. Loads
// the model once, then serves until SIGINT or SIGTERM: then it stops accepting, lets the running
// requests finish (up to --shutdown-timeout; a second signal cuts that short) and exits 0.
// `--shape qwen3-8b` (or a directory holding a config.json, as lg bench takes) serves random
// weights made on the GPU instead, for load tests at a real shape without a checkpoint (token-id
// prompts only).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cli/command.h"
#include "cli/lane_options.h"
#include "cli/openai_options.h"
#include "cli/numeric_checks.h"
#include "cli/preset_shapes.h"
#include "lanes/factory.h"
#include "model/model_dir.h"
#include "server/server.h"

namespace {

struct ServeOpts {
  std::string model, shape, lane, host = "127.0.0.1", chat_template;
  std::string program;  // --program FILE.lg
  int port = 8000;
  int64_t max_seq = 0;
  int64_t max_waiting = 512;
  double shutdown_timeout_s = 30;
  bool quiet = false;
  bool no_prefix_cache = false;
  std::vector<std::string> served_model_names;  // --served-model-name NAME...
  lg::LaneOptions lane_options;
  lg::server::CorsOptions cors;  // --allowed-origins, --allowed-methods, --allowed-headers, --allow-credentials
};

/// A CORS option's value checked (exit 2 before the model loads: "--allowed-origins: 'http://a/'
/// is not an origin: ..."). vLLM's flags take a JSON list ('["http://a.test", "http://b.test"]');
/// CLI11 splits a bracketed value at its commas itself, and this unquotes each element.
CLI::Validator cors_values(std::optional<std::string> (*problem)(const std::string&), const std::string& what) {
  return CLI::Validator(
      [problem](std::string& s) -> std::string {
        s = CLI::detail::trim_copy(s);
        if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
          const auto j = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
          if (j.is_string()) s = j.get<std::string>();
        }
        const auto p = problem(s);
        return p ? *p : std::string();
      },
      what);
}

// Says at start which chat template /v1/chat/completions uses, and whether it can be used (it
// compiles, python3 with jinja2 runs). A problem is a warning: completions still work, and each
// chat request answers with the reason.
void report_chat_template(const lg::chat::ChatTemplate& t) {
  if (!t.has_template() && t.problem().empty()) {
    std::fprintf(stderr, "lg: no chat template (the model has none): /v1/chat/completions answers 400; use "
                         "--chat-template FILE to give one\n");
    return;
  }
  try {
    const std::string engine = t.check();
    std::fprintf(stderr, "lg: chat template from %s, rendered by %s\n", t.origin().c_str(), engine.c_str());
  } catch (const lg::chat::ChatTemplateError& e) {
    std::fprintf(stderr, "lg: warning: /v1/chat/completions will fail: %s\n", e.what());
  }
}

/// --lane, else the cpu lane for a checkpoint and, for random weights, the GPU lane the shape runs
/// on (lg::default_gpu_lane: the hand-written lane where its templates take it, else compiled).
std::string lane_of(const ServeOpts& o, const std::optional<lg::cli::RandomShape>& shape) {
  if (!o.lane.empty()) return o.lane;
  return shape ? lg::default_gpu_lane(shape->config) : "cpu";
}

/// The engine of `dir` (the opened --model), or of random weights at `shape` (--shape), on `lane`.
std::unique_ptr<lg::server::Engine> make_engine(const ServeOpts& o, const std::string& lane,
                                                std::optional<lg::model::ModelDir> dir,
                                                const std::optional<lg::cli::RandomShape>& shape) {
  lg::server::EngineOptions eo;
  eo.lane = lane;
  eo.max_seq = o.max_seq;
  eo.lane_options = o.lane_options;
  eo.max_waiting = o.max_waiting;
  eo.log_requests = !o.quiet;
  eo.prefix_cache = !o.no_prefix_cache;
  eo.program = o.program;
  eo.served_model_names = o.served_model_names;
  if (dir) return std::make_unique<lg::server::Engine>(std::move(*dir), eo);
  // Random weights: a context of 4096 by default, as for a checkpoint (40960 would size a KV
  // pool per sequence far beyond what a load test needs).
  return std::make_unique<lg::server::Engine>(lg::server::RandomModel{shape->name, shape->config}, eo);
}

// SIGINT/SIGTERM reach whichever thread the kernel picks, and some threads exist before main()
// (OpenBLAS starts its pool at load), so no signal mask can route them to one watcher: a handler
// writes the signal's number into a pipe that the watcher reads (write() is async-signal-safe).
// A byte 0 from the main thread wakes the watcher when the server ended on its own.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int sig) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

/// Installs on_stop_signal for SIGINT and SIGTERM, whatever their action was (a shell starts a
/// script's background job, `lg serve ... &`, with SIGINT ignored).
void install_stop_signals() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) throw lg::Error("lg serve: cannot make the signal pipe");
  ::fcntl(g_signal_pipe[1], F_SETFL, O_NONBLOCK);  // a handler never blocks on a full pipe
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

/// The next byte of the signal pipe: a signal number, or 0 (the server ended); -1 when `wait`
/// is false and none is there.
int next_stop_byte(bool wait) {
  if (!wait) {
    pollfd p{g_signal_pipe[0], POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return -1;
  }
  unsigned char byte = 0;
  ssize_t n;
  do n = ::read(g_signal_pipe[0], &byte, 1);
  while (n < 0 && errno == EINTR);
  return n == 1 ? byte : 0;
}

// Waits for SIGINT/SIGTERM, then drains the server; a second signal cuts the drain short.
void watch_signals(lg::server::Server& server, const lg::server::Engine& engine, double timeout_s) {
  const int sig = next_stop_byte(/*wait=*/true);
  if (sig == 0) return;
  std::fprintf(stderr, "lg: %s: no new requests; waiting up to %g s for the %lld in flight, running or queued (a second SIGINT or SIGTERM stops them)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", timeout_s, static_cast<long long>(engine.in_flight()));
  const auto cut_short = [] {
    const int s = next_stop_byte(/*wait=*/false);
    return s == SIGINT || s == SIGTERM;
  };
  server.shutdown(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)), cut_short);
  std::fprintf(stderr, "lg: stopped\n");
}

int serve(const ServeOpts& o) {
  if (o.model.empty() == o.shape.empty())
    throw lg::Error("lg serve: give either --model DIR or --shape NAME|SHAPE_DIR");
  if (!o.shape.empty() && !o.chat_template.empty())
    throw lg::Error("lg serve: --chat-template needs --model: random weights (--shape) have no tokenizer for chat");
  // What can be refused before the model loads (which may take minutes) is refused first.
  std::optional<lg::cli::RandomShape> shape;
  if (!o.shape.empty())
    shape = lg::cli::random_shape(o.shape, ", or a directory holding a config.json alone (bench/shapes/*)");
  const std::string lane = lane_of(o, shape);
  if (shape && lane == "cpu")
    throw lg::Error("lg serve: --lane cpu runs on a checkpoint only (--model DIR): random weights at --shape '" +
                    o.shape + "' are made on the GPU, for the handwritten and compiled lanes");
  std::optional<lg::model::ModelDir> dir;
  if (!o.model.empty()) dir = lg::model::ModelDir::open(o.model);
  if (!o.chat_template.empty() && !dir->tokenizer_json)
    throw lg::Error("lg serve: --chat-template needs a tokenizer, and " + o.model + " has no tokenizer.json");
  lg::server::check_can_listen(o.host, o.port);
  const auto engine = make_engine(o, lane, std::move(dir), shape);
  lg::server::ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  if (!o.chat_template.empty()) so.chat_template_file = o.chat_template;
  so.cors = o.cors;
  lg::server::Server server(*engine, so);
  std::fprintf(stderr, "lg: serving '%s' on lane %s, context %lld tokens, KV cache %lld tokens\n",
               engine->model_id().c_str(), lane.c_str(),
               static_cast<long long>(engine->context()), static_cast<long long>(engine->limits().pool_tokens()));
  // As vLLM warns: the model's own generation config, not the API's neutral defaults, decides
  // what a request that leaves these fields out gets.
  if (const std::string d = lg::model::sampling_defaults(engine->generation()); !d.empty())
    std::fprintf(stderr, "lg: defaults from generation_config.json for requests that leave them out: %s\n", d.c_str());
  if (engine->has_tokenizer()) report_chat_template(server.chat_template());
  else std::fprintf(stderr, "lg: no tokenizer (random weights, or no tokenizer.json): prompts are token ids; chat "
                            "answers 400\n");
  const int port = server.bind();
  // A URL to paste into a client: an IPv6 address goes in brackets (RFC 3986), http://[::1]:8000.
  const std::string url_host = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  std::fprintf(stderr,
               "lg: listening on http://%s:%d (POST /v1/completions, /v1/chat/completions, /tokenize, /detokenize; "
               "GET /v1/models, /health, /metrics, /version)\n",
               url_host.c_str(), port);
  // From here on SIGINT/SIGTERM drain the server; while the model loads, Ctrl-C simply stops lg.
  install_stop_signals();
  std::thread signals([&] { watch_signals(server, *engine, o.shutdown_timeout_s); });
  server.run();
  const unsigned char ended = 0;  // wakes the watcher; unread once it has drained
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe[1], &ended, 1);
  signals.join();
  return 0;
}

}  // namespace

LG_COMMAND("serve", [](CLI::App& app) {
  auto o = std::make_shared<ServeOpts>();
  auto* sub = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  lg::cli::add_model_options(sub, o->model, o->program, /*optional_model=*/true);
  sub->add_option("--shape", o->shape,
                  std::string("random weights made on the GPU at a real shape instead of --model (") +
                      lg::cli::preset_shape_names() +
                      ", or a directory holding a config.json alone, as bench/shapes/*): prompts as token ids, for "
                      "load tests");
  sub->add_option("--lane", o->lane, "lane by name (cpu, compiled, handwritten; default cpu, and with --shape the hand-written lane where its templates take the shape, else compiled)")
      ->check(lg::cli::lane_name());
  sub->add_option("--host", o->host, "address to listen on")->capture_default_str();
  sub->add_option("--port", o->port, "port to listen on")->capture_default_str()->check(lg::cli::int_in_range(1, 65535));
  sub->add_option("--max-seq", o->max_seq, "context in tokens (default: max_position_embeddings, at most 4096)")
      ->check(lg::cli::request_context_length());
  lg::cli::add_chat_template(sub, o->chat_template);
  sub->add_option("--max-waiting", o->max_waiting,
                  "requests waiting to run beyond which new ones are answered 503 with Retry-After")
      ->capture_default_str()
      ->check(lg::cli::at_least_one());
  sub->add_option("--shutdown-timeout", o->shutdown_timeout_s,
                  "seconds running requests may take to finish after SIGINT/SIGTERM before they are cut")
      ->capture_default_str()
      ->check(lg::cli::non_negative_number());
  lg::cli::add_served_model_names(sub, o->served_model_names);
  sub->add_flag("-q,--quiet", o->quiet, "no log line per finished request on stderr");
  sub->add_flag("--no-prefix-cache", o->no_prefix_cache,
                "do not share the KV cache of equal prompt prefixes between requests");
  sub->add_option("--allowed-origins", o->cors.allowed_origins,
                  "origins whose web pages may call the server from a browser (CORS), as a browser sends them "
                  "(http://localhost:3000), or '*' for every origin")
      ->expected(1, -1)
      ->capture_default_str()
      ->transform(cors_values(lg::server::origin_problem, "ORIGIN"));
  sub->add_option("--allowed-methods", o->cors.allowed_methods, "HTTP methods such pages may use; '*' for every method")
      ->expected(1, -1)
      ->capture_default_str()
      ->transform(cors_values(lg::server::method_problem, "METHOD"));
  sub->add_option("--allowed-headers", o->cors.allowed_headers,
                  "request headers such pages may send (Authorization, ...); '*' for every header")
      ->expected(1, -1)
      ->capture_default_str()
      ->transform(cors_values(lg::server::header_problem, "HEADER"));
  sub->add_flag("--allow-credentials", o->cors.allow_credentials,
                "let such pages send cookies and HTTP authentication (answers then name the page's origin, never '*')");
  lg::cli::add_lane_options(sub, o->lane_options);
  sub->callback([o] { lg::cli::check_served_model_names(o->served_model_names); });
  return [o]() -> int { return serve(*o); };
});
