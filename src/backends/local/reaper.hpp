// Reaper: finishes children off the hot path. A run that ended with its terminal frame has
// already had its process group killed and its output read; what remains (the /proc sweep for
// daemons that left the group, reaping, removing the working directory) costs milliseconds the
// caller need not wait for. The destructor finishes everything still queued.
#pragma once

#include "backends/local/warm_pool.hpp"
#include "common/task_thread.hpp"
#include "os/background_thread.hpp"

namespace codeact::internal {

class Reaper {
 public:
  // Its thread yields on wake-up (os/background_thread.hpp): the finishing is off the path.
  Reaper() { thread_.Post(YieldOnWakeUp); }
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  void Finish(ReadyChild child);

 private:
  TaskThread thread_;
};

}  // namespace codeact::internal
