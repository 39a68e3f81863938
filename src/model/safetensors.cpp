// safetensors reader (mmap + header validation) and streaming writer. The validation mirrors the
// reference implementation's checks (header size limit, offsets inside the data, no overlap,
// byte range == shape * dtype size) so that every later span access is in bounds by construction.
#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "support/git_lfs_pointer.h"
#include "support/json_file.h"

namespace lg::model {

static_assert(std::endian::native == std::endian::little,
              "safetensors is little-endian; a big-endian host would need byte swaps");

namespace {

// The reference reader refuses headers above 100 MB; real ones are a few hundred KB.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr uint64_t kChunkBytes = 16ull << 20;

struct DTypeName {
  DType dtype;
  std::string_view name;
};
constexpr DTypeName kDTypeNames[] = {{DType::F32, "F32"}, {DType::BF16, "BF16"}, {DType::F16, "F16"},
                                     {DType::I32, "I32"}, {DType::I64, "I64"},   {DType::U8, "U8"},
                                     {DType::Bool, "BOOL"}};

// numel * elem with overflow detection; nullopt if it does not fit in 64 bits.
std::optional<uint64_t> checked_bytes(const std::vector<int64_t>& shape, uint64_t elem) {
  uint64_t n = elem;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  return n;
}

}  // namespace

uint64_t TensorInfo::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::string_view safetensors_dtype_name(DType t) {
  for (auto& e : kDTypeNames)
    if (e.dtype == t) return e.name;
  return "?";
}

std::optional<DType> parse_safetensors_dtype(std::string_view name) {
  for (auto& e : kDTypeNames)
    if (e.name == name) return e.dtype;
  return std::nullopt;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  SafetensorsFile f;
  f.source_ = path.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open: {}", f.source_, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(fmt::format("{}: not a regular file", f.source_));
  }
  f.size_ = static_cast<uint64_t>(st.st_size);
  if (f.size_ < 8) {
    ::close(fd);
    throw Error(fmt::format("{}: truncated: {} bytes, too short for the 8-byte header length",
                            f.source_, f.size_));
  }
  void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file alive
  if (p == MAP_FAILED) throw Error(fmt::format("{}: mmap failed: {}", f.source_, std::strerror(errno)));
  f.base_ = static_cast<const std::byte*>(p);
  f.mapped_ = true;
  f.parse_header();  // on throw, f's destructor unmaps
  return f;
}

