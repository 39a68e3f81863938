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

/// "; did you mean 'X'?" for the candidate nearest `name` when it is close enough to be a typo of
/// it (at most a third of name's length in edits, a swap of two adjacent characters counting one;
/// the first such in sorted order on a tie), else "". Names of one or two letters get none; names
/// equal to `name` are not suggested.
std::string did_you_mean(std::string_view name, std::vector<std::string> candidates);

}  // namespace lg
