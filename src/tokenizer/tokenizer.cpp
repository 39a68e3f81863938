// Loading tokenizer.json (and tokenizer_config.json) into the pipeline's components, and the
// encode/decode passes through them.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "support/error.h"
#include "support/git_lfs_pointer.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/utf8.h"

namespace lg::tokenizer {

using nlohmann::json;

struct Tokenizer::Impl {
  explicit Impl(std::string file_name) : fields(std::move(file_name)) {}
  JsonFields fields;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  std::unique_ptr<Bpe> bpe;
  Decoder decoder;
  SpecialTokens specials;
  TokenizerConfig config;
  AddedTokenMatcher raw_added;         // added tokens with normalized = false
  AddedTokenMatcher normalized_added;  // added tokens with normalized = true
  std::unordered_map<std::string, int32_t> added_ids;  // content -> id
  std::unordered_map<int32_t, std::string> added_text;  // id -> content (before the model's token)
  // Per id: what it stands for as bytes, whether it exists, whether it is special.
  std::vector<std::string> token_bytes;
  std::vector<uint8_t> exists;
  std::vector<uint8_t> special;

  void load(TokenizerJson& file);
  const std::string* text_of(int32_t id) const;
  void read_added_tokens(const json& j);
  void apply_config(const std::optional<std::filesystem::path>& config_file);
  void set_token(int32_t id, const std::string& text);
  void encode_plain(std::string_view text, bool at_start, std::vector<int32_t>& ids) const;
  std::optional<int32_t> id_of(const std::string& token) const;
};

void Tokenizer::Impl::set_token(int32_t id, const std::string& text) {
  const auto i = static_cast<size_t>(id);
  if (i >= exists.size()) {
    exists.resize(i + 1, 0);
    special.resize(i + 1, 0);
    token_bytes.resize(i + 1);
  }
  exists[i] = 1;
  token_bytes[i] = decoder.token_bytes(text);
}

const std::string* Tokenizer::Impl::text_of(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= exists.size() || !exists[static_cast<size_t>(id)]) return nullptr;
  if (!added_text.empty())
    if (auto it = added_text.find(id); it != added_text.end()) return &it->second;
  return bpe->vocab().text(id);
}

void Tokenizer::Impl::read_added_tokens(const json& j) {
  if (j.is_null()) return;
  if (!j.is_array()) fields.fail("added_tokens", "expected an array");
  std::vector<AddedToken> raw, normalized;
  std::string scratch;
  // The id each token gets is Hugging Face tokenizers' (0.23, TokenizerImpl's deserialization and
  // AddedVocabulary::add_tokens), not the file's `id`, which it only compares and warns about: in
  // file order, a content already added or in the model's vocabulary keeps that id; any other
  // takes the model's vocabulary size (its count of entries), or one past the largest added id
  // when that is already at or past it. For the files transformers writes the two agree; one
  // edited by hand (a token renumbered, one added twice) got other ids here than in HF.
  const auto vocab_size = static_cast<int64_t>(bpe->vocab().size());
  int64_t max_added = -1;
  for (size_t k = 0; k < j.size(); ++k) {
    const std::string f = "added_tokens[" + std::to_string(k) + "]";
    const json& e = j[k];
    AddedToken t;
    const json& id = fields.require(e, "id", f + ".id");
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= Vocab::kMaxId)
      fields.fail(f + ".id", "expected an integer in [0, 2^24)");
    const json& content = fields.require(e, "content", f + ".content");
    if (!content.is_string() || content.get_ref<const std::string&>().empty())
      fields.fail(f + ".content", "expected a non-empty string");
    t.content = content.get<std::string>();
    if (utf8::first_invalid(t.content) != std::string_view::npos) fields.fail(f + ".content", "not valid UTF-8");
    t.special = fields.flag(e, "special", false, f);
    t.single_word = fields.flag(e, "single_word", false, f);
    t.lstrip = fields.flag(e, "lstrip", false, f);
    t.rstrip = fields.flag(e, "rstrip", false, f);
    t.normalized = fields.flag(e, "normalized", false, f);
    // A content given twice is one token, the first (HF skips a repeat with the same flags).
    if (added_ids.contains(t.content)) continue;
    int64_t assigned;
    if (const auto known = id_of(t.content)) {
      assigned = *known;
    } else {
      assigned = max_added < 0 ? vocab_size : max_added >= vocab_size || vocab_size == 0 ? max_added + 1 : vocab_size;
      if (assigned >= Vocab::kMaxId) fields.fail(f + ".id", "the token would take an id past 2^24");
    }
    max_added = std::max(max_added, assigned);
    t.id = static_cast<int32_t>(assigned);
    // A normalized token is matched in normalized text, so its content is normalized too.
    if (t.normalized) t.content = std::string(normalizer.apply(t.content, scratch));
    set_token(t.id, content.get<std::string>());
    added_text[t.id] = content.get<std::string>();
    special[static_cast<size_t>(t.id)] = t.special;
    added_ids[content.get<std::string>()] = t.id;
    (t.normalized ? normalized : raw).push_back(std::move(t));
  }
  raw_added = AddedTokenMatcher(raw);
  normalized_added = AddedTokenMatcher(normalized);
}

