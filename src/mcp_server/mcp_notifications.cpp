// MCP logging and the output notifications (mcp_notifications.hpp).
#include "mcp_server/mcp_notifications.hpp"

#include <array>
#include <boost/json.hpp>

#include "common/utf8.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {
namespace json = boost::json;
namespace {

constexpr std::array<std::string_view, 8> kLevelNames = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

}  // namespace

std::optional<McpLogLevel> ParseMcpLogLevel(std::string_view name) {
  for (std::size_t i = 0; i < kLevelNames.size(); ++i) {
    if (kLevelNames[i] == name) return static_cast<McpLogLevel>(i);
  }
  return std::nullopt;
}

std::string_view McpLogLevelName(McpLogLevel level) {
  return kLevelNames[static_cast<std::size_t>(level)];
}

McpLogLevel OutputLogLevel(OutputStreamKind stream) {
  return stream == OutputStreamKind::kStderr ? McpLogLevel::kWarning : McpLogLevel::kInfo;
}

std::string ProgressNotification(std::string_view token_json, int progress,
                                 std::string_view message) {
  std::string line =
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)";
  line += token_json;
  line += R"(,"progress":)" + std::to_string(progress) + R"(,"message":)";
  line += SerializeJson(json::value(SanitizeUtf8(message)));
  line += "}}";
  return line;
}

std::string LogNotification(McpLogLevel level, std::string_view logger, std::string_view data) {
  return SerializeJson(json::object{{"jsonrpc", "2.0"},
                                    {"method", "notifications/message"},
                                    {"params", json::object{{"level", McpLogLevelName(level)},
                                                            {"logger", logger},
                                                            {"data", SanitizeUtf8(data)}}}});
}

}  // namespace codeact::internal
