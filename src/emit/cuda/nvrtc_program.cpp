#include "emit/cuda/nvrtc_program.h"

#include <algorithm>
#include <future>

#include "emit/cuda/nvrtc.h"

namespace lg::emit::cuda {

std::vector<CubinChunk> nvrtc_compile_program(const CudaProgram& prog, const std::string& arch, size_t threads) {
  const size_t nk = prog.kernels.size();
  const size_t units = std::max<size_t>(threads, 1);
  const size_t per = std::max<size_t>(1, (nk + units - 1) / units);
  std::vector<CubinChunk> chunks;
  chunks.reserve((nk + per - 1) / per);  // the jobs hold pointers into it: no reallocation
  std::vector<std::future<std::vector<char>>> jobs;  // destroyed (joined) before chunks
  for (size_t k0 = 0; k0 < nk; k0 += per) {
    CubinChunk& c = chunks.emplace_back();
    c.first = k0;
    c.count = std::min(nk, k0 + per) - k0;
    // This text is the cache key: keep it stable, or every machine recompiles once.
    std::string src = "// " + prog.model + ": kernels " + std::to_string(k0) + ".." + std::to_string(k0 + c.count - 1) +
                      " of the compiled program.\n" + prog.prelude;
    for (size_t k = k0; k < k0 + c.count; ++k) src += "\n" + prog.kernels[k].source;
    jobs.push_back(std::async(std::launch::async, [src = std::move(src), &model = prog.model, &arch, hit = &c.cache_hit] {
      return nvrtc_compile_cached(src, model, arch, hit);
    }));
  }
  for (size_t i = 0; i < jobs.size(); ++i) chunks[i].cubin = jobs[i].get();
  return chunks;
}

}  // namespace lg::emit::cuda