std::optional<int32_t> Tokenizer::Impl::id_of(const std::string& token) const {
  if (auto it = added_ids.find(token); it != added_ids.end()) return it->second;
  return bpe->vocab().find(token);
}

void Tokenizer::Impl::apply_config(const std::optional<std::filesystem::path>& config_file) {
  if (!config_file) return;
  config = TokenizerConfig::read(*config_file);
  if (!config.add_bos_token && !config.add_eos_token) return;
  // transformers rebuilds the post-processor from the flags (a flag not given is false, a flag
  // without its token adds nothing).
  specials = {};
  auto add = [&](const std::optional<bool>& flag, const std::optional<std::string>& token, const char* key,
                 std::vector<int32_t>& dst) {
    if (!flag.value_or(false) || !token) return;
    const auto id = id_of(*token);
    if (!id)
      throw Error(config_file->string() + ": " + key + ": \"" + *token + "\" is not a token of " + fields.file());
    dst.push_back(*id);
  };
  add(config.add_bos_token, config.bos_token, "bos_token", specials.prefix);
  add(config.add_eos_token, config.eos_token, "eos_token", specials.suffix);
}

void Tokenizer::Impl::load(TokenizerJson& file) {
  const json& j = file.doc;
  if (!j.is_object()) throw Error(fields.file() + ": expected a JSON object at the top");
  const json& model = fields.require(j, "model", "model");
  if (const std::string type = fields.type_of(model, "model"); type != "BPE")
    fields.fail("model.type", "unsupported model \"" + type + "\" (lanegraph supports BPE)");
  normalizer = Normalizer::from_json(j.value("normalizer", json()), fields);
  pre_tokenizer = PreTokenizer::from_json(j.value("pre_tokenizer", json()), fields);
  decoder = Decoder::from_json(j.value("decoder", json()), fields);
  specials = SpecialTokens::from_post_processor(j.value("post_processor", json()), fields);
  if (!file.has_vocab) fields.fail("model.vocab", "missing or not an object of token -> id");
  if (!file.has_merges) fields.fail("model.merges", "missing or not an array");
  bpe = std::make_unique<Bpe>(model, std::move(file.vocab), file.merges, fields.file(),
                              pre_tokenizer.byte_level() ? Bpe::Alphabet::byte_level : Bpe::Alphabet::unicode);
  file.merges = MergeList();
  const Vocab& vocab = bpe->vocab();
  exists.resize(vocab.id_limit(), 0);
  special.resize(exists.size(), 0);
  token_bytes.resize(exists.size());
  for (size_t id = 0; id < vocab.id_limit(); ++id)
    if (const std::string* text = vocab.text(static_cast<int32_t>(id))) set_token(static_cast<int32_t>(id), *text);
  read_added_tokens(j.value("added_tokens", json()));
}

