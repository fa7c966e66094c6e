// WarmPool: interpreters started ahead of time, per config fingerprint, each waiting on the
// bridge for its one request. A child serves exactly one run; taking one schedules a refill.
//
// Children are started from the pool's own thread, which lives as long as the pool: the
// parent-death signal follows the thread that forked, so a child started from a short-lived
// caller thread would die with it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "codeact/executor.hpp"
#include "files/mount_capture.hpp"
#include "process/child.hpp"
#include "process/pids_cgroup.hpp"

namespace codeact::internal {

// Declared so the child dies before its working directory and its cgroup are removed.
struct ReadyChild {
  std::optional<PidsCgroup> cgroup;  // namespaces level, where pids cgroups can be created
  TempDir workdir;
  std::unique_ptr<Child> child;
  bool ready_frame_read = false;  // a pooled child: its "ready" frame was read when it started
};

class WarmPool {
 public:
  using Starter = std::function<StatusOr<ReadyChild>(const RunSnapshot&)>;

  // `per_key` ready children are kept for each of the most recently used start keys.
  WarmPool(int per_key, Starter start);
  ~WarmPool();
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  // A ready child started under `key` (everything that shapes a child: interpreter, environment,
  // rlimits), or nullopt when none is ready yet. Schedules a refill either way.
  std::optional<ReadyChild> Take(const std::string& key, const RunSnapshot& snapshot);

  // Pids of the idle children (for the benchmark's memory figure).
  std::vector<pid_t> IdlePids() const;

 private:
  static constexpr std::size_t kMaxKeys = 8;

  struct Slot {
    RunSnapshot config;  // what a child is started with (tools dropped)
    std::deque<ReadyChild> ready;
    std::uint64_t last_used = 0;
    int failures = 0;  // consecutive start failures; the slot stops refilling after a few
  };

  void Loop();

  const int per_key_;
  const Starter start_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Slot> slots_;
  std::deque<std::string> refill_;
  std::uint64_t clock_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace codeact::internal
