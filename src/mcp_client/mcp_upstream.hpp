// McpUpstream: one upstream MCP server's tools in a provider's tool registry
// (codeact/mcp_upstream.hpp says what the user sees). It owns the connection, turns each listed
// tool into a host tool "NAME.tool" whose handler makes a tools/call, and lists the tools again
// before the next snapshot after the server says they changed.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codeact/mcp_upstream.hpp"
#include "codeact/tool.hpp"

namespace codeact::internal {

class McpConnection;

// Whether `name` may name an upstream server: a Python identifier (ASCII) that is not a keyword,
// a builtin, a standard-library module's top-level name, `call_tool` or `ToolError`. The error
// says which.
Status CheckServerName(const std::string& name);

// Whether an upstream tool's local name (NormaliseToolName's, the part after "server.") can be
// bound in the code's namespace of its server: not a Python keyword (`await up.import()` is a
// SyntaxError) and not a dunder (`__class__` would replace the namespace's class, which broke
// every run). Builtins are fine there: the tool is an attribute, never a bare name. The error
// says which; ListTools skips such a tool with a warning in the log.
Status CheckUpstreamToolName(const std::string& local_name);

class McpUpstream {
 public:
  // Starts the server, lists its tools and adds them to `registry` (which must outlive this
  // object, or Stop must be called first).
  static StatusOr<std::unique_ptr<McpUpstream>> Start(McpUpstreamOptions options,
                                                      ToolRegistry* registry);
  // Stop(): the server ends and its tools leave the registry.
  ~McpUpstream();

  // After the server's notifications/tools/list_changed: lists the tools again and replaces
  // them in the registry. Nothing to do otherwise. A failed listing keeps the old tools (their
  // calls then fail on their own) and is returned.
  Status RefreshIfChanged();
  void Stop();

  const std::string& name() const { return options_.name; }
  long server_pid() const;  // -1 when it is not running (tests)

 private:
  McpUpstream(McpUpstreamOptions options, ToolRegistry* registry);
  StatusOr<std::vector<HostTool>> ListTools(std::chrono::milliseconds timeout);

  const McpUpstreamOptions options_;
  ToolRegistry* const registry_;
  std::shared_ptr<McpConnection> connection_;  // shared with the handlers of its tools
  std::atomic<bool> changed_{false};
  std::mutex refresh_mu_;  // one listing at a time
};

}  // namespace codeact::internal
