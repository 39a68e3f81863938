// The checks `lg inspect` runs beyond loading: NaN/Inf weights found by tensor, element count
// and first index in every float dtype; config.json dims that disagree with the tensor shapes
// (a config from another size) named by tensor and config field, and the fixtures' own
// configs agreeing with their checkpoints.
#include "model/weight_checks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "model/checkpoint_writer.h"
#include "model/model_dir.h"
#include "test_util.h"

namespace lg::model {
namespace {

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> randn(size_t n) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out;
  for (float x : v) out.push_back(f32_to_bf16(x));
  return out;
}

TEST(WeightChecks, NonFiniteTensorsAreNamedWithCountsAndFirstIndex) {
  test::TempDir dir;
  auto a = randn(64), clean = randn(32);
  a[5] = std::numeric_limits<float>::quiet_NaN();
  a[9] = -std::numeric_limits<float>::infinity();
  a[40] = std::numeric_limits<float>::quiet_NaN();
  auto b = to_bf16(randn(48));
  b[17] = 0x7F80;  // bf16 +Inf
  std::vector<uint16_t> h(16, 0x3C00);  // f16 1.0 ...
  h[3] = 0x7E00;                        // ... and one f16 NaN
  std::vector<int32_t> ids(8, -1);      // all bits set: not a float, never reported
  write_checkpoint(dir.path(), std::vector<OwnedTensor>{{"a", DType::F32, {8, 8}, bytes_of(a)},
                                                        {"b", DType::BF16, {48}, bytes_of(b)},
                                                        {"clean", DType::F32, {32}, bytes_of(clean)},
                                                        {"h", DType::F16, {16}, bytes_of(h)},
                                                        {"ids", DType::I32, {8}, bytes_of(ids)}});
  const auto found = find_non_finite(Checkpoint::open(dir.path()));
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].name, "a");
  EXPECT_EQ(found[0].nan, 2u);
  EXPECT_EQ(found[0].inf, 1u);
  EXPECT_EQ(found[0].first_index, 5u);
  EXPECT_EQ(found[1].name, "b");
  EXPECT_EQ(found[1].inf, 1u);
  EXPECT_EQ(found[1].first_index, 17u);
  EXPECT_EQ(found[2].name, "h");
  EXPECT_EQ(found[2].nan, 1u);
  EXPECT_EQ(found[2].first_index, 3u);
}

TEST(WeightChecks, FixtureCheckpointsAreFinite) {
  for (const char* name : {"tiny-qwen3", "tiny-qwen3-untied-mqa", "tiny-qwen2", "tiny-llama3", "tiny-mistral",
                           "tiny-phi3", "tiny-gpt2", "tiny-gemma3", "tiny-qwen3-moe"}) {
    const auto m = ModelDir::open(std::string(LG_SHARED_DIR) + "/fixtures/" + name);
    EXPECT_TRUE(find_non_finite(m.checkpoint).empty()) << name;
  }
}

}  // namespace
}  // namespace lg::model
