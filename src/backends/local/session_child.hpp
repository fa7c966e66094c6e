// LocalSession: the local backend's side of a session (session.hpp, ExecutorSession). One
// sandboxed child, started cold through the executor's own start path (the codeact-sandbox
// launcher at the namespaces level, the launch under its own uid at the process level), runs the
// runner in its session mode (resources/runner_session.py): it answers request after request on
// one bridge and keeps its globals, /work and /tmp. Never a warm-pool or forked child.
//
// Per run the host holds the child to the wall clock (time paused excluded), to the CPU time
// its cgroup counts from the run's start (polled; RLIMIT_CPU stays as a generous backstop for
// the whole life of the interpreter, since a non-root host cannot raise its hard limit again),
// to the output caps and the tool budget (a new host loop, and the runner's count reset). The
// session's cgroup (inside the executor's SessionParentGroup) holds its memory and processes;
// its working directory is the launcher's tmpfs of max_workdir_bytes. A run that ends otherwise
// than ok or error kills the whole group; the next run starts a fresh child ("restarted").
//
// Between calls nothing of the session runs: when a run has ended with its terminal frame, the
// whole group is frozen (the cgroup freezer, or SIGSTOP where the host has none) before its files
// are captured and its CPU time read, and thawed when the next call starts. A thread the code
// left behind therefore neither spends CPU nor writes between calls, and what it did before the
// freeze is the call's (its CPU time and files). A session that cannot be frozen is ended, with
// a note. Frozen is not paused: the state stays "kept"; Pause is the caller's, and a run is
// refused only while paused.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "codeact/executor.hpp"
#include "files/mount_capture.hpp"
#include "process/child.hpp"
#include "process/run_cgroup.hpp"
#include "process/session_cgroups.hpp"
#include "process/uid_lease.hpp"
#include "protocol/runtime_guard_spec.hpp"

namespace codeact::internal {

// A session's interpreter and what belongs to it; members are declared so that the child dies
// before its directory and its groups are removed.
struct SessionChild {
  SessionChild() = default;
  SessionChild(const SessionChild&) = delete;
  SessionChild& operator=(const SessionChild&) = delete;
  // Kills every process of the group (thawing it, since a frozen process cannot die) and reaps
  // the child.
  ~SessionChild();
  void KillAll();

  std::optional<UidLease> uid;            // a root host: the child's own uid, released last
  std::unique_ptr<RunCgroup> cgroup;      // always there: sessions need one
  std::unique_ptr<FreezerGroup> freezer;  // the cgroup freezer, or the SIGSTOP fallback
  std::string freezer_missing;            // why no cgroup freezer (the fallback is in use)
  std::optional<TempDir> workdir;
  std::unique_ptr<Child> child;
};

struct LocalSessionConfig {
  RunSnapshot snapshot;
  // Starts the interpreter (it has said ready when this returns).
  std::function<StatusOr<std::unique_ptr<SessionChild>>()> start;
  // The request's "guard" field for a run in `child`; nullopt without the runtime guard.
  std::function<std::optional<RuntimeGuardSpec>(const SessionChild& child)> guard;
  // Adds to a result what the executor adds to its own (the open-files note); the provider
  // stamps the backend, the level and the duration.
  std::function<void(ExecutionResult&)> add_notes;
};

std::unique_ptr<ExecutorSession> NewLocalSession(LocalSessionConfig config);

// RLIMIT_CPU of a session's interpreter, for its whole life: the per-run limit is the host's.
std::int64_t SessionCpuBackstopSeconds(const ExecutionLimits& limits);

}  // namespace codeact::internal
