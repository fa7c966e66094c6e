// Reaper: finishes children off the hot path. A run that ended with its terminal frame has
// already had its process group killed and its output read; what remains (the /proc sweep for
// daemons that left the group, reaping, removing the working directory) costs milliseconds the
// caller need not wait for. The destructor finishes everything still queued.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "backends/local/warm_pool.hpp"

namespace codeact::internal {

class Reaper {
 public:
  Reaper();
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  void Finish(ReadyChild child);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ReadyChild> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace codeact::internal
