// What the MCP server says to a client besides answers: MCP logging (the level a client set with
// logging/setLevel, and notifications/message) and the notifications that carry a run's output
// (notifications/progress with the chunk as `message`, and notifications/message). mcp_server.hpp
// describes when each is sent.
//
// Internal (codeact::internal).
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "codeact/output_stream.hpp"

namespace codeact::internal {

// MCP's log levels (RFC 5424's severities), least severe first.
enum class McpLogLevel { kDebug, kInfo, kNotice, kWarning, kError, kCritical, kAlert, kEmergency };

std::optional<McpLogLevel> ParseMcpLogLevel(std::string_view name);
std::string_view McpLogLevelName(McpLogLevel level);

// The level a client asked for with logging/setLevel. Until it asks, it gets no
// notifications/message: a client that never set a level has not said it reads them.
// Thread-safe.
class McpLogging {
 public:
  void SetLevel(McpLogLevel level) { level_.store(static_cast<int>(level) + 1); }
  // Whether a message at `level` goes to the client.
  bool Wants(McpLogLevel level) const {
    const int set = level_.load();
    return set != 0 && static_cast<int>(level) + 1 >= set;
  }

 private:
  std::atomic<int> level_{0};  // 0: never set; else the level + 1
};

// The level a run's output is logged at: stdout is info, stderr is warning.
McpLogLevel OutputLogLevel(OutputStreamKind stream);

// {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":TOKEN,
// "progress":N,"message":MESSAGE}}; `token_json` is the request's token as JSON text.
std::string ProgressNotification(std::string_view token_json, int progress,
                                 std::string_view message);

// {"jsonrpc":"2.0","method":"notifications/message","params":{"level":L,"logger":LOGGER,
// "data":DATA}}. DATA is text; bytes that are not UTF-8 are replaced.
std::string LogNotification(McpLogLevel level, std::string_view logger, std::string_view data);

}  // namespace codeact::internal
