#include "mcp_client/mcp_connection.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>

#include "common/status_macros.hpp"
#include "json/raw_json.hpp"
#include "json/serialize.hpp"
#include "os/errno_status.hpp"
#include "os/pipe.hpp"
#include "os/pipe_io.hpp"
#include "process/child.hpp"

namespace codeact::internal {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kStderrTailBytes = 1000;        // of the server's stderr, kept for messages
constexpr auto kExitGrace = std::chrono::seconds(2);  // after EOF, before the server is killed

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::int64_t>(0, std::min<std::int64_t>(left.count(), 1 << 30)));
}

std::string ExitText(const ExitInfo& info) {
  if (info.exited) return "exited with status " + std::to_string(info.exit_code);
  return "was killed by signal " + std::to_string(info.signal) + " (" +
         (::strsignal(info.signal) != nullptr ? ::strsignal(info.signal) : "?") + ")";
}

}  // namespace

McpConnection::McpConnection(McpConnectionOptions options,
                             std::function<void(const std::string&)> on_notification)
    : options_(std::move(options)), on_notification_(std::move(on_notification)) {}

StatusOr<std::unique_ptr<McpConnection>> McpConnection::Start(
    McpConnectionOptions options, std::function<void(const std::string&)> on_notification) {
  if (options.argv.empty()) return InvalidArgument("MCP server '" + options.name + "': no command");
  std::unique_ptr<McpConnection> conn(
      new McpConnection(std::move(options), std::move(on_notification)));
  if (::pipe2(conn->wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0)
    return Internal("pipe2 failed: " + ErrnoText(errno));
  conn->reader_ = std::thread([c = conn.get()] { c->ReaderMain(); });
  const auto deadline = Clock::now() + std::chrono::milliseconds(conn->options_.start_timeout_ms);
  {
    std::unique_lock lock(conn->mu_);
    conn->cv_.wait_until(lock, deadline, [&] { return conn->started_; });
    if (!conn->started_)
      return DeadlineExceeded("MCP server '" + conn->options_.name + "' did not start in time");
    if (!conn->start_status_.ok()) return conn->start_status_;
  }
  json::object params;
  params["protocolVersion"] = "2025-06-18";
  params["capabilities"] = json::object();
  params["clientInfo"] = json::object{{"name", "codeact"}, {"version", "1"}};
  McpResponse init = conn->Request("initialize", std::move(params),
                                   std::chrono::milliseconds(RemainingMs(deadline) + 1));
  if (init.failure != McpRequestFailure::kNone || init.is_error || !init.body.is_object()) {
    const std::string why = init.failure != McpRequestFailure::kNone ? init.failure_message
                                                                     : json::serialize(init.body);
    return Unavailable("MCP server '" + conn->options_.name + "' did not initialize: " + why);
  }
  CODEACT_RETURN_IF_ERROR(conn->Notify("notifications/initialized", json::object()));
  return conn;
}

McpConnection::~McpConnection() {
  Stop();
  if (reader_.joinable()) reader_.join();
  for (int fd : wake_fds_) {
    if (fd >= 0) ::close(fd);
  }
}

void McpConnection::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  if (wake_fds_[1] >= 0) {
    const char byte = 1;
    (void)!::write(wake_fds_[1], &byte, 1);
  }
  if (reader_.joinable() && reader_.get_id() != std::this_thread::get_id()) reader_.join();
  MarkDead("MCP server '" + options_.name + "' was stopped");
}

std::string McpConnection::DeadReason() const {
  std::lock_guard lock(mu_);
  return dead_reason_;
}

long McpConnection::pid() const {
  std::lock_guard lock(mu_);
  return dead_reason_.empty() ? pid_ : -1;
}

void McpConnection::MarkDead(const std::string& reason) {
  std::lock_guard lock(mu_);
  if (dead_reason_.empty()) dead_reason_ = reason;
  for (auto& [id, pending] : pending_) {
    if (pending->done) continue;
    pending->done = true;
    pending->response.failure = McpRequestFailure::kUnavailable;
    pending->response.failure_message = dead_reason_;
  }
  cv_.notify_all();
}

