// `lg serve --model DIR`: an OpenAI-compatible HTTP server (docs/server.md) over one lane. Loads
// the model once, then serves until the process is stopped (Ctrl-C); requests in flight run
// together in the engine's batched steps.
#include <cstdio>

#include "cli/command.h"
#include "cli/lane_options.h"
#include "cli/numeric_checks.h"
#include "lanes/factory.h"
#include "server/server.h"

namespace {

struct ServeOpts {
  std::string model, lane = "cpu", host = "127.0.0.1", chat_template;
  int port = 8000;
  int64_t max_seq = 0;
  lg::LaneOptions lane_options;
};

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

int serve(const ServeOpts& o) {
  lg::server::Engine engine(o.model, {o.lane, o.max_seq, o.lane_options});
  lg::server::ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  if (!o.chat_template.empty()) so.chat_template_file = o.chat_template;
  lg::server::Server server(engine, so);
  std::fprintf(stderr, "lg: serving '%s' on lane %s, context %lld tokens\n", engine.model_id().c_str(), o.lane.c_str(),
               static_cast<long long>(engine.context()));
  report_chat_template(server.chat_template());
  const int port = server.bind();
  std::fprintf(stderr, "lg: listening on http://%s:%d (POST /v1/completions, /v1/chat/completions)\n", o.host.c_str(),
               port);
  server.run();
  return 0;
}

}  // namespace

LG_COMMAND("serve", [](CLI::App& app) {
  auto o = std::make_shared<ServeOpts>();
  auto* sub = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  sub->add_option("--model,-m", o->model, "model directory (config.json, model.safetensors, tokenizer.json)")
      ->required()
      ->check(CLI::ExistingDirectory);
  sub->add_option("--lane", o->lane, "lane by name (cpu, compiled, handwritten)")->capture_default_str();
  sub->add_option("--host", o->host, "address to listen on")->capture_default_str();
  sub->add_option("--port", o->port, "port to listen on")->capture_default_str()->check(lg::cli::int_in_range(1, 65535));
  sub->add_option("--max-seq", o->max_seq, "context in tokens (default: max_position_embeddings, at most 4096)")
      ->check(lg::cli::at_least_one());
  sub->add_option("--chat-template", o->chat_template,
                  "Jinja2 chat template file to use instead of the model's own (tokenizer_config.json)")
      ->check(CLI::ExistingFile);
  lg::cli::add_lane_options(sub, o->lane_options);
  return [o]() -> int { return serve(*o); };
});
