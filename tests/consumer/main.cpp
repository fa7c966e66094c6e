// Links the installed codeact::core, registers a C++ host tool and runs one code block with it.
// Exits 0 only when the block printed "42" and the run succeeded.
#include <iostream>
#include <string>

#include "codeact/json.hpp"
#include "codeact/provider.hpp"

int main() {
  auto provider = codeact::LocalCodeActProvider::Create();
  if (!provider.ok()) {
    std::cerr << provider.status().ToString() << "\n";
    return 1;
  }
  codeact::HostTool tool;
  tool.name = "double";
  tool.description = "Twice x";
  tool.parameters_schema =
      R"({"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]})";
  tool.handler = [](const std::string& kwargs_json) {  // {"x":21}; no JSON library needed here
    const long long x = std::stoll(kwargs_json.substr(kwargs_json.find(':') + 1));
    return codeact::ToolResult::Success(std::to_string(2 * x));
  };
  if (codeact::Status added = (*provider)->AddTool(std::move(tool)); !added.ok()) {
    std::cerr << added.message() << "\n";
    return 1;
  }

  const codeact::ExecutionResult result = (*provider)->Execute("print(await double(x=21))\n");
  std::cout << codeact::ToJson(result) << "\n";
  return result.success() && result.stdout_text == "42\n" ? 0 : 1;
}
