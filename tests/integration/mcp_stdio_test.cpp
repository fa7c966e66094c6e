// `codeact mcp` as a black box over real stdio: only JSON-RPC on stdout, bad lines answered,
// calls run, exit 0 at end of input, and --approve decides runs that need approval.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "files/mount_capture.hpp"
#include "process/helper_command.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;

struct Session {
  int exit_code = -1;
  std::vector<bj::object> responses;
  std::string err;
};

// Sends `input` to `codeact mcp <args>`, closes stdin, and parses every stdout line.
Session RunMcp(std::vector<std::string> args, const std::string& input) {
  args.insert(args.begin(), {CODEACT_BINARY, "mcp"});
  auto r = internal::RunCommand(args, input, std::chrono::seconds(120), 64 << 20);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  Session s;
  if (!r.ok()) return s;
  s.exit_code = r->exit.exited ? r->exit.exit_code : 128 + r->exit.signal;
  s.err = r->stderr_text;
  std::istringstream lines(r->stdout_text);
  std::string line;
  while (std::getline(lines, line)) {
    bj::error_code ec;
    bj::value v = bj::parse(line, ec);
    EXPECT_FALSE(ec) << "stdout carried a line that is not JSON: " << line;
    EXPECT_TRUE(!ec && v.is_object() && v.as_object().at("jsonrpc") == "2.0") << line;
    if (!ec && v.is_object()) s.responses.push_back(v.as_object());
  }
  EXPECT_TRUE(r->stdout_text.empty() || r->stdout_text.back() == '\n');
  return s;
}

std::string Call(int id, const std::string& code) {
  return bj::serialize(bj::object{
             {"jsonrpc", "2.0"},
             {"id", id},
             {"method", "tools/call"},
             {"params",
              bj::object{{"name", "execute_code"}, {"arguments", bj::object{{"code", code}}}}}}) +
         "\n";
}

const char* const kInitialize =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
    "\n"
    R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
    "\n";

std::map<std::string, bj::object> ById(const Session& s) {
  std::map<std::string, bj::object> by_id;
  for (const auto& r : s.responses) by_id[bj::serialize(r.at("id"))] = r;
  return by_id;
}

TEST(McpStdioTest, ServesASessionAndExitsZeroAtEndOfInput) {
  const std::string input =
      std::string(kInitialize) + std::string(1 << 20, 'x') + "\n" +  // over the cap
      "garbage\n" +
      R"({"jsonrpc":"2.0","id":1,"method":"ping"})"
      "\n" +
      Call(2, "print('hi')\n6 * 7") + Call(3, "import os\nos.system('id')") +
      Call(4, "raise ValueError('nope')") + R"({"jsonrpc":"2.0","id":5,"method":"tools/list"})";
  const Session s = RunMcp({"--max-line-bytes", "65536"}, input);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  ASSERT_EQ(s.responses.size(), 8u) << s.err;  // initialize, 2 errors, ping, 3 calls, tools/list
  auto by_id = ById(s);
  EXPECT_EQ(by_id["0"].at("result").at("protocolVersion"), "2025-06-18");
  EXPECT_EQ(by_id["1"].at("result"), bj::object{});
  const auto& ok = by_id["2"].at("result");
  EXPECT_EQ(ok.at("isError"), false) << bj::serialize(ok);
  EXPECT_EQ(ok.at("structuredContent").at("stdout"), "hi\n");
  EXPECT_EQ(ok.at("structuredContent").at("output"), 42);
  EXPECT_EQ(bj::parse(ok.at("content").at(0).at("text").as_string()), ok.at("structuredContent"));
  EXPECT_EQ(by_id["3"].at("result").at("structuredContent").at("outcome"), "validation_failed");
  EXPECT_EQ(by_id["3"].at("result").at("isError"), true);
  EXPECT_EQ(by_id["4"].at("result").at("structuredContent").at("error").at("type"), "ValueError");
  EXPECT_EQ(by_id["5"].at("result").at("tools").as_array().size(), 1u);
  int parse_errors = 0, too_long = 0;
  for (const auto& r : s.responses) {
    if (!r.contains("error")) continue;
    EXPECT_TRUE(r.at("id").is_null());
    if (r.at("error").at("code") == -32700) ++parse_errors;
    if (r.at("error").at("code") == -32600) ++too_long;
  }
  EXPECT_EQ(parse_errors, 1);
  EXPECT_EQ(too_long, 1);
  EXPECT_NE(s.err.find("[codeact mcp]"), std::string::npos) << "logs belong on stderr";
}

TEST(McpStdioTest, ApprovalIsDecidedByTheApproveFlag) {
  auto made = internal::TempDir::Create("codeact-mcp-approval-");  // removed on every way out
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  const std::filesystem::path dir = made->path();
  const std::string add_py = std::string(CODEACT_SOURCE_DIR) + "/tests/mcp_client/fixtures/add.py";
  {
    std::ofstream tools(dir / "tools.json");
    tools
        << R"({"tools":[{"name":"add","description":"add","requires_approval":true,)"
        << R"("parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}},)"
        << R"("command":["/usr/bin/python3.11",")" << add_py << R"("]}]})";
  }
  const std::string input = std::string(kInitialize) + Call(1, "print(await add(a=2, b=3))");
  const std::string tools_file = (dir / "tools.json").string();

  const Session denied = RunMcp({"--tools", tools_file, "--quiet"}, input);
  ASSERT_EQ(denied.exit_code, 0) << denied.err;
  auto by_id = ById(denied);
  const auto& refused = by_id["1"].at("result");
  EXPECT_EQ(refused.at("isError"), true);
  EXPECT_EQ(refused.at("structuredContent").at("outcome"), "approval_required");
  EXPECT_EQ(refused.at("structuredContent").at("tool_calls"), 0);
  EXPECT_TRUE(denied.err.empty()) << "--quiet: " << denied.err;

  const Session approved = RunMcp({"--tools", tools_file, "--approve"}, input);
  ASSERT_EQ(approved.exit_code, 0) << approved.err;
  by_id = ById(approved);
  const auto& ran = by_id["1"].at("result");
  EXPECT_EQ(ran.at("isError"), false) << bj::serialize(ran);
  EXPECT_EQ(ran.at("structuredContent").at("stdout"), "5\n");
  EXPECT_EQ(ran.at("structuredContent").at("tool_calls"), 1);
}

TEST(McpStdioTest, BadFlagsAreAUsageError) {
  auto r = internal::RunCommand({CODEACT_BINARY, "mcp", "--max-concurrent", "0"}, "",
                                std::chrono::seconds(60));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit.exit_code, 2);
  EXPECT_NE(r->stderr_text.find("--max-concurrent"), std::string::npos);
  EXPECT_TRUE(r->stdout_text.empty());
  auto help = internal::RunCommand({CODEACT_BINARY, "mcp", "--help"}, "", std::chrono::seconds(60));
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help->exit.exit_code, 0);
  EXPECT_NE(help->stdout_text.find("approval_required"), std::string::npos);
}

}  // namespace
}  // namespace codeact
