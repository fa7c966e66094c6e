// ToolWorkers: the threads that run host tool handlers, process-wide and bounded
// (common/kept_threads.hpp). A handler may block (on a command, a socket), so a job does not wait
// behind a busy worker while fewer than kMaxThreads exist: a new thread starts instead. At
// kMaxThreads further jobs queue until a worker is free. That bound holds because handlers end
// with their run: the bridge cancels a run's ToolCallContext token when the run ends, command
// tools kill their process then, and a job whose run has ended by the time a worker takes it
// does nothing. Only a handler that ignores cancellation keeps its thread past its run. Idle
// workers are kept for reuse (a thread start per tool call is measurable) and leave after a
// while without work.
#pragma once

#include "common/kept_threads.hpp"

namespace codeact::internal {

using ToolWorkerCounts = KeptThreads::ThreadCounts;

class ToolWorkers {
 public:
  static constexpr int kMaxThreads = 64;
  static constexpr int kMaxIdle = 8;

  // Process-wide; never destroyed (a handler that ignores cancellation may still be running at
  // exit). Its jobs never throw: the bridge wraps handlers.
  static KeptThreads& Instance();
};

}  // namespace codeact::internal
