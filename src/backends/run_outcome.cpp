#include "backends/run_outcome.hpp"

#include <csignal>
#include <cstring>
#include <thread>
#include <utility>

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

// A child that ended without a terminal frame.
void ClassifyDeath(const ExitInfo& exit, const ExecutionLimits& limits,
                   const ChildDescription& child, bool oom_killed, ExecutionResult& r) {
  if (oom_killed) {
    // The kernel's OOM killer sends SIGKILL; memory the address-space limit does not see (memfd,
    // tmpfs, page cache, other processes of the run) ends this way.
    r.exit_code = exit.exited ? (exit.exit_code == 0 ? 1 : exit.exit_code) : 128 + exit.signal;
    r.outcome = Outcome::kMemoryLimit;
    r.message = "memory limit of " + std::to_string(limits.memory_bytes) +
                " bytes exceeded: the kernel's OOM killer ended a process of the run";
    return;
  }
  if (exit.exited) {
    r.exit_code = exit.exit_code == 0 ? 1 : exit.exit_code;
    r.outcome = Outcome::kError;
    r.message =
        child.name + " exited with code " + std::to_string(exit.exit_code) + " without a result";
    return;
  }
  r.exit_code = 128 + exit.signal;
  const bool cpu_spent = child.cpu_counts_from_start &&
                         exit.cpu_seconds + 0.05 >= static_cast<double>(limits.cpu_time_s);
  if (exit.signal == SIGXCPU || (exit.signal == SIGKILL && cpu_spent)) {
    r.outcome = Outcome::kCpuLimit;
    r.message = "CPU time limit of " + std::to_string(limits.cpu_time_s) + " s exceeded";
  } else if (exit.signal == SIGXFSZ) {
    r.outcome = Outcome::kKilled;
    r.message =
        "file size limit of " + std::to_string(limits.max_file_size_bytes) + " bytes exceeded";
  } else {
    r.outcome = Outcome::kKilled;
    r.message = child.name + " was killed by signal " + std::to_string(exit.signal) + " (" +
                strsignal(exit.signal) + ")";
  }
}

}  // namespace

std::string OpenFilesNote(const ExecutionLimits& limits) {
  const std::int64_t ceiling = HostOpenFilesCeiling();
  if (limits.max_open_files <= ceiling) return "";
  return "max_open_files " + std::to_string(limits.max_open_files) +
         " is above the host's hard limit of " + std::to_string(ceiling) +
         " open files; the child got " + std::to_string(ceiling);
}

std::string CancelledMessage(const std::string& reason) {
  return "cancelled: " + (reason.empty() ? std::string("the caller cancelled the run") : reason);
}

ExecutionResult RejectedResult(std::vector<Violation> violations, const std::string& note) {
  ExecutionResult r = NotRunResult(
      Outcome::kValidationFailed,
      "the code was rejected by the validator; nothing ran" + (note.empty() ? "" : "; " + note));
  r.violations = std::move(violations);
  return r;
}

bool WaitForExit(Child& child, Clock::time_point deadline, const CancellationToken& cancel) {
  auto pause = std::chrono::microseconds(200);
  while (!child.TryWait()) {
    if (Clock::now() >= deadline || cancel.cancelled()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::microseconds>(
        pause, std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now())));
    pause = std::min(pause * 2, std::chrono::microseconds(20'000));
  }
  return true;
}

ExecutionResult ResultOfRun(HostLoop& loop, const LoopResult& ended, const ExitInfo& exit,
                            const ExecutionLimits& limits, const ChildDescription& child,
                            bool oom_killed) {
  // The stream ends before the result: its callback's last call returns before Execute does.
  const std::int64_t chunks_dropped = loop.FinishStream();
  ExecutionResult r;
  r.stdout_truncated = loop.stdout_buffer().truncated();
  r.stderr_truncated = loop.stderr_buffer().truncated();
  r.stdout_text = loop.stdout_buffer().Take();
  r.stderr_text = loop.stderr_buffer().Take();
  r.tool_calls = ended.tool_calls;
  switch (ended.end) {
    case LoopEnd::kComplete:
      r.outcome = Outcome::kOk;
      r.exit_code = 0;
      r.output_present = ended.output_present;
      r.output_json = ended.output_json;
      r.message = ended.message;  // the runner's note (tool coroutines never awaited), or ""
      break;
    case LoopEnd::kUserError:
      r.exit_code = 1;
      r.error = ended.error;
      r.outcome = ended.error.type == "MemoryError" ? Outcome::kMemoryLimit : Outcome::kError;
      if (r.outcome == Outcome::kMemoryLimit) {
        r.message = "memory limit of " + std::to_string(limits.memory_bytes) + " bytes reached";
      }
      break;
    case LoopEnd::kOutputLimit:
      r.exit_code = 1;
      r.outcome = Outcome::kOutputLimit;
      r.message = ended.message;
      break;
    case LoopEnd::kProtocolError:
      r.exit_code = 1;
      r.outcome = Outcome::kError;
      r.error = UserError{"BridgeError", ended.message, ""};
      r.message = ended.message;
      break;
    case LoopEnd::kTimeout:
      r.exit_code = exit.exited ? exit.exit_code : 128 + exit.signal;
      r.outcome = Outcome::kTimeout;
      r.message = "wall-clock limit of " + std::to_string(limits.wall_timeout_ms) + " ms exceeded";
      break;
    case LoopEnd::kChildClosed:
      ClassifyDeath(exit, limits, child, oom_killed, r);
      break;
    case LoopEnd::kSetupError:
      r.exit_code = -1;
      r.outcome = Outcome::kSetupError;
      r.message = ended.message;
      break;
    case LoopEnd::kCancelled:
      r.exit_code = exit.exited ? exit.exit_code : 128 + exit.signal;
      r.outcome = Outcome::kCancelled;
      r.message = CancelledMessage(ended.message);
      break;
    case LoopEnd::kRejected: {
      ExecutionResult rejected = RejectedResult(ended.violations, ended.message);
      r.exit_code = rejected.exit_code;
      r.outcome = rejected.outcome;
      r.message = std::move(rejected.message);
      r.violations = std::move(rejected.violations);
      break;
    }
  }
  if (const std::string note = DroppedChunksNote(chunks_dropped); !note.empty()) {
    r.message += (r.message.empty() ? "" : "; ") + note;
  }
  return r;
}

}  // namespace codeact::internal
