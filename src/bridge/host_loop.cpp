#include "bridge/host_loop.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <variant>

#include "bridge/tool_workers.hpp"
#include "json/int64_range.hpp"
#include "json/schema_check.hpp"
#include "json/serialize.hpp"
#include "protocol/frame_codec.hpp"
#include "protocol/frames.hpp"

namespace codeact::internal {
namespace json = boost::json;
namespace {

using Clock = std::chrono::steady_clock;

// Refused calls tolerated past twice the budget before the run ends (see ToolDispatcher).
constexpr std::int64_t kCallsPastBudget = 64;
// How long the bridge may stay open after the terminal frame (see RunExtras). A runner closes
// it within microseconds; only a process the code forked (without the runtime guard) can hold it
// open longer, and then the run ends without waiting for it.
constexpr std::chrono::milliseconds kAfterTerminalGrace{100};
// Handlers of one run running at once: a gather of hundreds of calls must not become hundreds
// of threads (or, with command tools, hundreds of processes) at the same moment.
constexpr int kMaxConcurrentCalls = 16;
// The run's tool backlog budget, in bridge frames (BacklogBudgetBytes): answers the child has not
// taken off the bridge yet are held by the host, so a run that starts hundreds of calls and
// reads none must not grow the host by all of their answers.
constexpr std::int64_t kBacklogFrames = 4;
constexpr std::int64_t kMinBacklogBytes = 1LL << 20;
constexpr std::int64_t kMaxBacklogBytes = 32LL << 20;

// What the host holds, at most, for answers of one run that its child has not read: the
// answers not yet written to the bridge, and the arguments of calls waiting for a handler.
std::int64_t BacklogBudgetBytes(const ExecutionLimits& limits) {
  return std::clamp(kBacklogFrames * limits.max_frame_bytes, kMinBacklogBytes, kMaxBacklogBytes);
}

// Finished tool calls, handed from handler threads to the loop. Shared with the threads so a
// handler that outlives its run (it hung past the deadline) writes into a closed box, harmlessly.
class Completions {
 public:
  // Takes over `made` where it holds both ends; else makes its pipe.
  explicit Completions(PipeFds* made) {
    if (made != nullptr && made->read && made->write) {
      pipe_ = std::move(*made);
    } else if (auto own = MakeNonBlockingPipe(); own.ok()) {
      pipe_ = std::move(*own);
    }
  }
  bool ok() const { return static_cast<bool>(pipe_.read); }
  int wake_fd() const { return pipe_.read.get(); }

  void Post(std::string frame) {
    std::lock_guard lock(mu_);
    if (closed_) return;
    ready_.push_back(std::move(frame));
    WakeLocked();
  }
  // Wakes the loop without a frame (the run was cancelled).
  void Wake() {
    std::lock_guard lock(mu_);
    if (!closed_) WakeLocked();
  }
  std::vector<std::string> Take() {
    char buf[256];
    while (read(pipe_.read.get(), buf, sizeof buf) > 0) {
    }
    std::lock_guard lock(mu_);
    return std::exchange(ready_, {});
  }
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
  }

 private:
  void WakeLocked() {
    const char byte = 1;
    [[maybe_unused]] ssize_t n =
        write(pipe_.write.get(), &byte, 1);  // full pipe: a wake-up is pending
  }

