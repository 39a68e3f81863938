#include "emit/cuda/nvrtc.h"

#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <unistd.h>

#include "support/error.h"

namespace lg::emit::cuda {

namespace {
void check(nvrtcResult r, const std::string& what) {
  if (r != NVRTC_SUCCESS) throw Error("nvrtc: " + what + ": " + nvrtcGetErrorString(r));
}

std::filesystem::path cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "lanegraph";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "lanegraph";
  return std::filesystem::temp_directory_path() / "lanegraph-cache";
}
}  // namespace

std::vector<char> nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch) {
  nvrtcProgram prog;
  check(nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr), "create " + name);
  std::string arch_opt = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_opt.c_str(), "--std=c++17", "-default-device"};
  nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    nvrtcDestroyProgram(&prog);
    throw Error("nvrtc: compiling " + name + " for " + arch + " failed:\n" + log);
  }
  size_t n = 0;
  check(nvrtcGetCUBINSize(prog, &n), "cubin size");
  std::vector<char> cubin(n);
  check(nvrtcGetCUBIN(prog, cubin.data()), "cubin");
  nvrtcDestroyProgram(&prog);
  return cubin;
}

std::vector<char> nvrtc_compile_cached(const std::string& source, const std::string& name, const std::string& arch,
                                       bool* hit) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  size_t key = std::hash<std::string>{}(source + "|" + arch + "|" + std::to_string(major) + "." + std::to_string(minor));
  auto path = cache_dir() / (std::to_string(key) + ".cubin");
  if (std::ifstream f{path, std::ios::binary}) {
    std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!data.empty()) {
      if (hit) *hit = true;
      return data;
    }
  }
  if (hit) *hit = false;
  auto cubin = nvrtc_compile(source, name, arch);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  auto tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  if (std::ofstream f{tmp, std::ios::binary}) {
    f.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    f.close();
    std::filesystem::rename(tmp, path, ec);  // atomic: concurrent compiles never see half a file
  }
  return cubin;
}

}  // namespace lg::emit::cuda
