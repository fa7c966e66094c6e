// The host side of one run: sends the request, serves tool calls, reads stdout/stderr with
// byte caps, and stops at the terminal frame, the child's end, or the wall-clock deadline.
// Killing and reaping the child is the caller's job; this loop only talks to its fds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "codeact/cancellation.hpp"
#include "codeact/execution.hpp"
#include "codeact/limits.hpp"
#include "codeact/tool.hpp"
#include "process/child.hpp"

namespace codeact::internal {

struct RunChannels {
  int stdout_fd = -1;
  int stderr_fd = -1;
  int to_child_fd = -1;
  int from_child_fd = -1;
};

enum class LoopEnd {
  kComplete,       // terminal "complete" frame
  kUserError,      // terminal "error" frame
  kOutputLimit,    // the runner's "limit" frame, or a frame from the child over the cap
  kProtocolError,  // a malformed frame: the run ends with a clear error
  kChildClosed,    // the bridge closed without a terminal frame (the child died or exited)
  kTimeout,        // the wall clock
  kSetupError,     // the sandbox launcher's "setup_error" frame, before the runner's "ready"
  kCancelled,      // the request's token was cancelled; `message` holds its reason
};

struct LoopResult {
  LoopEnd end = LoopEnd::kChildClosed;
  bool output_present = false;
  std::string output_json = "null";
  UserError error;          // for kUserError
  std::string message;      // for kOutputLimit / kProtocolError
  std::int64_t tool_calls = 0;
};

// Reads the child's first frame and checks it is {"type":"ready",...}. Used for pooled
// children, which send nothing else before their request; bytes past that frame are an error.
// A sandbox launcher's {"type":"setup_error","message":...} gives FAILED_PRECONDITION with it.
Status WaitForReadyFrame(int from_child_fd, std::chrono::milliseconds timeout);

class HostLoop {
 public:
  HostLoop(RunChannels channels, const std::vector<HostTool>& tools, const ExecutionLimits& limits);

  // Runs until the run ends; never throws. `child_ready`: the child's "ready" frame was read
  // already (a pooled child); until it is, a "setup_error" frame ends the run as kSetupError.
  // `cancel` ends the loop as kCancelled as soon as it is cancelled. However the loop ends, the
  // tool calls still running are cancelled (ToolCallContext::cancel) before Run returns.
  LoopResult Run(const std::string& code, std::chrono::steady_clock::time_point deadline, bool child_ready = false,
                 const CancellationToken& cancel = {});

  // After the child's processes are dead: reads stdout/stderr to EOF, for at most `grace`.
  void DrainOutput(std::chrono::milliseconds grace);
  // Reads what stdout/stderr hold now, without waiting for EOF.
  void DrainAvailableOutput();

  CappedBuffer& stdout_buffer() { return stdout_; }
  CappedBuffer& stderr_buffer() { return stderr_; }

 private:
  RunChannels channels_;
  const std::vector<HostTool>& tools_;
  const ExecutionLimits& limits_;
  CappedBuffer stdout_;
  CappedBuffer stderr_;
};

}  // namespace codeact::internal
