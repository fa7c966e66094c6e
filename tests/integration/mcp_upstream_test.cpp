// Upstream MCP servers as host tools (codeact/mcp_upstream.hpp): a provider connected to a stdio
// server written with the official TypeScript SDK (tests/mcp_client/fixtures/upstream_server.mjs)
// runs code that calls its tools as `await up.tool(...)`. The server records what it saw in an
// events file, which the tests wait on (with generous deadlines, never fixed sleeps).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include "codeact/log.hpp"
#include "codeact/provider.hpp"
#include "testing/cli_support.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kClientDir = std::string(CODEACT_SOURCE_DIR) + "/tests/mcp_client";

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class McpUpstreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/node", X_OK) != 0 && std::system("command -v node >/dev/null") != 0)
      GTEST_SKIP() << "node not found";
    if (!fs::exists(kClientDir + "/node_modules/@modelcontextprotocol/sdk"))
      GTEST_SKIP() << "tests/mcp_client/node_modules is missing (npm ci there, .ci/setup)";
    dir_ = fs::temp_directory_path() /
           ("codeact-upstream-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    events_ = dir_ / "events";
    ProviderOptions options;
    options.limits.wall_timeout_ms = 60'000;
    auto provider = CodeActProvider::Create(options, testing::NewLocalExecutor(0));
    ASSERT_TRUE(provider.ok()) << provider.status().ToString();
    provider_ = *provider;
  }
  void TearDown() override {
    provider_.reset();
    fs::remove_all(dir_);
  }

  McpUpstreamOptions Server(const std::string& name = "up") const {
    McpUpstreamOptions o;
    o.name = name;
    o.command = {"node", kClientDir + "/fixtures/upstream_server.mjs"};
    o.environment["UPSTREAM_EVENTS"] = events_.string();
    return o;
  }

  // Waits for `line` in the events file.
  bool WaitForEvent(const std::string& line,
                    std::chrono::seconds deadline = std::chrono::seconds(60)) {
    const auto end = Clock::now() + deadline;
    while (Clock::now() < end) {
      if (Slurp(events_).find(line + "\n") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a file, not a wait
    }
    return false;
  }

  // The first server's pid: it records it before it connects, so before AddMcpServer returns.
  pid_t ServerPid() {
    const std::string text = Slurp(events_);
    const auto at = text.find("pid ");
    if (at == std::string::npos) return -1;
    return static_cast<pid_t>(std::stol(text.substr(at + 4)));
  }

  fs::path dir_;
  fs::path events_;
  std::shared_ptr<CodeActProvider> provider_;
};

TEST_F(McpUpstreamTest, OneProgramCallsTwoToolsAndADashedNameIsNormalised) {
  ASSERT_TRUE(provider_->AddMcpServer(Server()).ok());
  ASSERT_TRUE(provider_->GetTool("up.add").has_value());
  ASSERT_TRUE(provider_->GetTool("up.get_weather").has_value());
  EXPECT_EQ(provider_->GetTool("up.get_weather")->upstream_name, "get-weather");
  EXPECT_FALSE(provider_->GetTool("up.get-weather").has_value());

  const ToolDescriptionParts parts = provider_->DescribeRun(provider_->Snapshot());
  EXPECT_NE(parts.details.find("MCP server `up`"), std::string::npos) << parts.details;
  EXPECT_NE(parts.details.find("`await up.get_weather(city=...)` (upstream name `get-weather`)"),
            std::string::npos)
      << parts.details;
  EXPECT_NE(parts.details.find(R"("required":["a","b"])"), std::string::npos) << parts.details;
  EXPECT_EQ(parts.core.find("up.add"), std::string::npos) << "upstream tools belong in details";

  ExecutionResult r = provider_->Execute(
      "s = await up.add(a=2, b=3)\n"
      "w = await up.get_weather(city='Oslo')\n"
      "print(s['sum'], w)\n");
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "5 sunny in Oslo\n");
  EXPECT_TRUE(WaitForEvent("call add"));
  EXPECT_TRUE(WaitForEvent("call get-weather"));
}

TEST_F(McpUpstreamTest, ArgumentsAreCheckedAgainstTheUpstreamSchemaAndIsErrorRaises) {
  ASSERT_TRUE(provider_->AddMcpServer(Server()).ok());
  ExecutionResult r = provider_->Execute(testing::Program(
      "mcp_upstream/arguments_are_checked_against_the_upstream_schema_and_is_error_raises"));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text,
            "ToolArgumentsInvalid True\nUpstreamToolError upstream tool up/fail: it failed\n");
  EXPECT_EQ(Slurp(events_).find("call add"), std::string::npos) << "the bad call reached it";
}

