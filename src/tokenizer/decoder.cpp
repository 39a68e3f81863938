#include "tokenizer/decoder.h"

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a ByteFallback token "<0xXX>", or -1. HF parses the two characters with Rust's
// u8::from_str_radix(_, 16), which also takes a leading '+' ("<0x+A>" is byte 10).
int fallback_byte(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  if (t[3] == '+') return hex_digit(t[4]);
  const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string replace_all(std::string_view token, const Pattern& pattern, const std::string& content) {
  thread_local std::vector<PatternMatch> matches;
  matches.clear();
  pattern.find_matches(token, matches);
  std::string out;
  out.reserve(token.size());
  for (const PatternMatch& m : matches) {
    if (m.is_match) out += content;
    else out.append(token.substr(m.start, m.end - m.start));
  }
  return out;
}

// HF Strip::decode_chain on one token. Where the reference would panic (more to strip than the
// token has), the token becomes empty.
std::string strip_token(std::string_view token, const std::string& c, size_t start, size_t stop) {
  std::vector<size_t> at;  // byte offset of each character, plus the end
  for (size_t i = 0; i < token.size();) {
    at.push_back(i);
    utf8::next_code_point(token, i);
  }
  const size_t n = at.size();
  at.push_back(token.size());
  auto is_c = [&](size_t k) { return token.substr(at[k], at[k + 1] - at[k]) == c; };
  size_t first = 0;
  for (size_t k = 0; k < n && k < start && is_c(k); ++k) first = k + 1;
  size_t last = n;
  for (size_t k = 0; k < stop && k < n && is_c(n - k - 1); ++k) last = n - k - 1;
  if (first >= last) return {};
  return std::string(token.substr(at[first], at[last] - at[first]));
}

// HF Metaspace::decode_chain on one token: the replacement becomes a space, or is dropped.
std::string metaspace_token(std::string_view token, const std::string& replacement, bool drop) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    if (token.substr(i, replacement.size()) == replacement) {
      if (!drop) out += ' ';
      i += replacement.size();
    } else {
      out += token[i++];
    }
  }
  return out;
}

std::string one_char(const nlohmann::json& j, const char* key, const JsonFields& fields, const std::string& field) {
  std::string s = fields.string(j, key, field);
  size_t i = 0;
  if (s.empty() || utf8::first_invalid(s) != std::string::npos || (utf8::next_code_point(s, i), i != s.size()))
    fields.fail(field + "." + key, "expected one character, got \"" + s + "\"");
  return s;
}

}  // namespace

Decoder Decoder::from_json(const nlohmann::json& j, const JsonFields& fields) {
  if (j.is_null()) fields.fail("decoder", "missing (lanegraph needs a decoder to turn tokens into text)");
  Decoder d;
  d.read(j, fields, "decoder");
  return d;
}

void Decoder::read(const nlohmann::json& j, const JsonFields& fields, const std::string& field) {
  const std::string type = fields.type_of(j, field);
  if (type == "Sequence") {
    const nlohmann::json& list = fields.require(j, "decoders", field + ".decoders");
    if (!list.is_array()) fields.fail(field + ".decoders", "expected an array");
    for (size_t k = 0; k < list.size(); ++k) read(list[k], fields, field + ".decoders[" + std::to_string(k) + "]");
    return;
  }
  const bool fused = fuse_ != Fuse::none;
  std::vector<Step>& steps = fused ? text_steps_ : token_steps_;
  auto after_fuse = [&](const std::string& what) {
    fields.fail(field + ".type", "unsupported decoder \"" + type + "\" " + what +
                                     " after Fuse or ByteLevel (it needs the whole text, lanegraph streams it)");
  };
  if (type == "ByteLevel") {
    if (fused) after_fuse("");
    fuse_ = Fuse::byte_level;
    byte_level_ = true;
  } else if (type == "Fuse") {
    if (!fused) fuse_ = Fuse::fuse;
  } else if (type == "ByteFallback") {
    if (fused) after_fuse("");
    steps.push_back({Kind::byte_fallback, {}, {}});
  } else if (type == "Replace") {
    Pattern pattern = Pattern::from_json(fields.require(j, "pattern", field + ".pattern"), fields, field + ".pattern");
    if (fused && !pattern.is_literal()) after_fuse("with a Regex pattern");
    steps.push_back({Kind::replace, std::move(pattern), fields.string(j, "content", field)});
  } else if (type == "Strip") {
    Step s{Kind::strip, {}, one_char(j, "content", fields, field)};
    s.start = fields.count(j, "start", 0, field);
    s.stop = fields.count(j, "stop", 0, field);
    steps.push_back(std::move(s));
  } else if (type == "Metaspace") {
    Step s{Kind::metaspace, {}, one_char(j, "replacement", fields, field)};
    std::string scheme = "always";
    if (j.contains("prepend_scheme") && !j["prepend_scheme"].is_null()) scheme = fields.string(j, "prepend_scheme", field);
    if (scheme != "always" && scheme != "first" && scheme != "never")
      fields.fail(field + ".prepend_scheme", "unknown scheme \"" + scheme + "\" (always, first or never)");
    if (!fields.flag(j, "add_prefix_space", true, field)) scheme = "never";
    s.drop_in_first = scheme != "never";
    steps.push_back(std::move(s));
  } else {
    fields.fail(field + ".type", "unsupported decoder \"" + type +
                                     "\" (lanegraph supports ByteLevel, Replace, ByteFallback, Fuse, Strip, "
                                     "Metaspace, Sequence)");
  }
}

