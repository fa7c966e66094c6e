// Command tools: host tools described in a JSON file and served by running a command, so a
// tool needs no C++. The kwargs object goes to the command's stdin as JSON; its stdout is the
// result (parsed as JSON, else returned as a string); a non-zero exit is a tool error carrying
// stderr. The command is run directly (no shell) in the tools file's directory.
//
//   {"tools":[{"name":"add","description":"Add two numbers",
//              "parameters":{"type":"object","properties":{"a":{"type":"number"}}},
//              "command":["python3","add.py"],"requires_approval":false,"timeout_ms":30000}]}
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codeact/status.hpp"
#include "codeact/tool.hpp"

namespace codeact {

struct CommandToolSpec {
  std::string name;
  std::string description;
  std::string parameters_schema;
  std::vector<std::string> command;
  std::string working_dir;
  bool requires_approval = false;
  std::int64_t timeout_ms = 30'000;
  std::int64_t max_output_bytes = 1LL << 20;
};

// Parses a tools file's text; relative commands resolve against `base_dir`.
StatusOr<std::vector<CommandToolSpec>> ParseToolsFile(std::string_view json,
                                                      const std::string& base_dir);
// Reads a tools file: a regular file of at most 1 MiB (anything else, a directory or a device
// included, is INVALID_ARGUMENT), then ParseToolsFile against the file's directory.
StatusOr<std::vector<HostTool>> LoadToolsFile(const std::string& path);

// No process of the command outlives its call: it runs in a cgroup of its own where the host has
// a cgroup site, else as pid 1 of a pid namespace of its own, and whatever it started (a setsid
// daemon too) is killed when it exits, times out, or the run that called it ends (its
// ToolCallContext is cancelled); where neither can be made the call fails (docs/tools.md). Output
// past the run's frame cap is drained but not kept, and the call fails with ToolResultTooLarge
// naming the real size.

HostTool MakeCommandTool(CommandToolSpec spec);

}  // namespace codeact