TEST_F(McpUpstreamTest, ANameThatShadowsAModuleOrBuiltinIsRefusedBeforeAnythingStarts) {
  for (const std::string name :
       {"json", "os", "print", "len", "for", "match", "call_tool", "ToolError", "1up", "a-b", ""}) {
    Status s = provider_->AddMcpServer(Server(name));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(s.message().find("MCP server name"), std::string::npos) << s.message();
  }
  EXPECT_FALSE(fs::exists(events_)) << "a refused server was started";
  Status taken = provider_->AddMcpServer(Server("up"));
  ASSERT_TRUE(taken.ok()) << taken.ToString();
  Status again = provider_->AddMcpServer(Server("up"));
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("taken"), std::string::npos) << again.message();
}

TEST_F(McpUpstreamTest, ApprovalAppliesToUpstreamToolsAsToHostTools) {
  McpUpstreamOptions o = Server();
  o.approval = McpApproval::kAnnotations;
  ASSERT_TRUE(provider_->AddMcpServer(o).ok());
  EXPECT_TRUE(provider_->GetTool("up.wipe")->requires_approval);   // destructiveHint: true
  EXPECT_TRUE(provider_->GetTool("up.add")->requires_approval);    // no annotations
  EXPECT_FALSE(provider_->GetTool("up.peek")->requires_approval);  // readOnlyHint: true

  // A run that names only a safe tool needs nothing.
  ExecutionResult peek = provider_->Execute("print(await up.peek())");
  EXPECT_EQ(peek.outcome, Outcome::kOk) << peek.message;
  EXPECT_EQ(peek.stdout_text, "peeked\n");

  const RunSnapshot snapshot = provider_->Snapshot();
  ApprovalRequest request = provider_->ApprovalFor("await up.wipe()", snapshot);
  EXPECT_EQ(request.tools_requiring_approval, std::vector<std::string>{"up.wipe"});
  // The namespace passed around may reach every tool of the server.
  request = provider_->ApprovalFor("f = up\nawait f.peek()", snapshot);
  EXPECT_EQ(request.tools_requiring_approval,
            (std::vector<std::string>{"up.add", "up.add_late_tool", "up.big", "up.deep", "up.fail",
                                      "up.get_weather", "up.slow", "up.wipe"}));

  InvokeOptions denied;
  denied.approved = false;
  ExecutionResult refused = provider_->Execute("await up.wipe()", denied);
  EXPECT_EQ(refused.outcome, Outcome::kApprovalRequired);
  EXPECT_NE(refused.message.find("up.wipe"), std::string::npos) << refused.message;

  // Reached without naming it (a string built at run time): the bridge refuses the call.
  ExecutionResult sneaky = provider_->Execute(
      testing::Program("mcp_upstream/approval_applies_to_upstream_tools_as_to_host_tools"), denied);
  EXPECT_EQ(sneaky.outcome, Outcome::kApprovalRequired) << "a dynamic reference asks first";

  InvokeOptions approved;
  approved.approved = true;
  ExecutionResult wiped = provider_->Execute("print(await up.wipe())", approved);
  EXPECT_EQ(wiped.outcome, Outcome::kOk) << wiped.message;
  EXPECT_EQ(wiped.stdout_text, "wiped\n");
  EXPECT_TRUE(WaitForEvent("call wipe"));
}

TEST_F(McpUpstreamTest, ARunThatEndsCancelsItsUpstreamCallButTheServerKeepsRunning) {
  ASSERT_TRUE(provider_->AddMcpServer(Server()).ok());
  const pid_t pid = ServerPid();
  ASSERT_GT(pid, 0);
  CancellationSource cancel;
  InvokeOptions options;
  options.cancel = cancel.token();
  auto run = std::async(std::launch::async,
                        [&] { return provider_->Execute("await up.slow()", options); });
  ASSERT_TRUE(WaitForEvent("slow started"));
  cancel.Cancel("the test cancels the run");
  ExecutionResult r = run.get();
  EXPECT_EQ(r.outcome, Outcome::kCancelled) << r.message;
  // notifications/cancelled reached the server: the SDK aborted the call's signal.
  EXPECT_TRUE(WaitForEvent("cancelled slow")) << Slurp(events_);
  EXPECT_EQ(::kill(pid, 0), 0) << "the server was stopped";

  ExecutionResult next = provider_->Execute("print((await up.add(a=1, b=1))['sum'])");
  EXPECT_EQ(next.outcome, Outcome::kOk) << next.message;
  EXPECT_EQ(next.stdout_text, "2\n");
}

