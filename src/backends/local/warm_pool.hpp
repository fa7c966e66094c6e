// WarmPool: interpreters started ahead of time, per start key, each waiting on the bridge for
// its one request. A child serves exactly one run; taking one schedules a refill. A key unused
// for the idle timeout loses its children, and a child that died while idle is dropped and
// replaced.
//
// Keys are bounded twice: kMaxKeys for the pool, kMaxKeysPerTenant for each tenant
// (RunSnapshot::tenant, a caller of `codeact serve`), so that one caller's runs with ever new
// limits replace that caller's own keys, not everyone's, and never hold more than two keys' worth
// of idle children and fork servers (the executor drops a key's fork servers with it).
//
// Children are started from the pool's own thread, which lives as long as the pool: the
// parent-death signal follows the thread that forked, so a child started from a short-lived
// caller thread would die with it, and every child dies with the host, however it ends.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "backends/executor_introspection.hpp"
#include "codeact/executor.hpp"
#include "files/mount_capture.hpp"
#include "os/pipe.hpp"
#include "process/child.hpp"
#include "process/run_cgroup.hpp"
#include "process/uid_lease.hpp"
#include "protocol/runtime_guard_spec.hpp"

namespace codeact::internal {

// A started child with what belongs to its run. Members are declared so the child dies before
// its working directory and its cgroup are removed.
struct ReadyChild {
  ReadyChild(std::optional<UidLease> lease, std::unique_ptr<RunCgroup> group, TempDir dir,
             std::unique_ptr<Child> started, bool frame_read)
      : uid(std::move(lease)),
        cgroup(std::move(group)),
        workdir(std::move(dir)),
        child(std::move(started)),
        ready_frame_read(frame_read) {}
  ReadyChild(ReadyChild&&) = default;
  ReadyChild& operator=(ReadyChild&&) = default;
  // Kills everything of the run (KillAll) and reaps the child.
  ~ReadyChild();

  // Every process of the run: through its cgroup where it has one (nothing escapes it), else the
  // process group and the /proc sweep by run token.
  void KillAll();

  // A root host: the child's own uid, released last, once the child's processes are gone.
  std::optional<UidLease> uid;
  std::unique_ptr<RunCgroup> cgroup;  // null where no cgroup can be made (CgroupSite)
  TempDir workdir;
  std::unique_ptr<Child> child;
  bool ready_frame_read = false;  // a pooled child: its "ready" frame was read when it started
  // A pooled child: its run's wake-up pipe (RunExtras::wake), made by the refill with it.
  PipeFds wake;
  // Its pid as the host sees it, where child->pid() is of another pid namespace (a namespaces
  // zygote's child); 0: child->pid().
  pid_t host_pid = 0;
  // The spec of its guard frame when that had the imports too: a run whose spec is the same says
  // so in its request (RunExtras::guard_as_armed) instead of repeating it.
  std::optional<RuntimeGuardSpec> guard_ahead;
};

class WarmPool {
 public:
  // Starts a child for start key `key` with `snapshot`.
  using Starter = std::function<StatusOr<ReadyChild>(const std::string& key, const RunSnapshot&)>;
  using KeyDropped = std::function<void(const std::string& key)>;

  // `per_key` ready children are kept for each of the most recently used start keys; a key not
  // used for `idle_timeout` is dropped with its children, and `dropped` is told (outside the
  // pool's lock, from any thread).
  WarmPool(int per_key, std::chrono::milliseconds idle_timeout, Starter start,
           KeyDropped dropped = nullptr);
  // Stops the pool's thread, then kills and reaps every idle child and removes its directory.
  ~WarmPool();
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  // A ready child started under `key` (everything that shapes a child: interpreter, isolation,
  // environment, rlimits, mounts), or nullopt when none is ready. Never waits for a start;
  // schedules a refill either way, which the pool's thread learns of at TellRefills or RunEnded:
  // waking it (a futex wake, ~20 us on the test VM, and the thread run on the other CPU) is kept
  // off the run's path until its request is written.
  std::optional<ReadyChild> Take(const std::string& key, const RunSnapshot& snapshot);

  // Wakes the pool's thread for the refills Take scheduled since it was last woken, if any.
  void TellRefills();

  // Schedules children for `key` without taking one (start-up of a long-lived server).
  void Warm(const std::string& key, const RunSnapshot& snapshot);

  // A run that took a child has ended: refills it scheduled may start kAfterRun from now (the
  // pool's thread is woken for them, as by TellRefills). Until
  // then (or for kRefillDelay at most) they wait, because starting a child forks the host, and
  // while a fork copies the host's page tables every thread that allocates memory waits for it
  // (glibc holds the malloc locks across fork): a refill started at once made the very run it
  // replaces wait. kAfterRun lets the caller deliver the run's result first: a refill's cgroup,
  // directory and fork competed with a warm MCP call's response for ~0.6 ms on the test VM.
  void RunEnded();

  // Pids of the idle children, of all keys or of `key` (for tests and the benchmark).
  std::vector<pid_t> IdlePids(const std::string* key = nullptr) const;
  WarmPoolCounters counters() const;

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kMaxKeys = 8;
  static constexpr std::size_t kMaxKeysPerTenant = 2;
  static constexpr std::chrono::milliseconds kRefillDelay{50};
  static constexpr std::chrono::milliseconds kAfterRun{3};

  struct Refill {
    std::string key;
    Clock::time_point not_before;
  };

  struct Slot {
    RunSnapshot config;  // what a child is started with (tools dropped)
    std::deque<ReadyChild> ready;
    Clock::time_point last_used;
    int failures = 0;  // consecutive start failures; the slot stops refilling after a few
  };

  // Finds or adds the slot for `key` (evicting the least recently used key of the same tenant
  // past kMaxKeysPerTenant, then the least recently used one past kMaxKeys, into `evicted`) and
  // marks it used. Caller holds mu_.
  Slot& Touch(const std::string& key, const RunSnapshot& snapshot, std::vector<ReadyChild>& evicted,
              std::vector<std::string>& dropped_keys);
  // Drops keys idle past the timeout and children that died while idle (into `dropped`), and
  // schedules refills for the latter. Caller holds mu_.
  void Sweep(std::vector<ReadyChild>& dropped, std::vector<std::string>& dropped_keys);
  void TellDropped(const std::vector<std::string>& keys) const;
  void Loop();

  const int per_key_;
  const std::chrono::milliseconds idle_timeout_;
  const Starter start_;
  const KeyDropped dropped_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Slot> slots_;
  std::deque<Refill> refill_;
  WarmPoolCounters counters_;
  bool stopping_ = false;
  bool refills_untold_ = false;  // Take scheduled refills the pool's thread was not woken for
  std::thread thread_;
};

}  // namespace codeact::internal
