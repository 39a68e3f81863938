// safetensors reader/writer: round trips over every dtype with fresh random bytes, the streaming
// writer, and one test per kind of corrupt file asserting the message names the file and the
// tensor/field at fault.
#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <random>

#include "test_util.h"

namespace lg::model {
namespace {

using test::error_of;
using test::st_blob;
using test::TempDir;
using test::write_file;

std::mt19937_64 fresh_rng(uint64_t& seed) {
  seed = std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
  return std::mt19937_64(seed);
}

std::vector<OwnedTensor> random_tensors(std::mt19937_64& rng) {
  std::vector<OwnedTensor> ts;
  auto add = [&](std::string name, DType dt, std::vector<int64_t> shape) {
    uint64_t n = dtype_size(dt);
    for (auto d : shape) n *= static_cast<uint64_t>(d);
    ts.push_back({std::move(name), dt, shape, test::random_bytes(n, rng)});
  };
  add("w.f32", DType::F32, {3, 5});
  add("w.bf16", DType::BF16, {7});
  add("w.f16", DType::F16, {2, 3, 4});
  add("ids.i32", DType::I32, {9});
  add("ids.i64", DType::I64, {1, 3});
  add("bytes.u8", DType::U8, {13});  // odd size: later tensors start unaligned
  add("mask.bool", DType::Bool, {4});
  add("scalar", DType::F32, {});
  add("empty", DType::BF16, {0, 8});
  return ts;
}

void expect_same(const SafetensorsFile& f, const std::vector<OwnedTensor>& ts) {
  ASSERT_EQ(f.tensors().size(), ts.size());
  for (auto& t : ts) {
    const TensorInfo* info = f.find(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    EXPECT_EQ(info->dtype, t.dtype) << t.name;
    EXPECT_EQ(info->shape, t.shape) << t.name;
    EXPECT_EQ(info->nbytes, t.data.size()) << t.name;
    auto b = f.bytes(*info);
    ASSERT_EQ(b.size(), t.data.size());
    EXPECT_TRUE(std::equal(b.begin(), b.end(), t.data.begin())) << t.name;
  }
}

TEST(Safetensors, RoundTripEveryDtype) {
  uint64_t seed;
  auto rng = fresh_rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  auto ts = random_tensors(rng);
  write_safetensors(dir / "a.safetensors", ts, {{"format", "pt"}, {"note", "round trip"}});
  auto f = SafetensorsFile::open(dir / "a.safetensors");
  expect_same(f, ts);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("note"), "round trip");
  EXPECT_EQ(f.find("scalar")->numel(), 1u);
  EXPECT_EQ(f.find("empty")->numel(), 0u);
  EXPECT_EQ(f.find("absent"), nullptr);
  // The reference writer pads the header so that the data section starts 8-byte aligned.
  uint64_t n = 0;
  std::ifstream in(dir / "a.safetensors", std::ios::binary);
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(Safetensors, FromMemoryMatchesFile) {
  uint64_t seed;
  auto rng = fresh_rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  auto ts = random_tensors(rng);
  write_safetensors(dir / "a.safetensors", ts);
  std::ifstream in(dir / "a.safetensors", std::ios::binary);
  std::string blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto f = SafetensorsFile::from_memory(std::as_bytes(std::span(blob.data(), blob.size())), "blob");
  EXPECT_EQ(f.source(), "blob");
  expect_same(f, ts);
}

TEST(Safetensors, MoveKeepsMappingValid) {
  uint64_t seed;
  auto rng = fresh_rng(seed);
  TempDir dir;
  auto ts = random_tensors(rng);
  write_safetensors(dir / "a.safetensors", ts);
  auto f = SafetensorsFile::open(dir / "a.safetensors");
  SafetensorsFile g = std::move(f);
  expect_same(g, ts);
  SafetensorsFile h = SafetensorsFile::open(dir / "a.safetensors");
  h = std::move(g);  // h's old mapping is released, g's adopted
  expect_same(h, ts);
}

TEST(Safetensors, StreamingWriterEqualsOwnedWriterAndChunks) {
  uint64_t seed;
  auto rng = fresh_rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  auto ts = random_tensors(rng);
  // A 40 MiB + 3 byte tensor crosses the 16 MiB chunk boundary twice and ends in a short chunk.
  const uint64_t big = (40ull << 20) + 3;
  const uint64_t salt = rng();
  auto big_byte = [salt](uint64_t i) { return static_cast<std::byte>((i * 2654435761u + salt) >> 7); };
  OwnedTensor big_owned{"big", DType::U8, {static_cast<int64_t>(big)}, std::vector<std::byte>(big)};
  for (uint64_t i = 0; i < big; ++i) big_owned.data[i] = big_byte(i);
  ts.push_back(big_owned);

  std::vector<StreamedTensor> streamed;
  std::vector<std::pair<uint64_t, size_t>> calls;  // (offset, size) seen for "big"
  for (auto& t : ts) {
    const OwnedTensor* src = &t;
    streamed.push_back({t.name, t.dtype, t.shape, [src, &calls](std::span<std::byte> chunk, uint64_t off) {
                          if (src->name == "big") calls.emplace_back(off, chunk.size());
                          std::memcpy(chunk.data(), src->data.data() + off, chunk.size());
                        }});
  }
  write_safetensors(dir / "owned.safetensors", ts);
  write_safetensors(dir / "streamed.safetensors", streamed);
  auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  EXPECT_TRUE(read(dir / "owned.safetensors") == read(dir / "streamed.safetensors"));
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], (std::pair<uint64_t, size_t>{0, 16u << 20}));
  EXPECT_EQ(calls[1], (std::pair<uint64_t, size_t>{16u << 20, 16u << 20}));
  EXPECT_EQ(calls[2], (std::pair<uint64_t, size_t>{32u << 20, (8u << 20) + 3}));
  expect_same(SafetensorsFile::open(dir / "streamed.safetensors"), ts);
}

TEST(Safetensors, WriterRefusesBadTensors) {
  TempDir dir;
  const auto p = dir / "w.safetensors";
  std::vector<OwnedTensor> dup{{"a", DType::U8, {1}, {std::byte{1}}}, {"a", DType::U8, {1}, {std::byte{2}}}};
  EXPECT_NE(error_of([&] { write_safetensors(p, dup); }).find("'a'"), std::string::npos);
  std::vector<OwnedTensor> short_data{{"w", DType::F32, {2}, std::vector<std::byte>(7)}};
  auto msg = error_of([&] { write_safetensors(p, short_data); });
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("8 bytes"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { write_safetensors(dir / "no/such/dir/x.safetensors", std::vector<OwnedTensor>{}); })
                .find("no/such/dir"),
            std::string::npos);
}

