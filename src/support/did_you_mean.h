// Spelling suggestions for names a user typed: the nearest of the names that exist, as rustc and
// clang suggest them ("did you mean 'rms_norm'?").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lg {

/// Levenshtein distance (insertions, deletions, substitutions) between a and b, bytes as units.
size_t edit_distance(std::string_view a, std::string_view b);

/// Names longer than this get no suggestion, and are suggested for none.
inline constexpr size_t kMaxSuggested = 64;

/// "; did you mean 'X'?" for the candidate nearest `name` when it is close enough to be a typo of
/// it: the same first letter, at most a third of name's length in edits (a swap of two adjacent
/// characters counting one); the first such in sorted order on a tie. Else "", and for names of
/// one or two letters or past kMaxSuggested. Names equal to `name` are not suggested.
std::string did_you_mean(std::string_view name, std::vector<std::string> candidates);

}  // namespace lg
