// HostTool and ToolRegistry: host functions that generated code reaches through
// `await call_tool("name", **kwargs)`. Arguments and results are JSON text, never objects.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codeact/cancellation.hpp"

namespace codeact {

// What a handler returns: a JSON result, or an error the generated code can catch.
struct ToolResult {
  bool ok = true;
  std::string result_json = "null";  // when ok
  std::string error_type;            // when !ok, e.g. "ValueError", "ToolFailed"
  std::string message;

  static ToolResult Success(std::string json) { return {true, std::move(json), "", ""}; }
  static ToolResult Failure(std::string type, std::string message) {
    return {false, "null", std::move(type), std::move(message)};
  }
};

// `kwargs_json` is a JSON object from untrusted code. A handler may throw; the bridge turns the
// exception into a ToolFailed error for the caller.
using ToolHandler = std::function<ToolResult(const std::string& kwargs_json)>;

// What a call knows besides its arguments.
struct ToolCallContext {
  // Cancelled when the run that made the call ends, whatever ended it (its result, the wall
  // clock, a crash, a cancellation): nobody will read the answer any more. A handler that waits
  // on something (a process, a socket, a lock) should stop then; see ToolWorkers below.
  CancellationToken cancel;
  // The run's frame cap: a result whose frame is larger is refused (ToolResultTooLarge), so a
  // handler may stop producing one early and say how large it was.
  std::int64_t max_result_bytes = 0;
};
using CancellableToolHandler =
    std::function<ToolResult(const std::string& kwargs_json, const ToolCallContext& context)>;

struct HostTool {
  // A Python identifier, or "SERVER.tool" for an upstream MCP server's tool (mcp_upstream.hpp),
  // which the code reaches as `await SERVER.tool(...)`.
  std::string name;
  std::string description;
  std::string parameters_schema = R"({"type":"object","properties":{}})";  // JSON Schema
  bool requires_approval = false;
  ToolHandler handler;
  // Used instead of `handler` when set. Handlers run on a process-wide pool of at most 64
  // threads; a handler that ignores cancellation keeps its thread until it returns, and while
  // all 64 are taken further calls wait.
  CancellableToolHandler cancellable_handler;
  // An upstream MCP server's tool: its name there (the description shows the mapping when the
  // two differ). Empty for every other tool.
  std::string upstream_name;
};

// Tools keyed by exact name; Add replaces. Thread-safe. Snapshot() is an immutable copy.
class ToolRegistry {
 public:
  void Add(HostTool tool);
  void AddAll(std::vector<HostTool> tools);  // one version step for the batch
  std::optional<HostTool> Get(const std::string& name) const;
  bool Remove(const std::string& name);
  std::size_t RemoveAll(const std::vector<std::string>& names);  // how many were there
  void Clear();
  // Removes every tool `remove` picks and adds `add`, in one step (one version bump): a snapshot
  // sees all of the old tools or all of the new ones.
  void ReplaceIf(const std::function<bool(const HostTool&)>& remove, std::vector<HostTool> add);
  std::vector<HostTool> Snapshot() const;  // sorted by name
  std::uint64_t version() const;           // bumps on every change

 private:
  mutable std::mutex mu_;
  std::map<std::string, HostTool> tools_;
  std::uint64_t version_ = 0;
};

}  // namespace codeact