  PipeFds pipe_;
  std::mutex mu_;
  std::vector<std::string> ready_;
  bool closed_ = false;
};

std::string ResultFrame(std::int64_t id, const ToolResult& r, std::int64_t max_frame_bytes) {
  if (!r.ok)
    return protocol::EncodeToolFailure(id, r.error_type.empty() ? "ToolFailed" : r.error_type,
                                       r.message);
  // Before parsing: the parser would make such an integer an unsigned or a double silently.
  if (std::optional<std::string> big = FirstIntegerBeyondInt64(r.result_json)) {
    return protocol::EncodeToolFailure(
        id, "IntegerOutOfRange",
        "the tool's result holds the integer " + *big +
            ", outside the signed 64-bit range; the tool must return it as a string");
  }
  json::error_code ec;
  json::value value = ParseJson(r.result_json, ec);
  if (ec == json::error::too_deep) {
    return protocol::EncodeToolFailure(
        id, "ToolFailed", "the tool's result is too deeply nested: " + JsonErrorText(ec));
  }
  if (ec) return protocol::EncodeToolFailure(id, "ToolFailed", "the tool returned invalid JSON");
  std::string frame = protocol::EncodeToolSuccess(id, std::move(value));
  if (static_cast<std::int64_t>(frame.size()) > max_frame_bytes) {
    return protocol::EncodeToolFailure(id, "ToolResultTooLarge",
                                       "the tool's result of " + std::to_string(frame.size()) +
                                           " bytes exceeds the frame limit of " +
                                           std::to_string(max_frame_bytes) + " bytes");
  }
  return frame;
}

void RunHandler(const HostTool& tool, std::int64_t id, const std::string& kwargs,
                const ToolCallContext& context, const std::shared_ptr<Completions>& box) {
  // The run ended while the call waited for a worker: nobody reads the answer.
  if (context.cancel.cancelled()) return;
  ToolResult r;
  try {
    if (tool.cancellable_handler) {
      r = tool.cancellable_handler(kwargs, context);
    } else {
      r = tool.handler ? tool.handler(kwargs)
                       : ToolResult::Failure("ToolFailed", "tool has no handler");
    }
  } catch (const std::exception& e) {
    r = ToolResult::Failure("ToolFailed", e.what());
  } catch (...) {
    r = ToolResult::Failure("ToolFailed", "the tool raised a non-standard exception");
  }
  box->Post(ResultFrame(id, r, context.max_result_bytes));
}

bool HasMoreInput(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN);
}

// The tool calls of one run: the budget, the handlers running (at most kMaxConcurrentCalls at a
// time, the rest waiting here), and their answers, which come back through the box.
class ToolDispatcher {
 public:
  ToolDispatcher(const std::vector<HostTool>& tools, const ExecutionLimits& limits,
                 std::shared_ptr<Completions> box, ToolCallContext context)
      : limits_(limits),
        backlog_budget_(BacklogBudgetBytes(limits)),
        box_(std::move(box)),
        context_(std::move(context)) {
    for (const auto& t : tools) by_name_[t.name] = &t;
  }

