// What a surface may ask of an executor beyond codeact/executor.hpp, for its diagnostics
// (`codeact selftest`, `describe --measure`, the bench, /healthz): the warm pool's counters and
// pids, the runtime guard's state, the notes and mechanisms behind the limits. Each takes any
// Executor and answers for the local backend (backends/local defines them); any other executor
// gets the empty answer each states. One more, ProcessLevelObjectsHere, takes none: what the local
// backend would give a run on this host. The surfaces include this, never backends/local.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "codeact/executor.hpp"
#include "common/task_thread.hpp"

namespace codeact::internal {

struct WarmPoolCounters {
  std::int64_t served = 0;    // Take calls answered with a ready child
  std::int64_t missed = 0;    // Take calls that found none (the run started its own child)
  std::int64_t started = 0;   // children the pool started
  std::int64_t replaced = 0;  // idle children found dead and dropped
};

// The thread on which every local executor of the process starts the child it starts ahead of a
// run without a pool (Executor::Warm). It lives until the process ends: a child's parent-death
// signal follows the thread that started it. Made on first use; a program that is about to
// dlopen() something large on another thread (the embedded validator's libpython) makes it
// first, because while a dlopen runs, creating a thread waits for the dynamic loader's lock:
// ~5 ms of a one-shot `codeact run` on the test VM.
TaskThread& PrestartThread();

// Pids of the idle warm children of a local executor, of every start key or only of the one
// `snapshot` has (empty for any other executor).
std::vector<pid_t> IdleChildPids(const Executor& executor, const RunSnapshot* snapshot = nullptr);
// The warm pool's counters of a local executor (zeros for any other executor or without a pool).
WarmPoolCounters PoolCounters(const Executor& executor);
// Pids of the live fork servers (zygotes) of a local executor.
std::vector<pid_t> ForkServerPids(const Executor& executor);

// What a run at the process level gets from the kernel on this host, as the local backend's setup
// decides it: a scratch directory in `scratch_base`, its own uid (a root host), a private mount
// namespace with a tmpfs working directory, a group in each of `cgroup_dirs` (the per-user
// subtrees). For the bench's isolation floor.
struct ProcessLevelObjects {
  std::string scratch_base;
  bool own_uid = false;
  bool private_workdir = false;
  std::vector<std::string> cgroup_dirs;
};
ProcessLevelObjects ProcessLevelObjectsHere();

struct RuntimeGuardStatus {
  bool armed = false;    // ExecutorOptions::runtime_guard: every run child arms it
  int landlock_abi = 0;  // the kernel's Landlock ABI; 0: the guard arms without Landlock
  // Runs whose request named the guard frame their child had ahead, imports included, instead of
  // repeating it (the child's import check is that frame's).
  std::int64_t requests_as_armed = 0;
};
// What holds for every run of a local executor, said once instead of in each result's message:
// a fallback of `auto`, a limit the level does not enforce, a guard without
// Landlock, limits that degrade where no cgroup can be made. The same notes are logged once when
// the executor is made; `codeact selftest`, `describe --measure` and /healthz detail show them.
// Empty for any other executor.
std::vector<std::string> EnvironmentNotes(const Executor& executor);

// What enforces each rlimit-backed limit (and max_workdir_bytes) at this executor's level, e.g.
// {"memory_bytes", "the run's memory cgroup, and RLIMIT_AS"}. Empty for any other executor.
struct LimitMechanism {
  std::string limit;      // the limit's name (limit_table.hpp)
  std::string mechanism;  // what bounds it here, in a few words
};
std::vector<LimitMechanism> LimitMechanisms(const Executor& executor);

// Whether a local executor's children run under the runtime guard (false for any other executor).
RuntimeGuardStatus GuardStatus(const Executor& executor);

}  // namespace codeact::internal
