#include "common/log.hpp"

#include <iostream>
#include <mutex>
#include <string>

namespace codeact {
namespace {

std::mutex& HandlerMutex() {
  static std::mutex mu;
  return mu;
}

LogHandler& Handler() {
  static LogHandler handler;
  return handler;
}

}  // namespace

void SetLogHandler(LogHandler handler) {
  std::lock_guard lock(HandlerMutex());
  Handler() = std::move(handler);
}

namespace internal {

void Log(LogLevel level, std::string_view message) {
  std::lock_guard lock(HandlerMutex());
  if (Handler()) return Handler()(level, message);
  if (level < LogLevel::kWarning) return;
  std::cerr << "codeact: " << (level == LogLevel::kWarning ? "warning: " : "error: ") << message
            << "\n";
}

}  // namespace internal
}  // namespace codeact