std::string Decoder::token_bytes(std::string_view token) const {
  std::string t(token);
  for (const Step& s : token_steps_) {
    switch (s.kind) {
      case Kind::replace: t = replace_all(t, s.pattern, s.content); break;
      case Kind::strip: t = strip_token(t, s.content, s.start, s.stop); break;
      case Kind::metaspace: t = metaspace_token(t, s.content, false); break;
      case Kind::byte_fallback:
        if (const int b = fallback_byte(t); b >= 0) t = std::string(1, static_cast<char>(b));
        break;
      default: break;
    }
  }
  if (fuse_ == Fuse::byte_level) t = byte_level::decode_token(t);
  for (const Step& s : text_steps_)
    if (s.kind == Kind::replace) t = replace_all(t, s.pattern, s.content);
  return t;
}

// --- Streaming ---------------------------------------------------------------------------------

struct Decoder::Stream::State {
  explicit State(const Decoder& d)
      : pending(d.token_steps_.size()), index(d.token_steps_.size(), 0), held(d.text_steps_.size()),
        stripped(d.text_steps_.size(), 0), lead_done(d.text_steps_.size(), false) {}
  std::vector<std::string> pending;  // per token step: ByteFallback's run of bytes
  std::vector<size_t> index;         // per token step: tokens seen (Metaspace's first token)
  std::string byte_level;            // ByteLevel: bytes not yet complete UTF-8
  std::vector<std::string> held;     // per text step: Replace's possible match start; Strip's trailing run
  std::vector<size_t> stripped;      // per text step: Strip's leading characters removed so far
  std::vector<bool> lead_done;       // per text step: Strip met a character it keeps
};

Decoder::Stream::Stream(const Decoder& decoder) : decoder_(&decoder), state_(std::make_unique<State>(decoder)) {}
Decoder::Stream::~Stream() = default;
Decoder::Stream::Stream(Stream&&) noexcept = default;
Decoder::Stream& Decoder::Stream::operator=(Stream&&) noexcept = default;

void Decoder::Stream::push(std::string_view token, std::string& out) { feed_token(0, token, out); }

void Decoder::Stream::feed_token(size_t k, std::string_view token, std::string& out) {
  const auto& steps = decoder_->token_steps_;
  if (k == steps.size()) {
    feed_fused(token, out);
    return;
  }
  const Step& s = steps[k];
  switch (s.kind) {
    case Kind::replace:
      feed_token(k + 1, replace_all(token, s.pattern, s.content), out);
      return;
    case Kind::strip:
      feed_token(k + 1, strip_token(token, s.content, s.start, s.stop), out);
      return;
    case Kind::metaspace: {
      const bool first = state_->index[k]++ == 0;
      feed_token(k + 1, metaspace_token(token, s.content, first && s.drop_in_first), out);
      return;
    }
    case Kind::byte_fallback:
      if (const int b = fallback_byte(token); b >= 0) {
        state_->pending[k].push_back(static_cast<char>(b));
        return;
      }
      flush_bytes(k, out);
      feed_token(k + 1, token, out);
      return;
    default:
      return;  // fuse kinds never sit among the token steps
  }
}

