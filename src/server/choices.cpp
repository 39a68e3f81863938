#include "server/choices.h"

#include <chrono>
#include <string>

namespace lg::server {

void Choices::cancel() const {
  for (const auto& job : jobs) job->cancel();
}

Choices start_choices(Engine& engine, const PreparedRequest& p) {
  std::vector<Engine::JobSpec> specs;
  for (int64_t i = 0; i < p.gen.n; ++i) {
    Engine::JobSpec& spec = specs.emplace_back(Engine::JobSpec{p.gen, p.id});
    if (p.gen.seed) spec.request.seed = *p.gen.seed + static_cast<uint64_t>(i);
    // Choice i's log line and metrics name it "i_ID" when there are several, as vLLM names a
    // parent request's children.
    if (p.gen.n > 1) spec.id = std::to_string(i) + "_" + p.id;
  }
  Choices c;
  c.jobs = engine.start_all(p.prompt_ids, specs, p.default_max, c.group);
  return c;
}

std::vector<EngineResult> follow_choices(const Choices& c, const ChoiceEvent& on_event,
                                         const std::function<bool()>& cancelled) {
  const size_t n = c.jobs.size();
  std::vector<char> done(n, 0);
  size_t left = n;
  bool client_gone = false;
  // A choice that failed in the lane throws from result(): the others end too.
  struct CancelUnlessDone {
    const Choices& c;
    const size_t& left;
    ~CancelUnlessDone() {
      if (left > 0) c.cancel();
    }
  } cancel_on_throw{c, left};
  while (left > 0) {
    // Read before looking at the jobs: an event after it ends the wait below at once.
    const uint64_t seen = c.group->events();
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      EnginePiece piece;
      done[i] = c.jobs[i]->wait(piece, std::chrono::milliseconds(0));
      if (!done[i] && piece.empty()) continue;
      EngineResult finished;
      if (done[i]) {
        --left;
        finished = c.jobs[i]->result();
      }
      if (!client_gone && on_event && !on_event(i, piece, done[i] ? &finished : nullptr)) client_gone = true;
    }
    if (!client_gone && cancelled && cancelled()) client_gone = true;
    if (client_gone) c.cancel();
    if (left > 0) c.group->wait_past(seen, std::chrono::milliseconds(50));
  }
  std::vector<EngineResult> results;
  results.reserve(n);
  for (const auto& job : c.jobs) results.push_back(job->result());
  return results;
}

}  // namespace lg::server
