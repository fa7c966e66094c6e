// A C++ host tool reached from generated Python: the host keeps its data and logic in C++, and
// the code block sees only `await lookup_price(sku=...)`, whose failures it can catch.
#include <boost/json.hpp>
#include <iostream>
#include <map>
#include <string>

#include "codeact/provider.hpp"

namespace json = boost::json;

int main() {
  auto provider = codeact::LocalCodeActProvider::Create();
  if (!provider.ok()) {
    std::cerr << provider.status().ToString() << "\n";
    return 1;
  }

  // The handler owns the data; the child only ever sees the answer for one sku.
  static const std::map<std::string, double> kPrices = {{"A-100", 12.5}, {"B-200", 3.25}};
  codeact::HostTool tool;
  tool.name = "lookup_price";
  tool.description = "Price of one item in EUR";
  tool.parameters_schema =
      R"({"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]})";
  tool.handler = [](const std::string& kwargs_json) {
    // The arguments come from untrusted code, so bad input is a named error, never a crash.
    json::error_code ec;
    const json::value kwargs = json::parse(kwargs_json, ec);
    const json::value* sku =
        !ec && kwargs.is_object() ? kwargs.as_object().if_contains("sku") : nullptr;
    if (sku == nullptr || !sku->is_string()) {
      return codeact::ToolResult::Failure("TypeError", "sku must be a string");
    }
    const auto it = kPrices.find(std::string(sku->as_string()));
    if (it == kPrices.end()) {
      return codeact::ToolResult::Failure("KeyError",
                                          "unknown sku " + std::string(sku->as_string()));
    }
    return codeact::ToolResult::Success(
        json::serialize(json::object{{"sku", it->first}, {"eur", it->second}}));
  };
  if (codeact::Status added = (*provider)->AddTool(std::move(tool)); !added.ok()) {
    std::cerr << added.message() << "\n";
    return 1;
  }

  // One model turn: three lookups in one block, and the unknown sku handled in Python.
  const std::string code = R"py(
total = 0
for sku in ["A-100", "B-200", "Z-999"]:
    try:
        total += (await lookup_price(sku=sku))["eur"]
    except ToolError as e:
        print("skipped", sku, "-", e)
print("total", total)
total
)py";
  // The model sends execute_code's arguments as a JSON object: {"code": "..."}.
  const codeact::ExecuteCodeFunction execute_code(*provider);
  std::cout << execute_code.Invoke(json::serialize(json::object{{"code", code}})) << "\n";
  return 0;
}
