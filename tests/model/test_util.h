// Helpers for the model tests: a scratch directory removed at the end of the test, raw file
// writes, and hand-built safetensors blobs (so that corrupt headers can be written byte by byte).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "support/error.h"

namespace lg::model::test {

/// A fresh directory under $TMPDIR (mkdtemp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lg_model_test_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

/// An 8-byte little-endian length + `header` + `data`: a safetensors file built by hand.
inline std::string st_blob(const std::string& header, const std::string& data, uint64_t length_field) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &length_field, 8);
  return out + header + data;
}
inline std::string st_blob(const std::string& header, const std::string& data) {
  return st_blob(header, data, header.size());
}

/// Runs `f`, expects an lg::Error, and returns its message ("" and a test failure if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const lg::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an lg::Error";
  return "";
}

/// Random bytes from a seed drawn fresh per run (printed on failure through SCOPED_TRACE by callers).
inline std::vector<std::byte> random_bytes(size_t n, std::mt19937_64& rng) {
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xff);
  return out;
}

}  // namespace lg::model::test
