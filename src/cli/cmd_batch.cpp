// `lg batch --model DIR -i requests.jsonl -o results.jsonl`: offline batch generation in the
// OpenAI batch-file format (as vLLM's run_batch). Every line of the input is one request,
// {"custom_id", "method": "POST", "url": "/v1/completions" | "/v1/chat/completions", "body"};
// all of them run together in the engine's batched steps, and every input line gets one output
// line, in input order: {"id", "custom_id", "response": {"status_code", "request_id", "body"},
// "error"}. A line that is not a request (not JSON, an unknown url, no body, a custom_id an
// earlier line has) gets an output line with its error and the others still run; a body the
// endpoint refuses gets the 400 answer lg serve would give. SIGINT or SIGTERM cuts the requests
// still running, as lg serve's drain does when its time runs out: their lines are still written
// (finish_reason "abort", the text so far), so an interrupted run keeps every answer it finished;
// the exit code is then 128 + the signal (130 for SIGINT, 143 for SIGTERM, as a shell reports a
// command the signal ended). A second signal stops at once.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli/batch_line.h"
#include "cli/command.h"
#include "cli/first_signal.h"
#include "cli/lane_options.h"
#include "cli/numeric_checks.h"
#include "cli/openai_options.h"
#include "cli/path_checks.h"
#include "chat/chat_template.h"
#include "chat/jinja_renderer.h"
#include "server/choices.h"
#include "server/engine.h"
#include "server/request.h"
#include "server/openai.h"
#include "support/count_noun.h"
#include "support/error.h"
#include "support/text_input.h"

namespace {

using nlohmann::json;

struct BatchOpts {
  std::string model, input, output, lane = "cpu";
  std::string program;  // --program FILE.lg
  std::string chat_template;  // --chat-template FILE
  std::vector<std::string> served_model_names;  // --served-model-name NAME...
  int64_t max_seq = 0;
  lg::LaneOptions lane_options;
  bool quiet = false;
  bool no_prefix_cache = false;
};

/// One input line and what becomes of it.
struct Line {
  json custom_id = nullptr;
  std::optional<lg::server::PreparedRequest> request;
  std::optional<lg::server::Choices> choices;  // running: the request's n choices
  nlohmann::ordered_json response = nullptr;  // the answer's status and body (as lg serve orders its keys)
  json error = nullptr;     // set when the line is not a request at all
};

/// Reads line `n` (1-based) as cli/batch_line.h does (`seen`: the custom_ids met so far) and,
/// when it is a request, prepares it.
Line read_line(const std::string& text, size_t n, const lg::server::Engine& engine, const lg::chat::ChatTemplate& tmpl,
               std::unordered_map<std::string, size_t>& seen) {
  lg::cli::BatchLine b = lg::cli::parse_batch_line(text, n, seen);
  Line l;
  l.custom_id = std::move(b.custom_id);
  l.error = std::move(b.error);
  if (!b.kind) return l;
  try {
    // A stream of another type than a boolean is the parser's 400 below (json::value would throw).
    if (const auto st = b.body.find("stream"); st != b.body.end() && st->is_boolean() && st->get<bool>())
      throw lg::server::RequestError("stream", "'stream' is not supported in a batch: every answer is whole");
    l.request = lg::server::prepare_request(engine, tmpl, *b.kind, b.body.dump());
  } catch (const lg::server::ModelNotFound& e) {
    l.response = {{"status_code", 404}, {"request_id", nullptr},
                  {"body", lg::server::error_body(e.what(), "NotFoundError", e.param())}};
  } catch (const lg::server::RequestError& e) {
    l.response = {{"status_code", 400}, {"request_id", nullptr},
                  {"body", lg::server::error_body(e.what(), "invalid_request_error", e.param())}};
  } catch (const lg::Error& e) {  // a broken chat template: lg serve's 500
    l.response = {{"status_code", 500}, {"request_id", nullptr},
                  {"body", lg::server::error_body(e.what(), "server_error", "")}};
  }
  return l;
}

/// Set by the first SIGINT or SIGTERM (the handler then resets itself: a second one terminates).
volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_batch_stop(int sig) { g_stop = sig; }

/// Reads every line of `in` (`in_name` in messages), prepares each request and starts it on the
/// engine at once. Lines are capped as a whole file is (support/text_input.h: `-i /dev/zero` is
/// one endless line): a line past the cap is that line's error and the lines around it run; when
/// no line end follows within the next cap either, reading stops there and `input_error` says
/// why (the command fails after answering the lines before).
std::vector<Line> read_lines(std::istream& in, const std::string& in_name, lg::server::Engine& engine,
                             const lg::chat::ChatTemplate& tmpl, std::string& input_error) {
  std::vector<Line> lines;
  std::unordered_map<std::string, size_t> seen;  // custom_id -> the line that used it first
  std::string text;
  for (size_t n = 1;; ++n) {
    try {
      if (!lg::getline_capped(in, text, in_name, n)) break;
    } catch (const lg::Error& e) {
      Line l;
      l.error = lg::cli::batch_line_error("invalid_request", e.what());
      l.custom_id = lg::cli::recovered_custom_id(std::move(text), n, seen);  // from its first 64 MiB
      lines.push_back(std::move(l));
      if (lg::skip_line_capped(in)) continue;
      input_error = fmt::format("{}; no line end within the next {} MiB either: the input after it was not read",
                                e.what(), lg::kMaxTextInputBytes >> 20);
      break;
    }
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines are no requests
    lines.push_back(read_line(text, n, engine, tmpl, seen));
    Line& l = lines.back();
    if (l.request) l.choices = lg::server::start_choices(engine, *l.request);
  }
  return lines;
}

/// The waits on the running lines: the progress bar on a terminal (at most 5 redraws a second),
/// and the first SIGINT or SIGTERM, which ends every request still running or waiting at its
/// next token.
class Waiter {
 public:
  Waiter(lg::server::Engine& engine, bool bar, std::chrono::steady_clock::time_point t0)
      : engine_(engine), bar_(bar), t0_(t0) {}