  // Answers the call at once (refused) or queues its handler; `tool_calls` counts the calls
  // that count against the budget. An error ends the run as kProtocolError.
  Status Dispatch(const protocol::ToolCallFrame& call, std::string& outbox,
                  std::int64_t& tool_calls) {
    if (!seen_ids_.insert(call.id).second) {
      return InvalidArgument("tool_call id " + std::to_string(call.id) + " was used twice");
    }
    // Past the budget every call is refused, but a child that keeps calling anyway would grow
    // the refusals waiting in the outbox (and the set of ids) for as long as the wall clock
    // lets it: end the run instead.
    if (static_cast<std::int64_t>(seen_ids_.size()) >
        2 * limits_.max_tool_calls + kCallsPastBudget) {
      return InvalidArgument("the child kept calling tools long after its budget of " +
                             std::to_string(limits_.max_tool_calls) + " calls was spent");
    }
    if (call.kwargs_too_deep) {
      // The decoder could not parse the arguments (frame_codec.cpp): answer, do not run.
      ++tool_calls;
      outbox += protocol::EncodeToolFailure(
          call.id, "ToolArgumentsTooDeep",
          "the arguments of " + (call.name.empty() ? "the tool" : call.name) +
              " are nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      return Status::Ok();
    }
    if (tool_calls >= limits_.max_tool_calls) {
      outbox += protocol::EncodeToolFailure(
          call.id, "ToolBudgetExceeded",
          "the run may make at most " + std::to_string(limits_.max_tool_calls) + " tool calls");
      return Status::Ok();
    }
    ++tool_calls;
    auto it = by_name_.find(call.name);
    if (it == by_name_.end()) {
      outbox += protocol::EncodeToolFailure(call.id, "UnknownTool",
                                            "no tool named \"" + call.name + "\"");
      return Status::Ok();
    }
    // Still marked in the run's snapshot: this run was not approved for it (provider.hpp).
    if (it->second->requires_approval) {
      outbox += protocol::EncodeToolFailure(
          call.id, "ApprovalRequired",
          "the tool \"" + call.name +
              "\" needs approval, and this run was not approved: call it by name "
              "(`await " +
              call.name + "(...)`) so that the run asks for approval before it starts");
      return Status::Ok();
    }
    if (auto problem = CheckArguments(it->second->parameters_schema, call.kwargs)) {
      outbox += protocol::EncodeToolFailure(call.id, problem->error_type,
                                            call.name + ": " + problem->message);
      return Status::Ok();
    }
    std::string kwargs = SerializeJson(call.kwargs);
    const auto kwargs_bytes = static_cast<std::int64_t>(kwargs.size());
    // The child is not reading its answers (they are over the budget, unsent) and its waiting
    // calls hold the budget again in arguments: refuse rather than hold more for it.
    if (!waiting_.empty() && waiting_bytes_ + kwargs_bytes > backlog_budget_) {
      outbox += protocol::EncodeToolFailure(
          call.id, "ToolBacklogExceeded",
          "the run has " + std::to_string(waiting_.size()) + " tool calls waiting and " +
              std::to_string(outbox.size()) +
              " bytes of answers it has not read; the host holds at most " +
              std::to_string(backlog_budget_) +
              " bytes of each for a run: read (await) the answers before making more calls");
      return Status::Ok();
    }
    waiting_bytes_ += kwargs_bytes;
    waiting_.push_back(
        {[tool = *it->second, id = call.id, kwargs = std::move(kwargs), context = context_,
          box = box_] { RunHandler(tool, id, kwargs, context, box); },
         kwargs_bytes});
    StartWaiting(outbox.size());
    return Status::Ok();
  }

  // The answers of the handlers that finished, onto the outbox; waiting handlers take their places
  // while the answers the child has not read are within the budget.
  void CollectFinished(std::string& outbox) {
    for (auto& frame : box_->Take()) {
      outbox += frame;
      --running_;
    }
    StartWaiting(outbox.size());
  }

  // Starts waiting handlers while fewer than kMaxConcurrentCalls run and the answers not yet
  // written to the child (`unsent_bytes`) are under the backlog budget.
  void StartWaiting(std::size_t unsent_bytes) {
    while (running_ < kMaxConcurrentCalls && !waiting_.empty() &&
           static_cast<std::int64_t>(unsent_bytes) < backlog_budget_) {
      ++running_;
      waiting_bytes_ -= waiting_.front().kwargs_bytes;
      ToolWorkers::Instance().Run(std::move(waiting_.front().job));
      waiting_.pop_front();
    }
  }

 private:
  struct WaitingCall {
    std::function<void()> job;
    std::int64_t kwargs_bytes = 0;
  };

  const ExecutionLimits& limits_;
  const std::int64_t backlog_budget_;
  std::shared_ptr<Completions> box_;
  ToolCallContext context_;
  std::map<std::string, const HostTool*> by_name_;
  std::set<std::int64_t> seen_ids_;  // ids are a per-run counter: a repeated one is forged
  std::deque<WaitingCall> waiting_;
  std::int64_t waiting_bytes_ = 0;  // the arguments the waiting calls hold
  int running_ = 0;
};

// What one run's loop waits on and for.
struct LoopSettings {
  RunChannels channels;
  CappedBuffer* stdout_buffer = nullptr;
  CappedBuffer* stderr_buffer = nullptr;
  std::int64_t max_frame_bytes = 0;
  Clock::time_point deadline;
  bool child_ready = false;
  bool bridge_closes_after_run = false;
  bool verdict_first = false;  // RunExtras::validate was set
  bool guarded = false;        // RunExtras::guard was set: the runner may answer with guard_error
  std::int64_t max_output_bytes = 0;
  OutputStreamer* streamer = nullptr;  // HostLoop::StreamOutputTo, or null
  const std::function<std::optional<LoopResult>()>* gate = nullptr;  // RunExtras::gate
};

// One run's loop over the child's fds: the request and answers out, frames and output in, until
// a terminal frame, the child's end, the wall clock or a cancellation.
class RunLoop {
 public:
  RunLoop(const LoopSettings& settings, Completions& box, ToolDispatcher& tools,
          const CancellationToken& cancel)
      : s_(settings),
        box_(box),
        tools_(tools),
        cancel_(cancel),
        decoder_(settings.max_frame_bytes),
        child_ready_(settings.child_ready),
        stdout_open_(settings.channels.stdout_fd >= 0),
        stderr_open_(settings.channels.stderr_fd >= 0),
        bridge_open_(settings.channels.from_child_fd >= 0) {}

