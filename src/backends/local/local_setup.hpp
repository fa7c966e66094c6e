// LocalSetup: what a local executor was made with and found on this host when it was made — the
// interpreter and runner, the plans of its isolation level and runtime guard, where the runs'
// cgroups go, and whether each run gets a uid of its own. Fixed for the executor's life; its
// three parts read it: the runs (local_executor.cpp), how a child starts (child_starter.hpp)
// and whether a run may start (admission.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backends/local/guard_plan.hpp"
#include "backends/local/sandbox_plan.hpp"
#include "codeact/executor.hpp"
#include "process/run_cgroup.hpp"

namespace codeact::internal {

struct LocalSetup {
  std::string python;  // the child interpreter
  std::string runner;  // runner.py (or its private copy), as the child names it
  bool site_packages = false;
  std::optional<SandboxPlan> sandbox;  // set at the namespaces level
  std::optional<GuardPlan> guard;      // set with ExecutorOptions::runtime_guard
  // ExecutorOptions::validate_in_child, where the per-user cache can hold the validator's
  // bytecode. Where it cannot (the process level on a non-root host, whose runs could write
  // it), the embedded interpreter compiles the runner for every executor anyway, so the host
  // validates instead of compiling the package too.
  bool validate_in_child = false;
  bool own_uids = false;  // a root host: each child gets its own uid
  // The process level on a root host may give each child a private mount namespace (probed by a
  // fork of the host: not at the namespaces level, which does not use it).
  bool private_mounts = false;
  std::shared_ptr<const CgroupSite> cgroups;  // where each run's cgroup goes, if anywhere
  // The process level's private directory is host memory (on a tmpfs) that no memory cgroup
  // counts: memory_bytes is split between RLIMIT_AS and it (ScratchShareOfMemory).
  bool scratch_in_memory = false;

  IsolationLevel isolation() const {
    return sandbox ? IsolationLevel::kNamespaces : IsolationLevel::kProcess;
  }
};

// Probes what the host offers (uids of the runs' own, a private mount namespace, cgroups, a
// tmpfs under the scratch directories) once, for an executor with these options.
LocalSetup MakeLocalSetup(std::string python, std::string runner, const ExecutorOptions& options,
                          std::optional<SandboxPlan> sandbox, std::optional<GuardPlan> guard,
                          bool use_cache);

}  // namespace codeact::internal
