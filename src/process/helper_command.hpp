// RunCommand: a short helper command (no shell) with a timeout, capped output and, on request,
// containment of everything it starts; used for command tools and interpreter probes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "codeact/cancellation.hpp"
#include "codeact/status.hpp"
#include "process/child.hpp"

namespace codeact::internal {

struct CommandResult {
  ExitInfo exit;
  std::string stdout_text;
  std::string stderr_text;
  bool stdout_truncated = false;  // more than max_output_bytes arrived; the rest was discarded
  bool stderr_truncated = false;
  std::int64_t stdout_bytes = 0;  // all that arrived, kept or not
  std::int64_t stderr_bytes = 0;
  bool timed_out = false;  // the timeout killed the command's process group
  bool cancelled = false;  // `cancel` killed it (or it never started)
};

// Runs a short helper command (no shell) with `stdin_data` on stdin, the host's environment
// minus nothing, and a wall-clock timeout; output is capped at `max_output_bytes` per stream.
// Used for command tools and interpreter probes. argv[0] is searched in PATH unless it
// contains a '/' (the command then sees the resolved path as its argv[0]). The command runs in its
// own process group; on timeout the group gets SIGKILL, output read so far is kept (at most one
// more second is spent draining pipes that an escaped process still holds), and timed_out is set. A
// command that exits but leaves a process holding its stdout/stderr open counts as running until
// the timeout. `working_dir` empty: the host's working directory (a missing one fails the start
// with a chdir message). `cancel` kills the group at once and returns without waiting for
// output (cancelled set); a command cancelled before it starts is never started. Thread-safe.
//
// With CommandContainment::kAllDescendants no process the command starts outlives it, whatever
// it does (setsid, double fork): the command runs in a cgroup of its own where this host has a
// cgroup site (run_cgroup.hpp; root, or a user given one), killed whole as soon as the command
// exits, times out or is cancelled; else as pid 1 of a pid namespace of its own (in a user
// namespace of its own when not root: it sees itself as uid 65534), which the kernel empties
// when it ends. Where neither can be made the command is not run: an error names both reasons.
enum class CommandContainment { kProcessGroup, kAllDescendants };
StatusOr<CommandResult> RunCommand(
    const std::vector<std::string>& argv, const std::string& stdin_data,
    std::chrono::milliseconds timeout, std::int64_t max_output_bytes = 1LL << 20,
    const std::string& working_dir = {}, const CancellationToken& cancel = {},
    CommandContainment containment = CommandContainment::kProcessGroup);

}  // namespace codeact::internal
