// lg_cuda helpers: device detection must answer (not crash) without a driver; buffers, streams and
// graphs round-trip data on a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/fill.h"
#include "runtime/cuda/pinned_upload.h"
#include "runtime/cuda/tensor_map.h"

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

// A map the driver must refuse (a base 8 bytes off the required 16-byte alignment; a box past 256
// rows) is an lg::Error naming the caller, never a crash: on a machine without a driver the same
// call says the driver has no cuTensorMapEncodeTiled. With a driver, a valid map encodes.
TEST(CudaRuntime, TensorMapRefusalsAreErrorsNamingTheCaller) {
  alignas(16) static uint16_t m[64 * 64];
  auto refused = [&](const void* base, uint32_t box_rows, const char* why) {
    try {
      (void)tensor_map_bf16_2d(base, 64, 64, box_rows, 64, "the test's map");
      ADD_FAILURE() << "no throw: " << why;
    } catch (const lg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("the test's map"), std::string::npos) << e.what();
    }
  };
  refused(reinterpret_cast<const char*>(m) + 8, 64, "misaligned base");
  refused(m, 512, "box of 512 rows");
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: only the refusals ran";
  // On device memory, as the lane's maps are: the driver encodes a map only in a CUDA context
  // (CUresult 201 before any runtime call made one, H100, thirty-fifth session).
  DeviceBuffer w(sizeof m);
  const CUtensorMap ok = tensor_map_bf16_2d(w.data(), 64, 64, 64, 64, "the test's map");
  (void)ok;
}

// What upload and memset_device_now leave is what a non-blocking stream's next work reads: a
// plain cudaMemcpy from pageable memory returns before its DMA lands (a kernel test once read
// poison that landed after the kernel's own writes). 64 MiB a round, a fresh pattern each, read
// back through a copy issued on a non-blocking stream the moment the call returns.
TEST(CudaRuntime, UploadsAndMemsetsAreInPlaceForANonBlockingStream) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  const size_t n = size_t{16} << 20;  // ints
  DeviceBuffer a(n * sizeof(int)), b(n * sizeof(int));
  Stream s;
  std::vector<int> host(n), back(n);
  for (int round = 0; round < 4; ++round) {
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<int>(i * 2654435761u) ^ (round * 977);
    a.upload(host.data(), n * sizeof(int));
    LG_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), n * sizeof(int), cudaMemcpyDeviceToDevice, s.get()));
    s.synchronize();
    b.download(back.data(), n * sizeof(int));
    ASSERT_EQ(back, host) << "upload, round " << round;
    memset_device_now(a.data(), 0x11 * (round + 1), n * sizeof(int));
    LG_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), n * sizeof(int), cudaMemcpyDeviceToDevice, s.get()));
    s.synchronize();
    b.download(back.data(), n * sizeof(int));
    const int byte = 0x11 * (round + 1);
    ASSERT_EQ(back, std::vector<int>(n, byte * 0x01010101)) << "memset, round " << round;
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
  memset_device_now(b.data(), 0xff, b.bytes());
  g.launch(s.get());
  s.synchronize();
  std::vector<int> back(host.size());
  b.download(back.data(), back.size() * sizeof(int));
  EXPECT_EQ(back, host);
}

// The pinned staging ring: sizes around the slot size (empty, one byte, a slot less and more one,
// several slots), several uploads in a row that reuse every slot, from pageable memory that is
// overwritten as soon as upload() returns (as an unmapped checkpoint would be gone): the device
// holds the bytes as they were.
TEST(CudaRuntime, PinnedUploaderCopiesEveryByteInStreamOrder) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  const size_t slot = size_t{4} << 20;  // above 2 MiB: the copy is split across the threads
  PinnedUploader up(slot, 2, 3);
  Stream s;
  uint32_t x = 12345;
  for (size_t n : {size_t{0}, size_t{1}, slot - 1, slot, slot + 1, 3 * slot + 4097}) {
    std::vector<uint8_t> host(n), keep(n);
    for (size_t i = 0; i < n; ++i) host[i] = keep[i] = static_cast<uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
    DeviceBuffer d(n);
    up.upload(d.data(), host.data(), n, s.get());
    std::fill(host.begin(), host.end(), uint8_t{0});  // read when upload() returned
    up.finish();
    std::vector<uint8_t> back(n);
    d.download(back.data(), n);
    EXPECT_EQ(back, keep) << n << " bytes";
  }
  EXPECT_EQ(up.bytes(), 0 + 1 + (slot - 1) + slot + (slot + 1) + (3 * slot + 4097));
}

// The kernels a capture puts into its graph, counted while it is captured.
TEST(CudaRuntime, CapturedKernelLaunchesCountsTheCapture) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  Stream s;
  EXPECT_EQ(captured_kernel_launches(s.get()), 0u);  // not capturing
  DeviceBuffer a(1024);
  GraphExec g;
  g.begin_capture(s.get());
  EXPECT_EQ(captured_kernel_launches(s.get()), 0u);
  LG_CUDA_CHECK(cudaMemsetAsync(a.data(), 0, a.bytes(), s.get()));  // a memset node: not a kernel
  EXPECT_EQ(captured_kernel_launches(s.get()), 0u);
  fill_uniform_bf16(a.as<__nv_bfloat16>(), 512, 1, 0.1f, s.get());
  fill_uniform_bf16(a.as<__nv_bfloat16>(), 512, 2, 0.1f, s.get());
  EXPECT_EQ(captured_kernel_launches(s.get()), 2u);
  g.end_capture(s.get());
  EXPECT_EQ(device_arch().rfind("sm_", 0), 0u) << device_arch();
}
