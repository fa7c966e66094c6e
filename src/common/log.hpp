// The library's logging seam (include/codeact/log.hpp): one call per message, through the
// embedder's handler.
#pragma once

#include <string_view>

#include "codeact/log.hpp"

namespace codeact::internal {

void Log(LogLevel level, std::string_view message);
inline void LogWarning(std::string_view message) { Log(LogLevel::kWarning, message); }

}  // namespace codeact::internal
