#include "chat/ordered_json.h"

#include "support/json_file.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lg::chat {

namespace {

using json = nlohmann::ordered_json;

// Builds the document from SAX events. An array or object is placed in its parent when it opens
// and filled in place, so the stack of open ones points into their parents' storage: safe, as a
// parent gains no sibling of an open child (which could move it) until the child is closed.
class OrderedBuilder : public nlohmann::json_sax<json> {
 public:
  explicit OrderedBuilder(size_t max_depth) : max_depth_(max_depth) {}

  json root;

  bool null() override { return place(json(nullptr)); }
  bool boolean(bool v) override { return place(json(v)); }
  bool number_integer(number_integer_t v) override { return place(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return place(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return place(json(v)); }
  bool string(string_t& v) override { return place(json(std::move(v))); }
  bool binary(binary_t& v) override { return place(json::binary(std::move(v))); }
  bool start_object(std::size_t) override {
    check_depth();
    json* node = slot(json::object());
    stack_.push_back({node, {}, {}});
    return true;
  }
  bool key(string_t& k) override {
    stack_.back().key = std::move(k);
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    check_depth();
    json* node = slot(json::array());
    stack_.push_back({node, {}, {}});
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  // Rethrown as its own type (parse_error; out_of_range for a number past double), not sliced.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    if (const auto* p = dynamic_cast<const json::parse_error*>(&ex)) throw *p;
    if (const auto* o = dynamic_cast<const json::out_of_range*>(&ex)) throw *o;
    throw ex;
  }

 private:
  struct Open {
    json* node;
    std::unordered_map<std::string, size_t> index;  // key -> position, objects only
    std::string key;                                // the key whose value comes next
  };

  // Called as an array or object opens: it is the (stack size + 1)th level.
  void check_depth() const {
    if (stack_.size() >= max_depth_)
      throw JsonTooDeep("the JSON nests more than " + std::to_string(max_depth_) + " levels deep");
  }

  bool place(json&& v) {
    slot(std::move(v));
    return true;
  }

  // Puts `v` where the next value goes and returns where it now lives.
  json* slot(json&& v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Open& top = stack_.back();
    if (top.node->is_array()) {
      auto& a = top.node->get_ref<json::array_t&>();
      a.push_back(std::move(v));
      return &a.back();
    }
    // ordered_map is a vector of (key, value) pairs: append, or overwrite a repeated key's value.
    auto& items = static_cast<std::vector<std::pair<const std::string, json>>&>(top.node->get_ref<json::object_t&>());
    const auto [it, fresh] = top.index.try_emplace(top.key, items.size());
    if (!fresh) {
      items[it->second].second = std::move(v);
      return &items[it->second].second;
    }
    items.emplace_back(top.key, std::move(v));
    return &items.back().second;
  }

  std::vector<Open> stack_;
  size_t max_depth_;
};

}  // namespace

nlohmann::ordered_json parse_ordered_json(std::string_view text, size_t max_depth) {
  refuse_nul_byte(text);
  OrderedBuilder b(max_depth);
  json::sax_parse(text, &b);
  return std::move(b.root);
}

}  // namespace lg::chat
