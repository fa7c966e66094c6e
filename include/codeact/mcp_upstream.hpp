// Upstream MCP servers: other MCP servers (stdio) whose tools generated code calls as host tools,
// `await NAME.tool(arg=value)`, so one program can call many tools instead of the model taking
// many turns (CodeActProvider::AddMcpServer, the CLI's --mcp-server NAME=COMMAND).
//
// What happens: the command is started directly (no shell interprets it) with the host's
// environment, spoken to over its stdin and stdout (one JSON-RPC message per line), initialized,
// and its tools listed. Each tool becomes a host tool named "NAME.tool" in the provider's
// registry, with the upstream input schema as its parameters (checked before the call, as for any
// host tool) and the upstream description. A tool name that is not a Python identifier (`-`, `.`
// or other characters) is normalised: every other character becomes `_`, a leading digit gets a
// `_` before it, and a clash gets `_2`, `_3`, ... in the order the server listed them; the
// description lists each mapping.
//
// Approval: McpApproval decides which of the server's tools are gated (`requires_approval`): the
// per-tool approval of host tools then applies to them unchanged.
// Results: `structuredContent` when the server sends it, else the text content (one string, the
// text parts joined by newlines), else the content array as is. `isError` raises ToolError
// "UpstreamToolError" with the text.
// Cancellation: a run that ends while an upstream call is in flight sends that server
// `notifications/cancelled` for the call; the server keeps running.
// list_changed: `notifications/tools/list_changed` marks the list stale; the next snapshot (the
// next run) lists the tools again before it is taken.
// A server that exits is reported, not restarted: its pending and later calls fail with ToolError
// "UpstreamUnavailable" naming how it ended, and its tools stay listed so the code sees that
// error rather than a missing name. AddMcpServer again with the same name starts a new one.
// Limits: every message either way at most max_message_bytes (a larger one from the server ends
// the connection as a protocol violation), each call at most call_timeout_ms (then
// "UpstreamTimeout" and a cancellation to the server), at most max_tools tools.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/status.hpp"

namespace codeact {

// Which of an upstream server's tools need approval.
enum class McpApproval {
  kNone,         // none
  kAnnotations,  // those whose annotations do not say they are safe: readOnlyHint true or
                 // destructiveHint false (MCP's defaults are readOnlyHint false and
                 // destructiveHint true: an unannotated tool is gated)
  kAll,          // every tool of the server
};

struct McpUpstreamOptions {
  // The namespace the code reaches the tools by: a Python identifier that is not a keyword, a
  // builtin, a standard-library module's top-level name, `call_tool`, `ToolError`, a host tool's
  // name or another server's name (AddMcpServer refuses it otherwise).
  std::string name;
  std::vector<std::string> command;  // argv; argv[0] is looked up in PATH when it has no '/'
  // Added to the host's environment for the server (the server is trusted host configuration,
  // like an MCP client's server entry; it is not sandboxed).
  std::map<std::string, std::string> environment;
  std::string working_dir;  // empty: the host's
  McpApproval approval = McpApproval::kNone;
  std::int64_t start_timeout_ms = 30'000;  // start, initialize and the first tools/list
  std::int64_t call_timeout_ms = 60'000;   // one tools/call (and one later tools/list)
  std::int64_t max_message_bytes = 8LL << 20;
  int max_tools = 256;
};

// Splits a command line as a POSIX shell would split words, without a shell: whitespace separates
// words; '...' keeps everything literally; "..." keeps everything but \" \\ \$ \` (the backslash
// escapes them); outside quotes a backslash escapes the next character. No variables, globs,
// redirections or substitutions: `$HOME` stays `$HOME`. An unterminated quote or a trailing
// backslash is INVALID_ARGUMENT; so is an empty command.
StatusOr<std::vector<std::string>> SplitCommandLine(std::string_view line);

// "get-weather" -> "get_weather", "2fa" -> "_2fa" (no clash handling: AddMcpServer does that).
std::string NormaliseToolName(std::string_view upstream_name);

}  // namespace codeact
