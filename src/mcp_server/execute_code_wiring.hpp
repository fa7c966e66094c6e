// WireExecuteCode: the MCP-to-sessions wiring that both MCP servers share — the stdio server of
// `codeact mcp` and each MCP session of the HTTP service's /mcp. It points an McpServer's one
// tool, execute_code, at one client's named sessions (ClientSessions): the tool definition with
// the "session" argument, the provider's instructions, and each call's run. With a
// HandleSessions, requests of the stateless revision (2026-07-28, no Mcp-Session-Id) reach the
// caller's sessions by signed handle instead (provider/session_handles.hpp).
//
// Internal (codeact::internal); the library's public API does not include it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "codeact/execution.hpp"
#include "codeact/provider.hpp"
#include "mcp_server/mcp_server.hpp"
#include "provider/client_sessions.hpp"
#include "provider/session_handles.hpp"

namespace codeact::internal {

// Sees each run's result before the server answers with it (the HTTP service counts it there).
using ExecuteCodeRecorder = std::function<ExecutionResult(ExecutionResult result)>;

// Where a stateless request's sessions live: they outlast the request, belong to `owner` (the
// caller), and are reached with handles `signer` minted.
struct HandleSessions {
  std::shared_ptr<const SessionHandleSigner> signer;
  std::string owner;
  std::shared_ptr<ClientSessions> sessions;
};

// Sets `options.instructions` (the provider's), `options.tool_definition` (the MCP definition
// of execute_code, asked per tools/list) and `options.execute`: each call runs through
// `sessions` with `invoke`, whose cancellation token is replaced by the call's. `record`, when
// set, sees every result first. With `handles.signer`, `options.execute_stateless` runs through
// `handles` (ClientSessions::InvokeWithHandle). The other options are the caller's.
void WireExecuteCode(McpServerOptions& options, const CodeActProvider& provider,
                     std::shared_ptr<ClientSessions> sessions, InvokeOptions invoke,
                     ExecuteCodeRecorder record = nullptr, HandleSessions handles = {});

}  // namespace codeact::internal
