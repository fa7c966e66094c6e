#include "mcp_client/mcp_upstream.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <set>
#include <string_view>

#include "common/log.hpp"
#include "mcp_client/mcp_connection.hpp"

extern "C" char** environ;

namespace codeact {

StatusOr<std::vector<std::string>> SplitCommandLine(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const std::size_t end = line.find('\'', i + 1);
      if (end == std::string_view::npos)
        return InvalidArgument("unterminated ' in the command line: " + std::string(line));
      word.append(line.substr(i + 1, end - i - 1));
      in_word = true;
      i = end;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size() &&
            std::string_view("\"\\$`").find(line[j + 1]) != std::string_view::npos) {
          ++j;
        }
        word += line[j];
      }
      if (j >= line.size())
        return InvalidArgument("unterminated \" in the command line: " + std::string(line));
      in_word = true;
      i = j;
    } else if (c == '\\') {
      if (i + 1 >= line.size())
        return InvalidArgument("a trailing \\ in the command line: " + std::string(line));
      word += line[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) return InvalidArgument("the command line is empty");
  return words;
}

std::string NormaliseToolName(std::string_view upstream_name) {
  std::string out;
  for (char c : upstream_name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    out += keep && static_cast<unsigned char>(c) < 0x80 ? c : '_';
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(0, "_");
  return out;
}

namespace internal {
namespace {

namespace json = boost::json;

// Python's keywords, builtins and standard-library top-level module names, as the interpreter
// this build found lists them (generated at configure time).
constexpr std::string_view kReservedNames[] = {
#include "python_reserved_names.inc"
};

bool IsKeywordOrBuiltinOrModule(const std::string& name) {
  return std::find(std::begin(kReservedNames), std::end(kReservedNames), name) !=
         std::end(kReservedNames);
}

std::map<std::string, std::string> ServerEnvironment(
    const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string_view::npos)
      env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  for (const auto& [k, v] : extra) env[k] = v;
  return env;
}

bool Gated(McpApproval approval, const json::object& tool) {
  if (approval == McpApproval::kAll) return true;
  if (approval == McpApproval::kNone) return false;
  const json::value* annotations = tool.if_contains("annotations");
  if (annotations == nullptr || !annotations->is_object()) return true;
  const json::object& a = annotations->get_object();
  const json::value* read_only = a.if_contains("readOnlyHint");
  const json::value* destructive = a.if_contains("destructiveHint");
  if (read_only != nullptr && read_only->is_bool() && read_only->get_bool()) return false;
  if (destructive != nullptr && destructive->is_bool() && !destructive->get_bool()) return false;
  return true;
}

// The text parts joined by newlines; nothing when a part is not text.
std::optional<std::string> TextContent(const json::value* content) {
  if (content == nullptr || !content->is_array()) return std::string();
  std::string text;
  bool first = true;
  for (const json::value& part : content->get_array()) {
    if (!part.is_object()) return std::nullopt;
    const json::value* type = part.get_object().if_contains("type");
    const json::value* value = part.get_object().if_contains("text");
    if (type == nullptr || !type->is_string() || type->get_string() != "text" || value == nullptr ||
        !value->is_string()) {
      return std::nullopt;
    }
    if (!first) text += "\n";
    text += std::string(value->get_string());
    first = false;
  }
  return text;
}

ToolResult CallUpstream(McpConnection& connection, const std::string& server,
                        const std::string& upstream_name, std::int64_t timeout_ms,
                        const std::string& kwargs_json, const ToolCallContext& context) {
  json::value arguments;
  try {
    arguments = json::parse(kwargs_json);
  } catch (const std::exception&) {
    return ToolResult::Failure("ToolArgumentsInvalid", "the arguments are not a JSON object");
  }
  if (!arguments.is_object())
    return ToolResult::Failure("ToolArgumentsInvalid", "the arguments are not a JSON object");
  McpResponse response = connection.Request(
      "tools/call", json::object{{"name", upstream_name}, {"arguments", std::move(arguments)}},
      std::chrono::milliseconds(timeout_ms), context.cancel);
  const std::string what = "upstream tool " + server + "/" + upstream_name;
  switch (response.failure) {
    case McpRequestFailure::kNone:
      break;
    case McpRequestFailure::kTimeout:
      return ToolResult::Failure("UpstreamTimeout", what + ": " + response.failure_message);
    case McpRequestFailure::kCancelled:
      return ToolResult::Failure("Cancelled", what + ": " + response.failure_message);
    case McpRequestFailure::kTooLarge:
      return ToolResult::Failure("ToolArgumentsTooLarge", what + ": " + response.failure_message);
    case McpRequestFailure::kUnavailable:
      return ToolResult::Failure("UpstreamUnavailable", what + ": " + response.failure_message);
    case McpRequestFailure::kMalformed:
      return ToolResult::Failure("UpstreamResponseTooDeep", what + ": " + response.failure_message);
  }
  if (response.is_error) {
    std::string message = json::serialize(response.body);
    if (response.body.is_object()) {
      if (const json::value* m = response.body.get_object().if_contains("message");
          m != nullptr && m->is_string()) {
        message = std::string(m->get_string());
      }
    }
    return ToolResult::Failure("UpstreamError", what + ": " + message);
  }
  if (!response.body.is_object())
    return ToolResult::Failure("UpstreamError", what + ": the result is not an object");
  const json::object& result = response.body.get_object();
  const json::value* content = result.if_contains("content");
  const std::optional<std::string> text = TextContent(content);
  if (const json::value* is_error = result.if_contains("isError");
      is_error != nullptr && is_error->is_bool() && is_error->get_bool()) {
    return ToolResult::Failure("UpstreamToolError",
                               what + ": " + (text ? *text : json::serialize(*content)));
  }
  if (const json::value* structured = result.if_contains("structuredContent");
      structured != nullptr && !structured->is_null()) {
    return ToolResult::Success(json::serialize(*structured));
  }
  if (text) return ToolResult::Success(json::serialize(json::string(*text)));
  return ToolResult::Success(json::serialize(*content));
}

}  // namespace

Status CheckServerName(const std::string& name) {
  const std::string what = "MCP server name \"" + name + "\"";
  const bool identifier =
      !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
          std::string::npos;
  if (!identifier) return InvalidArgument(what + " is not a Python identifier");
  if (name == "call_tool" || name == "ToolError")
    return InvalidArgument(what + " would hide the runner's own " + name);
  if (IsKeywordOrBuiltinOrModule(name)) {
    return InvalidArgument(what +
                           " would shadow a Python keyword, builtin or standard-library module; "
                           "pick another name");
  }
  return Status::Ok();
}

Status CheckUpstreamToolName(const std::string& local_name) {
  // Python's hard keywords: an attribute may not be one. (Soft keywords, `match` or `type`, may.)
  static constexpr std::string_view kKeywords[] = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  const std::string what = "upstream tool name \"" + local_name + "\" ";
  if (std::find(std::begin(kKeywords), std::end(kKeywords), local_name) != std::end(kKeywords)) {
    return InvalidArgument(what + "is a Python keyword: `await server." + local_name +
                           "(...)` would not be valid code");
  }
  if (local_name.size() > 4 && local_name.starts_with("__") && local_name.ends_with("__")) {
    return InvalidArgument(what + "is a dunder name the interpreter uses for the namespace itself");
  }
  return Status::Ok();
}

McpUpstream::McpUpstream(McpUpstreamOptions options, ToolRegistry* registry)
    : options_(std::move(options)), registry_(registry) {}

McpUpstream::~McpUpstream() { Stop(); }

StatusOr<std::unique_ptr<McpUpstream>> McpUpstream::Start(McpUpstreamOptions options,
                                                          ToolRegistry* registry) {
  if (Status s = CheckServerName(options.name); !s.ok()) return s;
  if (options.command.empty())
    return InvalidArgument("MCP server '" + options.name + "' has no command");
  if (options.start_timeout_ms <= 0 || options.call_timeout_ms <= 0 ||
      options.max_message_bytes < 1024 || options.max_tools <= 0) {
    return InvalidArgument("MCP server '" + options.name +
                           "': the timeouts and max_tools must be positive and "
                           "max_message_bytes at least 1024");
  }
  std::unique_ptr<McpUpstream> upstream(new McpUpstream(std::move(options), registry));
  McpConnectionOptions c;
  c.name = upstream->options_.name;
  c.argv = upstream->options_.command;
  c.environment = ServerEnvironment(upstream->options_.environment);
  c.working_dir = upstream->options_.working_dir;
  c.start_timeout_ms = upstream->options_.start_timeout_ms;
  c.max_message_bytes = upstream->options_.max_message_bytes;
  McpUpstream* self = upstream.get();
  auto connection = McpConnection::Start(std::move(c), [self](const std::string& method) {
    if (method == "notifications/tools/list_changed") self->changed_ = true;
  });
  if (!connection.ok()) return connection.status();
  upstream->connection_ = std::move(*connection);
  auto tools = upstream->ListTools(std::chrono::milliseconds(upstream->options_.start_timeout_ms));
  if (!tools.ok()) return tools.status();
  const std::string prefix = upstream->options_.name + ".";
  registry->ReplaceIf([&](const HostTool& t) { return t.name.rfind(prefix, 0) == 0; },
                      std::move(*tools));
  return upstream;
}

StatusOr<std::vector<HostTool>> McpUpstream::ListTools(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<HostTool> tools;
  std::set<std::string> taken;
  std::optional<std::string> cursor;
  const std::string& server = options_.name;
  do {
    json::object params;
    if (cursor) params["cursor"] = *cursor;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    McpResponse r = connection_->Request("tools/list", std::move(params),
                                         std::max(left, std::chrono::milliseconds(1)));
    if (r.failure != McpRequestFailure::kNone)
      return Unavailable("MCP server '" + server + "': tools/list failed: " + r.failure_message);
    if (r.is_error || !r.body.is_object())
      return Unavailable("MCP server '" + server +
                         "': tools/list failed: " + json::serialize(r.body));
    const json::object& body = r.body.get_object();
    const json::value* list = body.if_contains("tools");
    if (list == nullptr || !list->is_array())
      return Unavailable("MCP server '" + server + "': tools/list sent no tools array");
    for (const json::value& entry : list->get_array()) {
      if (!entry.is_object()) continue;
      const json::object& t = entry.get_object();
      const json::value* name = t.if_contains("name");
      if (name == nullptr || !name->is_string() || name->get_string().empty()) continue;
      if (static_cast<int>(tools.size()) >= options_.max_tools) {
        return ResourceExhausted("MCP server '" + server + "' lists more than " +
                                 std::to_string(options_.max_tools) + " tools");
      }
      HostTool tool;
      tool.upstream_name = std::string(name->get_string());
      std::string local = NormaliseToolName(tool.upstream_name);
      if (Status bad = CheckUpstreamToolName(local); !bad.ok()) {
        // One odd name must not break every run (nor the server's other tools): left out.
        LogWarning("MCP server '" + server + "': its tool \"" + tool.upstream_name +
                   "\" is left out: " + bad.message());
        continue;
      }
      for (int n = 2; taken.count(local) != 0; ++n)
        local = NormaliseToolName(tool.upstream_name) + "_" + std::to_string(n);
      taken.insert(local);
      tool.name = server + "." + local;
      if (const json::value* d = t.if_contains("description"); d != nullptr && d->is_string())
        tool.description = std::string(d->get_string());
      if (const json::value* s = t.if_contains("inputSchema"); s != nullptr && s->is_object())
        tool.parameters_schema = json::serialize(*s);
      tool.requires_approval = Gated(options_.approval, t);
      std::shared_ptr<McpConnection> connection = connection_;
      tool.cancellable_handler = [connection, server, upstream = tool.upstream_name,
                                  timeout = options_.call_timeout_ms](
                                     const std::string& kwargs, const ToolCallContext& context) {
        return CallUpstream(*connection, server, upstream, timeout, kwargs, context);
      };
      tools.push_back(std::move(tool));
    }
    cursor.reset();
    if (const json::value* next = body.if_contains("nextCursor");
        next != nullptr && next->is_string()) {
      cursor = std::string(next->get_string());
    }
  } while (cursor);
  return tools;
}

Status McpUpstream::RefreshIfChanged() {
  std::lock_guard lock(refresh_mu_);
  if (!changed_.exchange(false)) return Status::Ok();
  auto tools = ListTools(std::chrono::milliseconds(options_.call_timeout_ms));
  if (!tools.ok()) return tools.status();
  const std::string prefix = options_.name + ".";
  registry_->ReplaceIf([&](const HostTool& t) { return t.name.rfind(prefix, 0) == 0; },
                       std::move(*tools));
  return Status::Ok();
}

void McpUpstream::Stop() {
  if (connection_) connection_->Stop();
  const std::string prefix = options_.name + ".";
  registry_->ReplaceIf([&](const HostTool& t) { return t.name.rfind(prefix, 0) == 0; }, {});
}

long McpUpstream::server_pid() const { return connection_ ? connection_->pid() : -1; }

}  // namespace internal
}  // namespace codeact
