// Stop strings (OpenAI `stop`): generation ends at the first stop string to appear, and the text
// is cut just before it. "First" is the occurrence that ends earliest: with stops "a\n\n" and
// "\n", the text "xa\n\n" is cut to "xa". vLLM, which checks after each token, agrees unless one
// token completes two stops (it then takes the first in the list). While streaming,
// text that could still become the start of a stop string is held back, so a client never
// receives text that a later token turns into a stop, and any split gives the same result.
#pragma once

#include <string>
#include <vector>

namespace lg::server {

/// Feeds decoded text through a set of stop strings (each non-empty, UTF-8).
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  /// Appends `text`; returns the part now safe to emit (never past a stop string). With `match`
  /// false no stop string ends in `text` (vLLM's min_tokens: the text of the first tokens does not
  /// stop the request), though one may start in it and end in text pushed later.
  std::string push(const std::string& text, bool match = true);
  /// After the last push: releases what was held back (nothing once stopped).
  std::string finish();
  /// True once a stop string appeared; later pushes return nothing.
  bool stopped() const { return stopped_; }
  /// The stop string that cut the text (empty until stopped()).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;  // text not yet emitted: a possible prefix of a stop string
  size_t unmatched_ = 0;  // the first bytes of pending_ pushed with match false: no stop ends in them
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace lg::server
