// Log: where the library's own messages go (a level the runtime fell back to, a cleanup that
// failed). The embedder sets a handler; by default warnings and errors go to stderr. The library
// never logs the code, its output or secrets.
#pragma once

#include <functional>
#include <string_view>

namespace codeact {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

using LogHandler = std::function<void(LogLevel level, std::string_view message)>;

// Replaces the handler (thread-safe); an empty handler restores the default.
void SetLogHandler(LogHandler handler);

}  // namespace codeact
