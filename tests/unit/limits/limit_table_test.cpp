#include "limits/limit_table.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>

namespace codeact::internal {
namespace {

TEST(LimitTableTest, EveryFieldOfExecutionLimitsHasExactlyOneRow) {
  // ExecutionLimits is all int64 fields: a field without a row would change the size.
  EXPECT_EQ(LimitTable().size() * sizeof(std::int64_t), sizeof(ExecutionLimits));
  std::set<std::string> names;
  std::set<std::string> flags;
  for (const LimitSpec& spec : LimitTable()) {
    EXPECT_TRUE(names.insert(std::string(spec.name)).second) << spec.name;
    if (!spec.flag.empty()) EXPECT_TRUE(flags.insert(std::string(spec.flag)).second) << spec.flag;
    EXPECT_EQ(spec.enforcer == LimitEnforcer::kRlimit, spec.rlimit >= 0) << spec.name;
    EXPECT_GE(ExecutionLimits{}.*spec.member, spec.minimum)
        << "the default of " << spec.name << " is refused";
  }
}

TEST(LimitTableTest, CaptureAndResultLimitsHaveTheirDefaultsAndFlags) {
  const ExecutionLimits l;
  EXPECT_EQ(l.max_capture_files, 1000);
  EXPECT_EQ(l.max_result_bytes, 16LL << 20);
  EXPECT_EQ(LimitNamed("max_capture_files").flag, "--max-capture-files");
  EXPECT_EQ(LimitNamed("max_result_bytes").flag, "--max-result-bytes");
  EXPECT_EQ(LimitText(LimitNamed("max_result_bytes"), l.max_result_bytes), "16 MiB");
  ExecutionLimits small;
  small.max_result_bytes = 1024;  // less than a result's fixed fields and notes need
  EXPECT_EQ(CheckLimits(small).message(),
            "limit max_result_bytes must be at least 64 KiB, got 1024");
}

TEST(LimitTableTest, TheLimitsDocListsEveryLimitWithItsFlag) {
  std::ifstream in(std::string(CODEACT_TEST_FIXTURES) + "/../../docs/limits.md");
  ASSERT_TRUE(in) << "docs/limits.md not found beside tests/";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const LimitSpec& spec : LimitTable()) {
    const std::string row = "| `" + std::string(spec.name) + "` |";
    const std::size_t at = doc.find(row);
    ASSERT_NE(at, std::string::npos) << spec.name << " has no row in docs/limits.md's table";
    const std::string line = doc.substr(at, doc.find('\n', at) - at);
    EXPECT_NE(line.find("`" + std::string(spec.flag)), std::string::npos) << line;
  }
}

TEST(LimitTableTest, AValueBelowItsMinimumIsRefusedByName) {
  ExecutionLimits l;
  EXPECT_TRUE(CheckLimits(l).ok());
  l.memory_bytes = 1 << 20;
  const Status s = CheckLimits(l);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "limit memory_bytes must be at least 64 MiB, got 1048576");
  l = {};
  l.max_tool_calls = 0;
  EXPECT_NE(CheckLimits(l).message().find("max_tool_calls"), std::string::npos);
}

TEST(LimitTableTest, RlimitsPutCoreFirstAndAddressSpaceLast) {
  ExecutionLimits l;
  l.cpu_time_s = 7;
  l.max_open_files = 64;
  const ResourceLimits r = RlimitsFor(l);
  ASSERT_GE(r.size(), 3);
  EXPECT_EQ(r.begin()->resource, RLIMIT_CORE);
  EXPECT_EQ((r.end() - 1)->resource, RLIMIT_AS);
  EXPECT_EQ(r.Get(RLIMIT_CPU)->soft, 7);
  EXPECT_EQ(r.Get(RLIMIT_CPU)->hard, 8);  // SIGXCPU first, SIGKILL a second later
  EXPECT_EQ(r.Get(RLIMIT_NOFILE)->hard, 64);
  // Per-user counters the process level shares with the host user (issue 31).
  EXPECT_EQ(r.Get(RLIMIT_SIGPENDING)->hard, kRunPendingSignals);
  EXPECT_EQ(r.Get(RLIMIT_MSGQUEUE)->hard, 0);
}

TEST(LimitTableTest, ChildKeysChangeOnlyWithLimitsThatShapeAChild) {
  ExecutionLimits a;
  ExecutionLimits b;
  b.max_stdout_bytes = 5;  // enforced by the host: children are interchangeable
  EXPECT_EQ(LimitKey(a, true), LimitKey(b, true));
  EXPECT_NE(LimitKey(a, false), LimitKey(b, false));
  b.memory_bytes = 512LL << 20;  // an rlimit: a child started under 1 GiB does not fit
  EXPECT_NE(LimitKey(a, true), LimitKey(b, true));
}

TEST(LimitTableTest, ExplicitMeansDifferentFromTheDefault) {
  ExecutionLimits l;
  EXPECT_FALSE(IsExplicit(LimitNamed("memory_bytes"), l));
  l.memory_bytes = 256LL << 20;
  EXPECT_TRUE(IsExplicit(LimitNamed("memory_bytes"), l));
}

TEST(LimitTableTest, TheModelReadsTheLimitsWithUnits) {
  ExecutionLimits l;
  l.wall_timeout_ms = 1500;
  const std::string text = LimitsForModel(l);
  EXPECT_NE(text.find("1500 ms wall clock"), std::string::npos) << text;
  EXPECT_NE(text.find("1024 MiB memory"), std::string::npos) << text;
  EXPECT_NE(text.find("256 tool calls"), std::string::npos) << text;
}

}  // namespace
}  // namespace codeact::internal
