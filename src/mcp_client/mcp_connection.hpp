// McpConnection: the client side of one upstream MCP server over stdio (mcp_upstream.hpp says
// what the user sees). It starts the server from its own reader thread, which also reads every
// message the server sends and reaps it, so the server's parent-death signal is tied to the
// connection's life rather than to whichever thread happened to start it. Requests wait for
// their response, their deadline, their cancellation or the server's death, whichever is first.
#pragma once

#include <boost/json/value.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codeact/cancellation.hpp"
#include "codeact/status.hpp"

namespace codeact::internal {

class Child;

struct McpConnectionOptions {
  std::string name;  // for messages
  std::vector<std::string> argv;
  std::map<std::string, std::string> environment;  // the whole environment of the server
  std::string working_dir;
  std::int64_t start_timeout_ms = 30'000;
  std::int64_t max_message_bytes = 8LL << 20;
};

// How a request ended when it got no response.
// kMalformed: the server answered with a message this client cannot read (nested deeper than
// kMaxJsonDepth): the request fails at once rather than at its deadline.
enum class McpRequestFailure { kNone, kTimeout, kCancelled, kUnavailable, kTooLarge, kMalformed };

struct McpResponse {
  McpRequestFailure failure = McpRequestFailure::kNone;
  std::string failure_message;  // when failure != kNone
  // With kNone: the JSON-RPC `result`, or `error` (is_error) as the server sent it.
  bool is_error = false;
  boost::json::value body;
};

class McpConnection {
 public:
  // Starts the server and runs initialize / notifications/initialized within start_timeout_ms.
  // `on_notification` is called on the reader thread with each notification's method (keep it
  // short: it must not make requests).
  static StatusOr<std::unique_ptr<McpConnection>> Start(
      McpConnectionOptions options, std::function<void(const std::string&)> on_notification);
  // Stop(), then joins the reader.
  ~McpConnection();

  // One request; never throws. A request that times out or is cancelled sends the server
  // notifications/cancelled for it (its late response is dropped).
  McpResponse Request(const std::string& method, boost::json::value params,
                      std::chrono::milliseconds timeout, const CancellationToken& cancel = {});
  Status Notify(const std::string& method, boost::json::value params);

  // Empty while the server runs; else how it ended ("exited with status 3", ...).
  std::string DeadReason() const;
  // Ends the server (stdin closed, then its process group killed) and fails pending requests.
  void Stop();
  // The server's pid while it runs (tests), else -1.
  long pid() const;

  McpConnection(const McpConnection&) = delete;
  McpConnection& operator=(const McpConnection&) = delete;

 private:
  explicit McpConnection(McpConnectionOptions options,
                         std::function<void(const std::string&)> on_notification);
  void ReaderMain();
  // The server's process, its bridge pipes on the server's stdin and stdout; null when it could
  // not start (then start_status_ says why, and the connection is dead).
  std::unique_ptr<Child> StartServer();
  // Reads the server's messages (and the tail of its stderr) until Stop or the server's end;
  // returns why it ended, empty after a Stop.
  std::string PumpMessages(Child& child, std::string& stderr_tail);
  // Closes the server's input, waits for or kills it, and marks the connection dead with why.
  void EndServer(Child& child, const std::string& ended, std::string stderr_tail);
  void HandleLine(const std::string& line);
  // A message too deep to parse: fails the request it answers (its id is at the top, shallow).
  void FailTooDeep(const std::string& line);
  void MarkDead(const std::string& reason);
  Status SendLine(const std::string& line, std::chrono::steady_clock::time_point deadline);

  struct Pending {
    bool done = false;
    McpResponse response;
  };

  const McpConnectionOptions options_;
  const std::function<void(const std::string&)> on_notification_;
  int wake_fds_[2] = {-1, -1};  // a pipe that wakes the reader's poll for Stop

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;  // the reader's start finished (ok or not: start_status_)
  Status start_status_;
  std::string dead_reason_;
  bool stopping_ = false;
  std::int64_t next_id_ = 1;
  std::map<std::int64_t, std::shared_ptr<Pending>> pending_;
  long pid_ = -1;

  std::mutex write_mu_;
  int to_server_fd_ = -1;  // valid while the reader runs (the reader owns the Child)

  std::thread reader_;
};

}  // namespace codeact::internal
