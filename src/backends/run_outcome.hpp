// RunOutcome: the rules every backend shares for turning the end of a host loop and the child's
// exit into a result — limit checks before a run, the wait for a child whose bridge closed, and
// the write-once outcome (a timeout stays a timeout although the process then dies by SIGKILL).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "bridge/host_loop.hpp"
#include "codeact/execution.hpp"
#include "codeact/executor.hpp"
#include "codeact/limits.hpp"
#include "limits/limit_table.hpp"
#include "process/child.hpp"

namespace codeact::internal {

// Children get at most the host's hard RLIMIT_NOFILE (HostOpenFilesCeiling, os/resource_limits.hpp)
// rather than fail to start; the result's message says so. Empty unless `limits.max_open_files` is
// above it.
std::string OpenFilesNote(const ExecutionLimits& limits);

// The `message` of a cancelled result: "cancelled: <reason>".
std::string CancelledMessage(const std::string& reason);

// The result of code the validator rejected, in the host or in the child (LoopEnd::kRejected):
// nothing ran, so it is a not-run result with the violations (`note`, when not empty, is added
// to its message).
ExecutionResult RejectedResult(std::vector<Violation> violations, const std::string& note = "");

// Polls (without reaping twice: TryWait reaps once and then repeats its answer) until the child
// has exited, the deadline passes or `cancel` is cancelled; true when it exited.
bool WaitForExit(Child& child, std::chrono::steady_clock::time_point deadline,
                 const CancellationToken& cancel = {});

struct ChildDescription {
  std::string name;  // "the interpreter", "the hyperlight worker"
  // Its whole CPU time counts against cpu_time_s, so a SIGKILL with that much spent is the hard
  // RLIMIT_CPU. False for a process that served other runs before this one.
  bool cpu_counts_from_start = true;
};

// The result of a run that ended as `ended`: stdout/stderr taken from `loop` (read to the end
// by the caller), outcome, exit code, message, error, output and tool calls. `exit` is the
// child's when it was reaped. `oom_killed`: the run's cgroup counted an OOM kill, so a child that
// died without a result hit the memory limit, whatever signal it died of.
ExecutionResult ResultOfRun(HostLoop& loop, const LoopResult& ended, const ExitInfo& exit,
                            const ExecutionLimits& limits, const ChildDescription& child,
                            bool oom_killed = false);

}  // namespace codeact::internal