  LoopResult Run(std::string request_frame) {
    outbox_ = std::move(request_frame);
    if (s_.channels.to_child_fd >= 0) {
      fcntl(s_.channels.to_child_fd, F_SETFL, fcntl(s_.channels.to_child_fd, F_GETFL) | O_NONBLOCK);
    }
    while (!finished_ && !StopsBeforePoll()) PollOnce();
    if (gate_pending_) PassGate();  // the loop ended before the request was out
    return std::move(result_);
  }

 private:
  void EndWith(LoopEnd end, std::string message) {
    result_.end = end;
    result_.message = std::move(message);
    finished_ = true;
  }
  // A terminal frame of the runner: the run's result, final unless something follows it.
  void EndWithTerminal(LoopEnd end, std::string message) {
    result_.end = end;
    result_.message = std::move(message);
    if (!s_.bridge_closes_after_run) {
      finished_ = true;
      return;
    }
    terminal_ = true;
    closes_by_ = std::min(s_.deadline, Clock::now() + kAfterTerminalGrace);
  }
  void AfterTerminal() {
    const std::int64_t calls = result_.tool_calls;
    result_ = LoopResult{};
    result_.tool_calls = calls;
    EndWith(LoopEnd::kProtocolError,
            "the child wrote to the bridge after its terminal frame (a frame forged by the code, "
            "or a broken runner)");
  }
  // The wall clock or a cancellation ends the run; true when it did.
  bool ClockOrCancelEnds() {
    if (Clock::now() >= s_.deadline) {
      EndWith(LoopEnd::kTimeout, "");
    } else if (cancel_.cancelled()) {
      EndWith(LoopEnd::kCancelled, cancel_.reason());
    }
    return finished_;
  }
  // Whether the loop ends before it polls again: the result stands after its terminal frame once
  // the bridge closed (or its grace ran out); else the clock, a cancellation, or the child's end.
  bool StopsBeforePoll() {
    if (terminal_ && (!bridge_open_ || Clock::now() >= closes_by_)) return true;
    if (ClockOrCancelEnds()) return true;
    if (!bridge_open_) EndWith(LoopEnd::kChildClosed, "");
    return finished_;
  }

  void NotePeakBacklog() {
    result_.peak_unsent_bytes =
        std::max(result_.peak_unsent_bytes, static_cast<std::int64_t>(outbox_.size()));
  }
  void PollOnce();
  void WriteOutbox(short revents);
  void ReadBridge();
  void HandleFrames(std::vector<json::object>& frames);
  void HandleFrame(json::object& frame);
  void HandleChildFrame(protocol::ChildFrame& frame);
  // The first frame after a request that asked for validation: true when it was taken (the
  // verdict, or the protocol error of its absence).
  bool TakeVerdict(protocol::ChildFrame& frame);
  // RunExtras::gate, once: as soon as the request is written (the child compiles the code
  // meanwhile), or when the loop ended before that.
  void PassGate();

