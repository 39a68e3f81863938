#include "tokenizer/pre_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tokenizer/json_fields.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

// GPT-2's pattern, which HF's ByteLevel pre-tokenizer applies when use_regex is true.
constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// Rust char::is_numeric: general category Nd, Nl or No.
bool is_numeric(char32_t c) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

// HF's find_matches for a character predicate: every matching character is a match of its own.
void find_numeric(std::string_view text, std::vector<PatternMatch>& out) {
  size_t emitted = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t at = i;
    if (!is_numeric(utf8::next_code_point(text, i))) continue;
    if (at > emitted) out.push_back({emitted, at, false});
    out.push_back({at, i, true});
    emitted = i;
  }
  if (emitted < text.size()) out.push_back({emitted, text.size(), false});
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const nlohmann::json& j, const JsonFields& fields) {
  PreTokenizer p;
  if (!j.is_null()) p.read(j, fields, "pre_tokenizer");
  return p;
}

void PreTokenizer::read(const nlohmann::json& j, const JsonFields& fields, const std::string& field) {
  const std::string type = fields.type_of(j, field);
  if (type == "Sequence") {
    const nlohmann::json& list = fields.require(j, "pretokenizers", field + ".pretokenizers");
    if (!list.is_array()) fields.fail(field + ".pretokenizers", "expected an array");
    for (size_t k = 0; k < list.size(); ++k) read(list[k], fields, field + ".pretokenizers[" + std::to_string(k) + "]");
    return;
  }
  // After ByteLevel the text is in the byte-level alphabet, which lanegraph never materializes.
  if (byte_level_)
    fields.fail(field + ".type", "unsupported pre-tokenizer \"" + type +
                                     "\" after ByteLevel (lanegraph supports ByteLevel only as the last one)");
  Step step{};
  if (type == "Split") {
    step.kind = Kind::split;
    step.pattern = Pattern::from_json(fields.require(j, "pattern", field + ".pattern"), fields, field + ".pattern");
    const std::string behavior = fields.string(j, "behavior", field);
    if (behavior == "Isolated") step.behavior = Behavior::isolated;
    else if (behavior == "Removed") step.behavior = Behavior::removed;
    else if (behavior == "MergedWithPrevious") step.behavior = Behavior::merged_with_previous;
    else if (behavior == "MergedWithNext") step.behavior = Behavior::merged_with_next;
    else if (behavior == "Contiguous") step.behavior = Behavior::contiguous;
    else fields.fail(field + ".behavior", "unknown behavior \"" + behavior + "\"");
    step.invert = fields.flag(j, "invert", false, field);
    steps_.push_back(std::move(step));
  } else if (type == "ByteLevel") {
    byte_level_ = true;
    if (fields.flag(j, "add_prefix_space", true, field)) {
      step.kind = Kind::byte_level_prefix;
      steps_.push_back(step);
    }
    if (fields.flag(j, "use_regex", true, field)) {
      static const Pattern gpt2 = Pattern::from_json({{"Regex", kGpt2Pattern}}, fields, field);
      step.kind = Kind::gpt2_regex;
      step.pattern = gpt2;
      steps_.push_back(step);
    }
  } else if (type == "Metaspace") {
    step.kind = Kind::metaspace;
    step.replacement = fields.string(j, "replacement", field);
    size_t at = 0;
    if (utf8::first_invalid(step.replacement) != std::string::npos || step.replacement.empty() ||
        (utf8::next_code_point(step.replacement, at), at != step.replacement.size()))
      fields.fail(field + ".replacement", "expected one character");
    if (j.contains("prepend_scheme") && !j["prepend_scheme"].is_null()) {
      const std::string scheme = fields.string(j, "prepend_scheme", field);
      if (scheme == "always") step.prepend = Prepend::always;
      else if (scheme == "first") step.prepend = Prepend::first;
      else if (scheme == "never") step.prepend = Prepend::never;
      else fields.fail(field + ".prepend_scheme", "unknown scheme \"" + scheme + "\" (always, first or never)");
    }
    // Older files say add_prefix_space instead; false means "never" (HF refuses a contradiction).
    if (!fields.flag(j, "add_prefix_space", true, field)) {
      if (step.prepend != Prepend::never && j.contains("prepend_scheme") && !j["prepend_scheme"].is_null())
        fields.fail(field + ".add_prefix_space", "false contradicts prepend_scheme");
      step.prepend = Prepend::never;
    }
    step.metaspace_split = fields.flag(j, "split", true, field);
    step.pattern = Pattern::literal(step.replacement);
    steps_.push_back(std::move(step));
  } else if (type == "Digits") {
    step.kind = Kind::digits;
    step.individual_digits = fields.flag(j, "individual_digits", false, field);
    steps_.push_back(std::move(step));
  } else {
    fields.fail(field + ".type", "unsupported pre-tokenizer \"" + type +
                                     "\" (lanegraph supports Split, ByteLevel, Metaspace, Digits, Sequence)");
  }
}

