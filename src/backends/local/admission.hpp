// Admission: whether a run of a local executor may start, and what bounds its limits here — the
// local backend's policy, apart from what runs (local_executor.cpp) and how its child starts
// (child_starter.hpp), as sandbox2 keeps Policy apart from Executor. A run is refused, as a
// setup_error result, for invalid limits or mounts, network targets this executor cannot serve,
// and an explicit memory or process limit that nothing here bounds beyond its rlimit (unless
// ExecutorOptions::accept_weaker_limits); a default one degrades, with an environment note.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/executor_introspection.hpp"
#include "backends/local/local_setup.hpp"
#include "codeact/executor.hpp"

namespace codeact::internal {

// How this executor bounds the memory and process limits: a cgroup where one can be made;
// else, at the process level, what the runtime guard adds to the rlimits. `held` false: nothing
// here bounds it beyond the rlimit alone, and `alternative`/`why_not` say what would.
struct LimitBound {
  const char* limit;
  bool held = false;
  std::string mechanism;    // what bounds it, when held
  std::string alternative;  // the mechanism besides a cgroup that would, when not held
  std::string why_not;      // and why it is not here
};

class Admission {
 public:
  // Logs, once, what degrades for every run (a guard without Landlock, limits without a cgroup).
  // `setup` outlives the admission.
  Admission(const LocalSetup& setup, const ExecutorOptions& options);

  // A setup-error result when the run may not start (limits, mounts, network targets, the
  // validator's staging for a child that validates, by `stage_validator`; the guard's imports
  // into `imports`, left empty where the child computes them or there is no guard; limits nothing
  // here can enforce), a cancelled one when it was cancelled already; nullopt when it may start.
  std::optional<ExecutionResult> RefuseRun(const ExecutionRequest& request,
                                           const RunSnapshot& snapshot,
                                           const std::function<Status()>& stage_validator,
                                           std::optional<std::vector<std::string>>& imports) const;

  // FAILED_PRECONDITION for an explicit memory or process limit nothing here bounds beyond its
  // rlimit, unless ExecutorOptions::accept_weaker_limits.
  Status Unenforceable(const ExecutionLimits& limits) const;

  // The snapshot's tools, plus the egress tools when it has network targets and egress is on.
  std::vector<HostTool> ToolsForRun(const RunSnapshot& snapshot) const;

  // An environment note of the level (auto fell back to a weaker level, and why): logged once,
  // shown by EnvironmentNotes(), not in every result.
  void AddLevelNote(std::string note);
  // What holds for every run of this executor, which results therefore do not repeat: the
  // level's notes, a guard without Landlock, limits that degrade where cgroups fall short.
  std::vector<std::string> EnvironmentNotes() const;
  // The mechanism of each limit a run may set, for describe --measure and the selftest.
  std::vector<LimitMechanism> LimitMechanisms() const;

 private:
  Status CheckNetworkTargets(const RunSnapshot& snapshot) const;

  const LocalSetup& setup_;
  const EgressOptions egress_;
  const bool accept_weaker_limits_;
  const LimitBound memory_bound_;         // what bounds memory_bytes here
  const LimitBound process_bound_;        // what bounds max_processes here
  const std::string degraded_note_;       // an environment note where cgroups fall short
  std::vector<std::string> level_notes_;  // the level's own environment notes (AddLevelNote)
};

}  // namespace codeact::internal