  const LoopSettings& s_;
  Completions& box_;
  ToolDispatcher& tools_;
  const CancellationToken& cancel_;
  FrameDecoder decoder_;
  LoopResult result_;
  std::string outbox_;
  bool child_ready_;
  bool stdout_open_;
  bool stderr_open_;
  bool bridge_open_;
  bool finished_ = false;
  // The runner's terminal frame has arrived; with bridge_closes_after_run the loop goes on until
  // the bridge closes (or `closes_by_`), and anything more on it is a protocol error.
  bool terminal_ = false;
  Clock::time_point closes_by_;
  // Frames since the request other than "ready" and the child's verdict: a guard_error is the
  // runner's only as the first.
  int frames_after_request_ = 0;
  bool verdict_pending_ = s_.verdict_first;  // the child's "validated" frame has not come yet
  bool gate_pending_ = s_.gate != nullptr;
  char buf_[64 * 1024];
};

void RunLoop::PollOnce() {
  const RunChannels& ch = s_.channels;
  pollfd fds[5];
  int n = 0;
  const int i_bridge = n;
  fds[n++] = {ch.from_child_fd, POLLIN, 0};
  const int i_wake = n;
  fds[n++] = {box_.wake_fd(), POLLIN, 0};
  const int i_out = stdout_open_ ? n : -1;
  if (stdout_open_) fds[n++] = {ch.stdout_fd, POLLIN, 0};
  const int i_err = stderr_open_ ? n : -1;
  if (stderr_open_) fds[n++] = {ch.stderr_fd, POLLIN, 0};
  const int i_to = !outbox_.empty() ? n : -1;
  if (!outbox_.empty()) fds[n++] = {ch.to_child_fd, POLLOUT, 0};

  Clock::time_point wake_at = terminal_ ? closes_by_ : s_.deadline;
  if (s_.streamer != nullptr) wake_at = std::min(wake_at, s_.streamer->NextDue());
  const auto wait_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - Clock::now()).count() + 1;
  const int ready = poll(fds, n, static_cast<int>(std::clamp<std::int64_t>(wait_ms, 0, 60'000)));
  if (ready < 0) {
    if (errno != EINTR) EndWith(LoopEnd::kProtocolError, "poll failed");
    return;
  }
  if (i_out >= 0 && fds[i_out].revents)
    stdout_open_ = DrainAvailable(ch.stdout_fd, *s_.stdout_buffer);
  if (i_err >= 0 && fds[i_err].revents)
    stderr_open_ = DrainAvailable(ch.stderr_fd, *s_.stderr_buffer);
  if (s_.streamer != nullptr) {
    s_.streamer->Follow(OutputStreamKind::kStdout, s_.stdout_buffer->data());
    s_.streamer->Follow(OutputStreamKind::kStderr, s_.stderr_buffer->data());
    s_.streamer->SendDue(Clock::now());
  }
  if (fds[i_wake].revents) tools_.CollectFinished(outbox_);
  NotePeakBacklog();
  if (i_to >= 0 && fds[i_to].revents) WriteOutbox(fds[i_to].revents);
  if (fds[i_bridge].revents) ReadBridge();
  NotePeakBacklog();
}

void RunLoop::WriteOutbox(short revents) {
  if (revents & (POLLERR | POLLHUP)) {
    outbox_.clear();  // the child closed its end; its exit shows on the bridge
    return;
  }
  // A child that died with answers pending must not take the host down with SIGPIPE.
  const StatusOr<std::size_t> written = WriteSome(s_.channels.to_child_fd, outbox_);
  if (written.ok()) {
    outbox_.erase(0, *written);
  } else {
    outbox_.clear();  // the reader is gone; its exit shows on the bridge
  }
  if (outbox_.empty() && gate_pending_) PassGate();
  tools_.StartWaiting(outbox_.size());  // the child read some: calls waiting may start
}

void RunLoop::PassGate() {
  gate_pending_ = false;
  std::optional<LoopResult> end;
  try {
    end = (*s_.gate)();
  } catch (const std::exception& e) {
    end.emplace();
    end->end = LoopEnd::kSetupError;
    end->message = std::string("the host's preparation of the run failed: ") + e.what();
  }
  if (!end) {
    outbox_ += protocol::EncodeVerdict();
    return;
  }
  // As the host's steps before the run would have: this is the result, and whatever the child
  // did meanwhile (compiling, at most) is not.
  result_ = std::move(*end);
  finished_ = true;
}

void RunLoop::ReadBridge() {
  const ssize_t r = read(s_.channels.from_child_fd, buf_, sizeof buf_);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
    bridge_open_ = false;
    return;
  }
  if (r < 0) return;
  if (terminal_) {
    AfterTerminal();  // even a partial line: the runner writes nothing after its last frame
    return;
  }
  std::vector<json::object> frames;
  const Status s = decoder_.Feed(std::string_view(buf_, static_cast<std::size_t>(r)), frames);
  HandleFrames(frames);
  if (!finished_ && terminal_ && decoder_.has_pending()) {
    AfterTerminal();  // the start of another frame right behind the terminal one
  } else if (!s.ok() && !finished_) {
    EndWith(s.code() == StatusCode::kResourceExhausted ? LoopEnd::kOutputLimit
                                                       : LoopEnd::kProtocolError,
            s.message());
  }
}

void RunLoop::HandleFrames(std::vector<json::object>& frames) {
  for (auto& f : frames) {
    if (finished_) return;
    if (terminal_) {  // more frames in the read that held the terminal one
      AfterTerminal();
      return;
    }
    // One read can hold hundreds of tool calls, and starting their handlers takes time
    // (threads, and commands forked from a busy host): the wall clock bounds the batch too.
    if (ClockOrCancelEnds()) return;
    HandleFrame(f);
  }
}

void RunLoop::HandleFrame(json::object& f) {
  StatusOr<protocol::ChildFrame> frame = protocol::DecodeChildFrame(std::move(f));
  if (!frame.ok()) {
    EndWith(LoopEnd::kProtocolError, frame.status().message());
    return;
  }
  if (verdict_pending_ && TakeVerdict(*frame)) return;
  if (!std::holds_alternative<protocol::ReadyFrame>(*frame)) ++frames_after_request_;
  HandleChildFrame(*frame);
}

bool RunLoop::TakeVerdict(protocol::ChildFrame& frame) {
  // Before it answers the request the runner says only "ready" (the launcher, a setup_error).
  if (std::holds_alternative<protocol::ReadyFrame>(frame) ||
      (std::holds_alternative<protocol::SetupErrorFrame>(frame) && !child_ready_)) {
    return false;
  }
  auto* verdict = std::get_if<protocol::ValidatedFrame>(&frame);
  if (verdict == nullptr) {
    EndWith(LoopEnd::kProtocolError,
            "the child answered the request without the verdict of its validation (a broken "
            "runner): whether any code ran is unknown");
    return true;
  }
  verdict_pending_ = false;
  if (!verdict->ok) {
    result_.violations = std::move(verdict->violations);
    EndWithTerminal(LoopEnd::kRejected,
                    verdict->violations_dropped == 0
                        ? ""
                        : std::to_string(verdict->violations_dropped) +
                              " violations dropped: they did not fit in a bridge frame");
  }
  return true;
}

void RunLoop::HandleChildFrame(protocol::ChildFrame& frame) {
  if (auto* call = std::get_if<protocol::ToolCallFrame>(&frame)) {
    if (Status s = tools_.Dispatch(*call, outbox_, result_.tool_calls); !s.ok()) {
      EndWith(LoopEnd::kProtocolError, s.message());
    }
  } else if (auto* complete = std::get_if<protocol::CompleteFrame>(&frame)) {
    // The runner sends a limit frame for an output over the cap: only code that wrote to the
    // bridge itself sends this, and the host holds the cap whatever the child does.
    if (complete->output_present && complete->output_text_bytes > s_.max_output_bytes) {
      EndWith(LoopEnd::kProtocolError,
              "the child's complete frame carries an output of " +
                  std::to_string(complete->output_text_bytes) + " bytes, over the limit of " +
                  std::to_string(s_.max_output_bytes) +
                  " bytes (max_output_bytes): a frame the runner never sends, forged by the code");
      return;
    }
    result_.output_present = complete->output_present;
    if (complete->output_present) result_.output_json = std::move(complete->output_json);
    EndWithTerminal(LoopEnd::kComplete, std::move(complete->note));
  } else if (auto* error = std::get_if<protocol::ErrorFrame>(&frame)) {
    result_.error = {std::move(error->error_type), std::move(error->message),
                     std::move(error->traceback)};
    if (result_.error.type.empty()) result_.error.type = "Error";
    EndWithTerminal(LoopEnd::kUserError, "");
  } else if (auto* limit = std::get_if<protocol::LimitFrame>(&frame)) {
    EndWithTerminal(LoopEnd::kOutputLimit, std::move(limit->message));
  } else if (std::holds_alternative<protocol::ReadyFrame>(frame)) {
    child_ready_ = true;
  } else if (auto* setup = std::get_if<protocol::SetupErrorFrame>(&frame); setup && !child_ready_) {
    // Only the sandbox launcher writes before the runner's ready frame: no user code has run.
    EndWith(LoopEnd::kSetupError, std::move(setup->message));
  } else if (auto* guard = std::get_if<protocol::GuardErrorFrame>(&frame)) {
    if (s_.guarded && frames_after_request_ == 1) {
      // The runner's answer to a guarded request when its runtime guard could not be armed: it
      // ran nothing. (Code that forged one as its very first frame only fails its own run.)
      EndWith(LoopEnd::kSetupError, std::move(guard->message));
    } else {
      EndWith(LoopEnd::kProtocolError,
              std::string("the child sent a guard_error frame ") +
                  (s_.guarded ? "after other frames" : "to a request without a runtime guard") +
                  ": the runner sends one only as its first answer to a guarded request, so the "
                  "code forged it");
    }
  }
  // Unknown types (and a setup_error the code forged after ready) are ignored.
}

}  // namespace

Status WaitForReadyFrame(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string line;
  char buf[512];
  while (line.find('\n') == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return DeadlineExceeded("the interpreter did not report ready in time");
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left)) < 0 && errno != EINTR) return Internal("poll failed");
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) return Unavailable("the interpreter exited before it was ready");
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return Unavailable("cannot read from the interpreter");
    }
    line.append(buf, static_cast<std::size_t>(n));
    if (line.size() > sizeof buf)
      return InvalidArgument("the interpreter's first frame is too long");
  }
  if (line.back() != '\n') return InvalidArgument("the interpreter sent more than its ready frame");
  FrameDecoder decoder(sizeof buf);
  std::vector<json::object> frames;
  if (Status s = decoder.Feed(line, frames); !s.ok()) return s;
  if (frames.size() != 1) return InvalidArgument("the interpreter's first frame is not \"ready\"");
  StatusOr<protocol::ChildFrame> frame = protocol::DecodeChildFrame(std::move(frames[0]));
  if (!frame.ok()) return frame.status();
  if (const auto* setup = std::get_if<protocol::SetupErrorFrame>(&*frame))
    return FailedPrecondition(setup->message);
  if (const auto* guard = std::get_if<protocol::GuardErrorFrame>(&*frame))
    return FailedPrecondition(guard->message);
  if (!std::holds_alternative<protocol::ReadyFrame>(*frame)) {
    return InvalidArgument("the interpreter's first frame is not \"ready\"");
  }
  return Status::Ok();
}

