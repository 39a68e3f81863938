// Loading tokenizer.json and the encode/decode pipeline: added tokens -> NFC -> split regex ->
// byte-level BPE; decode through the byte-level alphabet and lossy UTF-8.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "support/error.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/split_regex.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {

using nlohmann::json;

struct Tokenizer::Impl {
  std::string file;
  bool nfc = false;
  std::unique_ptr<SplitRegex> split;
  std::unique_ptr<Bpe> bpe;
  AddedTokenMatcher raw_added;         // added tokens with normalized = false
  AddedTokenMatcher normalized_added;  // added tokens with normalized = true
  std::unordered_map<std::string, int32_t> added_ids;  // content -> id
  // Per id: the token in tokenizer.json form, the bytes it decodes to, whether it exists.
  std::vector<std::string> token_text;
  std::vector<std::string> token_bytes;
  std::vector<uint8_t> exists;
  std::vector<uint8_t> special;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(file + ": " + field + ": " + what);
  }
  const json& require(const json& obj, const char* key, const std::string& field) const {
    if (!obj.is_object() || !obj.contains(key)) fail(field, "missing");
    return obj[key];
  }
  std::string type_of(const json& obj, const std::string& field) const {
    const json& t = require(obj, "type", field + ".type");
    if (!t.is_string()) fail(field + ".type", "expected a string");
    return t.get<std::string>();
  }
  void expect_flag(const json& obj, const char* key, bool want, const std::string& field) const {
    if (!obj.contains(key)) return;
    if (obj[key] != want)
      fail(field + "." + key, "unsupported value " + obj[key].dump() + " (lanegraph supports " +
                                  (want ? "true" : "false") + ")");
  }

  void read_normalizer(const json& j);
  void read_pre_tokenizer(const json& j);
  void read_post_processor(const json& j);
  void read_decoder(const json& j);
  void read_added_tokens(const json& j);
  void set_token(int32_t id, const std::string& text);
  void encode_plain(std::string_view text, std::vector<int32_t>& ids, std::vector<std::string_view>& pieces) const;
};

void Tokenizer::Impl::read_normalizer(const json& j) {
  if (j.is_null()) return;
  const std::string type = type_of(j, "normalizer");
  if (type != "NFC")
    fail("normalizer.type", "unsupported normalizer \"" + type + "\" (lanegraph supports NFC or none)");
  nfc = true;
}

void Tokenizer::Impl::read_pre_tokenizer(const json& j) {
  const std::string f = "pre_tokenizer";
  if (j.is_null()) fail(f, "missing (lanegraph supports Sequence[Split, ByteLevel])");
  if (const std::string type = type_of(j, f); type != "Sequence")
    fail(f + ".type", "unsupported pre-tokenizer \"" + type + "\" (lanegraph supports Sequence[Split, ByteLevel])");
  const json& list = require(j, "pretokenizers", f + ".pretokenizers");
  if (!list.is_array() || list.size() != 2)
    fail(f + ".pretokenizers", "expected exactly [Split, ByteLevel]");
  const std::string s = f + ".pretokenizers[0]";
  if (const std::string type = type_of(list[0], s); type != "Split")
    fail(s + ".type", "unsupported pre-tokenizer \"" + type + "\" (expected Split)");
  const json& pattern = require(list[0], "pattern", s + ".pattern");
  if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
    fail(s + ".pattern", "expected {\"Regex\": \"...\"}, got " + pattern.dump());
  const json& behavior = require(list[0], "behavior", s + ".behavior");
  if (behavior != "Isolated")
    fail(s + ".behavior", "unsupported behavior " + behavior.dump() + " (lanegraph supports \"Isolated\")");
  expect_flag(list[0], "invert", false, s);
  split = std::make_unique<SplitRegex>(pattern["Regex"].get<std::string>(), file + ": " + s + ".pattern.Regex");
  const std::string b = f + ".pretokenizers[1]";
  if (const std::string type = type_of(list[1], b); type != "ByteLevel")
    fail(b + ".type", "unsupported pre-tokenizer \"" + type + "\" (expected ByteLevel)");
  expect_flag(list[1], "add_prefix_space", false, b);
  expect_flag(list[1], "use_regex", false, b);
}

void Tokenizer::Impl::read_post_processor(const json& j) {
  // Encoding mirrors add_special_tokens=False, so only processors that add nothing are accepted.
  if (j.is_null()) return;
  if (const std::string type = type_of(j, "post_processor"); type != "ByteLevel")
    fail("post_processor.type", "unsupported post-processor \"" + type + "\" (lanegraph supports ByteLevel or none)");
}

void Tokenizer::Impl::read_decoder(const json& j) {
  if (j.is_null()) fail("decoder", "missing (lanegraph supports ByteLevel)");
  if (const std::string type = type_of(j, "decoder"); type != "ByteLevel")
    fail("decoder.type", "unsupported decoder \"" + type + "\" (lanegraph supports ByteLevel)");
}

void Tokenizer::Impl::set_token(int32_t id, const std::string& text) {
  const auto i = static_cast<size_t>(id);
  if (i >= exists.size()) {
    exists.resize(i + 1, 0);
    special.resize(i + 1, 0);
    token_text.resize(i + 1);
    token_bytes.resize(i + 1);
  }
  exists[i] = 1;
  token_text[i] = text;
  token_bytes[i] = byte_level::decode_token(text);
}

