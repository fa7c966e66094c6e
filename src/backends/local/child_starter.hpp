// ChildStarter: how a local executor's children start — cold (the interpreter itself at the
// process level, the codeact-sandbox launcher at the namespaces level), forked from a zygote of
// their start key (a fork server with everything loaded), handed over by the warm pool, started
// ahead of a run without a pool (Warm), and the interpreters of sessions. Every start is
// all-or-nothing: a child that cannot get its cgroup, its uid, its directory or its guard does
// not start. Thread-safe; what runs in a child is the executor's (local_executor.cpp), whether it
// may start is the admission's (admission.hpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/local/local_setup.hpp"
#include "backends/local/session_child.hpp"
#include "backends/local/warm_pool.hpp"
#include "codeact/executor.hpp"
#include "common/task_thread.hpp"
#include "files/mount_capture.hpp"
#include "os/errno_status.hpp"
#include "os/unique_fd.hpp"
#include "process/child.hpp"
#include "process/fork_server.hpp"
#include "process/session_cgroups.hpp"

namespace codeact::internal {

class ChildStarter {
 public:
  // `setup` outlives the starter. `bytecode_dir`: the private directory of the runner's files
  // (runner_files.hpp), where the validator package is staged; `use_cache`: the per-user cache.
  ChildStarter(const LocalSetup& setup, const ExecutorOptions& options,
               std::optional<TempDir> bytecode_dir, bool use_cache);
  // Waits for a start still running on PrestartThread(), and kills the child no run took.
  ~ChildStarter();
  ChildStarter(const ChildStarter&) = delete;
  ChildStarter& operator=(const ChildStarter&) = delete;

  // A child from the warm pool when one is ready for this start key, else the one Warm started
  // without a pool, else one started now. `guard_imports`: the run's runtime guard imports, noted
  // for the key's next children (NoteGuardImports); null when the run has none of the host's.
  StatusOr<ReadyChild> TakeOrStart(const RunSnapshot& snapshot,
                                   const std::vector<std::string>* guard_imports);
  // Children ready for runs under `snapshot`: the pool's, or without a pool one started now on
  // PrestartThread() for the next run of its key.
  void Warm(const RunSnapshot& snapshot);
  // The run that took a child wrote its request: the pool's thread learns of the refill now
  // (WarmPool::TellRefills).
  void TellRefills();
  // A run that took a child has ended: the pool's refill for it may start now.
  void RunEnded();

  // Stages the validator package beside the runner, once (FAILED_PRECONDITION where this
  // executor's children do not validate code).
  Status StageValidator();

  // The parent cgroup of every session of this executor, made by the first session (its total
  // memory budget stays the first session's settings').
  StatusOr<std::shared_ptr<SessionParentGroup>> SessionParent(const SessionSettings& settings);
  // A session's interpreter, started on the sessions' own thread (the parent-death signal
  // follows the thread that forked, and the caller's may end long before the session). It has
  // said ready (its guard armed) when this returns. After SessionParent only.
  StatusOr<std::unique_ptr<SessionChild>> StartSession(
      const RunSnapshot& snapshot, const std::shared_ptr<SessionParentGroup>& parent);

  // Idle pooled children (of every key, or of `snapshot`'s), the pool's counters and the live
  // fork servers, for tests and the benchmark.
  std::vector<pid_t> IdlePids(const RunSnapshot* snapshot) const;
  WarmPoolCounters PoolCounters() const;
  std::vector<pid_t> ZygotePids() const;

 private:
  // How a child is started: for the run waiting for it; ahead of a run that is about to come
  // (Warm without a pool: a one-shot run starts its child while it validates); or for the pool.
  enum class StartMode { kForRun, kPrestart, kWarm };

  // The zygotes of one start key: more than one, so that forks (a page-table copy each) run in
  // parallel on more than one core.
  struct ZygoteEntry {
    std::vector<std::shared_ptr<ForkServer>> servers;
    std::size_t next = 0;  // round robin
    int failures = 0;
  };
  static constexpr int kMaxZygoteFailures = 3;
  static constexpr std::int64_t kForksPerZygote = 256;

