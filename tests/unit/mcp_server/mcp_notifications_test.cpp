// MCP logging and the output notifications: the codec on its own, then a server on the fakes
// whose run streams two chunks (the script's "chunks"), heard through HandleMessage's `notify`.
#include "mcp_server/mcp_notifications.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <mutex>
#include <string>
#include <vector>

#include "unit/mcp_server/mcp_server_fixture.hpp"

namespace codeact::mcp_server_test {
namespace {

using internal::LogNotification;
using internal::McpLogging;
using internal::McpLogLevel;
using internal::ParseMcpLogLevel;
using internal::ProgressNotification;

TEST(McpNotificationsTest, LevelsParseAndFilterInTheirOrder) {
  EXPECT_EQ(ParseMcpLogLevel("warning"), McpLogLevel::kWarning);
  EXPECT_EQ(ParseMcpLogLevel("emergency"), McpLogLevel::kEmergency);
  EXPECT_EQ(ParseMcpLogLevel("warn"), std::nullopt);
  McpLogging logging;
  EXPECT_FALSE(logging.Wants(McpLogLevel::kEmergency));  // nothing before a level is set
  logging.SetLevel(McpLogLevel::kWarning);
  EXPECT_FALSE(logging.Wants(McpLogLevel::kInfo));
  EXPECT_TRUE(logging.Wants(McpLogLevel::kWarning));
  EXPECT_TRUE(logging.Wants(McpLogLevel::kError));
}

TEST(McpNotificationsTest, NotificationsCarryTheChunkAsText) {
  const json::value progress = json::parse(ProgressNotification("\"t\"", 3, "x\n\xff"));
  EXPECT_EQ(progress.at("method"), "notifications/progress");
  EXPECT_EQ(progress.at("params").at("progressToken"), "t");
  EXPECT_EQ(progress.at("params").at("progress"), 3);
  EXPECT_EQ(progress.at("params").at("message"), "x\n\xEF\xBF\xBD");  // U+FFFD for the bad byte
  const json::value log = json::parse(LogNotification(McpLogLevel::kWarning, "stderr", "oops"));
  EXPECT_EQ(log.at("method"), "notifications/message");
  EXPECT_EQ(log.at("params").at("level"), "warning");
  EXPECT_EQ(log.at("params").at("logger"), "stderr");
  EXPECT_EQ(log.at("params").at("data"), "oops");
}

// What `notify` got during one HandleMessage.
struct Notified {
  std::mutex mu;
  std::vector<json::object> messages;
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& line) {
      std::lock_guard lock(mu);
      messages.push_back(json::parse(line).as_object());
    };
  }
  std::vector<json::object> Of(const std::string& method) {
    std::vector<json::object> out;
    for (const auto& m : messages)
      if (m.at("method").as_string() == method) out.push_back(m);
    return out;
  }
};

// `call_level`: a 2026-07-28 call's own _meta logLevel ("" for none).
std::string ChunksCall(bool stateless, const std::string& call_level = "") {
  json::object params{{"name", "execute_code"},
                      {"arguments", json::object{{"code", "chunks"}}},
                      {"_meta", json::object{{"progressToken", 9}}}};
  if (stateless) {
    json::object& meta = params["_meta"].as_object();
    meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28";
    meta["io.modelcontextprotocol/clientCapabilities"] = json::object{};
    if (!call_level.empty()) meta["io.modelcontextprotocol/logLevel"] = call_level;
  }
  return json::serialize(
      json::object{{"jsonrpc", "2.0"}, {"id", 4}, {"method", "tools/call"}, {"params", params}});
}

std::string SetLevelLine(const std::string& level) {
  return json::serialize(json::object{{"jsonrpc", "2.0"},
                                      {"id", 2},
                                      {"method", "logging/setLevel"},
                                      {"params", json::object{{"level", level}}}});
}

TEST_F(McpServerTest, InitializeDeclaresLoggingAndSetLevelAnswersAnEmptyObject) {
  McpServer server(Options());
  const json::object init = Ask(server, InitializeLine("2025-11-25"));
  EXPECT_TRUE(init.at("result").at("capabilities").as_object().contains("logging"));
  const json::object set = Ask(server, SetLevelLine("notice"));
  EXPECT_TRUE(set.at("result").as_object().empty()) << json::serialize(set);
  EXPECT_EQ(ErrorCode(Ask(server, SetLevelLine("loud"))), -32602);
}

TEST_F(McpServerTest, EachChunkIsAProgressNotificationWithTheChunkAsItsMessage) {
  McpServer server(Options());
  Ask(server, InitializeLine("2025-11-25"));
  Notified heard;
  const auto answer = server.HandleMessage(ChunksCall(false), {}, heard.Sink());
  ASSERT_TRUE(answer.has_value());
  const auto progress = heard.Of("notifications/progress");
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0].at("params").at("message"), "a\n");
  EXPECT_EQ(progress[0].at("params").at("progress"), 1);
  EXPECT_EQ(progress[1].at("params").at("message"), "b\n");
  EXPECT_EQ(progress[1].at("params").at("progress"), 2);
  EXPECT_TRUE(heard.Of("notifications/message").empty());  // no level set
}

TEST_F(McpServerTest, OnceALevelIsSetChunksAtOrAboveItAreLogMessagesToo) {
  McpServer server(Options());
  Ask(server, InitializeLine("2025-11-25"));
  Ask(server, SetLevelLine("warning"));  // stdout is info: only stderr's chunk
  Notified heard;
  ASSERT_TRUE(server.HandleMessage(ChunksCall(false), {}, heard.Sink()).has_value());
  const auto logged = heard.Of("notifications/message");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].at("params").at("logger"), "stderr");
  EXPECT_EQ(logged[0].at("params").at("level"), "warning");
  EXPECT_EQ(logged[0].at("params").at("data"), "b\n");

  Ask(server, SetLevelLine("debug"));
  Notified all;
  ASSERT_TRUE(server.HandleMessage(ChunksCall(false), {}, all.Sink()).has_value());
  EXPECT_EQ(all.Of("notifications/message").size(), 2u);
  // A 2026-07-28 call follows its own _meta logLevel, not the session's level: none, or its own.
  Notified stateless;
  ASSERT_TRUE(server.HandleMessage(ChunksCall(true), {}, stateless.Sink()).has_value());
  EXPECT_TRUE(stateless.Of("notifications/message").empty());
  EXPECT_EQ(stateless.Of("notifications/progress").size(), 2u);
  Notified own_level;
  ASSERT_TRUE(server.HandleMessage(ChunksCall(true, "warning"), {}, own_level.Sink()).has_value());
  const auto own = own_level.Of("notifications/message");
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].at("params").at("logger"), "stderr");
}

}  // namespace
}  // namespace codeact::mcp_server_test
