// McpStdioClient: `codeact mcp` started as a child process and spoken to over its stdin and
// stdout, one JSON-RPC line each way, as an MCP client does: what `codeact bench` measures the
// server's latency and throughput through (the pipes, the server's threads and its waiting
// children included), rather than calling the server in process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "codeact/status.hpp"

namespace codeact::bench {

class McpStdioClient {
 public:
  // Starts `codeact_binary mcp --quiet <server_args>` with the caller's environment, and
  // initializes the session (initialize, notifications/initialized).
  static StatusOr<std::unique_ptr<McpStdioClient>> Start(
      const std::string& codeact_binary, const std::vector<std::string>& server_args);
  // Closes the server's stdin (it exits at end of input) and reaps it; kills it if it lingers.
  ~McpStdioClient();

  // Writes one request line (without its newline).
  Status Send(const std::string& line);
  // The next response line, waiting up to `timeout`.
  StatusOr<std::string> Receive(std::chrono::milliseconds timeout);
  // Send, then Receive.
  StatusOr<std::string> Call(const std::string& line, std::chrono::milliseconds timeout);

  // A tools/call of execute_code with `code` (a JSON string literal's contents, escaped by the
  // caller) and request id `id`.
  static std::string ExecuteCodeRequest(long id, const std::string& code_json_escaped);

  // The server's pid (its process tree's CPU time is the bench's per-run CPU figure).
  pid_t pid() const;

 private:
  struct Impl;
  explicit McpStdioClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace codeact::bench
