#include "common/log.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace codeact {
namespace {

// Restores the default handler however a test ends: the handler is process-wide.
class LogTest : public ::testing::Test {
 protected:
  void TearDown() override { SetLogHandler({}); }
};

TEST_F(LogTest, HandlerGetsEveryLevelAndNothingGoesToStderr) {
  std::vector<std::pair<LogLevel, std::string>> seen;
  SetLogHandler(
      [&seen](LogLevel level, std::string_view message) { seen.emplace_back(level, message); });
  ::testing::internal::CaptureStderr();
  internal::Log(LogLevel::kDebug, "d");
  internal::LogWarning("isolation auto: ran at the process level");
  internal::Log(LogLevel::kError, "e");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], std::make_pair(LogLevel::kDebug, std::string("d")));
  EXPECT_EQ(seen[1], std::make_pair(LogLevel::kWarning,
                                    std::string("isolation auto: ran at the process level")));
  EXPECT_EQ(seen[2], std::make_pair(LogLevel::kError, std::string("e")));
}

TEST_F(LogTest, DefaultWritesWarningsAndErrorsToStderr) {
  SetLogHandler([](LogLevel, std::string_view) {});
  SetLogHandler({});  // an empty handler restores the default
  ::testing::internal::CaptureStderr();
  internal::Log(LogLevel::kDebug, "not shown");
  internal::Log(LogLevel::kInfo, "not shown either");
  internal::LogWarning("w");
  internal::Log(LogLevel::kError, "e");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "codeact: warning: w\ncodeact: error: e\n");
}

}  // namespace
}  // namespace codeact
