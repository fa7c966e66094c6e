#include "bridge/host_loop.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "bridge/frame_codec.hpp"
#include "bridge/tool_workers.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {
namespace json = boost::json;
namespace {

using Clock = std::chrono::steady_clock;

// Refused calls tolerated past twice the budget before the run ends (see handle_frame).
constexpr std::int64_t kCallsPastBudget = 64;
// How long the bridge may stay open after the terminal frame (see RunExtras). A runner closes
// it within microseconds; only a process the code forked (without the runtime guard) can hold it
// open longer, and then the run ends without waiting for it.
constexpr std::chrono::milliseconds kAfterTerminalGrace{100};
// Handlers of one run running at once: a gather of hundreds of calls must not become hundreds
// of threads (or, with command tools, hundreds of processes) at the same moment.
constexpr int kMaxConcurrentCalls = 16;

// Finished tool calls, handed from handler threads to the loop. Shared with the threads so a
// handler that outlives its run (it hung past the deadline) writes into a closed box, harmlessly.
class Completions {
 public:
  Completions() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
      wake_read_ = fds[0];
      wake_write_ = fds[1];
    }
  }
  ~Completions() {
    if (wake_read_ >= 0) close(wake_read_);
    if (wake_write_ >= 0) close(wake_write_);
  }
  bool ok() const { return wake_read_ >= 0; }
  int wake_fd() const { return wake_read_; }

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
    while (read(wake_read_, buf, sizeof buf) > 0) {
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
    [[maybe_unused]] ssize_t n = write(wake_write_, &byte, 1);  // full pipe: a wake-up is pending
  }

  std::mutex mu_;
  std::vector<std::string> ready_;
  bool closed_ = false;
  int wake_read_ = -1;
  int wake_write_ = -1;
};

json::object ErrorReply(std::int64_t id, std::string_view type, std::string_view message) {
  return {{"type", "tool_result"}, {"id", id}, {"ok", false}, {"error_type", type}, {"message", message}};
}

std::string ResultFrame(std::int64_t id, const ToolResult& r, std::int64_t max_frame_bytes) {
  if (!r.ok) return EncodeFrame(ErrorReply(id, r.error_type.empty() ? "ToolFailed" : r.error_type, r.message));
  json::error_code ec;
  json::value value = ParseJson(r.result_json, ec);
  if (ec == json::error::too_deep) {
    return EncodeFrame(ErrorReply(id, "ToolFailed", "the tool's result is too deeply nested: " + JsonErrorText(ec)));
  }
  if (ec) return EncodeFrame(ErrorReply(id, "ToolFailed", "the tool returned invalid JSON"));
  std::string frame = EncodeFrame({{"type", "tool_result"}, {"id", id}, {"ok", true}, {"result", std::move(value)}});
  if (static_cast<std::int64_t>(frame.size()) > max_frame_bytes) {
    return EncodeFrame(ErrorReply(id, "ToolResultTooLarge",
                                  "the tool's result of " + std::to_string(frame.size()) +
                                      " bytes exceeds the frame limit of " + std::to_string(max_frame_bytes) +
                                      " bytes"));
  }
  return frame;
}

void RunHandler(const HostTool& tool, std::int64_t id, const std::string& kwargs, const ToolCallContext& context,
                const std::shared_ptr<Completions>& box) {
  // The run ended while the call waited for a worker: nobody reads the answer.
  if (context.cancel.cancelled()) return;
  ToolResult r;
  try {
    if (tool.cancellable_handler) {
      r = tool.cancellable_handler(kwargs, context);
    } else {
      r = tool.handler ? tool.handler(kwargs) : ToolResult::Failure("ToolFailed", "tool has no handler");
    }
  } catch (const std::exception& e) {
    r = ToolResult::Failure("ToolFailed", e.what());
  } catch (...) {
    r = ToolResult::Failure("ToolFailed", "the tool raised a non-standard exception");
  }
  box->Post(ResultFrame(id, r, context.max_result_bytes));
}

std::string StringField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

bool HasMoreInput(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN);
}

}  // namespace

