// The MCP session table of the HTTP service (http_server/mcp_sessions.hpp): a cap per caller that
// leaves room for the others, the table's own cap, idle expiry on the clock passed in, and the
// seconds a refused caller is told to wait.
#include "http_server/mcp_sessions.hpp"

#include <gtest/gtest.h>

#include <string>

#include "mcp_server/mcp_server.hpp"

namespace codeact::internal {
namespace {

using Clock = McpSessionTable::Clock;
using std::chrono::seconds;

McpSessionTable::Limits Limits(std::size_t max, std::size_t per_caller, int idle_s) {
  McpSessionTable::Limits l;
  l.max_sessions = max;
  l.per_caller = per_caller;
  l.idle = seconds(idle_s);
  return l;
}

// Opens session `id` of `owner` at `now`; false when refused.
bool Open(McpSessionTable& table, const std::string& owner, const std::string& id,
          Clock::time_point now, McpSessionTable::Refusal* why = nullptr) {
  auto [place, refusal] = table.Reserve(owner, now);
  if (refusal) {
    if (why != nullptr) *why = *refusal;
    return false;
  }
  McpServerOptions options;
  options.log_to_stderr = false;
  table.Commit(place, id,
               McpSessionTable::Entry{owner, std::make_shared<McpServer>(options), nullptr}, now);
  return true;
}

TEST(McpSessionTableTest, ACallerOverItsCapIsRefusedAndNobodyIsEvicted) {
  McpSessionTable table(Limits(8, 2, 600));
  const auto t0 = Clock::now();
  ASSERT_TRUE(Open(table, "a", "a1", t0));
  ASSERT_TRUE(Open(table, "a", "a2", t0 + seconds(10)));
  McpSessionTable::Refusal why;
  EXPECT_FALSE(Open(table, "a", "a3", t0 + seconds(20), &why));
  EXPECT_EQ(why.reason, "mcp_sessions_per_caller");
  EXPECT_EQ(why.retry_after_s, 580) << "a1 expires 600 s after its last use";
  ASSERT_TRUE(Open(table, "b", "b1", t0 + seconds(20)));
  std::shared_ptr<void> in_use;
  EXPECT_NE(table.Use("a1", "a", t0 + seconds(21), &in_use), nullptr) << "a1 is still there";
  EXPECT_EQ(table.size(), 3u);
}

TEST(McpSessionTableTest, ReservationsInFlightCountAndAreGivenBack) {
  McpSessionTable table(Limits(8, 2, 600));
  const auto t0 = Clock::now();
  auto [one, r1] = table.Reserve("a", t0);
  auto [two, r2] = table.Reserve("a", t0);
  ASSERT_FALSE(r1 || r2);
  auto [three, r3] = table.Reserve("a", t0);
  EXPECT_TRUE(r3.has_value()) << "two initializes in flight fill a cap of 2";
  one.reset();  // an initialize that failed gives its place back
  auto [four, r4] = table.Reserve("a", t0);
  EXPECT_FALSE(r4.has_value());
}

TEST(McpSessionTableTest, TheWholeTableIsBoundedToo) {
  McpSessionTable table(Limits(2, 2, 600));
  const auto t0 = Clock::now();
  ASSERT_TRUE(Open(table, "a", "a1", t0));
  ASSERT_TRUE(Open(table, "b", "b1", t0));
  McpSessionTable::Refusal why;
  EXPECT_FALSE(Open(table, "c", "c1", t0, &why));
  EXPECT_EQ(why.reason, "mcp_sessions_full");
}

TEST(McpSessionTableTest, AnIdleSessionExpiresButNotWhileInUse) {
  McpSessionTable table(Limits(8, 1, 10));
  const auto t0 = Clock::now();
  ASSERT_TRUE(Open(table, "a", "a1", t0));
  ASSERT_TRUE(Open(table, "b", "b1", t0));
  {
    std::shared_ptr<void> in_use;
    ASSERT_NE(table.Use("b1", "b", t0 + seconds(5), &in_use), nullptr);
    // Another caller's id is not found, as a made-up one is not.
    std::shared_ptr<void> other;
    EXPECT_EQ(table.Use("b1", "a", t0 + seconds(5), &other), nullptr);
    // Past the idle time, b1 is in use: it stays; a1 is gone and its place is free.
    EXPECT_TRUE(Open(table, "a", "a2", t0 + seconds(11)));
    std::shared_ptr<void> again;
    EXPECT_EQ(table.Use("a1", "a", t0 + seconds(11), &again), nullptr);
    EXPECT_EQ(table.size(), 2u);
  }  // b1's request ends now (its last use: the real clock's now)
  std::shared_ptr<void> later;
  EXPECT_NE(table.Use("b1", "b", Clock::now() + seconds(9), &later), nullptr);
  EXPECT_TRUE(table.Remove("b1", "b"));
  EXPECT_FALSE(table.Remove("b1", "b"));
}

}  // namespace
}  // namespace codeact::internal