void Tokenizer::Impl::read_added_tokens(const json& j) {
  if (j.is_null()) return;
  if (!j.is_array()) fail("added_tokens", "expected an array");
  std::vector<AddedToken> raw, normalized;
  for (size_t k = 0; k < j.size(); ++k) {
    const std::string f = "added_tokens[" + std::to_string(k) + "]";
    const json& e = j[k];
    AddedToken t;
    const json& id = require(e, "id", f + ".id");
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      fail(f + ".id", "expected an integer in [0, 2^31)");
    t.id = id.get<int32_t>();
    const json& content = require(e, "content", f + ".content");
    if (!content.is_string() || content.get_ref<const std::string&>().empty())
      fail(f + ".content", "expected a non-empty string");
    t.content = content.get<std::string>();
    if (utf8::first_invalid(t.content) != std::string_view::npos) fail(f + ".content", "not valid UTF-8");
    auto flag = [&](const char* key, bool& out) {
      if (!e.contains(key)) return;
      if (!e[key].is_boolean()) fail(f + "." + key, "expected true or false");
      out = e[key].get<bool>();
    };
    flag("special", t.special);
    flag("single_word", t.single_word);
    flag("lstrip", t.lstrip);
    flag("rstrip", t.rstrip);
    flag("normalized", t.normalized);
    if (t.normalized && nfc) t.content = tokenizer::nfc(t.content);  // matched in normalized text
    set_token(t.id, content.get<std::string>());
    special[static_cast<size_t>(t.id)] = t.special;
    added_ids[content.get<std::string>()] = t.id;
    (t.normalized ? normalized : raw).push_back(std::move(t));
  }
  raw_added = AddedTokenMatcher(raw);
  normalized_added = AddedTokenMatcher(normalized);
}

Tokenizer Tokenizer::from_file(const std::filesystem::path& tokenizer_json) {
  auto impl = std::make_unique<Impl>();
  impl->file = tokenizer_json.string();
  std::ifstream in(tokenizer_json, std::ios::binary);
  if (!in) throw Error(impl->file + ": cannot open");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw Error(impl->file + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(impl->file + ": expected a JSON object at the top");

  const json& model = impl->require(j, "model", "model");
  if (const std::string type = impl->type_of(model, "model"); type != "BPE")
    impl->fail("model.type", "unsupported model \"" + type + "\" (lanegraph supports BPE)");
  impl->bpe = std::make_unique<Bpe>(model, impl->file);
  int32_t max_id = -1;
  for (const auto& [text, id] : impl->bpe->vocab()) max_id = std::max(max_id, id);
  impl->exists.resize(static_cast<size_t>(max_id) + 1, 0);
  impl->special.resize(impl->exists.size(), 0);
  impl->token_text.resize(impl->exists.size());
  impl->token_bytes.resize(impl->exists.size());
  for (const auto& [text, id] : impl->bpe->vocab()) impl->set_token(id, text);

  impl->read_normalizer(j.value("normalizer", json()));
  impl->read_pre_tokenizer(j.value("pre_tokenizer", json()));
  impl->read_post_processor(j.value("post_processor", json()));
  impl->read_decoder(j.value("decoder", json()));
  impl->read_added_tokens(j.value("added_tokens", json()));
  return Tokenizer(std::move(impl));
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

void Tokenizer::Impl::encode_plain(std::string_view text, std::vector<int32_t>& ids,
                                   std::vector<std::string_view>& pieces) const {
  pieces.clear();
  split->split(text, pieces);
  for (const auto piece : pieces) bpe->encode_word(piece, ids);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  if (const size_t bad = utf8::first_invalid(text); bad != std::string_view::npos)
    throw Error("tokenizer: the text is not valid UTF-8 at byte " + std::to_string(bad));
  const Impl& m = *impl_;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  std::vector<Segment> segments, inner;
  std::vector<std::string_view> pieces;
  std::string normalized;
  m.raw_added.split(text, segments);
  for (const Segment& seg : segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    std::string_view plain = seg.text;
    if (m.nfc && !nfc_quick_yes(plain)) {
      normalized.clear();
      append_nfc(plain, normalized);
      plain = normalized;
    }
    if (m.normalized_added.empty()) {
      m.encode_plain(plain, ids, pieces);
      continue;
    }
    inner.clear();
    m.normalized_added.split(plain, inner);
    for (const Segment& s : inner) {
      if (s.id >= 0)
        ids.push_back(s.id);
      else
        m.encode_plain(s.text, ids, pieces);
    }
  }
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string bytes;
  for (const int32_t id : ids)
    if (auto b = token_bytes(id)) bytes.append(*b);
  std::string out;
  out.reserve(bytes.size());
  utf8::append_lossy(bytes, out, /*hold_incomplete_tail=*/false);
  return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  const std::string key(token);
  if (auto it = impl_->added_ids.find(key); it != impl_->added_ids.end()) return it->second;
  const auto& vocab = impl_->bpe->vocab();
  if (auto it = vocab.find(key); it != vocab.end()) return it->second;
  return std::nullopt;
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->exists.size() || !impl_->exists[static_cast<size_t>(id)])
    return std::nullopt;
  return impl_->token_text[static_cast<size_t>(id)];
}

std::optional<std::string_view> Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->exists.size() || !impl_->exists[static_cast<size_t>(id)])
    return std::nullopt;
  return std::string_view(impl_->token_bytes[static_cast<size_t>(id)]);
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() && impl_->special[static_cast<size_t>(id)];
}

int64_t Tokenizer::vocab_size() const { return static_cast<int64_t>(impl_->exists.size()); }

}  // namespace lg::tokenizer