  /// Waits for line `k` of `n` to finish and sets its response: 200 with the body lg serve would
  /// send, or a 500 naming what failed in the engine.
  void finish(Line& l, size_t k, size_t n) {
    // Polled while the choices run (every 50 ms at most): a signal cuts the run, the bar redraws.
    auto drawn = std::chrono::steady_clock::time_point{};
    const auto poll = [&] {
      cut_on_signal();
      const auto now = std::chrono::steady_clock::now();
      if (bar_ && now - drawn >= std::chrono::milliseconds(200)) {
        drawn = now;
        std::fprintf(stderr, "\r\033[Klg batch: %zu/%zu requests answered, %.1f s", k, n,
                     std::chrono::duration<double>(now - t0_).count());
      }
      return false;
    };
    try {
      const std::vector<lg::server::EngineResult> results = lg::server::follow_choices(*l.choices, nullptr, poll);
      for (const auto& r : results) completion_tokens += r.completion_tokens;
      l.response = {{"status_code", 200}, {"request_id", l.request->id},
                    {"body", lg::server::response_body(*l.request, results)}};
    } catch (const lg::Error& e) {
      l.response = {{"status_code", 500}, {"request_id", l.request->id},
                    {"body", lg::server::error_body(e.what(), "server_error", "")}};
    }
  }

  bool cut() const { return cut_; }
  /// 128 + the signal that cut the run (the shell's status for a command that signal ended), 0 if none.
  int exit_status() const { return cut_ ? 128 + signal_ : 0; }
  int64_t completion_tokens = 0;

 private:
  void cut_on_signal() {
    if (cut_ || !g_stop) return;
    cut_ = true;
    signal_ = g_stop;
    engine_.cancel_all();
    std::fprintf(stderr, "%slg batch: %s: cutting the requests still running (their lines end with finish_reason "
                         "\"abort\"; a second signal stops at once)\n",
                 bar_ ? "\r\033[K" : "", g_stop == SIGTERM ? "SIGTERM" : "SIGINT");
  }

