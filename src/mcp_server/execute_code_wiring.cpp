// WireExecuteCode (execute_code_wiring.hpp).
#include "mcp_server/execute_code_wiring.hpp"

#include <string>
#include <utility>

#include "json/definitions.hpp"

namespace codeact::internal {

void WireExecuteCode(McpServerOptions& options, const CodeActProvider& provider,
                     std::shared_ptr<ClientSessions> sessions, InvokeOptions invoke,
                     ExecuteCodeRecorder record, HandleSessions handles) {
  options.instructions = provider.Instructions();
  options.tool_definition = [sessions] { return sessions->Definition(DefinitionFormat::kMcp); };
  if (handles.signer) {
    options.execute_stateless = [sessions, handles, invoke, record](
                                    const std::string& arguments_json,
                                    const CancellationToken& cancel,
                                    const OutputCallback& on_output) {
      InvokeOptions call = invoke;
      call.cancel = cancel;
      call.on_output = on_output;
      // A call without "session" runs under the snapshot this request's tools/list refreshed.
      const auto session = ParseSessionArgument(arguments_json);
      ExecutionResult result = session.ok() && *session
                                   ? handles.sessions->InvokeWithHandle(
                                         arguments_json, call, *handles.signer, handles.owner)
                                   : sessions->Invoke(arguments_json, call);
      return record ? record(std::move(result)) : result;
    };
  }
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
