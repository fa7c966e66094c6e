// The MCP server's tool calls (mcp_server.hpp describes the behaviour): RunToolCall turns one
// execute_code call into its response line, and McpCallRunner reads the lines of one Serve and
// runs their calls on the threads of a leader/followers loop (common/leader_followers.hpp: a
// call read while fewer than `max_concurrent_calls` run runs on the thread that read it, which
// hands the reading to another) — keeping the calls in flight by id so that
// notifications/cancelled, progress notifications and shutdown reach them, and answering a batch
// as one array once its last call has ended. McpInlineCalls does the same for the calls that
// HandleMessage runs on its caller's thread.
//
// Internal (codeact::internal); Boost.JSON and spdlog stay inside src/server.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "codeact/cancellation.hpp"
#include "mcp_server/mcp_jsonrpc.hpp"
#include "mcp_server/mcp_notifications.hpp"
#include "mcp_server/mcp_server.hpp"

namespace spdlog {
class logger;
}

namespace codeact::internal {

// Writes one whole response line; called from several threads, serialised by the caller.
using McpEmit = std::function<void(const std::string& line)>;

// The response line of one call. Its log line goes to `log_line`, for the caller to write once
// the response is out: with stderr read by the client, a line written first woke the client
// for it before the answer it waits for. A `stateless` (2026-07-28) call's result carries
// resultType and the server's identity. Never throws for what `options.execute` throws.
// `on_output`, when set, gets the run's output as it comes (McpServerOptions::execute).
std::string RunToolCall(const McpServerOptions& options, spdlog::logger& logger,
                        std::string_view id, const std::string& arguments_json,
                        const CancellationToken& cancel, std::string& log_line,
                        bool stateless = false, const OutputCallback& on_output = nullptr);

class McpCallRunner {
 public:
  // `emit` and `logging` must outlive the runner. A call's output goes to `emit` as
  // notifications (mcp_notifications.hpp) when it asked for progress or `logging` takes it.
  McpCallRunner(const McpServerOptions& options, std::shared_ptr<spdlog::logger> logger,
                const McpEmit& emit, const McpLogging& logging);
  // Runs what is still queued and joins every call.
  ~McpCallRunner();
  McpCallRunner(const McpCallRunner&) = delete;
  McpCallRunner& operator=(const McpCallRunner&) = delete;

  // Calls `read_line` on the loop's threads, one at a time, until it returns false (the end of
  // the input, or a stop); the calls it Handles may still run when this returns. `read_line`
  // reads one line and answers it or Handles it.
  void ReadUntilEnd(const std::function<bool()>& read_line);

  // From `read_line` only: the messages of one line: answers written, cancellations applied,
  // calls posted to the loop — the first runs on this thread once `read_line` returns when a
  // slot is free; the rest queue, and the reading blocks while the queue is full, so a client
  // that floods calls is slowed down.
  void Handle(McpProtocol::Parsed& parsed);

  // After the read loop: waits for the calls in flight. Once a stop was requested (before:
  // `stop_requests`, or now through `stop_fd`) they get `shutdown_grace`, then are cancelled; a
  // second stop request cancels them at once. Returns whether a stop was requested.
  bool Drain(int stop_fd, int stop_requests);

 private:
  struct State;
  const McpServerOptions& options_;
  const std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<State> state_;
};

// The calls of McpServer::HandleMessage (transports other than stdio): each runs inline on the
// caller's thread, but is kept by id while it runs, so that a notifications/cancelled handled by
// another HandleMessage (the next POST of the same HTTP session) reaches it. Thread-safe.
class McpInlineCalls {
 public:
  // `logging` must outlive it.
  McpInlineCalls(const McpServerOptions& options, std::shared_ptr<spdlog::logger> logger,
                 const McpLogging& logging);
  ~McpInlineCalls();
  McpInlineCalls(const McpInlineCalls&) = delete;
  McpInlineCalls& operator=(const McpInlineCalls&) = delete;

  // A notifications/cancelled: cancels the calls running under `key`.
  void Cancel(const std::string& key, const std::string& reason);

  // Runs the call `d` to its response line, cancelled by `cancel` (the transport) or by Cancel.
  // With `notify` and a progressToken, progress notifications go to `notify` (from another
  // thread) every `progress_interval`, and the run's output as it comes (as McpCallRunner's),
  // never after this returns. A call the client withdrew is
  // still answered: the HTTP exchange needs a reply.
  std::string Run(McpProtocol::Dispatch& d, const CancellationToken& cancel, const McpEmit& notify);

 private:
  struct State;
  const McpServerOptions& options_;
  const std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<State> state_;
};

}  // namespace codeact::internal