  struct Prestarted {
    std::string key;
    std::future<StatusOr<ReadyChild>> child;
  };

  std::string Key(const RunSnapshot& snapshot) const;
  // `key`: Key(snapshot), which every step below needs.
  StatusOr<ReadyChild> Start(const std::string& key, const RunSnapshot& snapshot,
                             StartMode mode = StartMode::kForRun);
  void Prestart(const RunSnapshot& snapshot);
  std::optional<StatusOr<ReadyChild>> TakePrestarted(const std::string& key);
  StatusOr<std::unique_ptr<SessionChild>> StartSessionChild(
      const RunSnapshot& snapshot, const std::shared_ptr<SessionParentGroup>& parent);
  StatusOr<std::unique_ptr<RunCgroup>> NewCgroup(const RunSnapshot& snapshot);
  LaunchSpec ChildSpec(const RunSnapshot& snapshot, const std::string& working_dir) const;
  Status ApplyLevelAndGroups(const RunSnapshot& snapshot, const std::string& scratch,
                             const std::vector<std::string>& join, const UidLease* uid,
                             LaunchSpec& spec) const;
  Status RunAsOwnUid(const RunSnapshot& snapshot, uid_t uid, const std::string& workdir,
                     LaunchSpec& spec, std::vector<UniqueFd>& trees) const;
  std::shared_ptr<ForkServer> Zygote(const std::string& key, const RunSnapshot& snapshot,
                                     bool may_start);
  StatusOr<std::shared_ptr<ForkServer>> StartZygote(const RunSnapshot& snapshot);
  std::optional<ReadyChild> Fork(ForkServer& zygote, const std::string& key,
                                 const RunSnapshot& snapshot, std::optional<UidLease>& uid);
  // The runtime guard's imports of the latest run of start key `key` (the validator's reading of
  // its policy): the guard frames of the children of that key started from now on carry them
  // (ReadyChild::guard_ahead). The tenant is part of the key: no child gets the list of another
  // caller's runs.
  void NoteGuardImports(const std::string& key, const std::vector<std::string>& imports);
  // The guard frame of a child started ahead of its run (setup_.guard is set), with the imports
  // of the latest run of its key when there was one.
  Status SendGuardAhead(ReadyChild& ready, const std::string& key, const RunSnapshot& snapshot);
  void DropKey(const std::string& key);

  const LocalSetup& setup_;
  const RunUidRange run_uids_;
  // The private directory of runner.pyc (or, under the guard, runner.py when compiling failed)
  // when the runner points there; at the namespaces level also the guard's module.
  const std::optional<TempDir> bytecode_dir_;
  const bool use_cache_;  // the per-user cache for the runner's files (RunnerFilesOptions)
  // The validator package in bytecode_dir_, staged once, by the first Warm or run that needs it
  // (a one-shot's child starts meanwhile: it imports the package only when its request comes).
  std::once_flag validator_once_;
  Status validator_staged_;
  // One per core, up to 4 (each holds an interpreter with everything preloaded), and no more
  // than the pool keeps ready per key.
  const std::size_t zygotes_per_key_;
  const std::string zygote_module_;  // the zygote's loop (the guard's module); "": no zygote
  const bool fork_server_;
  mutable std::mutex zygotes_mu_;  // the fork servers outlive the pool's thread, which uses them
  std::map<std::string, ZygoteEntry> zygotes_;
  // NoteGuardImports' lists by start key, at most kMaxNotedImports keys (a key the pool drops
  // goes). Declared before the pool: its thread uses them until the pool is destroyed.
  static constexpr std::size_t kMaxNotedImports = 64;
  std::mutex imports_mu_;
  std::map<std::string, std::shared_ptr<const std::vector<std::string>>> guard_imports_;
  std::unique_ptr<WarmPool> pool_;
  std::mutex sessions_mu_;
  std::shared_ptr<SessionParentGroup> session_parent_;  // made by the first session
  std::unique_ptr<TaskThread> session_starter_;         // starts every session's child
  std::mutex prestart_mu_;
  // Destroyed first: a child no run took is killed (the destructor waits for its start to end).
  std::optional<Prestarted> prestarted_;
};

}  // namespace codeact::internal
