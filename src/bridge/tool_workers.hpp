// ToolWorkers: the threads that run host tool handlers, process-wide and bounded. A handler may
// block (on a command, a socket), so a job does not wait behind a busy worker while fewer than
// kMaxThreads exist: a new thread starts instead. At kMaxThreads further jobs queue until a
// worker is free. That bound holds because handlers end with their run: the bridge cancels a
// run's ToolCallContext token when the run ends, command tools kill their process then, and a
// job whose run has ended by the time a worker takes it does nothing. Only a handler that
// ignores cancellation keeps its thread past its run. Idle workers are kept for reuse (a thread
// start per tool call is measurable) and leave after a while without work.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

namespace codeact::internal {

struct ToolWorkerCounts {
  int threads = 0;  // started and not yet gone
  int busy = 0;     // running a job
  int queued = 0;   // jobs waiting for a worker
};

class ToolWorkers {
 public:
  static constexpr int kMaxThreads = 64;
  static constexpr int kMaxIdle = 8;

  // Process-wide; never destroyed (a handler that ignores cancellation may still be running at
  // exit).
  static ToolWorkers& Instance();

  void Run(std::function<void()> job);
  ToolWorkerCounts Counts();

 private:
  ToolWorkers() = default;
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  int threads_ = 0;
  int idle_ = 0;
};

}  // namespace codeact::internal
