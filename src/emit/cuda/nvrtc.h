// NVRTC compilation of emitted CUDA source to a cubin, with an on-disk cache keyed by the source
// and options (~/.cache/lanegraph, or $XDG_CACHE_HOME/lanegraph). Needs only libnvrtc, never the
// driver: it runs (and CI tests it) on machines without a GPU.
#pragma once

#include <string>
#include <vector>

namespace lg::emit::cuda {

/// Compiles `source` for `arch` (e.g. "sm_90") and returns the cubin. `name` labels the program
/// in errors. Throws lg::Error with NVRTC's log when compilation fails.
std::vector<char> nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch = "sm_90");

/// Like nvrtc_compile, but first looks in the cache directory; stores new results there.
/// `hit` (if given) says whether the cache had it.
std::vector<char> nvrtc_compile_cached(const std::string& source, const std::string& name,
                                       const std::string& arch = "sm_90", bool* hit = nullptr);

}  // namespace lg::emit::cuda
