// The host side of one run: sends the request, serves tool calls, reads stdout/stderr with
// byte caps, and stops at the terminal frame, the child's end, or the wall-clock deadline.
// Killing and reaping the child is the caller's job; this loop only talks to its fds.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bridge/output_streamer.hpp"
#include "codeact/cancellation.hpp"
#include "codeact/execution.hpp"
#include "codeact/limits.hpp"
#include "codeact/policy.hpp"
#include "codeact/tool.hpp"
#include "codeact/validator.hpp"
#include "os/pipe.hpp"
#include "os/pipe_io.hpp"
#include "protocol/runtime_guard_spec.hpp"

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
  kProtocolError,  // a malformed frame, or one after the terminal frame: the run ends with a clear
                   // error
  kChildClosed,    // the bridge closed without a terminal frame (the child died or exited)
  kTimeout,        // the wall clock
  kSetupError,     // the sandbox launcher's "setup_error" frame before the runner's "ready", or the
                   // runner's "guard_error" (its runtime guard could not be armed; nothing ran)
  kCancelled,      // the request's token was cancelled; `message` holds its reason
  kRejected,       // the child validated the code (RunExtras::validate) and rejected it, or the
                   // host's validation in the gate (RunExtras::gate) did: nothing ran;
                   // `violations` say why, `message` how many did not fit in the child's frame
};

struct LoopResult {
  LoopEnd end = LoopEnd::kChildClosed;
  bool output_present = false;
  std::string output_json = "null";
  UserError error;      // for kUserError
  std::string message;  // for kOutputLimit / kProtocolError; kComplete: the runner's note
  std::int64_t tool_calls = 0;
  std::vector<Violation> violations;  // for kRejected
  // The most the host held at once of what it wrote to the child and the child had not read yet
  // (answers and refusals; the request frame too): bounded by the run's tool backlog budget.
  std::int64_t peak_unsent_bytes = 0;
};

// Reads the child's first frame and checks it is {"type":"ready",...}. Used for pooled
// children, which send nothing else before their request; bytes past that frame are an error.
// A sandbox launcher's {"type":"setup_error","message":...}, or the runner's "guard_error",
// gives FAILED_PRECONDITION with the message.
Status WaitForReadyFrame(int from_child_fd, std::chrono::milliseconds timeout);

// Writes {"type":"guard",<the system part of spec>} to a child that has not reported ready yet
// (a pooled child arms its runtime guard with it before it does), with spec's imports when
// `with_imports` (kept for a request that names them: RunExtras::guard_as_armed).
Status SendGuardFrame(int to_child_fd, const RuntimeGuardSpec& spec, bool with_imports);

struct RunExtras {
  const RuntimeGuardSpec* guard = nullptr;  // the request's "guard" field; null: none (no guard)
  // The child ends with its run (a runner exits after its terminal frame), so its bridge closes
  // right after that frame: the loop waits for the close (up to kAfterTerminalGrace), and a
  // frame after the terminal one ends the run as kProtocolError. A worker that serves run after
  // run (hyperlight) keeps its bridge open and is not waited for.
  bool bridge_closes_after_run = false;
  // Not null: the child validates the code under this policy before running any of it (the
  // request's "validate" field), and its first frame after the request must be its verdict, or
  // the run ends as kProtocolError: only then is a rejection known to come before any code.
  const ValidationPolicy* validate = nullptr;
  // Not null: what the host does before any of the code may run, while the child compiles it.
  // The request says "await_verdict"; the loop calls the gate once the request is written (or,
  // should the loop end before that, when it ends) and sends the child its "verdict" frame when
  // the gate returns nothing. What it returns instead (kRejected with the violations, kSetupError
  // with a message) is the run's end, whatever else happened: none of the code ran.
  const std::function<std::optional<LoopResult>()>* gate = nullptr;
  // The pipe through which tool handlers and cancellations wake the loop: where this holds both
  // ends (MakeNonBlockingPipe), made ahead with a pooled child, the loop takes it over (and
  // closes it once no handler can write to it); else it makes its own. pipe2 took 20-380 us of a
  // warm call 0.3 s after the last on the test VM, before the request could be written.
  PipeFds* wake = nullptr;
  // The child's guard frame held `guard` with its imports: the request says so instead of
  // repeating them (protocol::RequestFrame::guard_as_armed). Not with `validate`.
  bool guard_as_armed = false;
};

class HostLoop {
 public:
  HostLoop(RunChannels channels, const std::vector<HostTool>& tools, const ExecutionLimits& limits);

  // Runs until the run ends; never throws. `child_ready`: the child's "ready" frame was read
  // already (a pooled child); until it is, a "setup_error" frame ends the run as kSetupError.
  // `cancel` ends the loop as kCancelled as soon as it is cancelled. However the loop ends, the
  // tool calls still running are cancelled (ToolCallContext::cancel) before Run returns.
  LoopResult Run(const std::string& code, std::chrono::steady_clock::time_point deadline,
                 bool child_ready = false, const RunExtras& extras = {},
                 const CancellationToken& cancel = {});

  // After the child's processes are dead: reads stdout/stderr to EOF, for at most `grace`.
  void DrainOutput(std::chrono::milliseconds grace);
  // Reads what stdout/stderr hold now, without waiting for EOF.
  void DrainAvailableOutput();

  // From now on, what the loop keeps of stdout and stderr is streamed to `callback` as it is read
  // (codeact/output_stream.hpp). Without it the loop starts no thread and polls as before.
  void StreamOutputTo(const OutputCallback& callback);
  // Streams what is pending, waits for the delivery as OutputStreamer::Finish does, and returns
  // the chunks dropped; 0 when nothing streams. Call it before the buffers are taken.
  std::int64_t FinishStream();

  CappedBuffer& stdout_buffer() { return stdout_; }
  CappedBuffer& stderr_buffer() { return stderr_; }

 private:
  RunChannels channels_;
  const std::vector<HostTool>& tools_;
  const ExecutionLimits& limits_;
  CappedBuffer stdout_;
  CappedBuffer stderr_;
  std::unique_ptr<OutputStreamer> streamer_;  // null unless StreamOutputTo was called
};

}  // namespace codeact::internal