Status SendGuardFrame(int fd, const RuntimeGuardSpec& spec, bool with_imports) {
  const std::string text = protocol::EncodeGuard(spec, with_imports);
  std::string_view rest = text;
  while (!rest.empty()) {
    // A child that has not reported ready reads nothing yet: the pipe's buffer takes the frame.
    const StatusOr<std::size_t> written = WriteSome(fd, rest);
    if (!written.ok()) return written.status();
    if (*written == 0) {
      pollfd pfd{fd, POLLOUT, 0};
      if (poll(&pfd, 1, 1000) <= 0) return Unavailable("the child does not take its guard frame");
    }
    rest.remove_prefix(*written);
  }
  return Status::Ok();
}

HostLoop::HostLoop(RunChannels channels, const std::vector<HostTool>& tools,
                   const ExecutionLimits& limits)
    : channels_(channels),
      tools_(tools),
      limits_(limits),
      stdout_(limits.max_stdout_bytes),
      stderr_(limits.max_stderr_bytes) {}

LoopResult HostLoop::Run(const std::string& code, Clock::time_point deadline, bool child_ready,
                         const RunExtras& extras, const CancellationToken& cancel) {
  auto box = std::make_shared<Completions>(extras.wake);
  if (!box->ok()) {
    LoopResult result;
    result.end = LoopEnd::kProtocolError;
    result.message = "cannot create the tool wake-up pipe";
    return result;
  }
  // Tool calls learn through this that their answer is no longer wanted; cancelled on every
  // way out of Run (the guard's destructor), so no handler outlives its run by design.
  CancellationSource run_over;
  struct EndCalls {
    CancellationSource& source;
    ~EndCalls() { source.Cancel("the run ended"); }
  } end_calls{run_over};
  const CancellationRegistration wake_on_cancel = cancel.OnCancel([box] { box->Wake(); });
  ToolDispatcher dispatcher(tools_, limits_, box,
                            ToolCallContext{run_over.token(), limits_.max_frame_bytes});

  protocol::RequestFrame request{code,
                                 {},
                                 limits_.max_output_bytes,
                                 limits_.max_frame_bytes,
                                 limits_.max_tool_calls,
                                 extras.guard,
                                 extras.validate,
                                 extras.gate != nullptr,
                                 extras.guard_as_armed && extras.validate == nullptr};
  for (const auto& t : tools_) request.tools.push_back(t.name);
  const LoopSettings settings{channels_,
                              &stdout_,
                              &stderr_,
                              limits_.max_frame_bytes,
                              deadline,
                              child_ready,
                              extras.bridge_closes_after_run,
                              extras.validate != nullptr,
                              extras.guard != nullptr,
                              limits_.max_output_bytes,
                              streamer_.get(),
                              extras.gate};
  LoopResult result =
      RunLoop(settings, *box, dispatcher, cancel).Run(protocol::EncodeRequest(request));
  box->Close();
  return result;
}

