// The program's log lines (src/mcp_server/log_setup.hpp): levels, formats, and JSON that stays JSON
// whatever the message holds.
#include "mcp_server/log_setup.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>

namespace codeact::internal {
namespace {

namespace json = boost::json;

TEST(LogSetupTest, LevelsAndFormatsParse) {
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("warn"), LogLevel::kWarning);
  EXPECT_FALSE(ParseLogLevel("off")->has_value());
  EXPECT_FALSE(ParseLogLevel("loud").ok());
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  EXPECT_FALSE(ParseLogFormat("xml").ok());
}

TEST(LogSetupTest, AJsonLineEscapesTheMessage) {
  const json::value line = json::parse(JsonLogLine(
      "2026-12-01T00:00:00.000Z", "info", "codeact mcp", "call \"7\": outcome=ok\n\x01 \xff"));
  EXPECT_EQ(line.at("level"), "info");
  EXPECT_EQ(line.at("component"), "codeact mcp");
  EXPECT_EQ(std::string(line.at("message").as_string()).substr(0, 20), "call \"7\": outcome=ok");
}

TEST(LogSetupTest, LoggersAndTheLibraryFollowTheSettings) {
  ApplyLogSettings({LogLevel::kWarning, LogFormat::kJson});
  ::testing::internal::CaptureStderr();
  auto logger = MakeStderrLogger("codeact mcp", true);
  logger->info("not shown");
  logger->warn("shown {}", 1);
  SetLogHandler(nullptr);  // the library's default again, for the other tests
  const std::string err = ::testing::internal::GetCapturedStderr();
  ApplyLogSettings({});
  SetLogHandler(nullptr);
  ASSERT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  const json::value line = json::parse(err);
  EXPECT_EQ(line.at("level"), "warning");
  EXPECT_EQ(line.at("message"), "shown 1");
  EXPECT_TRUE(line.at("time").as_string().ends_with("Z"));
}

}  // namespace
}  // namespace codeact::internal
