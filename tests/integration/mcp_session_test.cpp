// Sessions through `codeact mcp` at the default level, as a black box: the "session" argument
// keeps globals across calls, names are isolated from each other and from calls without one, a
// run that hits a limit restarts its session, CPU time is counted per run, and a call into a live
// session costs no process start.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <set>
#include <sstream>

#include "process/child.hpp"
#include "process/helper_command.hpp"
#include "testing/fixtures.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;

struct Served {
  int exit_code = -1;
  std::map<std::int64_t, bj::object> by_id;  // structuredContent of each call
  std::string tools_list;
  std::string err;
};

std::string Call(int id, const std::string& code, const std::string& session = "") {
  bj::object arguments{{"code", code}};
  if (!session.empty()) arguments["session"] = session;
  return bj::serialize(bj::object{
             {"jsonrpc", "2.0"},
             {"id", id},
             {"method", "tools/call"},
             {"params", bj::object{{"name", "execute_code"}, {"arguments", arguments}}}}) +
         "\n";
}

// Whether `name` is defined, without globals() (the validator's default policy blocks it).
std::string Defined(const std::string& name) {
  return "try:\n    " + name + "\n    found = True\nexcept NameError:\n    found = False\nfound";
}

// `codeact mcp` with one call at a time, so that the calls of a session run in their order.
Served Serve(const std::string& calls, std::vector<std::string> flags = {}) {
  std::vector<std::string> args = {CODEACT_BINARY, "mcp", "--quiet", "--max-concurrent", "1"};
  args.insert(args.end(), flags.begin(), flags.end());
  const std::string input =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":-1,"method":"tools/list"})"
      "\n" +
      calls;
  auto r = internal::RunCommand(args, input, std::chrono::seconds(300), 64 << 20);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  Served s;
  if (!r.ok()) return s;
  s.exit_code = r->exit.exited ? r->exit.exit_code : 128 + r->exit.signal;
  s.err = r->stderr_text;
  std::istringstream lines(r->stdout_text);
  std::string line;
  while (std::getline(lines, line)) {
    bj::error_code ec;
    bj::value v = bj::parse(line, ec);
    if (ec || !v.is_object()) continue;
    const auto& o = v.as_object();
    if (!o.contains("result") || !o.at("id").is_int64()) continue;
    const std::int64_t id = o.at("id").as_int64();
    if (id == -1) {
      s.tools_list = bj::serialize(o.at("result"));
    } else if (id > 0) {
      s.by_id[id] = o.at("result").at("structuredContent").as_object();
    }
  }
  return s;
}

// Sessions need the namespaces level (or a root host's own uids) and a memory cgroup; where the
// first call's session cannot be opened, the tests say why and skip.
#define SKIP_WITHOUT_SESSIONS(served, id)                                                      \
  if (served.by_id.count(id) &&                                                                \
      (served.by_id[id].at("outcome") == "unavailable" ||                                      \
       (served.by_id[id].at("outcome") == "setup_error" &&                                     \
        std::string(served.by_id[id].at("message").as_string()).find("could not be opened") != \
            std::string::npos)))                                                               \
  GTEST_SKIP() << "sessions are not available here: " << served.by_id[id].at("message")

TEST(McpSessionTest, GlobalsAreKeptAndNamesAreIsolated) {
  const Served s = Serve(Call(1, "x = 'one'", "a") + Call(2, "x", "a") +
                         Call(3, Defined("x"), "b") + Call(4, Defined("x")) +
                         Call(5, "x = 'five'", "b") + Call(6, "x", "a") + Call(7, "x", "b"));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  Served copy = s;
  SKIP_WITHOUT_SESSIONS(copy, 1);
  ASSERT_EQ(copy.by_id.size(), 7u) << s.err;
  EXPECT_NE(s.tools_list.find("\"session\""), std::string::npos) << s.tools_list;
  EXPECT_NE(s.tools_list.find("use the same name to keep variables"), std::string::npos);
  EXPECT_EQ(copy.by_id[1].at("session"), "a");
  EXPECT_EQ(copy.by_id[1].at("session_state"), "new");
  EXPECT_EQ(copy.by_id[2].at("output"), "one");
  EXPECT_EQ(copy.by_id[2].at("session_state"), "kept");
  EXPECT_EQ(copy.by_id[3].at("output"), false);
  EXPECT_EQ(copy.by_id[3].at("session_state"), "new");
  EXPECT_EQ(copy.by_id[4].at("output"), false);
  EXPECT_TRUE(copy.by_id[4].at("session").is_null());
  EXPECT_TRUE(copy.by_id[4].at("session_state").is_null());
  EXPECT_EQ(copy.by_id[6].at("output"), "one");
  EXPECT_EQ(copy.by_id[7].at("output"), "five");
}

TEST(McpSessionTest, FortyIncrementsGiveFortyAndALimitRestarts) {
  std::string calls = Call(1, "n = 0", "c");
  for (int i = 0; i < 40; ++i) calls += Call(2 + i, "n += 1\nn", "c");
  calls += Call(50, "while True:\n    pass", "c");
  calls += Call(51, Defined("n"), "c");
  Served s = Serve(calls, {"--timeout", "2"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  SKIP_WITHOUT_SESSIONS(s, 1);
  ASSERT_EQ(s.by_id.size(), 43u) << s.err;
  EXPECT_EQ(s.by_id[41].at("output"), 40) << bj::serialize(s.by_id[41]);
  EXPECT_EQ(s.by_id[41].at("session_state"), "kept");
  EXPECT_EQ(s.by_id[50].at("outcome"), "timeout");
  EXPECT_EQ(s.by_id[51].at("session_state"), "restarted");
  EXPECT_EQ(s.by_id[51].at("output"), false);
}

TEST(McpSessionTest, CpuIsCountedPerRun) {
  const std::string spin = testing::Program("mcp_session/cpu_is_counted_per_run");
  Served s =
      Serve(Call(1, spin, "cpu") + Call(2, spin, "cpu") + Call(3, spin, "cpu"), {"--cpu", "1"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  SKIP_WITHOUT_SESSIONS(s, 1);
  for (int id = 1; id <= 3; ++id) {
    EXPECT_EQ(s.by_id[id].at("outcome"), "ok") << bj::serialize(s.by_id[id]);
    EXPECT_EQ(s.by_id[id].at("output"), id);
  }
}

}  // namespace
}  // namespace codeact