  lg::server::Engine& engine_;
  bool bar_;
  std::chrono::steady_clock::time_point t0_;
  bool cut_ = false;
  int signal_ = 0;
};

int run_batch(const BatchOpts& o) {
  const auto t0 = std::chrono::steady_clock::now();
  std::ifstream file;
  if (o.input != "-") {
    file = lg::open_text_input(o.input, "requests file");
    // Opening the output truncates it: the same file as the input would be lost before it is read.
    std::error_code ec;
    if (o.output != "-" && std::filesystem::equivalent(o.input, o.output, ec))
      throw lg::Error(o.output + ": is the input file; write the results to another file");
  }
  std::istream& in = o.input == "-" ? std::cin : file;
  // Before the model loads (seconds to minutes), not after: a directory opens as no file at all.
  if (std::error_code ec; o.output != "-" && std::filesystem::is_directory(o.output, ec))
    throw lg::Error(o.output + ": is a directory; -o takes the results file");
  if (const std::filesystem::path parent = std::filesystem::path(o.output).parent_path();
      o.output != "-" && !parent.empty() && !std::filesystem::is_directory(parent))
    throw lg::Error(o.output + ": no such folder " + parent.string() + " (lg batch writes the file, not its folder)");
  lg::server::EngineOptions eo;
  eo.lane = o.lane;
  eo.max_seq = o.max_seq;
  eo.lane_options = o.lane_options;
  eo.max_waiting = INT64_MAX;  // every line is handed over at once: offline, nothing to refuse
  eo.prefix_cache = !o.no_prefix_cache;
  eo.program = o.program;
  eo.served_model_names = o.served_model_names;
  lg::server::Engine engine(o.model, eo);
  if (const std::string d = lg::model::sampling_defaults(engine.generation()); !d.empty() && !o.quiet)
    std::fprintf(stderr, "lg batch: defaults from generation_config.json for requests that leave them out: %s\n",
                 d.c_str());
  // The chat requests render the model's own chat template (or --chat-template's), as lg serve's
  // chat endpoint does.
  if (!o.chat_template.empty() && !engine.has_tokenizer())
    throw lg::Error("lg batch: --chat-template needs a tokenizer, and " + o.model + " has no tokenizer.json");
  const auto tmpl = lg::chat::ChatTemplate::load(
      engine.model_dir(), o.chat_template.empty() ? std::nullopt : std::optional<std::filesystem::path>(o.chat_template),
      std::make_shared<lg::chat::JinjaRenderer>());
  std::ofstream out_file;
  if (o.output != "-") {
    out_file.open(o.output, std::ios::binary | std::ios::trunc);
    if (!out_file) throw lg::Error(o.output + ": cannot write");
  }
  std::ostream& out = o.output == "-" ? std::cout : out_file;

  std::string input_error;
  std::vector<Line> lines = read_lines(in, o.input == "-" ? "standard input" : o.input, engine, tmpl, input_error);
  const bool bar = !o.quiet && isatty(STDERR_FILENO);
  int64_t ok = 0, failed = 0;
  lg::cli::on_first_signal(on_batch_stop, {SIGINT, SIGTERM});
  Waiter waiter(engine, bar, t0);
  for (size_t k = 0; k < lines.size(); ++k) {
    Line& l = lines[k];
    if (l.choices) waiter.finish(l, k, lines.size());
    const bool good = l.response.is_object() && l.response["status_code"] == 200;
    (good ? ok : failed) += 1;
    nlohmann::ordered_json line = {{"id", fmt::format("batch_req_{}", k)},
                 {"custom_id", l.custom_id},
                 {"response", l.response},
                 {"error", l.error}};
    out << lg::server::dump(line) << "\n";
    out.flush();
    if (!out) throw lg::Error((o.output == "-" ? std::string("standard output") : o.output) + ": write failed");
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (bar) std::fputs("\r\033[K", stderr);
  if (!o.quiet)
    std::fprintf(stderr, "lg batch: %s, %lld answered, %lld failed; %s generated in %.2f s (%.1f tokens/s)%s\n",
                 lg::count_noun(static_cast<int64_t>(lines.size()), "request").c_str(), static_cast<long long>(ok),
                 static_cast<long long>(failed), lg::count_noun(waiter.completion_tokens, "token").c_str(), s,
                 s > 0 ? static_cast<double>(waiter.completion_tokens) / s : 0.0,
                 waiter.cut() ? "; interrupted: the requests still running then were cut (finish_reason \"abort\")" : "");
  if (!input_error.empty()) throw lg::Error(input_error);  // after every line read was answered
  return waiter.exit_status();
}

}  // namespace

LG_COMMAND("batch", [](CLI::App& app) {
  auto o = std::make_shared<BatchOpts>();
  auto* sub = app.add_subcommand("batch", "Run a file of OpenAI requests (JSON lines) together in batched steps");
  lg::cli::add_model_options(sub, o->model, o->program);
  auto* input = sub->add_option("-i,--input", o->input, "requests, one JSON object per line ('-': stdin)")->required();
  auto* output =
      sub->add_option("-o,--output", o->output, "results, one JSON object per input line ('-': stdout)")->required();
  sub->add_option("--lane", o->lane, "lane by name (cpu, compiled, handwritten)")
      ->capture_default_str()
      ->check(lg::cli::lane_name());
  sub->add_option("--max-seq", o->max_seq, "context per request in tokens (default: max_position_embeddings, at most 4096)")
      ->check(lg::cli::request_context_length());
  lg::cli::add_lane_options(sub, o->lane_options);
  sub->add_flag("-q,--quiet", o->quiet, "no progress bar or summary on stderr");
  sub->add_flag("--no-prefix-cache", o->no_prefix_cache,
                "do not share the KV cache of equal prompt prefixes between requests");
  lg::cli::add_chat_template(sub, o->chat_template);
  lg::cli::add_served_model_names(sub, o->served_model_names);
  // An empty path (an unset shell variable) is a usage error naming the option, not ": cannot read".
  sub->callback([o, input, output] {
    lg::cli::refuse_empty_path(input, o->input, "a requests file or '-'");
    lg::cli::refuse_empty_path(output, o->output, "a results file or '-'");
    lg::cli::check_served_model_names(o->served_model_names);
  });
  return [o]() -> int { return run_batch(*o); };
});
