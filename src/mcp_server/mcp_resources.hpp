// The MCP server's resources and prompts (mcp_server.hpp describes the behaviour):
// - resources: the files that the caller's tools/call results linked (resource_link), kept in the
//   server's McpFileStore: resources/list (oldest first), resources/read, and
//   resources/templates/list (none: every URI is a kept file's). An unknown, expired, evicted or
//   other caller's URI is "Resource not found": -32002 in the handshake revisions, -32602 (Invalid
//   params) in 2026-07-28, with data {"uri"}.
// - prompts: one, `codeact_instructions`, the provider's instructions for using execute_code
//   (what `codeact describe` gives the model), as one user message.
//
// Internal (codeact::internal); Boost.JSON stays inside src/mcp_server.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "mcp_server/mcp_revisions.hpp"

namespace codeact::internal {

class McpFileStore;

inline constexpr std::string_view kInstructionsPromptName = "codeact_instructions";
// The handshake revisions' "Resource not found" (2026-07-28 uses Invalid params instead).
inline constexpr int kMcpResourceNotFound = -32002;

// What the answers read: the store (null: no file is kept), whose files, and the instructions.
struct McpResourceContext {
  McpFileStore* files = nullptr;
  std::string caller;
  std::string instructions;
};

// Whether `method` is one of the resources/* or prompts/* methods answered here.
bool IsResourceOrPromptMethod(std::string_view method);

// The result of `method` with `params`, or the JSON-RPC error. Never throws on untrusted input.
std::variant<boost::json::object, McpRpcError> AnswerResourcesOrPrompts(
    std::string_view method, const boost::json::object& params, bool stateless,
    const McpResourceContext& context);

}  // namespace codeact::internal
