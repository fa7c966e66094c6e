// Approval: a tool with requires_approval gates every code block that names it, as a whole,
// because the block may call it any number of times. Without a decision nothing runs; the host
// decides from the code itself. (A block that does not name it runs without asking; a call of the
// tool from there fails with ToolError "ApprovalRequired".)
#include <atomic>
#include <iostream>
#include <memory>
#include <string>

#include "codeact/provider.hpp"

int main() {
  // The side effect a human should sign off. Shared and atomic: each call runs on its own thread,
  // which may outlive a run that hit its deadline.
  auto refunds_issued = std::make_shared<std::atomic<int>>(0);
  auto provider = codeact::LocalCodeActProvider::Create();
  if (!provider.ok()) {
    std::cerr << provider.status().ToString() << "\n";
    return 1;
  }

  codeact::HostTool refund;
  refund.name = "refund";
  refund.description = "Refund an order to the customer's card";
  refund.parameters_schema = R"({"type":"object","properties":{"order_id":{"type":"string"}}})";
  refund.requires_approval = true;
  refund.handler = [refunds_issued](const std::string&) {
    ++*refunds_issued;
    return codeact::ToolResult::Success(R"({"refunded":true})");
  };
  if (codeact::Status added = (*provider)->AddTool(std::move(refund)); !added.ok()) {
    std::cerr << added.message() << "\n";
    return 1;
  }

  const codeact::ExecuteCodeFunction execute_code(*provider);
  // The execute_code arguments exactly as a model sends them.
  const std::string arguments =
      R"json({"code": "r = await refund(order_id='ord-42')\nprint(r)"})json";

  // No decision given: the run is refused before validation, and the tool is never called.
  const codeact::ExecutionResult refused = execute_code.InvokeResult(arguments);
  std::cout << "without a decision: " << codeact::OutcomeName(refused.outcome)
            << ", refunds issued: " << *refunds_issued << "\n";

  // A callback sees the whole block (one approval covers every call in it) and the tools that
  // asked for approval; a real host would show this to a person.
  codeact::InvokeOptions options;
  options.approve = [](const codeact::ApprovalRequest& request) {
    std::cout << "approval asked for:";
    for (const auto& name : request.tools_requiring_approval) std::cout << " " << name;
    std::cout << "\n--- code ---\n" << request.code << "\n------------\n";
    return true;
  };
  const codeact::ExecutionResult approved = execute_code.InvokeResult(arguments, options);
  std::cout << "approved: " << codeact::OutcomeName(approved.outcome)
            << ", refunds issued: " << *refunds_issued << ", stdout: " << approved.stdout_text;
  return approved.success() ? 0 : 1;
}
