#include "tokenizer/tokenizer_json.h"

#include "support/error.h"
#include "support/json_file.h"

namespace lg::tokenizer {
namespace {

using nlohmann::json;

// Builds a DOM like nlohmann's own parser, except for the two captured members.
class Sax : public nlohmann::json_sax<json> {
 public:
  Sax(TokenizerJson& out, const std::string& file) : out_(out), file_(file) {}

  bool null() override { return value(json()); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(number_integer_t v) override { return value(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return value(json(v)); }
  bool binary(binary_t& v) override { return value(json::binary(v)); }

  bool string(string_t& v) override {
    if (mode_ == Mode::merges && merge_depth_ == 0) {  // legacy "left right"
      const size_t sp = v.find(' ');
      if (sp == std::string::npos || v.find(' ', sp + 1) != std::string::npos)
        fail(merge_field(), "expected \"left right\" with one space, got \"" + v + "\"");
      out_.merges.add(std::string_view(v).substr(0, sp), std::string_view(v).substr(sp + 1));
      return true;
    }
    if (mode_ == Mode::merges) {
      if (merge_parts_ >= 2) fail(merge_field(), "expected [left, right]");
      if (merge_parts_++ == 0) merge_left_ = std::move(v);
      else out_.merges.add(merge_left_, v);
      return true;
    }
    return value(json(std::move(v)));
  }

  bool start_object(std::size_t) override {
    if (mode_ != Mode::dom) fail(capture_field(), "unexpected object");
    if (at_model_member("vocab")) {
      mode_ = Mode::vocab;
      out_.has_vocab = true;
      return true;
    }
    return open(json::object());
  }
  bool key(string_t& k) override {
    if (mode_ == Mode::vocab) {
      vocab_key_ = std::move(k);
      return true;
    }
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    if (mode_ == Mode::vocab) {
      mode_ = Mode::dom;
      key_.clear();
      return true;
    }
    return close();
  }

  bool start_array(std::size_t) override {
    if (mode_ == Mode::vocab) fail(capture_field(), "id must be an integer in [0, 2^24)");
    if (mode_ == Mode::merges) {
      if (merge_depth_ > 0) fail(merge_field(), "expected \"left right\" or [left, right]");
      merge_depth_ = 1;
      merge_parts_ = 0;
      return true;
    }
    if (at_model_member("merges")) {
      mode_ = Mode::merges;
      out_.has_merges = true;
      return true;
    }
    return open(json::array());
  }
  bool end_array() override {
    if (mode_ == Mode::merges) {
      if (merge_depth_ == 1) {
        if (merge_parts_ != 2) fail(merge_field(), "expected [left, right]");
        merge_depth_ = 0;
        return true;
      }
      mode_ = Mode::dom;
      key_.clear();
      return true;
    }
    return close();
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    throw Error(file_ + ": not valid JSON (byte " + std::to_string(position) + "): " + json_error_text(e));
  }

 private:
  enum class Mode { dom, vocab, merges };
  static constexpr size_t kMaxDepth = 64;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(file_ + ": " + field + ": " + what);
  }
  std::string capture_field() const {
    return mode_ == Mode::vocab ? "model.vocab[\"" + vocab_key_ + "\"]" : merge_field();
  }
  std::string merge_field() const {
    // Inside a pair whose right part is in, that merge is already counted.
    const size_t done = out_.merges.size() - (merge_depth_ > 0 && merge_parts_ == 2 ? 1 : 0);
    return "model.merges[" + std::to_string(done) + "]";
  }

  // True when the value about to open is root.model.<member>.
  bool at_model_member(const char* member) const {
    return stack_.size() == 2 && stack_[0]->is_object() && model_key_ == "model" && stack_[1]->is_object() &&
           key_ == member;
  }

  bool value(json v) {
    if (mode_ == Mode::vocab) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= Vocab::kMaxId)
        fail(capture_field(), "id must be an integer in [0, 2^24)");
      // Two texts of one id: the first lost its id, and the load failed later for a missing byte.
      if (const std::string* other = out_.vocab.text(v.get<int32_t>()); other && *other != vocab_key_)
        fail(capture_field(), "id " + std::to_string(v.get<int32_t>()) + " is model.vocab[" + json(*other).dump() +
                                  "]'s too (an id names one token)");
      out_.vocab.add(std::move(vocab_key_), v.get<int32_t>());
      return true;
    }
    if (mode_ == Mode::merges) fail(merge_field(), "expected \"left right\" or [left, right], got " + v.dump());
    if (stack_.empty()) {
      out_.doc = std::move(v);
      return true;
    }
    json& top = *stack_.back();
    if (top.is_object()) top[key_] = std::move(v);
    else top.push_back(std::move(v));
    return true;
  }

  bool open(json container) {
    // Components nest a few levels; a bound keeps recursive readers (and dump() in error
    // messages) off deep stacks.
    if (stack_.size() >= kMaxDepth) throw Error(file_ + ": nested more than " + std::to_string(kMaxDepth) + " levels deep");
    json* slot;
    if (stack_.empty()) {
      out_.doc = std::move(container);
      slot = &out_.doc;
    } else if (stack_.back()->is_object()) {
      json& top = *stack_.back();
      if (stack_.size() == 1) model_key_ = key_;
      top[key_] = std::move(container);
      slot = &top[key_];
    } else {
      stack_.back()->push_back(std::move(container));
      slot = &stack_.back()->back();
    }
    stack_.push_back(slot);
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  TokenizerJson& out_;
  const std::string& file_;
  std::vector<json*> stack_;
  std::string key_, model_key_, vocab_key_, merge_left_;
  Mode mode_ = Mode::dom;
  int merge_depth_ = 0;
  int merge_parts_ = 0;
};

}  // namespace

TokenizerJson TokenizerJson::parse(std::istream& in, const std::string& file) {
  TokenizerJson out;
  Sax sax(out, file);
  json::sax_parse(in, &sax);
  return out;
}

TokenizerJson TokenizerJson::parse(std::string_view text, const std::string& file) {
  TokenizerJson out;
  Sax sax(out, file);
  json::sax_parse(text, &sax);
  return out;
}

}  // namespace lg::tokenizer
