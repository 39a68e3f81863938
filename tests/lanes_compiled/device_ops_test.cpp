// The compiled lane's greedy argmax (src/lanes/compiled/device_ops.cu) against the host rule it
// documents (std::max_element's: the largest value, the lowest index on ties; NaN never chosen
// unless the whole row is NaN, then 0), on fresh random rows: Qwen's vocabulary (151,936, whose
// rows are 16-byte aligned: the float4 path), odd lengths (every row after the first misaligned:
// the scalar path), ties planted at both ends of a thread's slice, NaNs and -inf, several rows a
// launch. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "lanes/compiled/device_ops.h"
#include "runtime/cuda/device.h"

namespace lg::compiled {
namespace {

int host_argmax(const float* x, long n) {
  int bi = -1;
  for (long i = 0; i < n; ++i)
    if (!std::isnan(x[i]) && (bi < 0 || x[i] > x[bi])) bi = static_cast<int>(i);
  return bi < 0 ? 0 : bi;
}

TEST(CompiledDeviceOps, ArgmaxFollowsTheHostRuleOnAlignedAndOddRows) {
  if (!cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  cuda::Stream stream;
  for (const long n : {151936L, 151937L, 4099L, 5L, 1L}) {
    for (const int rows : {1, 3}) {
      for (int pattern = 0; pattern < 5; ++pattern) {
        SCOPED_TRACE("n " + std::to_string(n) + ", rows " + std::to_string(rows) + ", pattern " + std::to_string(pattern));
        std::vector<float> x(static_cast<size_t>(n * rows));
        for (float& v : x) v = normal(rng);
        std::uniform_int_distribution<long> at(0, n - 1);
        for (int r = 0; r < rows; ++r) {
          float* row = x.data() + static_cast<size_t>(r) * static_cast<size_t>(n);
          const long a = at(rng), b = at(rng);
          if (pattern == 1) row[a] = row[b] = 100.0f;  // a tie: the lower index wins
          if (pattern == 2) {                          // NaNs never win
            row[a] = nan;
            row[at(rng)] = nan;
          }
          if (pattern == 3)
            for (long i = 0; i < n; ++i) row[i] = i % 7 == 3 ? nan : -inf;  // the first -inf wins
          if (pattern == 4)
            for (long i = 0; i < n; ++i) row[i] = nan;  // all NaN: 0
        }
        cuda::DeviceBuffer dx(x.size() * sizeof(float)), dout(static_cast<size_t>(rows) * sizeof(int));
        dx.upload(x.data(), x.size() * sizeof(float));
        std::vector<int> got(static_cast<size_t>(rows), -7);
        dout.upload(got.data(), got.size() * sizeof(int));  // poisoned
        argmax(dx.as<float>(), n, dout.as<int>(), stream.get(), rows);
        stream.synchronize();
        dout.download(got.data(), got.size() * sizeof(int));
        for (int r = 0; r < rows; ++r)
          EXPECT_EQ(got[static_cast<size_t>(r)], host_argmax(x.data() + static_cast<size_t>(r) * static_cast<size_t>(n), n))
              << "row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace lg::compiled