TEST_F(McpUpstreamTest, ACallOverItsTimeoutFailsAndIsCancelledUpstream) {
  McpUpstreamOptions o = Server();
  o.call_timeout_ms = 1'000;
  ASSERT_TRUE(provider_->AddMcpServer(o).ok());
  ExecutionResult r = provider_->Execute(
      testing::Program("mcp_upstream/a_call_over_its_timeout_fails_and_is_cancelled_upstream"));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text,
            "UpstreamTimeout upstream tool up/slow: MCP server 'up' did not answer tools/call "
            "within 1000 ms\n");
  EXPECT_TRUE(WaitForEvent("cancelled slow")) << Slurp(events_);
}

TEST_F(McpUpstreamTest, AMessageOverTheBoundClosesTheConnection) {
  McpUpstreamOptions o = Server();
  o.max_message_bytes = 64 * 1024;
  ASSERT_TRUE(provider_->AddMcpServer(o).ok());
  ExecutionResult r = provider_->Execute(
      testing::Program("mcp_upstream/a_message_over_the_bound_closes_the_connection"));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "1000\nUpstreamUnavailable True\n");
}

// A server that lists a tool named `__class__` (which, bound as an attribute of the server's
// namespace, broke every run with a TypeError) or `import` (described as `await up.import()`, a
// SyntaxError) gets those left out, with a warning in the log; its other tools work.
TEST_F(McpUpstreamTest, ADunderOrKeywordToolNameIsLeftOutWithAWarning) {
  std::vector<std::string> warnings;
  std::mutex mu;
  SetLogHandler([&](LogLevel level, std::string_view message) {
    std::lock_guard lock(mu);
    if (level == LogLevel::kWarning) warnings.emplace_back(message);
  });
  const Status added = provider_->AddMcpServer(Server());
  SetLogHandler({});
  ASSERT_TRUE(added.ok()) << added.ToString();
  EXPECT_FALSE(provider_->GetTool("up.__class__").has_value());
  EXPECT_FALSE(provider_->GetTool("up.import").has_value());
  ASSERT_TRUE(provider_->GetTool("up.add").has_value());
  const ToolDescriptionParts parts = provider_->DescribeRun(provider_->Snapshot());
  EXPECT_EQ(parts.details.find("up.import"), std::string::npos) << parts.details;
  EXPECT_EQ(parts.details.find("up.__class__"), std::string::npos) << parts.details;
  std::string logged;
  for (const auto& w : warnings) logged += w + "\n";
  EXPECT_NE(logged.find("MCP server 'up': its tool \"__class__\" is left out: upstream tool name "
                        "\"__class__\" is a dunder name"),
            std::string::npos)
      << logged;
  EXPECT_NE(logged.find("its tool \"import\" is left out: upstream tool name \"import\" is a "
                        "Python keyword"),
            std::string::npos)
      << logged;

  ExecutionResult r = provider_->Execute("print((await up.add(a=1, b=2))['sum'])\n");
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "3\n");
}

// An answer nested deeper than the JSON depth limit cannot be read: the call fails at once with
// UpstreamResponseTooDeep, rather than the answer being dropped and the call waiting for its
// timeout (UpstreamTimeout).
TEST_F(McpUpstreamTest, AnAnswerNestedTooDeepFailsTheCallAtOnce) {
  McpUpstreamOptions o = Server();
  o.call_timeout_ms = 30'000;
  ASSERT_TRUE(provider_->AddMcpServer(o).ok());
  const auto start = Clock::now();
  ExecutionResult r = provider_->Execute(
      testing::Program("mcp_upstream/an_answer_nested_too_deep_fails_the_call_at_once"));
  const auto took = Clock::now() - start;
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "True\nUpstreamResponseTooDeep True\n");
  EXPECT_LT(took, std::chrono::seconds(25)) << "the call waited for its timeout";
}

TEST_F(McpUpstreamTest, ListChangedIsPickedUpByTheNextRun) {
  ASSERT_TRUE(provider_->AddMcpServer(Server()).ok());
  EXPECT_FALSE(provider_->GetTool("up.late_tool").has_value());
  ExecutionResult add = provider_->Execute("print(await up.add_late_tool())");
  EXPECT_EQ(add.outcome, Outcome::kOk) << add.message;
  EXPECT_EQ(add.stdout_text, "added\n");
  // The notification came before the call's answer: the next snapshot lists the tools again.
  const RunSnapshot snapshot = provider_->Snapshot();
  auto late = std::find_if(snapshot.tools.begin(), snapshot.tools.end(),
                           [](const HostTool& t) { return t.name == "up.late_tool"; });
  ASSERT_NE(late, snapshot.tools.end());
  EXPECT_EQ(late->upstream_name, "late.tool");
  EXPECT_NE(provider_->DescribeRun(snapshot).details.find("(upstream name `late.tool`)"),
            std::string::npos);
  ExecutionResult r = provider_->Execute("print(await up.late_tool())");
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "late\n");
}