Status WaitForReadyFrame(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string line;
  char buf[512];
  while (line.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
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
    if (line.size() > sizeof buf) return InvalidArgument("the interpreter's first frame is too long");
  }
  if (line.back() != '\n') return InvalidArgument("the interpreter sent more than its ready frame");
  FrameDecoder decoder(sizeof buf);
  std::vector<json::object> frames;
  if (Status s = decoder.Feed(line, frames); !s.ok()) return s;
  if (frames.size() == 1 &&
      (StringField(frames[0], "type") == "setup_error" || StringField(frames[0], "type") == "guard_error")) {
    return FailedPrecondition(StringField(frames[0], "message"));
  }
  if (frames.size() != 1 || StringField(frames[0], "type") != "ready") {
    return InvalidArgument("the interpreter's first frame is not \"ready\"");
  }
  return Status::Ok();
}

Status SendGuardFrame(int fd, const RuntimeGuardSpec& spec) {
  json::object frame = GuardSystemJson(spec);
  frame["type"] = "guard";
  const std::string text = EncodeFrame(frame);
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

HostLoop::HostLoop(RunChannels channels, const std::vector<HostTool>& tools, const ExecutionLimits& limits)
    : channels_(channels),
      tools_(tools),
      limits_(limits),
      stdout_(limits.max_stdout_bytes),
      stderr_(limits.max_stderr_bytes) {}

LoopResult HostLoop::Run(const std::string& code, Clock::time_point deadline, bool child_ready,
                         const RunExtras& extras, const CancellationToken& cancel) {
  LoopResult result;
  auto box = std::make_shared<Completions>();
  if (!box->ok()) {
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
  const ToolCallContext call_context{run_over.token(), limits_.max_frame_bytes};
  const CancellationRegistration wake_on_cancel = cancel.OnCancel([box] { box->Wake(); });
  std::map<std::string, const HostTool*> by_name;
  json::array names;
  for (const auto& t : tools_) {
    by_name[t.name] = &t;
    names.emplace_back(t.name);
  }

  json::object request{{"type", "request"},
                       {"code", code},
                       {"tools", std::move(names)},
                       {"max_output_bytes", limits_.max_output_bytes},
                       {"max_frame_bytes", limits_.max_frame_bytes},
                       {"max_tool_calls", limits_.max_tool_calls}};
  if (extras.guard != nullptr) request["guard"] = GuardRequestJson(*extras.guard);
  std::string outbox = EncodeFrame(request);
  if (channels_.to_child_fd >= 0) {
    fcntl(channels_.to_child_fd, F_SETFL, fcntl(channels_.to_child_fd, F_GETFL) | O_NONBLOCK);
  }

  FrameDecoder decoder(limits_.max_frame_bytes);
  std::set<std::int64_t> seen_ids;  // ids are a per-run counter: a repeated one is forged
  bool stdout_open = channels_.stdout_fd >= 0;
  bool stderr_open = channels_.stderr_fd >= 0;
  bool bridge_open = channels_.from_child_fd >= 0;
  bool finished = false;
  // The runner's terminal frame has arrived; with bridge_closes_after_run the loop goes on until
  // the bridge closes (or `closes_by`), and anything more on it is a protocol error.
  bool terminal = false;
  Clock::time_point closes_by;
  // Frames since the request other than "ready": a guard_error is the runner's only as the first.
  int frames_after_request = 0;
  std::vector<json::object> frames;
  char buf[64 * 1024];

  auto end_with = [&](LoopEnd end, std::string message) {
    result.end = end;
    result.message = std::move(message);
    finished = true;
  };
  // A terminal frame of the runner: the run's result, final unless something follows it.
  auto end_with_terminal = [&](LoopEnd end, std::string message) {
    result.end = end;
    result.message = std::move(message);
    if (!extras.bridge_closes_after_run) {
      finished = true;
      return;
    }
    terminal = true;
    closes_by = std::min(deadline, Clock::now() + kAfterTerminalGrace);
  };
  auto after_terminal = [&] {
    const std::int64_t calls = result.tool_calls;
    result = LoopResult{};
    result.tool_calls = calls;
    end_with(LoopEnd::kProtocolError,
             "the child wrote to the bridge after its terminal frame (a frame forged by the code, or a broken runner)");
  };

  // Handlers of one run run at most kMaxConcurrentCalls at a time; the rest wait here (at most
  // the budget). Every frame in `box` is a finished handler.
  std::deque<std::function<void()>> waiting;
  int running = 0;
  auto start_waiting = [&] {
    while (running < kMaxConcurrentCalls && !waiting.empty()) {
      ++running;
      ToolWorkers::Instance().Run(std::move(waiting.front()));
      waiting.pop_front();
    }
  };

  auto handle_frame = [&](json::object& f) {
    const std::string type = StringField(f, "type");
    if (type != "ready") ++frames_after_request;
    if (type == "tool_call") {
      const json::value* id_v = f.if_contains("id");
      const json::value* kwargs_v = f.if_contains("kwargs");
      if (!id_v || !id_v->is_int64() || (kwargs_v && !kwargs_v->is_object())) {
        end_with(LoopEnd::kProtocolError, "malformed tool_call frame from the child");
        return;
      }
      const std::int64_t id = id_v->as_int64();
      if (!seen_ids.insert(id).second) {
        end_with(LoopEnd::kProtocolError, "tool_call id " + std::to_string(id) + " was used twice");
        return;
      }
      // Past the budget every call is refused, but a child that keeps calling anyway would grow
      // the refusals waiting in the outbox (and the set of ids) for as long as the wall clock
      // lets it: end the run instead.
      if (static_cast<std::int64_t>(seen_ids.size()) > 2 * limits_.max_tool_calls + kCallsPastBudget) {
        end_with(LoopEnd::kProtocolError, "the child kept calling tools long after its budget of " +
                                              std::to_string(limits_.max_tool_calls) + " calls was spent");
        return;
      }
      const std::string name = StringField(f, "name");
      if (const json::value* deep = f.if_contains("kwargs_too_deep"); deep != nullptr && deep->is_bool()) {
        // The decoder could not parse the arguments (frame_codec.cpp): answer, do not run.
        ++result.tool_calls;
        outbox += EncodeFrame(ErrorReply(id, "ToolArgumentsTooDeep",
                                         "the arguments of " + (name.empty() ? std::string("the tool") : name) +
                                             " are nested deeper than " + std::to_string(kMaxJsonDepth) +
                                             " levels"));
        return;
      }
      if (result.tool_calls >= limits_.max_tool_calls) {
        outbox += EncodeFrame(ErrorReply(id, "ToolBudgetExceeded",
                                         "the run may make at most " + std::to_string(limits_.max_tool_calls) +
                                             " tool calls"));
        return;
      }
      ++result.tool_calls;
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        outbox += EncodeFrame(ErrorReply(id, "UnknownTool", "no tool named \"" + name + "\""));
        return;
      }
      std::string kwargs = kwargs_v ? SerializeJson(*kwargs_v) : "{}";
      waiting.push_back([tool = *it->second, id, kwargs = std::move(kwargs), call_context, box] {
        RunHandler(tool, id, kwargs, call_context, box);
      });
      start_waiting();
    } else if (type == "complete") {
      const json::value* present = f.if_contains("output_present");
      result.output_present = present && present->is_bool() && present->as_bool();
      if (const json::value* out = f.if_contains("output"); out && result.output_present) {
        result.output_json = SerializeJson(*out);
      }
      end_with_terminal(LoopEnd::kComplete, "");
    } else if (type == "error") {
      result.error = {StringField(f, "error_type"), StringField(f, "message"), StringField(f, "traceback")};
      if (result.error.type.empty()) result.error.type = "Error";
      end_with_terminal(LoopEnd::kUserError, "");
    } else if (type == "limit") {
      end_with_terminal(LoopEnd::kOutputLimit, StringField(f, "message"));
    } else if (type == "ready") {
      child_ready = true;
    } else if (type == "setup_error" && !child_ready) {
      // Only the sandbox launcher writes before the runner's ready frame: no user code has run.
      end_with(LoopEnd::kSetupError, StringField(f, "message"));
    } else if (type == "guard_error" && frames_after_request == 1) {
      // The runner's answer to the request when its runtime guard could not be armed: it ran
      // nothing. (Code that forged one as its first frame only fails its own run.)
      end_with(LoopEnd::kSetupError, StringField(f, "message"));
    }
    // Unknown types (and a setup_error the code forged after ready) are ignored.
  };

  while (!finished) {
    const auto now = Clock::now();
    if (terminal && (!bridge_open || now >= closes_by)) break;  // the result stands
    if (now >= deadline) {
      end_with(LoopEnd::kTimeout, "");
      break;
    }
    if (cancel.cancelled()) {
      end_with(LoopEnd::kCancelled, cancel.reason());
      break;
    }
    if (!bridge_open) {
      end_with(LoopEnd::kChildClosed, "");
      break;
    }
    pollfd fds[5];
    int n = 0;
    const int i_bridge = n;
    fds[n++] = {channels_.from_child_fd, POLLIN, 0};
    const int i_wake = n;
    fds[n++] = {box->wake_fd(), POLLIN, 0};
    const int i_out = stdout_open ? n : -1;
    if (stdout_open) fds[n++] = {channels_.stdout_fd, POLLIN, 0};
    const int i_err = stderr_open ? n : -1;
    if (stderr_open) fds[n++] = {channels_.stderr_fd, POLLIN, 0};
    const int i_to = !outbox.empty() ? n : -1;
    if (!outbox.empty()) fds[n++] = {channels_.to_child_fd, POLLOUT, 0};

    const auto wait_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>((terminal ? closes_by : deadline) - now).count() + 1;
    const int ready = poll(fds, n, static_cast<int>(std::min<std::int64_t>(wait_ms, 60'000)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      end_with(LoopEnd::kProtocolError, "poll failed");
      break;
    }
    if (i_out >= 0 && fds[i_out].revents) stdout_open = DrainAvailable(channels_.stdout_fd, stdout_);
    if (i_err >= 0 && fds[i_err].revents) stderr_open = DrainAvailable(channels_.stderr_fd, stderr_);
    if (fds[i_wake].revents) {
      for (auto& frame : box->Take()) {
        outbox += frame;
        --running;
      }
      start_waiting();
    }
    if (i_to >= 0 && fds[i_to].revents) {
      if (fds[i_to].revents & (POLLERR | POLLHUP)) {
        outbox.clear();  // the child closed its end; its exit shows on the bridge
      } else {
        // A child that died with answers pending must not take the host down with SIGPIPE.
        const StatusOr<std::size_t> written = WriteSome(channels_.to_child_fd, outbox);
        if (written.ok()) {
          outbox.erase(0, *written);
        } else {
          outbox.clear();  // the reader is gone; its exit shows on the bridge
        }
      }
    }
    if (fds[i_bridge].revents) {
      const ssize_t r = read(channels_.from_child_fd, buf, sizeof buf);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        bridge_open = false;
        continue;
      }
      if (r > 0 && terminal) {
        after_terminal();  // even a partial line: the runner writes nothing after its last frame
        break;
      }
      if (r > 0) {
        frames.clear();
        const Status s = decoder.Feed(std::string_view(buf, static_cast<std::size_t>(r)), frames);
        for (auto& f : frames) {
          if (finished) break;
          if (terminal) {  // more frames in the read that held the terminal one
            after_terminal();
            break;
          }
          // One read can hold hundreds of tool calls, and starting their handlers takes time
          // (threads, and commands forked from a busy host): the wall clock bounds the batch too.
          if (Clock::now() >= deadline) {
            end_with(LoopEnd::kTimeout, "");
            break;
          }
          if (cancel.cancelled()) {
            end_with(LoopEnd::kCancelled, cancel.reason());
            break;
          }
          handle_frame(f);
        }
        if (!finished && terminal && decoder.has_pending()) {
          after_terminal();  // the start of another frame right behind the terminal one
        } else if (!s.ok() && !finished) {
          end_with(s.code() == StatusCode::kResourceExhausted ? LoopEnd::kOutputLimit : LoopEnd::kProtocolError,
                   s.message());
        }
      }
    }
  }
  box->Close();
  return result;
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
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
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
