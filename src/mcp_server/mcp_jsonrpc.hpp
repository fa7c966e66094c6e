// The MCP server's JSON-RPC 2.0 side (mcp_server.hpp describes the behaviour): the reply codec,
// which copies each id's text from the request so that it goes back byte for byte, and
// McpProtocol, which reads one line (a message or a 2025-03-26 batch), checks its envelope and
// the revision's rules (mcp_revisions.hpp) and answers the lifecycle methods (initialize,
// server/discover, ping, tools/list, logging/setLevel), resources/* and prompts/*
// (mcp_resources.hpp) itself. What it cannot answer at once — a tools/call of execute_code, a
// notifications/cancelled — it hands back as a Dispatch for the tool calls (mcp_tool_calls.hpp).
// Thread-safe.
//
// Internal (codeact::internal); Boost.JSON and spdlog stay inside src/server.
#pragma once

#include <boost/json/fwd.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp_server/mcp_notifications.hpp"
#include "mcp_server/mcp_revisions.hpp"
#include "mcp_server/mcp_server.hpp"

namespace spdlog {
class logger;
}

namespace codeact::internal {
namespace jsonrpc {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalErrorCode = -32603;

// The reply id when the request's own cannot be used.
inline constexpr std::string_view kNullId = "null";

// Replies are assembled as text so that the id goes back exactly as it came (`id` is JSON text).
std::string ErrorLine(std::string_view id, int code, std::string_view message);
std::string ResultLine(std::string_view id, const boost::json::value& result);

}  // namespace jsonrpc

class McpProtocol {
 public:
  // What one message asks for: an answer now, nothing, a tools/call to run, or a cancellation.
  struct Dispatch {
    std::optional<std::string> response;
    bool is_call = false;
    std::string id = std::string(jsonrpc::kNullId);  // the request's id, as sent
    std::string id_key;  // the id's value, for notifications/cancelled to name it
    std::string arguments_json;
    bool stateless = false;                     // a 2026-07-28 request: its result is marked
    std::optional<std::string> progress_token;  // params._meta.progressToken, as JSON text
    // A stateless call's own _meta logLevel: the lowest level of its log notifications.
    std::optional<McpLogLevel> log_level;
    std::optional<std::string> cancel_key;  // notifications/cancelled: the request it names
    std::string cancel_reason;
  };
  // A line: one message, a batch of them, or a reply to the line as a whole.
  struct Parsed {
    bool batch = false;
    std::vector<Dispatch> items;
    std::optional<std::string> response;
  };

  // logging/setLevel sets `logging`, which must outlive the protocol.
  McpProtocol(const McpServerOptions& options, std::shared_ptr<spdlog::logger> logger,
              McpLogging& logging);

  // One request line (blank: nothing to do). Throws only on a broken invariant.
  Parsed ParseLine(std::string_view line);
  // The -32600 answer to a line over `max_line_bytes`, which was discarded.
  std::string OversizedLine() const;

 private:
  Dispatch DispatchMessage(const boost::json::value& msg, std::string_view raw, bool in_batch);
  void DispatchRequest(std::string_view name, const boost::json::object& p,
                       const boost::json::value& id, std::string_view id_text, bool in_batch,
                       Dispatch& d);
  void NoteCancellation(const boost::json::value* params, std::string_view raw, Dispatch& d);
  std::string Negotiated();
  std::string Initialize(std::string_view id, const boost::json::object& p);
  std::string ToolsList(std::string_view id, bool stateless);
  std::string SetLevel(std::string_view id, const boost::json::object& p);
  // resources/* and prompts/* (mcp_resources.hpp).
  std::string ResourcesAndPrompts(std::string_view name, std::string_view id,
                                  const boost::json::object& p, bool stateless);
  // What the server says about itself (discover, stateless results' _meta).
  McpServerIdentity Identity() const;

  const McpServerOptions& options_;
  const std::shared_ptr<spdlog::logger> logger_;
  McpLogging& logging_;
  std::mutex version_mu_;
  std::string negotiated_;  // the protocol version of the last initialize; empty before
};

}  // namespace codeact::internal
