// Readable CLI11 validators for the numeric options of every subcommand. CLI11's own
// (PositiveNumber, Range) say "Value 0 not in range ..." or "... must be a positive value";
// these say what the option wants and what it got. CLI11 prefixes the option's name, so a
// user reads "--max-tokens: must be at least 1, got 0" and exit 2 (a usage error, main.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace lg::cli {

/// Parses `s` as a whole base-10 int64 (no sign but '-', no trailing text).
inline bool parse_int64(const std::string& s, int64_t& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end && !s.empty();
}

/// An integer option in [lo, hi]: "must be at least lo, got X" (hi unbounded) or
/// "must be between lo and hi, got X"; "must be an integer, got 'X'" for text.
inline CLI::Validator int_in_range(int64_t lo, int64_t hi = INT64_MAX) {
  const std::string want = hi == INT64_MAX ? "at least " + std::to_string(lo)
                                           : "between " + std::to_string(lo) + " and " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, want](std::string& s) -> std::string {
        int64_t v = 0;
        if (!parse_int64(s, v)) return "must be an integer " + want + ", got '" + s + "'";
        if (v < lo || v > hi) return "must be " + want + ", got " + s;
        return {};
      },
      "INT " + (hi == INT64_MAX ? ">= " + std::to_string(lo) : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"));
}

/// An integer option >= 1 (token counts, context lengths, steps).
inline CLI::Validator at_least_one() { return int_in_range(1); }

/// --max-seq: a context of 1 to 2^31 - 1 positions (positions are int32 in every program and lane;
/// lg ir printed a cache of 999999999999 positions and exited 0).
inline CLI::Validator context_length() { return int_in_range(1, INT32_MAX); }

/// --max-seq of the commands that answer requests (lg serve, lg batch): room for a one-token
/// prompt and one generated token, at least 2 (with 1, lg serve started and refused every request).
inline CLI::Validator request_context_length() {
  const CLI::Validator range = int_in_range(2, INT32_MAX);
  return CLI::Validator(
      [range](std::string& s) {
        const std::string m = range(s);
        return m.empty() ? m : m + " (a request needs a prompt token and a generated one)";
      },
      "INT in [2, 2147483647]");
}

/// How a whole option value reads as a double (std::stod over all of it).
enum class NumberText { kNumber, kNotANumber, kPastDouble };
inline NumberText read_whole_double(const std::string& s, double& v) {
  try {
    size_t used = 0;
    v = std::stod(s, &used);
    return used == s.size() ? NumberText::kNumber : NumberText::kNotANumber;
  } catch (const std::invalid_argument&) {
    return NumberText::kNotANumber;
  } catch (const std::out_of_range&) {  // 1e400
    return NumberText::kPastDouble;
  }
}

/// A real-number option >= 0 (thresholds): "must be a number >= 0, got X".
inline CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        double v = 0;
        if (read_whole_double(s, v) != NumberText::kNumber) return "must be a number >= 0, got '" + s + "'";
        if (!(v >= 0)) return "must be a number >= 0, got " + s;
        return {};
      },
      "NUMBER >= 0");
}

/// A finite real-number option in [lo, hi], or (lo, hi] when `lo_open` (sampling knobs): "must be a
/// number in (0, 1], got nan"; text is "got 'abc'". inf and nan are refused here, at parse time, so
/// that every bad value is the same usage error (exit 2) whatever the option.
inline CLI::Validator finite_number_in(double lo, double hi, bool lo_open = false) {
  const std::string range = fmt::format("{}{}, {}]", lo_open ? "(" : "[", lo, hi);
  return CLI::Validator(
      [lo, hi, lo_open, range](std::string& s) -> std::string {
        double v = 0;
        const NumberText read = read_whole_double(s, v);
        if (read == NumberText::kNotANumber) return "must be a number in " + range + ", got '" + s + "'";
        if (read == NumberText::kPastDouble) return "must be a number in " + range + ", got " + s;
        if (!std::isfinite(v) || v > hi || (lo_open ? v <= lo : v < lo)) return "must be a number in " + range + ", got " + s;
        return {};
      },
      "NUMBER in " + range);
}

/// A finite real-number option > 0 with no upper bound (repetition penalties): "must be a finite
/// number > 0, got X".
inline CLI::Validator positive_finite_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        double v = 0;
        const NumberText read = read_whole_double(s, v);
        if (read == NumberText::kNotANumber) return "must be a finite number > 0, got '" + s + "'";
        if (read == NumberText::kPastDouble || !std::isfinite(v) || !(v > 0)) return "must be a finite number > 0, got " + s;
        return {};
      },
      "NUMBER > 0");
}

/// A seed option: an integer in [-2^63, 2^64), as a request's "seed" is (server/request.cpp: a
/// negative one seeds by its 64 bits, -1 as 2^64 - 1, as OpenAI's API and vLLM take it), rewritten
/// to its unsigned value for the uint64_t option.
inline CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const char* end = s.data() + s.size();
        if (!s.empty() && s[0] == '-') {
          int64_t v = 0;
          auto [p, ec] = std::from_chars(s.data(), end, v);
          if (ec == std::errc::result_out_of_range) return "must be an integer in [-2^63, 2^64), got " + s;
          if (ec != std::errc() || p != end) return "must be an integer, got '" + s + "'";
          s = std::to_string(static_cast<uint64_t>(v));
          return {};
        }
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), end, v);
        if (ec == std::errc::result_out_of_range) return "must be an integer in [-2^63, 2^64), got " + s;
        if (ec != std::errc() || p != end || s.empty()) return "must be an integer, got '" + s + "'";
        return {};
      },
      "INT");
}

}  // namespace lg::cli
