#include "common/log.hpp"

#include <iostream>
#include <mutex>
#include <string>

namespace codeact {
namespace {

// The handler, with the mutex that guards it (calls into the handler too).
struct HandlerState {
  std::mutex mu;
  LogHandler handler;
};

HandlerState& State() {
  static HandlerState state;
  return state;
}

}  // namespace

void SetLogHandler(LogHandler handler) {
  HandlerState& state = State();
  std::lock_guard lock(state.mu);
  state.handler = std::move(handler);
}

namespace internal {

void Log(LogLevel level, std::string_view message) {
  HandlerState& state = State();
  std::lock_guard lock(state.mu);
  if (state.handler) return state.handler(level, message);
  if (level < LogLevel::kWarning) return;
  std::cerr << "codeact: " << (level == LogLevel::kWarning ? "warning: " : "error: ") << message
            << "\n";
}

}  // namespace internal
}  // namespace codeact
