// WireExecuteCode: the MCP-to-sessions wiring that both MCP servers share — the stdio server of
// `codeact mcp` and each MCP session of the HTTP service's /mcp. It points an McpServer's one
// tool, execute_code, at one client's named sessions (ClientSessions): the tool definition with
// the "session" argument, the provider's instructions, and each call's run.
//
// Internal (codeact::internal); the library's public API does not include it.
#pragma once

#include <functional>
#include <memory>

#include "codeact/execution.hpp"
#include "codeact/provider.hpp"
#include "mcp_server/mcp_server.hpp"
#include "provider/client_sessions.hpp"

namespace codeact::internal {

// Sees each run's result before the server answers with it (the HTTP service counts it there).
using ExecuteCodeRecorder = std::function<ExecutionResult(ExecutionResult result)>;

// Sets `options.instructions` (the provider's), `options.tool_definition` (the MCP definition
// of execute_code, asked per tools/list) and `options.execute`: each call runs through
// `sessions` with `invoke`, whose cancellation token is replaced by the call's. `record`, when
// set, sees every result first. The other options are the caller's.
void WireExecuteCode(McpServerOptions& options, const CodeActProvider& provider,
                     std::shared_ptr<ClientSessions> sessions, InvokeOptions invoke,
                     ExecuteCodeRecorder record = nullptr);

}  // namespace codeact::internal