void PreTokenizer::cut(std::string_view text, bool at_start, const std::vector<PatternMatch>& matches,
                       Behavior behavior, bool invert, const Sink& out) {
  // HF NormalizedString::split: the behavior decides which runs join which, then empty pieces go.
  struct Run {
    size_t start, end;
  };
  thread_local std::vector<Run> runs;
  runs.clear();
  bool previous_match = false;
  auto flag = [&](const PatternMatch& m) { return m.is_match != invert; };
  switch (behavior) {
    case Behavior::isolated:
      for (const auto& m : matches) runs.push_back({m.start, m.end});
      break;
    case Behavior::removed:
      for (const auto& m : matches)
        if (!flag(m)) runs.push_back({m.start, m.end});
      break;
    case Behavior::contiguous:
      for (const auto& m : matches) {
        if (flag(m) == previous_match && !runs.empty()) runs.back().end = m.end;
        else runs.push_back({m.start, m.end});
        previous_match = flag(m);
      }
      break;
    case Behavior::merged_with_previous:
      for (const auto& m : matches) {
        if (flag(m) && !previous_match && !runs.empty()) runs.back().end = m.end;
        else runs.push_back({m.start, m.end});
        previous_match = flag(m);
      }
      break;
    case Behavior::merged_with_next:
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        if (flag(*it) && !previous_match && !runs.empty()) runs.back().start = it->start;
        else runs.push_back({it->start, it->end});
        previous_match = flag(*it);
      }
      std::reverse(runs.begin(), runs.end());
      break;
  }
  for (const Run& r : runs)
    if (r.end > r.start) out({text.substr(r.start, r.end - r.start), at_start && r.start == 0});
}

void PreTokenizer::apply(const Step& step, const PreToken& in, const Sink& out, std::deque<std::string>& arena) const {
  thread_local std::vector<PatternMatch> matches;
  matches.clear();
  switch (step.kind) {
    case Kind::split:
    case Kind::gpt2_regex:
      if (step.behavior == Behavior::isolated) {  // every run is a piece: stream them
        step.pattern.find_matches(in.text, [&](const PatternMatch& m) {
          if (m.end > m.start) out({in.text.substr(m.start, m.end - m.start), in.at_start && m.start == 0});
        });
        return;
      }
      step.pattern.find_matches(in.text, matches);
      cut(in.text, in.at_start, matches, step.behavior, step.invert, out);
      return;
    case Kind::digits:
      find_numeric(in.text, matches);
      cut(in.text, in.at_start, matches, step.individual_digits ? Behavior::isolated : Behavior::contiguous, false,
          out);
      return;
    case Kind::byte_level_prefix:
      if (in.text[0] == ' ') {
        out(in);
      } else {
        arena.emplace_back();
        arena.back().reserve(in.text.size() + 1);
        arena.back().append(" ").append(in.text);
        out({arena.back(), in.at_start});
      }
      return;
    case Kind::metaspace: {
      // HF Metaspace: spaces become the replacement, which is prepended per the scheme, and the
      // text is split before each replacement character (MergedWithNext).
      std::string& s = arena.emplace_back();
      const std::string& rep = step.replacement;
      const bool starts_with_rep = in.text.substr(0, rep.size()) == rep || in.text[0] == ' ';
      if (!starts_with_rep && (step.prepend == Prepend::always || (step.prepend == Prepend::first && in.at_start)))
        s += rep;
      for (const char c : in.text) {
        if (c == ' ') s += rep;
        else s += c;
      }
      if (!step.metaspace_split) {
        out({s, in.at_start});
        return;
      }
      step.pattern.find_matches(s, matches);
      cut(s, in.at_start, matches, Behavior::merged_with_next, false, out);
      return;
    }
  }
}

void PreTokenizer::split(std::string_view text, bool at_start, std::vector<PreToken>& out,
                         std::deque<std::string>& arena) const {
  split(text, at_start, arena, [&](const PreToken& p) { out.push_back(p); });
}

void PreTokenizer::split(std::string_view text, bool at_start, std::deque<std::string>& arena,
                         const std::function<void(const PreToken&)>& emit) const {
  if (text.empty()) return;
  if (steps_.empty()) {
    emit({text, at_start});
    return;
  }
  // Every step but the last collects its output for the next one; the last one emits.
  std::vector<PreToken> a(1, PreToken{text, at_start}), b;
  const Sink collect = [&](const PreToken& p) { b.push_back(p); };
  for (size_t k = 0; k + 1 < steps_.size(); ++k) {
    b.clear();
    for (const PreToken& p : a) apply(steps_[k], p, collect, arena);
    std::swap(a, b);
  }
  for (const PreToken& p : a) apply(steps_.back(), p, emit, arena);
}

}  // namespace lg::tokenizer
