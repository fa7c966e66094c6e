// The MCP server's tool calls (mcp_server.hpp describes the behaviour): RunToolCall turns one
// execute_code call into its response line, and McpCallRunner runs the calls of one Serve on a
// pool of `max_concurrent_calls` threads — keeping the calls in flight by id so that
// notifications/cancelled, progress notifications and shutdown reach them, and answering a batch
// as one array once its last call has ended.
//
// Internal (codeact::internal); Boost.JSON and spdlog stay inside src/server.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "codeact/cancellation.hpp"
#include "mcp_server/mcp_jsonrpc.hpp"
#include "mcp_server/mcp_server.hpp"

namespace spdlog {
class logger;
}

namespace codeact::internal {

// Writes one whole response line; called from several threads, serialised by the caller.
using McpEmit = std::function<void(const std::string& line)>;

// The response line of one call. Its log line goes to `log_line`, for the caller to write once
// the response is out: with stderr read by the client, a line written first woke the client
// for it before the answer it waits for. Never throws for what `options.execute` throws.
std::string RunToolCall(const McpServerOptions& options, spdlog::logger& logger,
                        std::string_view id, const std::string& arguments_json,
                        const CancellationToken& cancel, std::string& log_line);

class McpCallRunner {
 public:
  // `emit` must outlive the runner.
  McpCallRunner(const McpServerOptions& options, std::shared_ptr<spdlog::logger> logger,
                const McpEmit& emit);
  // Runs what is still queued and joins every call.
  ~McpCallRunner();
  McpCallRunner(const McpCallRunner&) = delete;
  McpCallRunner& operator=(const McpCallRunner&) = delete;

  // The messages of one line: answers written, cancellations applied, calls posted to the pool
  // (blocking while its queue is full, so a client that floods calls is slowed down).
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

}  // namespace codeact::internal
