// KeptThreads: threads that run jobs and are kept for the next ones, where a thread's start per
// job would be measurable. A job goes to an idle thread, else to a thread started for it while
// fewer than `max_threads` exist (0: no bound), else it waits in the queue for a thread to be
// free. A thread without a job waits idle for the next, unless `max_idle` wait already; an idle
// thread leaves after `idle_lifetime` (0: it stays). An instance is meant to live for the
// process (its threads are detached and may be waiting on it at exit).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace codeact::internal {

class KeptThreads {
 public:
  struct Limits {
    int max_threads = 0;  // 0: no bound
    int max_idle = 0;
    std::chrono::seconds idle_lifetime{0};  // 0: an idle thread stays
  };
  struct ThreadCounts {
    int threads = 0;  // started and not yet gone
    int busy = 0;     // running a job
    int queued = 0;   // jobs waiting for a thread
  };

  explicit KeptThreads(Limits limits) : limits_(limits) {}
  KeptThreads(const KeptThreads&) = delete;
  KeptThreads& operator=(const KeptThreads&) = delete;

  // Queues `job` for a thread. True once a thread has it, or will: an idle one, one started for
  // it, or (`may_wait`) the next to be free when none can be started now. False, with the job
  // dropped, when it may not wait and no thread could be started for it (the host is at its
  // limit of threads). A job must not throw.
  bool Run(std::function<void()> job, bool may_wait = true);

  ThreadCounts Counts();

 private:
  struct Job {
    std::uint64_t id;
    std::function<void()> run;
  };

  void Work();

  const Limits limits_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::uint64_t next_id_ = 0;
  int threads_ = 0;
  int idle_ = 0;
};

}  // namespace codeact::internal