SafetensorsFile SafetensorsFile::from_memory(std::span<const std::byte> blob, std::string source_name) {
  SafetensorsFile f;
  f.source_ = std::move(source_name);
  f.size_ = blob.size();
  f.owned_ = std::make_unique<std::byte[]>(std::max<size_t>(blob.size(), 1));
  if (!blob.empty()) std::memcpy(f.owned_.get(), blob.data(), blob.size());
  f.base_ = f.owned_.get();
  if (f.size_ < 8)
    throw Error(fmt::format("{}: truncated: {} bytes, too short for the 8-byte header length",
                            f.source_, f.size_));
  f.parse_header();
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept { *this = std::move(o); }

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    release();
    source_ = std::move(o.source_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, false);
    owned_ = std::move(o.owned_);
    data_start_ = o.data_start_;
    tensors_ = std::move(o.tensors_);
    by_name_ = std::move(o.by_name_);
    metadata_ = std::move(o.metadata_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() { release(); }

void SafetensorsFile::release() noexcept {
  if (mapped_ && base_) ::munmap(const_cast<std::byte*>(base_), size_);
  base_ = nullptr;
  mapped_ = false;
  owned_.reset();
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> SafetensorsFile::bytes(const TensorInfo& info) const {
  const uint64_t data_size = size_ - data_start_;
  if (info.offset > data_size || info.nbytes > data_size - info.offset)
    throw Error(fmt::format("{}: tensor '{}': byte range [{}, {}) is outside the data section ({} bytes)",
                            source_, info.name, info.offset, info.offset + info.nbytes, data_size));
  return {base_ + data_start_ + info.offset, static_cast<size_t>(info.nbytes)};
}

void SafetensorsFile::parse_header() {
  if (is_git_lfs_pointer({reinterpret_cast<const char*>(base_), static_cast<size_t>(std::min<uint64_t>(size_, 64))}))
    throw Error(git_lfs_pointer_error(source_, size_));
  uint64_t header_len = 0;
  std::memcpy(&header_len, base_, 8);
  if (header_len > kMaxHeaderBytes)
    throw Error(fmt::format("{}: header length {} exceeds the 100 MiB limit (file is {} bytes): "
                            "not a safetensors file or corrupt",
                            source_, header_len, size_));
  if (header_len > size_ - 8)
    throw Error(fmt::format("{}: header length {} runs past the end of the file ({} bytes): truncated?",
                            source_, header_len, size_));
  data_start_ = 8 + header_len;
  const uint64_t data_size = size_ - data_start_;
  std::string_view text(reinterpret_cast<const char*>(base_ + 8), header_len);

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed JSON header: {}", source_, json_error_text(e)));
  }
  if (!header.is_object())
    throw Error(fmt::format("{}: JSON header is a JSON {}, expected an object of tensors", source_,
                            header.type_name()));

  for (auto& [key, entry] : header.items()) {
    if (key == "__metadata__") {
      if (!entry.is_object())
        throw Error(fmt::format("{}: field '__metadata__' must be an object of strings", source_));
      for (auto& [mk, mv] : entry.items()) {
        if (!mv.is_string())
          throw Error(fmt::format("{}: field '__metadata__.{}' must be a string, got {}", source_, mk,
                                  mv.type_name()));
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string& tname = key;  // clang < 16 cannot capture a structured binding
    auto where = [&](std::string_view what) {
      return fmt::format("{}: tensor '{}': {}", source_, tname, what);
    };
    if (!entry.is_object()) throw Error(where("entry must be an object with dtype, shape, data_offsets"));
    TensorInfo t;
    t.name = key;

    auto dt = entry.find("dtype");
    if (dt == entry.end()) throw Error(where("missing field 'dtype'"));
    if (!dt->is_string()) throw Error(where(fmt::format("field 'dtype' must be a string, got {}", dt->dump())));
    auto parsed = parse_safetensors_dtype(dt->get<std::string>());
    if (!parsed)
      throw Error(where(fmt::format("unsupported dtype '{}' (supported: F32, BF16, F16, I32, I64, U8, BOOL)",
                                    dt->get<std::string>())));
    t.dtype = *parsed;

    auto sh = entry.find("shape");
    if (sh == entry.end()) throw Error(where("missing field 'shape'"));
    if (!sh->is_array()) throw Error(where(fmt::format("field 'shape' must be an array, got {}", sh->dump())));
    for (auto& d : *sh) {
      if (!d.is_number_integer() || (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0))
        throw Error(where(fmt::format("field 'shape' must hold non-negative integers, got {}", sh->dump())));
      uint64_t v = d.get<uint64_t>();
      if (v > static_cast<uint64_t>(INT64_MAX))
        throw Error(where(fmt::format("field 'shape' has a dimension too large: {}", sh->dump())));
      t.shape.push_back(static_cast<int64_t>(v));
    }

    auto off = entry.find("data_offsets");
    if (off == entry.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      throw Error(where("field 'data_offsets' must be [begin, end] with non-negative integers"));
    const uint64_t begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
    if (end < begin)
      throw Error(where(fmt::format("data_offsets [{}, {}] end before begin", begin, end)));
    if (end > data_size)
      throw Error(where(fmt::format("data_offsets [{}, {}] lie outside the data section ({} bytes)",
                                    begin, end, data_size)));
    auto expect = checked_bytes(t.shape, dtype_size(t.dtype));
    if (!expect || *expect != end - begin)
      throw Error(where(fmt::format("shape {} x {} ({} bytes each) = {} bytes, but data_offsets [{}, {}] "
                                    "span {} bytes",
                                    sh->dump(), safetensors_dtype_name(t.dtype), dtype_size(t.dtype),
                                    expect ? fmt::format("{}", *expect) : std::string("overflowing"),
                                    begin, end, end - begin)));
    t.offset = begin;
    t.nbytes = end - begin;
    by_name_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // The tensors' bytes must tile the data section: back to back from its start to its end, as
  // the reference implementation (huggingface/safetensors, Metadata::validate) requires. An
  // overlap would alias two tensors; a gap or trailing bytes mean the header does not describe
  // the file (a truncated write, a damaged header), which HF's loaders refuse too.
  std::vector<const TensorInfo*> order;
  for (auto& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->nbytes < b->nbytes;
  });
  uint64_t at = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo* t : order) {
    if (t->offset < at)
      throw Error(fmt::format("{}: tensor '{}' (bytes [{}, {})) overlaps tensor '{}' (bytes [{}, {}))", source_,
                              t->name, t->offset, t->offset + t->nbytes, prev->name, prev->offset,
                              prev->offset + prev->nbytes));
    if (t->offset > at)
      throw Error(fmt::format("{}: {} bytes of the data section before tensor '{}' (bytes [{}, {})) belong to no "
                              "tensor: a safetensors file holds its tensors back to back",
                              source_, t->offset - at, t->name, t->offset, t->offset + t->nbytes));
    at = t->offset + t->nbytes;
    prev = t;
  }
  if (at != data_size)
    throw Error(fmt::format("{}: {} bytes after the last tensor's data belong to no tensor (data section {} bytes, "
                            "tensors {}): the header does not describe the file",
                            source_, data_size - at, data_size, at));
}

// ---- writer ----

namespace {

struct Planned {
  const std::string* name;
  DType dtype;
  const std::vector<int64_t>* shape;
  uint64_t nbytes;
};

// Builds the header bytes (length prefix + JSON padded to 8 bytes with spaces).
std::string make_header(const std::filesystem::path& path, const std::vector<Planned>& plan,
                        const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::set<std::string_view> seen;
  uint64_t offset = 0;
  for (auto& p : plan) {
    if (*p.name == "__metadata__" || !seen.insert(*p.name).second)
      throw Error(fmt::format("{}: cannot write tensor '{}': duplicate or reserved name", path.string(),
                              *p.name));
    for (int64_t d : *p.shape)
      if (d < 0)
        throw Error(fmt::format("{}: cannot write tensor '{}': negative dimension", path.string(), *p.name));
    h[*p.name] = {{"dtype", safetensors_dtype_name(p.dtype)},
                  {"shape", *p.shape},
                  {"data_offsets", {offset, offset + p.nbytes}}};
    offset += p.nbytes;
  }
  std::string json = h.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t n = json.size();
  std::memcpy(out.data(), &n, 8);
  return out + json;
}

// Writes to "<path>.partial" and renames on close, so that an interrupted or failed write (a fill
// callback throwing, a full disk) never leaves a truncated file under the final name.
class OutFile {
 public:
  explicit OutFile(const std::filesystem::path& path) : path_(path.string()), tmp_(path_ + ".partial") {
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) throw Error(fmt::format("{}: cannot create: {}", path_, std::strerror(errno)));
  }
  ~OutFile() {
    if (f_) {
      std::fclose(f_);
      std::remove(tmp_.c_str());
    }
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n)
      throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
  }
  void close() {
    FILE* f = std::exchange(f_, nullptr);
    if (std::fclose(f) != 0) {
      std::remove(tmp_.c_str());
      throw Error(fmt::format("{}: close failed: {}", path_, std::strerror(errno)));
    }
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      std::remove(tmp_.c_str());
      throw Error(fmt::format("{}: rename from {} failed: {}", path_, tmp_, std::strerror(errno)));
    }
  }

 private:
  std::string path_, tmp_;
  FILE* f_ = nullptr;
};

uint64_t planned_bytes(const std::filesystem::path& path, const std::string& name, DType dtype,
                       const std::vector<int64_t>& shape) {
  auto n = checked_bytes(shape, dtype_size(dtype));
  if (!n) throw Error(fmt::format("{}: cannot write tensor '{}': size overflows", path.string(), name));
  return *n;
}

}  // namespace

void write_safetensors(const std::filesystem::path& path, const std::vector<OwnedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<Planned> plan;
  for (auto& t : tensors) {
    uint64_t n = planned_bytes(path, t.name, t.dtype, t.shape);
    if (n != t.data.size())
      throw Error(fmt::format("{}: cannot write tensor '{}': shape needs {} bytes, data has {}",
                              path.string(), t.name, n, t.data.size()));
    plan.push_back({&t.name, t.dtype, &t.shape, n});
  }
  std::string header = make_header(path, plan, metadata);
  OutFile out(path);
  out.write(header.data(), header.size());
  for (auto& t : tensors) out.write(t.data.data(), t.data.size());
  out.close();
}

void write_safetensors(const std::filesystem::path& path, const std::vector<StreamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<Planned> plan;
  for (auto& t : tensors) {
    if (!t.fill) throw Error(fmt::format("{}: cannot write tensor '{}': no fill callback", path.string(), t.name));
    plan.push_back({&t.name, t.dtype, &t.shape, planned_bytes(path, t.name, t.dtype, t.shape)});
  }
  std::string header = make_header(path, plan, metadata);
  OutFile out(path);
  out.write(header.data(), header.size());
  std::vector<std::byte> chunk;
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (uint64_t off = 0; off < plan[i].nbytes; off += kChunkBytes) {
      const size_t n = static_cast<size_t>(std::min(kChunkBytes, plan[i].nbytes - off));
      chunk.resize(n);
      tensors[i].fill(std::span<std::byte>(chunk.data(), n), off);
      out.write(chunk.data(), n);
    }
  }
  out.close();
}

}  // namespace lg::model
