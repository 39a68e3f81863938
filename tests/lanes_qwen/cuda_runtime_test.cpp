// lg_cuda helpers: device detection must answer (not crash) without a driver; buffers, streams and
// graphs round-trip data on a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"

using namespace lg::cuda;

TEST(CudaRuntime, DetectionNeverCrashes) {
  bool avail = cuda_device_available();
  // Called twice: the second call must give the same answer (no sticky error in between).
  EXPECT_EQ(avail, cuda_device_available());
}

TEST(CudaRuntime, CheckThrowsLgErrorWithFileAndLine) {
  try {
    LG_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "no throw";
  } catch (const lg::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cuda_runtime_test.cpp:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cudaErrorInvalidValue"), std::string::npos) << msg;
  }
}

TEST(CudaRuntime, BufferRoundTripAndGraphReplay) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<int> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int>(i * 7 + 3);
  DeviceBuffer a(host.size() * sizeof(int)), b(host.size() * sizeof(int));
  a.upload(host.data(), host.size() * sizeof(int));
  EXPECT_THROW(a.upload(host.data(), host.size() * sizeof(int), 4), lg::Error);
  Stream s;
  GraphExec g;
  g.begin_capture(s.get());
  LG_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), a.bytes(), cudaMemcpyDeviceToDevice, s.get()));
  g.end_capture(s.get());
  LG_CUDA_CHECK(cudaMemset(b.data(), 0xff, b.bytes()));
  g.launch(s.get());
  s.synchronize();
  std::vector<int> back(host.size());
  b.download(back.data(), back.size() * sizeof(int));
  EXPECT_EQ(back, host);
}