void Decoder::Stream::settle(std::string& out) {
  for (size_t k = 0; k < decoder_->token_steps_.size(); ++k) {
    const bool whole = utf8::first_invalid(state_->pending[k]) == std::string_view::npos;
    if (decoder_->token_steps_[k].kind == Kind::byte_fallback && whole) flush_bytes(k, out);
  }
}

void Decoder::Stream::flush_bytes(size_t k, std::string& out) {
  std::string run = std::move(state_->pending[k]);
  state_->pending[k].clear();
  if (run.empty()) return;
  if (utf8::first_invalid(run) == std::string_view::npos) {
    feed_token(k + 1, run, out);
  } else {
    for (size_t i = 0; i < run.size(); ++i) feed_token(k + 1, utf8::kReplacement, out);
  }
}

void Decoder::Stream::feed_fused(std::string_view token, std::string& out) {
  if (decoder_->fuse_ != Fuse::byte_level) {
    feed_text(0, token, out);
    return;
  }
  std::string& pending = state_->byte_level;
  pending += byte_level::decode_token(token);
  std::string text;
  const size_t used = utf8::append_lossy(pending, text, /*hold_incomplete_tail=*/true);
  pending.erase(0, used);
  feed_text(0, text, out);
}

void Decoder::Stream::feed_text(size_t k, std::string_view text, std::string& out) {
  const auto& steps = decoder_->text_steps_;
  if (k == steps.size()) {
    out.append(text);
    return;
  }
  if (text.empty()) return;
  const Step& s = steps[k];
  std::string& held = state_->held[k];
  switch (s.kind) {
    case Kind::replace: {
      // Literal pattern over a stream: hold back the earliest tail that could still start a match.
      const std::string& p = s.pattern.literal_text();
      std::string buf = held + std::string(text);
      std::string emit;
      size_t i = 0;
      while (true) {
        const size_t at = buf.find(p, i);
        if (at == std::string::npos) break;
        emit.append(buf, i, at - i).append(s.content);
        i = at + p.size();
      }
      size_t j = i;
      while (j < buf.size() && p.compare(0, buf.size() - j, buf, j, buf.size() - j) != 0) ++j;
      emit.append(buf, i, j - i);
      held = buf.substr(j);
      feed_text(k + 1, emit, out);
      return;
    }
    case Kind::strip: {
      std::string emit;
      for (size_t i = 0; i < text.size();) {
        const size_t at = i;
        utf8::next_code_point(text, i);
        const std::string_view ch = text.substr(at, i - at);
        const bool is_c = ch == s.content;
        if (!state_->lead_done[k]) {
          if (is_c && state_->stripped[k] < s.start) {
            ++state_->stripped[k];
            continue;
          }
          state_->lead_done[k] = true;
        }
        if (s.stop == 0) {
          emit.append(ch);
        } else if (is_c) {
          held.append(ch);
          // Only the last `stop` of a trailing run can be stripped: release the rest.
          if (held.size() > s.stop * s.content.size()) {
            emit.append(held, 0, s.content.size());
            held.erase(0, s.content.size());
          }
        } else {
          emit.append(held).append(ch);
          held.clear();
        }
      }
      feed_text(k + 1, emit, out);
      return;
    }
    case Kind::metaspace:
      // After Fuse the text is the first (and only) token.
      feed_text(k + 1, metaspace_token(text, s.content, s.drop_in_first), out);
      return;
    default:
      return;  // refused at load
  }
}

void Decoder::Stream::finish(std::string& out) {
  for (size_t k = 0; k < decoder_->token_steps_.size(); ++k)
    if (decoder_->token_steps_[k].kind == Kind::byte_fallback) flush_bytes(k, out);
  if (decoder_->fuse_ == Fuse::byte_level && !state_->byte_level.empty()) {
    std::string text;
    utf8::append_lossy(state_->byte_level, text, /*hold_incomplete_tail=*/false);
    state_->byte_level.clear();
    feed_text(0, text, out);
  }
  for (size_t k = 0; k < decoder_->text_steps_.size(); ++k) {
    const Step& s = decoder_->text_steps_[k];
    std::string held = std::move(state_->held[k]);
    state_->held[k].clear();
    // A held Replace tail never completed a match: it passes as is. A held Strip run is the
    // text's trailing `content`, which Strip removes.
    if (s.kind == Kind::replace) feed_text(k + 1, held, out);
  }
  *state_ = State(*decoder_);
}

}  // namespace lg::tokenizer