void McpConnection::ReaderMain() {
  std::unique_ptr<Child> child = StartServer();
  if (!child) return;
  std::string stderr_tail;
  const std::string ended = PumpMessages(*child, stderr_tail);
  EndServer(*child, ended, std::move(stderr_tail));
}

std::unique_ptr<Child> McpConnection::StartServer() {
  LaunchSpec spec;
  // The server speaks on its stdin and stdout, which Child keeps for /dev/null and a capture:
  // the bridge pipes (fds 3 and 4) are moved there. The shell only runs this fixed script; the
  // command's words reach exec as "$0" "$@", never as shell text.
  spec.executable = "/bin/sh";
  spec.args = {"-c", "exec \"$0\" \"$@\" <&3 >&4 3<&- 4>&-"};
  spec.args.insert(spec.args.end(), options_.argv.begin(), options_.argv.end());
  spec.environment = options_.environment;
  spec.working_dir = options_.working_dir;
  auto started = Child::Start(spec);
  if (!started.ok()) {
    std::lock_guard lock(mu_);
    started_ = true;
    start_status_ = Unavailable("MCP server '" + options_.name +
                                "' could not start: " + started.status().message());
    dead_reason_ = start_status_.message();
    cv_.notify_all();
    return nullptr;
  }
  std::unique_ptr<Child> child = std::move(*started);
  (void)SetNonBlocking(child->bridge_to_child_fd());
  {
    std::lock_guard wlock(write_mu_);
    to_server_fd_ = child->bridge_to_child_fd();
  }
  {
    std::lock_guard lock(mu_);
    started_ = true;
    pid_ = child->pid();
    cv_.notify_all();
  }
  return child;
}

std::string McpConnection::PumpMessages(Child& child, std::string& stderr_tail) {
  std::string buffer;
  std::string ended;            // why the loop ended, when it was not a stop
  bool open[2] = {true, true};  // the server's captured stdout (unused by MCP) and its stderr
  for (;;) {
    pollfd p[4] = {{child.bridge_from_child_fd(), POLLIN, 0},
                   {open[0] ? child.stdout_fd() : -1, POLLIN, 0},
                   {open[1] ? child.stderr_fd() : -1, POLLIN, 0},
                   {wake_fds_[0], POLLIN, 0}};
    if (::poll(p, 4, -1) < 0 && errno != EINTR) {
      ended = "poll failed: " + ErrnoText(errno);
      break;
    }
    if (p[3].revents != 0) break;  // Stop, or Abort after a failed write
    for (int i = 1; i < 3; ++i) {
      if (p[i].fd < 0 || p[i].revents == 0) continue;
      char chunk[4096];
      const ssize_t got = ::read(p[i].fd, chunk, sizeof chunk);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) open[i - 1] = false;
      if (got > 0 && i == 2) {
        stderr_tail.append(chunk, static_cast<std::size_t>(got));
        if (stderr_tail.size() > kStderrTailBytes)
          stderr_tail.erase(0, stderr_tail.size() - kStderrTailBytes);
      }
    }
    if (p[0].revents == 0) continue;
    char chunk[64 * 1024];
    const ssize_t n = ::read(child.bridge_from_child_fd(), chunk, sizeof chunk);
    if (n == 0) {
      ended = "closed its stdout";
      break;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      ended = "could not be read: " + ErrnoText(errno);
      break;
    }
    buffer.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (nl - start > static_cast<std::size_t>(options_.max_message_bytes)) break;
      HandleLine(buffer.substr(start, nl - start));
    }
    buffer.erase(0, start);
    if (buffer.size() > static_cast<std::size_t>(options_.max_message_bytes)) {
      ended = "sent a message over " + std::to_string(options_.max_message_bytes) +
              " bytes (the connection was closed)";
      MarkDead("MCP server '" + options_.name + "' " + ended);
      break;
    }
  }
  return ended;
}

