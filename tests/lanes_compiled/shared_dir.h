// The fixtures folder of the compiled lane's tests: $LG_SHARED_DIR overrides the build's path (the
// GPU machine gets a copy of the fixtures elsewhere).
#pragma once

#include <cstdlib>
#include <string>

namespace lg {

inline const std::string kShared = std::getenv("LG_SHARED_DIR") ? std::getenv("LG_SHARED_DIR") : LG_SHARED_DIR;

}  // namespace lg
