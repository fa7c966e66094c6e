// Command tools (command_tool.hpp): the tools file and the handler that runs the command.
#include "codeact/command_tool.hpp"

#include <boost/json.hpp>
#include <filesystem>

#include "common/utf8.hpp"
#include "files/bounded_read.hpp"
#include "json/serialize.hpp"
#include "process/helper_command.hpp"

namespace codeact {
namespace json = boost::json;
namespace {

bool IsToolName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  }
  return true;
}

StatusOr<CommandToolSpec> ParseTool(const json::value& v, const std::string& base_dir,
                                    std::size_t index) {
  const std::string where = "tools[" + std::to_string(index) + "]";
  if (!v.is_object()) return InvalidArgument(where + " must be an object");
  const json::object& o = v.as_object();
  CommandToolSpec spec;
  spec.working_dir = base_dir;
  for (const auto& [key, value] : o) {
    if (key == "name" && value.is_string()) {
      spec.name = value.as_string();
    } else if (key == "description" && value.is_string()) {
      spec.description = value.as_string();
    } else if (key == "parameters" && value.is_object()) {
      spec.parameters_schema = internal::SerializeJson(value);
    } else if (key == "command" && value.is_array()) {
      for (const auto& a : value.as_array()) {
        if (!a.is_string()) return InvalidArgument(where + ".command must be a list of strings");
        spec.command.emplace_back(a.as_string());
      }
    } else if (key == "requires_approval" && value.is_bool()) {
      spec.requires_approval = value.as_bool();
    } else if (key == "timeout_ms" && value.is_int64() && value.as_int64() > 0) {
      spec.timeout_ms = value.as_int64();
    } else {
      return InvalidArgument(where + ": unknown key or wrong type for \"" + std::string(key) +
                             "\"");
    }
  }
  if (!IsToolName(spec.name)) {
    return InvalidArgument(where + ".name must be 1-64 letters, digits, '_', '-' or '.'");
  }
  if (spec.command.empty() || spec.command[0].empty())
    return InvalidArgument(where + ".command must not be empty");
  if (spec.parameters_schema.empty())
    spec.parameters_schema = R"({"type":"object","properties":{}})";
  return spec;
}

}  // namespace

StatusOr<std::vector<CommandToolSpec>> ParseToolsFile(std::string_view text,
                                                      const std::string& base_dir) {
  json::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec) return InvalidArgument("tools file is not valid JSON: " + ec.message());
  const json::value* tools = v.is_object() ? v.as_object().if_contains("tools") : nullptr;
  if (tools == nullptr || !tools->is_array())
    return InvalidArgument("tools file needs a \"tools\" list");
  std::vector<CommandToolSpec> specs;
  for (std::size_t i = 0; i < tools->as_array().size(); ++i) {
    auto spec = ParseTool(tools->as_array()[i], base_dir, i);
    if (!spec.ok()) return spec.status();
    for (const auto& other : specs) {
      if (other.name == spec->name)
        return InvalidArgument("tool \"" + spec->name + "\" is defined twice");
    }
    specs.push_back(std::move(*spec));
  }
  return specs;
}

StatusOr<std::vector<HostTool>> LoadToolsFile(const std::string& path) {
  // Its commands resolve against its directory, which standard input does not have.
  if (path == "-") return InvalidArgument("a tools file must be a file, not standard input");
  auto text = internal::ReadBoundedFile(path, internal::kMaxConfigFileBytes, "tools file");
  if (!text.ok()) return text.status();
  std::error_code fs_ec;
  const std::string base = std::filesystem::absolute(path, fs_ec).parent_path().string();
  auto specs = ParseToolsFile(*text, base);
  if (!specs.ok()) return Status(specs.status().code(), path + ": " + specs.status().message());
  std::vector<HostTool> tools;
  for (auto& spec : *specs) tools.push_back(MakeCommandTool(std::move(spec)));
  return tools;
}

HostTool MakeCommandTool(CommandToolSpec spec) {
  HostTool tool;
  tool.name = spec.name;
  tool.description = spec.description;
  tool.parameters_schema = spec.parameters_schema;
  tool.requires_approval = spec.requires_approval;
  auto call = [spec = std::move(spec)](const std::string& kwargs_json,
                                       const ToolCallContext& context) -> ToolResult {
    // The result travels in one frame: more than the frame cap is drained and counted, not kept.
    const std::int64_t cap =
        context.max_result_bytes > 0 ? context.max_result_bytes : spec.max_output_bytes;
    // No process of the tool outlives its call: a daemon it leaves is killed with it.
    auto run = internal::RunCommand(
        spec.command, kwargs_json, std::chrono::milliseconds(spec.timeout_ms), cap,
        spec.working_dir, context.cancel, internal::CommandContainment::kAllDescendants);
    if (!run.ok()) return ToolResult::Failure("ToolFailed", run.status().message());
    if (run->cancelled)
      return ToolResult::Failure("ToolCancelled", "the run that called the tool ended");
    if (run->timed_out) {
      return ToolResult::Failure(
          "ToolTimeout", "the tool took longer than " + std::to_string(spec.timeout_ms) + " ms");
    }
    if (!run->exit.exited || run->exit.exit_code != 0) {
      std::string message = run->stderr_text;
      while (!message.empty() && (message.back() == '\n' || message.back() == '\r'))
        message.pop_back();
      if (message.empty()) {
        message = run->exit.exited ? "exit code " + std::to_string(run->exit.exit_code)
                                   : "killed by signal " + std::to_string(run->exit.signal);
      }
      return ToolResult::Failure("ToolFailed", message);
    }
    if (run->stdout_truncated) {
      return ToolResult::Failure("ToolResultTooLarge", "the tool's result of " +
                                                           std::to_string(run->stdout_bytes) +
                                                           " bytes exceeds the frame limit of " +
                                                           std::to_string(cap) + " bytes");
    }
    json::error_code ec;
    json::value parsed = internal::ParseJson(run->stdout_text, ec);
    if (!ec) return ToolResult::Success(internal::SerializeJson(parsed));
    if (ec == json::error::too_deep) {
      return ToolResult::Failure(
          "ToolFailed", "the tool's output is too deeply nested: " + internal::JsonErrorText(ec));
    }
    std::string text = internal::SanitizeUtf8(run->stdout_text);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return ToolResult::Success(internal::SerializeJson(json::value(json::string(text))));
  };
  // The plain handler serves callers that call it directly, outside a run.
  tool.handler = [call](const std::string& kwargs_json) {
    return call(kwargs_json, ToolCallContext{});
  };
  tool.cancellable_handler = std::move(call);
  return tool;
}

}  // namespace codeact
