// Test helper: corrupts one element of a tensor in a .safetensors file in place (u64 header
// length, JSON header, data), for tests of how NaN weights are reported.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace lg::test {

/// Writes a quiet NaN into element `index` of `tensor` (F32, BF16 or F16) of `file`. Throws
/// std::runtime_error if the file cannot be patched.
inline void put_nan(const std::filesystem::path& file, const std::string& tensor, uint64_t index) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t n = 0;
  io.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  io.read(header.data(), static_cast<std::streamsize>(n));
  const auto h = nlohmann::json::parse(header).at(tensor);
  const std::string dtype = h.at("dtype");
  const uint64_t size = dtype == "F32" ? 4 : 2;
  io.seekp(static_cast<std::streamoff>(8 + n + h.at("data_offsets")[0].get<uint64_t>() + index * size));
  const uint32_t nan32 = 0x7FC00000u;
  const uint16_t nan16 = dtype == "BF16" ? 0x7FC0 : 0x7E00;
  if (size == 4) io.write(reinterpret_cast<const char*>(&nan32), 4);
  else io.write(reinterpret_cast<const char*>(&nan16), 2);
  if (!io) throw std::runtime_error("cannot patch " + file.string());
}

}  // namespace lg::test
