// LocalExecutor: the local backend — a child CPython under rlimits, in its own process group,
// speaking the bridge protocol with the host; started directly (`process` level) or through the
// codeact-sandbox launcher (`namespaces` level, sandbox_plan.hpp). Warm pool: warm_pool.hpp.
// Three parts, as sandbox2 separates Executor, Policy and Monitor: what runs (local_executor.cpp),
// how a child starts (child_starter.hpp) and whether a run may start (admission.hpp).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/local/admission.hpp"
#include "backends/local/warm_pool.hpp"
#include "codeact/executor.hpp"
#include "common/task_thread.hpp"

namespace codeact::internal {

StatusOr<std::unique_ptr<Executor>> CreateLocalExecutor(const ExecutorOptions& options);

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

struct RuntimeGuardStatus {
  bool armed = false;    // ExecutorOptions::runtime_guard: every run child arms it
  int landlock_abi = 0;  // the kernel's Landlock ABI; 0: the guard arms without Landlock
};
// What holds for every run of a local executor, said once instead of in each result's message:
// a fallback of `auto`, a limit the level does not enforce, a guard without
// Landlock, limits that degrade where no cgroup can be made. The same notes are logged once when
// the executor is made; `codeact selftest`, `describe --measure` and /healthz detail show them.
// Empty for any other executor.
std::vector<std::string> EnvironmentNotes(const Executor& executor);

// What enforces each rlimit-backed limit (and max_workdir_bytes) at this executor's level
// (LimitMechanism, admission.hpp). Empty for any other executor.
std::vector<LimitMechanism> LimitMechanisms(const Executor& executor);

// Whether a local executor's children run under the runtime guard (false for any other executor).
RuntimeGuardStatus GuardStatus(const Executor& executor);

}  // namespace codeact::internal
