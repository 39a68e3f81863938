// Replays a fuzz corpus without libFuzzer: every file under the given folders (or the given files)
// goes through LLVMFuzzerTestOneInput once. A crash, hang or sanitizer report fails the ctest.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// A target may define this to check what the whole corpus exercised once it ran (scheduler_fuzz:
// that its requests drew every sampling penalty); nonzero fails the replay. Weak: most do not.
extern "C" __attribute__((weak)) int LgFuzzReplayCheck();

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  size_t count = 0;
  auto run = [&](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++count;
  };
  for (int i = 1; i < argc; ++i) {
    fs::path p(argv[i]);
    if (fs::is_directory(p)) {
      for (auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file()) run(e.path());
    } else if (fs::exists(p)) {
      run(p);
    } else {
      std::fprintf(stderr, "replay: %s does not exist\n", argv[i]);
      return 1;
    }
  }
  std::printf("replayed %zu inputs\n", count);
  if (count == 0) return 1;
  return LgFuzzReplayCheck != nullptr ? LgFuzzReplayCheck() : 0;
}
