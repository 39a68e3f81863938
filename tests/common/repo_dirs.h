// The tests' folders: the fixtures (../shared beside the repo; $LG_SHARED_DIR overrides the build's
// path, as on the GPU machine, which gets a copy of the fixtures elsewhere) and the repo itself.
#pragma once

#include <cstdlib>
#include <string>

namespace lg {

inline const std::string kShared = std::getenv("LG_SHARED_DIR") ? std::getenv("LG_SHARED_DIR") : LG_SHARED_DIR;
inline const std::string kSource = LG_SOURCE_DIR;

}  // namespace lg