void McpConnection::EndServer(Child& child, const std::string& ended, std::string stderr_tail) {
  {
    std::lock_guard wlock(write_mu_);
    child.CloseBridgeToChild();  // end of input: a well-behaved server exits now
    to_server_fd_ = -1;
  }
  bool stopping;
  {
    std::lock_guard lock(mu_);
    stopping = stopping_;
  }
  std::optional<ExitInfo> info;
  if (!stopping && ended == "closed its stdout") {
    // It is probably exiting; give it a moment so that its own status is what gets reported.
    const auto grace = Clock::now() + kExitGrace;
    while (!(info = child.TryWait()) && Clock::now() < grace) {
      pollfd p{wake_fds_[0], POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) break;
    }
  }
  child.KillAll();
  if (!info) info = child.Wait();
  std::string reason = "MCP server '" + options_.name + "' ";
  if (stopping) {
    reason += "was stopped";
  } else {
    reason += ExitText(*info);
    if (!ended.empty() && ended != "closed its stdout") reason += " after it " + ended;
    if (!stderr_tail.empty()) {
      while (!stderr_tail.empty() && (stderr_tail.back() == '\n' || stderr_tail.back() == '\r'))
        stderr_tail.pop_back();
      reason += "; its stderr ended with: " + stderr_tail;
    }
  }
  MarkDead(reason);
}

void McpConnection::HandleLine(const std::string& line) {
  json::error_code ec;
  const json::value message = ParseJson(line, ec);
  if (ec == json::error::too_deep) {
    FailTooDeep(line);
    return;
  }
  if (ec) return;  // not JSON (a stray log line on stdout): ignored, as MCP clients do
  if (!message.is_object()) return;
  const json::object& obj = message.get_object();
  const json::value* id = obj.if_contains("id");
  const json::value* method = obj.if_contains("method");
  if (method != nullptr && method->is_string()) {
    const std::string name(method->get_string());
    if (id == nullptr) {
      if (on_notification_) on_notification_(name);
      return;
    }
    // A request from the server (ping, or a capability this client did not declare).
    json::object reply{{"jsonrpc", "2.0"}, {"id", *id}};
    if (name == "ping") {
      reply["result"] = json::object();
    } else {
      reply["error"] = json::object{{"code", -32601}, {"message", "method not found: " + name}};
    }
    (void)SendLine(json::serialize(reply), Clock::now() + std::chrono::seconds(1));
    return;
  }
  if (id == nullptr || !id->is_int64()) return;  // not an answer to us: our ids are integers
  std::lock_guard lock(mu_);
  auto it = pending_.find(id->as_int64());
  if (it == pending_.end() || it->second->done) return;  // cancelled or timed out: dropped
  Pending& p = *it->second;
  if (const json::value* result = obj.if_contains("result")) {
    p.response.body = *result;
  } else if (const json::value* error = obj.if_contains("error")) {
    p.response.is_error = true;
    p.response.body = *error;
  } else {
    p.response.is_error = true;
    p.response.body = json::object{{"message", "a response with neither result nor error"}};
  }
  p.done = true;
  cv_.notify_all();
}

void McpConnection::FailTooDeep(const std::string& line) {
  const std::optional<std::string_view> id_text = RawMember(line, "id");
  if (!id_text) return;
  json::error_code ec;
  const json::value id = ParseJson(*id_text, ec);
  if (ec || !id.is_int64()) return;  // not an answer to us: our ids are integers
  std::lock_guard lock(mu_);
  auto it = pending_.find(id.as_int64());
  if (it == pending_.end() || it->second->done) return;
  Pending& p = *it->second;
  p.response.failure = McpRequestFailure::kMalformed;
  p.response.failure_message = "MCP server '" + options_.name +
                               "' answered with a message nested deeper than " +
                               std::to_string(kMaxJsonDepth) + " levels, which is not read";
  p.done = true;
  cv_.notify_all();
}