TEST_F(McpUpstreamTest, AServerKilledMidRunIsAToolErrorAndThenReported) {
  ASSERT_TRUE(provider_->AddMcpServer(Server()).ok());
  const pid_t pid = ServerPid();
  ASSERT_GT(pid, 0);
  auto run = std::async(std::launch::async, [&] {
    return provider_->Execute(
        testing::Program("mcp_upstream/a_server_killed_mid_run_is_a_tool_error_and_then_reported"));
  });
  ASSERT_TRUE(WaitForEvent("slow started"));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ExecutionResult r = run.get();
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text.rfind("UpstreamUnavailable upstream tool up/slow: MCP server 'up' was "
                                "killed by signal 9",
                                0),
            0u)
      << r.stdout_text;

  // Reported, not restarted: the next call fails the same way, and the tools are still listed.
  ExecutionResult next = provider_->Execute(
      testing::Program("mcp_upstream/a_server_killed_mid_run_is_a_tool_error_and_then_reported_2"));
  EXPECT_EQ(next.stdout_text, "UpstreamUnavailable\n") << next.message << next.stderr_text;
}

TEST_F(McpUpstreamTest, NoServerOutlivesItsProvider) {
  ASSERT_TRUE(provider_->AddMcpServer(Server()).ok());
  ASSERT_TRUE(provider_->AddMcpServer(Server("other")).ok());
  const pid_t pid = ServerPid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, 0), 0);
  provider_.reset();  // ends both servers and reaps them
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  const std::string events = Slurp(events_);
  std::size_t servers = 0;
  for (std::size_t at = 0; (at = events.find("pid ", at)) != std::string::npos; ++at) {
    const pid_t p = static_cast<pid_t>(std::stol(events.substr(at + 4)));
    EXPECT_EQ(::kill(p, 0), -1) << "server " << p << " is still running";
    ++servers;
  }
  EXPECT_EQ(servers, 2u);
}

TEST_F(McpUpstreamTest, AServerThatCannotStartIsAnErrorNotAHang) {
  McpUpstreamOptions o = Server();
  o.command = {"/nonexistent/upstream-server"};
  o.start_timeout_ms = 20'000;
  Status s = provider_->AddMcpServer(o);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("MCP server 'up'"), std::string::npos) << s.message();
  EXPECT_FALSE(provider_->GetTool("up.add").has_value());
  EXPECT_TRUE(provider_->McpServerNames().empty());
}

// The CLI: --mcp-server NAME=COMMAND with the command line split into words (a quoted path), a
// run that calls the server's tools, the description listing them, and a refused NAME.
TEST_F(McpUpstreamTest, TheCliConnectsAServerAndRefusesABadName) {
  const std::string server = "up=node '" + kClientDir + "/fixtures/upstream_server.mjs'";
  testing::ProgramRun run = testing::RunCli(
      {"run", "--mcp-server", server, "-"},
      "s = await up.add(a=20, b=22)\nprint(s['sum'], await up.get_weather(city='Rome'))\n");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const boost::json::value v = boost::json::parse(run.out);
  EXPECT_EQ(v.at("stdout").as_string(), "42 sunny in Rome\n") << run.out;

  testing::ProgramRun describe =
      testing::RunCli({"describe", "--mcp-server", server, "--mcp-server-approval", "up=all"});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("await up.get_weather(city=...)"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("upstream name `get-weather`"), std::string::npos);
  EXPECT_NE(describe.out.find("needs approval"), std::string::npos);

  testing::ProgramRun refused =
      testing::RunCli({"run", "--mcp-server", "json=node x.mjs", "-"}, "print(1)\n");
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("would shadow a Python keyword, builtin or standard-library module"),
            std::string::npos)
      << refused.err;
  testing::ProgramRun unterminated =
      testing::RunCli({"run", "--mcp-server", "up=node 'x.mjs", "-"}, "print(1)\n");
  EXPECT_EQ(unterminated.exit_code, 2) << unterminated.err;
  EXPECT_NE(unterminated.err.find("unterminated '"), std::string::npos) << unterminated.err;
}

}  // namespace
}  // namespace codeact
