// ToolWorkers: the threads that run host tool handlers. A handler may block for as long as it
// likes (the run's wall clock bounds the caller, not the handler), so a job never waits behind a
// busy worker: when none is idle a new thread starts. Idle workers are kept for reuse, which
// saves a thread start per tool call, and leave after a while without work.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

namespace codeact::internal {

class ToolWorkers {
 public:
  // Process-wide; never destroyed (workers may still be running a handler at exit).
  static ToolWorkers& Instance();

  void Run(std::function<void()> job);

 private:
  ToolWorkers() = default;
  void Work();

  static constexpr int kMaxIdle = 8;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  int idle_ = 0;
};

}  // namespace codeact::internal
