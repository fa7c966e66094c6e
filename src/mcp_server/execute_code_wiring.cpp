// WireExecuteCode (execute_code_wiring.hpp).
#include "mcp_server/execute_code_wiring.hpp"

#include <string>
#include <utility>

namespace codeact::internal {

void WireExecuteCode(McpServerOptions& options, const CodeActProvider& provider,
                     std::shared_ptr<ClientSessions> sessions, InvokeOptions invoke,
                     ExecuteCodeRecorder record) {
  options.instructions = provider.Instructions();
  options.tool_definition = [sessions] { return sessions->Definition(DefinitionFormat::kMcp); };
  options.execute = [sessions, invoke = std::move(invoke), record = std::move(record)](
                        const std::string& arguments_json, const CancellationToken& cancel,
                        const OutputCallback& on_output) {
    InvokeOptions call = invoke;
    call.cancel = cancel;
    call.on_output = on_output;
    ExecutionResult result = sessions->Invoke(arguments_json, call);
    return record ? record(std::move(result)) : result;
  };
}

}  // namespace codeact::internal