namespace {

TokenizerJson parse_file(const std::filesystem::path& path) {
  std::error_code ec;
  // A directory opens as a stream that fails mid-read (an "internal error" before).
  if (std::filesystem::is_directory(path, ec)) throw Error(path.string() + ": is a directory, not a tokenizer.json file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + (std::filesystem::exists(path, ec) ? ": cannot open" : ": no such file"));
  std::string head(64, '\0');
  head.resize(static_cast<size_t>(in.read(head.data(), static_cast<std::streamsize>(head.size())).gcount()));
  if (is_git_lfs_pointer(head)) throw Error(git_lfs_pointer_error(path.string(), std::filesystem::file_size(path, ec)));
  in.clear();
  in.seekg(0);
  return TokenizerJson::parse(in, path.string());
}

}  // namespace

Tokenizer Tokenizer::from_files(const std::filesystem::path& tokenizer_json,
                                const std::optional<std::filesystem::path>& tokenizer_config_json) {
  auto impl = std::make_unique<Impl>(tokenizer_json.string());
  TokenizerJson file = parse_file(tokenizer_json);
  impl->load(file);
  impl->apply_config(tokenizer_config_json);
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_file(const std::filesystem::path& tokenizer_json) {
  const auto config = tokenizer_json.parent_path() / "tokenizer_config.json";
  std::error_code ec;
  const bool present = std::filesystem::exists(config, ec);
  // Read where it is a file; anything else there is an error, not a file to skip silently.
  if (present && !std::filesystem::is_regular_file(config, ec))
    throw Error(config.string() + ": not a regular file, not a tokenizer_config.json");
  return from_files(tokenizer_json, present ? std::optional<std::filesystem::path>(config) : std::nullopt);
}

Tokenizer Tokenizer::from_json_text(std::string_view json_text, const std::string& name) {
  auto impl = std::make_unique<Impl>(name);
  TokenizerJson file = TokenizerJson::parse(json_text, name);
  impl->load(file);
  return Tokenizer(std::move(impl));
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
const Decoder& Tokenizer::decoder() const { return impl_->decoder; }
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

void Tokenizer::Impl::encode_plain(std::string_view text, bool at_start, std::vector<int32_t>& ids) const {
  thread_local std::deque<std::string> arena;
  arena.clear();
  pre_tokenizer.split(text, at_start, arena, [&](const PreToken& piece) { bpe->encode_word(piece.text, ids); });
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  if (const size_t bad = utf8::first_invalid(text); bad != std::string_view::npos)
    throw Error("tokenizer: the text is not valid UTF-8 at byte " + std::to_string(bad));
  const Impl& m = *impl_;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  std::vector<Segment> segments, inner;
  thread_local std::string scratch;  // the normalized text; keeps its capacity between calls
  m.raw_added.split(text, segments);
  for (const Segment& seg : segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    // Metaspace's prepend_scheme "first" asks whether a piece starts the input.
    const bool at_start = seg.text.data() == text.data();
    const std::string_view plain = m.normalizer.apply(seg.text, scratch);
    if (m.normalized_added.empty()) {
      m.encode_plain(plain, at_start, ids);
      continue;
    }
    inner.clear();
    m.normalized_added.split(plain, inner);
    for (const Segment& s : inner) {
      if (s.id >= 0)
        ids.push_back(s.id);
      else
        m.encode_plain(s.text, at_start && s.text.data() == plain.data(), ids);
    }
  }
  return ids;
}

std::vector<int32_t> Tokenizer::encode_with_special_tokens(std::string_view text) const {
  std::vector<int32_t> body = encode(text);
  const SpecialTokens& s = impl_->specials;
  if (s.prefix.empty() && s.suffix.empty()) return body;
  std::vector<int32_t> ids;
  ids.reserve(s.prefix.size() + body.size() + s.suffix.size());
  ids.insert(ids.end(), s.prefix.begin(), s.prefix.end());
  ids.insert(ids.end(), body.begin(), body.end());
  ids.insert(ids.end(), s.suffix.begin(), s.suffix.end());
  return ids;
}

std::span<const int32_t> Tokenizer::special_prefix() const { return impl_->specials.prefix; }
std::span<const int32_t> Tokenizer::special_suffix() const { return impl_->specials.suffix; }
std::optional<std::string> Tokenizer::bos_token() const { return impl_->config.bos_token; }
std::optional<std::string> Tokenizer::eos_token() const { return impl_->config.eos_token; }
std::optional<int32_t> Tokenizer::bos_id() const {
  return impl_->config.bos_token ? impl_->id_of(*impl_->config.bos_token) : std::nullopt;
}
std::optional<int32_t> Tokenizer::eos_id() const {
  return impl_->config.eos_token ? impl_->id_of(*impl_->config.eos_token) : std::nullopt;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const Impl& m = *impl_;
  Decoder::Stream stream(m.decoder);
  std::string out;
  for (const int32_t id : ids)
    if (id >= 0 && static_cast<size_t>(id) < m.exists.size() && m.exists[static_cast<size_t>(id)] &&
        !(skip_special_tokens && m.special[static_cast<size_t>(id)]))
      stream.push(*m.text_of(id), out);
  stream.finish(out);
  return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const { return impl_->id_of(std::string(token)); }

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  const std::string* text = impl_->text_of(id);
  if (!text) return std::nullopt;
  return *text;
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
