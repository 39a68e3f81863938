// The commands that stop gracefully on Ctrl-C (`lg run`, `lg batch`): the first signal sets a
// flag the command polls, and a second one has its default effect (terminates), so a step that
// never returns cannot hold the terminal.
#pragma once

#include <signal.h>

#include <initializer_list>

namespace lg::cli {

/// Installs `handler` (async-signal-safe: it should only set a volatile std::sig_atomic_t) for each
/// of `signals`, reset to the default once it has run (SA_RESETHAND).
inline void on_first_signal(void (*handler)(int), std::initializer_list<int> signals) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  for (const int s : signals) ::sigaction(s, &sa, nullptr);
}

}  // namespace lg::cli
