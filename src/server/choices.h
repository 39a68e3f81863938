// The choices of one request (OpenAI's `n`): n jobs on the engine from the same prompt, each its
// own sequence with its own draw, followed together by one thread (an HTTP handler, lg batch). One
// of them prefills the prompt; the others wait for its KV blocks and take them from the prefix
// cache (runtime/scheduler.h), computing only the prompt's last partial block.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "server/engine.h"
#include "server/openai.h"

namespace lg::server {

/// A request's running choices and the group that wakes whoever follows them.
struct Choices {
  std::vector<std::shared_ptr<EngineJob>> jobs;  ///< choice i is jobs[i]
  std::shared_ptr<JobGroup> group = std::make_shared<JobGroup>();
  /// Asks the engine to stop every choice at its next token.
  void cancel() const;
};

/// Starts p.gen.n choices of `p` on `engine`: choice i with seed + i when the request has a seed
/// (as vLLM seeds the samples of one request), else each with a fresh random seed; with n > 1
/// choice i's request log line names it "i_ID". All start or none: throws EngineBusy as
/// Engine::start_all does.
Choices start_choices(Engine& engine, const PreparedRequest& p);

/// What follow_choices reports: choice `index` produced `piece` (possibly empty), and when
/// `finished` is set it has ended with that result. Returns false to stop early (client gone).
using ChoiceEvent = std::function<bool(size_t index, const EnginePiece& piece, const EngineResult* finished)>;

/// Waits for every choice to end, reporting output as it becomes final, each choice's pieces in
/// order and its end after its last piece; `cancelled`, when set, is polled while waiting (every
/// 50 ms at most) and ends every choice when true (as EngineJob::follow). Returns the results in
/// choice order. Throws lg::Error when a choice failed in the lane (EngineJob::result).
std::vector<EngineResult> follow_choices(const Choices& c, const ChoiceEvent& on_event,
                                         const std::function<bool()>& cancelled = {});

}  // namespace lg::server