void HostLoop::StreamOutputTo(const OutputCallback& callback) {
  if (callback) streamer_ = std::make_unique<OutputStreamer>(callback);
}

std::int64_t HostLoop::FinishStream() {
  if (streamer_ == nullptr) return 0;
  streamer_->Follow(OutputStreamKind::kStdout, stdout_.data());
  streamer_->Follow(OutputStreamKind::kStderr, stderr_.data());
  return streamer_->Finish();
}

void HostLoop::DrainAvailableOutput() {
  // DrainAvailable stops after a budget per call so a flood cannot starve the loop; here the
  // pipes hold at most their buffers, so loop until they would block or are finished.
  if (channels_.stdout_fd >= 0) {
    while (DrainAvailable(channels_.stdout_fd, stdout_) && HasMoreInput(channels_.stdout_fd)) {
    }
  }
  if (channels_.stderr_fd >= 0) {
    while (DrainAvailable(channels_.stderr_fd, stderr_) && HasMoreInput(channels_.stderr_fd)) {
    }
  }
}

void HostLoop::DrainOutput(std::chrono::milliseconds grace) {
  const auto deadline = Clock::now() + grace;
  bool out_open = channels_.stdout_fd >= 0;
  bool err_open = channels_.stderr_fd >= 0;
  while (out_open || err_open) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd fds[2];
    int n = 0;
    if (out_open) fds[n++] = {channels_.stdout_fd, POLLIN, 0};
    if (err_open) fds[n++] = {channels_.stderr_fd, POLLIN, 0};
    if (poll(fds, n, static_cast<int>(left)) < 0 && errno != EINTR) break;
    int k = 0;
    if (out_open && fds[k++].revents) out_open = DrainAvailable(channels_.stdout_fd, stdout_);
    if (err_open && fds[k++].revents) err_open = DrainAvailable(channels_.stderr_fd, stderr_);
  }
}

}  // namespace codeact::internal