TEST(Safetensors, FailedStreamingWriteLeavesNoFile) {
  TempDir dir;
  std::vector<StreamedTensor> ts{{"w", DType::F32, {1024}, [](std::span<std::byte>, uint64_t) {
                                    throw lg::Error("generator failed");
                                  }}};
  EXPECT_EQ(error_of([&] { write_safetensors(dir / "x.safetensors", ts); }), "generator failed");
  EXPECT_FALSE(std::filesystem::exists(dir / "x.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.safetensors.partial"));
}

// ---- corrupt files: every message names the file, and the tensor or field at fault ----

class Corrupt : public ::testing::Test {
 protected:
  TempDir dir;
  std::string path = (dir / "bad.safetensors").string();
  /// Writes `bytes` to bad.safetensors, opens it, returns the error (asserting it names the file).
  std::string open_error(const std::string& bytes) {
    write_file(path, bytes);
    std::string msg = error_of([&] { SafetensorsFile::open(path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    // The in-memory parser must reject the same bytes with the same reason.
    std::string mem = error_of([&] {
      SafetensorsFile::from_memory(std::as_bytes(std::span(bytes.data(), bytes.size())), "mem-blob");
    });
    EXPECT_NE(mem.find("mem-blob"), std::string::npos) << mem;
    return msg;
  }
};

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST_F(Corrupt, MissingFile) {
  auto msg = error_of([&] { SafetensorsFile::open(dir / "absent.safetensors"); });
  EXPECT_HAS(msg, "absent.safetensors");
}

TEST_F(Corrupt, TruncatedBeforeHeaderLength) {
  EXPECT_HAS(open_error(""), "truncated");
  EXPECT_HAS(open_error("\x10\x00\x00"), "truncated");
}

TEST_F(Corrupt, TruncatedData) {
  // A real file cut short: the last tensor's byte range now ends past the data.
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})";
  auto msg = open_error(st_blob(header, std::string(12, 'x')));
  EXPECT_HAS(msg, "tensor 'b'");
  EXPECT_HAS(msg, "outside the data section");
}

TEST_F(Corrupt, HeaderLengthPastEof) {
  auto msg = open_error(st_blob("{}", "", 4096));
  EXPECT_HAS(msg, "header length 4096");
  EXPECT_HAS(msg, "past the end");
}

TEST_F(Corrupt, HeaderLengthAbsurd) {
  auto msg = open_error(st_blob("{}", "", ~uint64_t{0}));
  EXPECT_HAS(msg, "header length");
  EXPECT_HAS(msg, "100 MiB");
}

// A repository cloned without Git LFS holds a pointer where the weights were: said as such, with
// what to do (it was "header length 2336927755350992246 exceeds the 100 MiB limit ... not a
// safetensors file or corrupt": a new-user pass).
TEST_F(Corrupt, GitLfsPointer) {
  const std::string pointer =
      "version https://git-lfs.github.com/spec/v1\n"
      "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 45195616\n";
  const std::string msg = open_error(pointer);
  EXPECT_HAS(msg, path + ": a Git LFS pointer (" + std::to_string(pointer.size()) + " bytes), not the file it stands for");
  EXPECT_HAS(msg, "git lfs pull");
}

TEST_F(Corrupt, MalformedJson) {
  EXPECT_HAS(open_error(st_blob(R"({"a":{"dtype":"F32",)", "")), "malformed JSON header: parse error at line 1, column");
  EXPECT_EQ(open_error(st_blob(R"({"a":{"dtype":"F32",)", "")).find("json.exception"), std::string::npos);  // nlohmann's id
  EXPECT_HAS(open_error(st_blob("[1,2]", "")), "JSON header is a JSON array, expected an object");
}

TEST_F(Corrupt, UnknownDtype) {
  auto msg = open_error(st_blob(R"({"w.q":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", std::string(8, 0)));
  EXPECT_HAS(msg, "tensor 'w.q'");
  EXPECT_HAS(msg, "unsupported dtype 'F64'");
  msg = open_error(st_blob(R"({"w.q":{"dtype":7,"shape":[1],"data_offsets":[0,8]}})", std::string(8, 0)));
  EXPECT_HAS(msg, "field 'dtype' must be a string, got 7");
  // Missing and wrong-typed are told apart (both said "missing or not a string").
  msg = open_error(st_blob(R"({"w.q":{"shape":[1],"data_offsets":[0,8]}})", std::string(8, 0)));
  EXPECT_HAS(msg, "tensor 'w.q': missing field 'dtype'");
  msg = open_error(st_blob(R"({"w.q":{"dtype":"F32","shape":{},"data_offsets":[0,4]}})", std::string(4, 0)));
  EXPECT_HAS(msg, "tensor 'w.q': field 'shape' must be an array, got {}");
}

TEST_F(Corrupt, ShapeTimesDtypeDiffersFromByteRange) {
  auto msg = open_error(st_blob(R"({"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,8]}})", std::string(8, 0)));
  EXPECT_HAS(msg, "tensor 'w'");
  EXPECT_HAS(msg, "12 bytes");
  EXPECT_HAS(msg, "span 8 bytes");
  // A shape whose product overflows 64 bits must not wrap around to a plausible size.
  msg = open_error(st_blob(
      R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", ""));
  EXPECT_HAS(msg, "tensor 'w'");
  EXPECT_HAS(msg, "overflowing");
}

TEST_F(Corrupt, OffsetsOutsideData) {
  auto msg = open_error(st_blob(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[6,10]}})", std::string(8, 0)));
  EXPECT_HAS(msg, "tensor 'w'");
  EXPECT_HAS(msg, "outside the data section (8 bytes)");
  msg = open_error(st_blob(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", std::string(8, 0)));
  EXPECT_HAS(msg, "tensor 'w'");
  EXPECT_HAS(msg, "end before begin");
}

TEST_F(Corrupt, OverlappingRanges) {
  auto msg = open_error(st_blob(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                std::string(12, 0)));
  EXPECT_HAS(msg, "'b'");
  EXPECT_HAS(msg, "overlaps tensor 'a'");
}

// The tensors must tile the data section, as huggingface/safetensors requires (its
// Metadata::validate and MetadataIncompleteBuffer): a gap, bytes before the first tensor or after
// the last mean the header does not describe the file. A zero-size tensor takes no bytes.
TEST_F(Corrupt, BytesThatBelongToNoTensor) {
  auto msg = open_error(st_blob(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                std::string(12, 0)));
  EXPECT_HAS(msg, "4 bytes of the data section before tensor 'b' (bytes [8, 12)) belong to no tensor");
  msg = open_error(st_blob(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", std::string(6, 0)));
  EXPECT_HAS(msg, "2 bytes of the data section before tensor 'a'");
  msg = open_error(st_blob(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", std::string(7, 0)));
  EXPECT_HAS(msg, "3 bytes after the last tensor's data belong to no tensor (data section 7 bytes, tensors 4)");
  EXPECT_HAS(open_error(st_blob(R"({})", "xy")), "2 bytes after the last tensor's data");
  // Back to back, in any order in the header, with a zero-size tensor among them: accepted.
  write_file(path, st_blob(R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},)"
                           R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                           R"("a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
                           "abcdef"));
  EXPECT_EQ(SafetensorsFile::open(path).tensors().size(), 3u);
}

TEST_F(Corrupt, MalformedEntryFields) {
  EXPECT_HAS(open_error(st_blob(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", "")),
             "field 'shape'");
  EXPECT_HAS(open_error(st_blob(R"({"w":{"dtype":"U8","shape":"4","data_offsets":[0,4]}})", "xxxx")),
             "field 'shape'");
  EXPECT_HAS(open_error(st_blob(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0]}})", "xxxx")),
             "field 'data_offsets'");
  EXPECT_HAS(open_error(st_blob(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4.0]}})", "xxxx")),
             "field 'data_offsets'");
  EXPECT_HAS(open_error(st_blob(R"({"w":[1,2]})", "")), "tensor 'w'");
  EXPECT_HAS(open_error(st_blob(R"({"__metadata__":{"format":1}})", "")), "__metadata__.format");
}

TEST_F(Corrupt, BytesOfForeignTensorInfoIsAnError) {
  write_file(path, st_blob(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", "abcd"));
  auto f = SafetensorsFile::open(path);
  TensorInfo foreign{"other", DType::U8, {64}, 0, 64};
  EXPECT_HAS(error_of([&] { f.bytes(foreign); }), "tensor 'other'");
}

}  // namespace
}  // namespace lg::model
