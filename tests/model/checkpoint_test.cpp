// Checkpoint: every checkpoint in ../shared loads with the tensors its header holds (expected
// values read independently with Python, fixture_expect.inc), sharded checkpoints written with
// our writer load the same, and missing shards / tensors / mismatches give errors naming them.
#include "model/checkpoint.h"

#include "model/checkpoint_writer.h"
#include "model/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace lg::model {
namespace {

using test::error_of;
using test::TempDir;
using test::write_file;

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

struct ExpectedTensor {
  const char* name;
  const char* dtype;
  std::vector<int64_t> shape;
  float first, last;  // first and last element, as fp32
};
struct ExpectedCheckpoint {
  const char* dir;
  std::vector<ExpectedTensor> tensors;
  uint64_t params;
  const char* weights_hash;  // XXH3-64 computed by python3-xxhash
};
const std::vector<ExpectedCheckpoint>& expected() {
  static const std::vector<ExpectedCheckpoint> all = {
#include "fixture_expect.inc"
  };
  return all;
}

const std::filesystem::path kShared = LG_SHARED_DIR;

TEST(Checkpoint, Qwen3Pycode22mHas22597760Parameters) {
  auto c = Checkpoint::open(kShared / "models/qwen3-pycode-22m");
  EXPECT_EQ(c.parameter_count(), 22'597'760u);
  EXPECT_EQ(c.byte_size(), 2u * 22'597'760u);  // all bf16
  EXPECT_EQ(c.files().size(), 1u);
}

TEST(Checkpoint, EveryFixtureLoadsWithItsTrueShapesAndDtypes) {
  for (auto& e : expected()) {
    SCOPED_TRACE(e.dir);
    auto c = Checkpoint::open(kShared / e.dir);
    EXPECT_EQ(c.parameter_count(), e.params);
    std::vector<std::string> names;
    for (auto& t : e.tensors) names.push_back(t.name);
    EXPECT_EQ(c.names(), names);  // exactly these tensors, nothing more
    for (auto& t : e.tensors) {
      SCOPED_TRACE(t.name);
      const TensorInfo& info = c.info(t.name);
      EXPECT_EQ(safetensors_dtype_name(info.dtype), t.dtype);
      EXPECT_EQ(info.shape, t.shape);
      // Values through to_f32 (bf16 widening included) match Python's decoding bit for bit.
      auto v = c.to_f32(t.name);
      ASSERT_EQ(v.size(), info.numel());
      EXPECT_EQ(v.front(), t.first);
      EXPECT_EQ(v.back(), t.last);
    }
    EXPECT_EQ(c.weights_hash(), e.weights_hash);
  }
}

// A directory with a config.json and no weights is a shape (bench/shapes/*): the error says how to
// run one; a directory with neither says only what is missing.
TEST(Checkpoint, AConfigAloneNamesLgBenchShape) {
  const auto dir = std::filesystem::temp_directory_path() / ("lg_config_only_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto message = [&] {
    try {
      Checkpoint::open(dir);
    } catch (const lg::Error& e) {
      return std::string(e.what());
    }
    return std::string("opened");
  };
  EXPECT_EQ(message().find("lg bench --shape"), std::string::npos) << message();
  std::ofstream(dir / "config.json") << "{}";
  EXPECT_NE(message().find("no model.safetensors or model.safetensors.index.json (a config.json alone: `lg bench --shape DIR`"),
            std::string::npos)
      << message();
  // `lg serve -m` of such a directory hears the serve form too.
  EXPECT_NE(message().find("or `lg serve --shape DIR` runs that shape"), std::string::npos) << message();
  std::filesystem::remove_all(dir);
}

TEST(Checkpoint, WeightsHashOf45MBIsFastAndStable) {
  // Golden-token locks hash the weights on every check: it must stay well under a second for
  // 45 MB. The better of two runs is timed so that a busy shared machine does not fail the test.
  double best = 1e9;
  std::string first;
  for (int run = 0; run < 2; ++run) {
    auto c = Checkpoint::open(kShared / "models/qwen3-pycode-22m");
    auto t0 = std::chrono::steady_clock::now();
    std::string h = c.weights_hash();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    EXPECT_EQ(h.size(), 5u + 16u);  // "xxh3:" + 16 hex digits
    if (run == 0) first = h;
    EXPECT_EQ(h, first);
  }
  EXPECT_LT(best, 0.5) << "hashing 45 MB took " << best << " s";
}

TEST(Checkpoint, WeightsHashSeesOneFlippedBitAndARename) {
  TempDir dir;
  std::mt19937_64 rng(std::random_device{}());
  std::vector<OwnedTensor> ts{{"a", DType::BF16, {64}, test::random_bytes(128, rng)},
                              {"b", DType::F32, {4, 4}, test::random_bytes(64, rng)}};
  write_safetensors(dir / "x.safetensors", ts);
  const std::string base = Checkpoint::open(dir / "x.safetensors").weights_hash();
  ts[1].data[37] ^= std::byte{0x10};
  write_safetensors(dir / "y.safetensors", ts);
  EXPECT_NE(Checkpoint::open(dir / "y.safetensors").weights_hash(), base);
  ts[1].data[37] ^= std::byte{0x10};
  ts[1].name = "c";
  write_safetensors(dir / "z.safetensors", ts);
  EXPECT_NE(Checkpoint::open(dir / "z.safetensors").weights_hash(), base);
  ts[1].name = "b";
  ts[1].shape = {16};  // same bytes, different shape
  write_safetensors(dir / "w.safetensors", ts);
  EXPECT_NE(Checkpoint::open(dir / "w.safetensors").weights_hash(), base);
}

TEST(Checkpoint, ToF32WidensBf16AndF16AndRefusesIntegers) {
  TempDir dir;
  auto u16 = [](std::initializer_list<uint16_t> v) {
    std::vector<std::byte> out(v.size() * 2);
    std::memcpy(out.data(), std::data(v), out.size());
    return out;
  };
  // bf16 0x3fc0 = 1.5, 0xc000 = -2; f16 0x3c00 = 1, 0x0001 = 2^-24 (subnormal), 0xfc00 = -inf.
  std::vector<OwnedTensor> ts{{"bf", DType::BF16, {2}, u16({0x3fc0, 0xc000})},
                              {"hf", DType::F16, {3}, u16({0x3c00, 0x0001, 0xfc00})},
                              {"ids", DType::I32, {1}, std::vector<std::byte>(4)}};
  write_safetensors(dir / "x.safetensors", ts);
  auto c = Checkpoint::open(dir / "x.safetensors");
  EXPECT_EQ(c.to_f32("bf"), (std::vector<float>{1.5f, -2.0f}));
  auto hf = c.to_f32("hf");
  EXPECT_EQ(hf[0], 1.0f);
  EXPECT_EQ(hf[1], std::ldexp(1.0f, -24));
  EXPECT_EQ(hf[2], -INFINITY);
  auto msg = error_of([&] { c.to_f32("ids"); });
  EXPECT_HAS(msg, "'ids'");
  EXPECT_HAS(msg, "i32");
}

// Writes the tiny-qwen2 fixture as 3 shards + index.json, the layout of save_pretrained.
void write_sharded(const std::filesystem::path& dir, const Checkpoint& src, size_t nshards,
                   nlohmann::json* index_out = nullptr) {
  auto names = src.names();
  nlohmann::json index = {{"metadata", {{"total_size", src.byte_size()}}}, {"weight_map", nlohmann::json::object()}};
  for (size_t s = 0; s < nshards; ++s) {
    const std::string file = "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(nshards) + ".safetensors";
    std::vector<OwnedTensor> part;
    for (size_t i = s; i < names.size(); i += nshards) {
      const auto& info = src.info(names[i]);
      auto b = src.bytes(names[i]);
      part.push_back({names[i], info.dtype, info.shape, std::vector<std::byte>(b.begin(), b.end())});
      index["weight_map"][names[i]] = file;
    }
    write_safetensors(dir / file, part);
  }
  if (index_out) *index_out = index;
  write_file(dir / "model.safetensors.index.json", index.dump(2));
}

TEST(Checkpoint, ShardedCheckpointLoadsLikeTheSingleFile) {
  TempDir dir;
  auto single = Checkpoint::open(kShared / "fixtures/tiny-qwen2");
  write_sharded(dir.path(), single, 3);
  auto sharded = Checkpoint::open(dir.path());
  EXPECT_EQ(sharded.files().size(), 3u);
  EXPECT_EQ(sharded.names(), single.names());
  EXPECT_EQ(sharded.parameter_count(), single.parameter_count());
  EXPECT_EQ(sharded.byte_size(), single.byte_size());
  // The hash depends on the tensors, not on how they are split into files.
  EXPECT_EQ(sharded.weights_hash(), single.weights_hash());
  for (auto& n : single.names()) {
    EXPECT_EQ(sharded.info(n).shape, single.info(n).shape);
    auto a = sharded.bytes(n), b = single.bytes(n);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << n;
  }
}

TEST(CheckpointWriter, ShardsLikeSavePretrainedAndLoadsBack) {
  TempDir dir;
  auto src = Checkpoint::open(kShared / "fixtures/tiny-qwen3-untied-mqa");
  std::vector<OwnedTensor> ts;
  for (auto& n : src.names()) {
    auto b = src.bytes(n);
    ts.push_back({n, src.info(n).dtype, src.info(n).shape, std::vector<std::byte>(b.begin(), b.end())});
  }
  // 200 KB shards: lm_head and embed_tokens (128 KB each) each fill one; the layers pack after.
  auto files = write_checkpoint(dir / "sharded", ts, 200'000);
  ASSERT_GE(files.size(), 5u);
  EXPECT_EQ(files.back().filename(), "model.safetensors.index.json");
  EXPECT_EQ(files.front().filename(), "model-00001-of-" + fmt::format("{:05d}", files.size() - 1) + ".safetensors");
  for (size_t i = 0; i + 1 < files.size(); ++i)
    EXPECT_LE(Checkpoint::open(files[i]).byte_size(), 200'000u) << files[i];
  auto index = read_json_file(files.back());
  EXPECT_EQ(index["metadata"]["total_size"], src.byte_size());
  EXPECT_EQ(index["weight_map"]["lm_head.weight"], "model-00001-of-" + fmt::format("{:05d}", files.size() - 1) + ".safetensors");
  auto back = Checkpoint::open(dir / "sharded");
  EXPECT_EQ(back.files().size(), files.size() - 1);
  EXPECT_EQ(back.names(), src.names());
  EXPECT_EQ(back.weights_hash(), src.weights_hash());
  // Under the limit: a single model.safetensors, no index.
  files = write_checkpoint(dir / "single", ts);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].filename(), "model.safetensors");
  EXPECT_EQ(Checkpoint::open(dir / "single").weights_hash(), src.weights_hash());
  // Data that does not match its shape is refused before anything is written.
  ts[0].data.pop_back();
  EXPECT_HAS(error_of([&] { write_checkpoint(dir / "bad", ts); }), "'lm_head.weight'");
}

TEST(Checkpoint, MissingShardNamesIt) {
  TempDir dir;
  write_sharded(dir.path(), Checkpoint::open(kShared / "fixtures/tiny-qwen2"), 3);
  std::filesystem::remove(dir / "model-00002-of-00003.safetensors");
  auto msg = error_of([&] { Checkpoint::open(dir.path()); });
  EXPECT_HAS(msg, "model.safetensors.index.json");
  EXPECT_HAS(msg, "shard 'model-00002-of-00003.safetensors' is missing");
}

TEST(Checkpoint, IndexProblemsNameTheFieldOrTensor) {
  TempDir dir;
  nlohmann::json index;
  write_sharded(dir.path(), Checkpoint::open(kShared / "fixtures/tiny-qwen2"), 2, &index);
  // A tensor the index maps to a shard that does not hold it.
  auto bad = index;
  bad["weight_map"]["model.layers.9.mlp.up_proj.weight"] = "model-00001-of-00002.safetensors";
  write_file(dir / "model.safetensors.index.json", bad.dump());
  auto msg = error_of([&] { Checkpoint::open(dir.path()); });
  EXPECT_HAS(msg, "'model.layers.9.mlp.up_proj.weight'");
  EXPECT_HAS(msg, "model-00001-of-00002.safetensors");
  // A shard name with a path in it.
  bad = index;
  bad["weight_map"]["lm_head.weight"] = "../elsewhere.safetensors";
  write_file(dir / "model.safetensors.index.json", bad.dump());
  EXPECT_HAS(error_of([&] { Checkpoint::open(dir.path()); }), "weight_map.lm_head.weight");
  // No weight_map at all; malformed JSON.
  write_file(dir / "model.safetensors.index.json", R"({"metadata": {}})");
  EXPECT_HAS(error_of([&] { Checkpoint::open(dir.path()); }), "missing required field 'weight_map'");
  // A weight_map of the wrong type was reported missing too: it is there, with the wrong type.
  write_file(dir / "model.safetensors.index.json", R"({"weight_map": [1,2]})");
  msg = error_of([&] { Checkpoint::open(dir.path()); });
  EXPECT_HAS(msg, "model.safetensors.index.json: field 'weight_map' must be an object of tensor name -> shard file, "
                  "got array [1,2]");
  EXPECT_EQ(msg.find("missing"), std::string::npos) << msg;
  write_file(dir / "model.safetensors.index.json", R"([1])");
  EXPECT_HAS(error_of([&] { Checkpoint::open(dir.path()); }), "model.safetensors.index.json: expected a JSON object, got array");
  write_file(dir / "model.safetensors.index.json", R"({"weight_map": {)");
  EXPECT_HAS(error_of([&] { Checkpoint::open(dir.path()); }), "model.safetensors.index.json: malformed JSON");
}

TEST(Checkpoint, TensorInTwoShardsIsAnError) {
  TempDir dir;
  std::vector<OwnedTensor> t{{"w", DType::U8, {2}, std::vector<std::byte>(2)}};
  write_safetensors(dir / "a.safetensors", t);
  write_safetensors(dir / "b.safetensors", t);
  write_file(dir / "model.safetensors.index.json",
             R"({"weight_map": {"w": "a.safetensors", "x": "b.safetensors"}})");
  auto msg = error_of([&] { Checkpoint::open(dir.path()); });
  EXPECT_HAS(msg, "'x'");  // b.safetensors does not hold x
  std::vector<OwnedTensor> tx{{"w", DType::U8, {2}, std::vector<std::byte>(2)},
                              {"x", DType::U8, {2}, std::vector<std::byte>(2)}};
  write_safetensors(dir / "b.safetensors", tx);
  msg = error_of([&] { Checkpoint::open(dir.path()); });
  EXPECT_HAS(msg, "tensor 'w' is also in");
}

// Weights this reader does not take (PyTorch pickles, llama.cpp's GGUF), or shards without their
// index, are named as such: the error said only "no model.safetensors or ...index.json (a
// config.json alone: `lg bench --shape DIR` runs that shape on random weights)", as if the
// directory held no weights at all.
TEST(Checkpoint, WeightsInAnotherFormatAreNamed) {
  const auto open_with = [](const std::vector<std::string>& files) {
    TempDir dir;
    std::ofstream(dir / "config.json") << "{}";
    for (const auto& f : files) std::ofstream(dir / f) << "x";
    return error_of([&] { Checkpoint::open(dir.path()); });
  };
  auto msg = open_with({"pytorch_model.bin", "training_args.bin"});
  EXPECT_HAS(msg, "pytorch_model.bin holds PyTorch weights");
  EXPECT_HAS(msg, "safe_serialization=True");
  EXPECT_EQ(msg.find("lg bench --shape"), std::string::npos) << msg;
  EXPECT_HAS(open_with({"pytorch_model-00001-of-00002.bin", "pytorch_model.bin.index.json"}),
             "pytorch_model-00001-of-00002.bin holds PyTorch weights");
  EXPECT_HAS(open_with({"consolidated.00.pth"}), "consolidated.00.pth holds PyTorch weights");
  msg = open_with({"qwen3-0.6b-q8_0.gguf"});
  EXPECT_HAS(msg, "qwen3-0.6b-q8_0.gguf is a GGUF file (llama.cpp's format)");
  EXPECT_EQ(msg.find("lg bench --shape"), std::string::npos) << msg;
  EXPECT_HAS(open_with({"model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors"}),
             "holds model-00001-of-00002.safetensors but no model.safetensors.index.json");
  // A pickle that is not the model's weights (HF Trainer's training_args.bin) is no such file.
  EXPECT_HAS(open_with({"training_args.bin"}), "a config.json alone: `lg bench --shape DIR`");
}

TEST(Checkpoint, EmptyOrMissingDirectory) {
  TempDir dir;
  EXPECT_HAS(error_of([&] { Checkpoint::open(dir.path()); }), "no model.safetensors");
  EXPECT_HAS(error_of([&] { Checkpoint::open(dir / "nope"); }), "nope");
}

TEST(Checkpoint, MissingTensorListsNearestNames) {
  auto c = Checkpoint::open(kShared / "models/qwen3-pycode-22m");
  auto msg = error_of([&] { c.info("model.layers.3.self_attn.q_proj.bias"); });
  EXPECT_HAS(msg, "missing tensor 'model.layers.3.self_attn.q_proj.bias'");
  EXPECT_HAS(msg, "model.layers.3.self_attn.q_proj.weight");
  EXPECT_HAS(msg, "qwen3-pycode-22m");
  EXPECT_HAS(error_of([&] { c.bytes("lm_head.weight"); }), "missing tensor 'lm_head.weight'");
  EXPECT_EQ(c.nearest_names("model.layers.0.mlp.gate_proj.weigth", 1),
            std::vector<std::string>{"model.layers.0.mlp.gate_proj.weight"});
}

TEST(Checkpoint, RequireListsEveryProblemAtOnce) {
  auto c = Checkpoint::open(kShared / "models/qwen3-pycode-22m");
  // Passes: the real shapes.
  c.require({{"model.embed_tokens.weight", DType::BF16, std::vector<int64_t>{151936, 128}},
             {"model.norm.weight", std::nullopt, std::nullopt}});
  auto msg = error_of([&] {
    c.require({{"model.embed_tokens.weight", DType::F32, std::vector<int64_t>{151936, 128}},
               {"model.layers.0.self_attn.q_proj.weight", DType::BF16, std::vector<int64_t>{128, 512}},
               {"model.layers.0.self_attn.qproj.weight", std::nullopt, std::nullopt},
               {"lm_head.weight", DType::BF16, std::nullopt}});
  });
  EXPECT_HAS(msg, "4 problems");
  EXPECT_HAS(msg, "'model.embed_tokens.weight': dtype is bf16, expected f32");
  EXPECT_HAS(msg, "'model.layers.0.self_attn.q_proj.weight': shape is [512, 128], expected [128, 512]");
  EXPECT_HAS(msg, "missing tensor 'model.layers.0.self_attn.qproj.weight' (nearest present: "
                  "model.layers.0.self_attn.q_proj.weight");
  EXPECT_HAS(msg, "missing tensor 'lm_head.weight'");
}

}  // namespace
}  // namespace lg::model