Status McpConnection::SendLine(const std::string& line, Clock::time_point deadline) {
  if (line.size() > static_cast<std::size_t>(options_.max_message_bytes))
    return ResourceExhausted("the message is over " + std::to_string(options_.max_message_bytes) +
                             " bytes");
  std::lock_guard wlock(write_mu_);
  if (to_server_fd_ < 0) return Unavailable("MCP server '" + options_.name + "' is not running");
  const std::string data = line + "\n";
  std::string_view rest = data;
  while (!rest.empty()) {
    auto wrote = WriteSome(to_server_fd_, rest);
    if (!wrote.ok()) return Unavailable("MCP server '" + options_.name + "' closed its stdin");
    rest.remove_prefix(*wrote);
    if (rest.empty()) break;
    pollfd p{to_server_fd_, POLLOUT, 0};
    if (::poll(&p, 1, RemainingMs(deadline)) == 0) {
      // Part of a message may be in the pipe: the stream is broken, so the connection ends.
      {
        std::lock_guard lock(mu_);
        if (dead_reason_.empty())
          dead_reason_ = "MCP server '" + options_.name + "' stopped reading its stdin";
      }
      const char byte = 1;
      (void)!::write(wake_fds_[1], &byte, 1);
      return Unavailable("MCP server '" + options_.name + "' stopped reading its stdin");
    }
  }
  return Status::Ok();
}

Status McpConnection::Notify(const std::string& method, json::value params) {
  json::object message{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
  return SendLine(json::serialize(message), Clock::now() + std::chrono::seconds(5));
}

McpResponse McpConnection::Request(const std::string& method, json::value params,
                                   std::chrono::milliseconds timeout,
                                   const CancellationToken& cancel) {
  const auto deadline = Clock::now() + timeout;
  McpResponse failed;
  auto pending = std::make_shared<Pending>();
  std::int64_t id = 0;
  {
    std::lock_guard lock(mu_);
    if (!dead_reason_.empty()) {
      failed.failure = McpRequestFailure::kUnavailable;
      failed.failure_message = dead_reason_;
      return failed;
    }
    id = next_id_++;
    pending_[id] = pending;
  }
  auto forget = [&] {
    std::lock_guard lock(mu_);
    pending_.erase(id);
  };
  std::string line;
  try {
    line = json::serialize(json::object{
        {"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
  } catch (const std::exception& e) {
    forget();
    failed.failure = McpRequestFailure::kUnavailable;
    failed.failure_message = std::string("could not encode the request: ") + e.what();
    return failed;
  }
  if (Status s = SendLine(line, deadline); !s.ok()) {
    forget();
    failed.failure = s.code() == StatusCode::kResourceExhausted ? McpRequestFailure::kTooLarge
                                                                : McpRequestFailure::kUnavailable;
    failed.failure_message = s.message();
    return failed;
  }
  {
    // Wakes the wait below; registered (and unregistered) without holding mu_, which the
    // callback takes.
    CancellationRegistration wake = cancel.OnCancel([this] {
      std::lock_guard lock(mu_);
      cv_.notify_all();
    });
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, deadline, [&] { return pending->done || cancel.cancelled(); });
    if (pending->done) {
      pending_.erase(id);
      lock.unlock();
      return std::move(pending->response);
    }
    pending_.erase(id);
  }
  failed.failure = cancel.cancelled() ? McpRequestFailure::kCancelled : McpRequestFailure::kTimeout;
  failed.failure_message = cancel.cancelled()
                               ? "the call was cancelled: " + cancel.reason()
                               : "MCP server '" + options_.name + "' did not answer " + method +
                                     " within " + std::to_string(timeout.count()) + " ms";
  (void)Notify("notifications/cancelled",
               json::object{{"requestId", id}, {"reason", failed.failure_message}});
  return failed;
}

}  // namespace codeact::internal
