// WireExecuteCode: an McpServer's execute_code runs in one client's named sessions, with the
// provider's instructions and definition, and the recorder sees every result first.
#include "mcp_server/execute_code_wiring.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>

#include "mcp_server/mcp_server.hpp"
#include "provider/client_sessions.hpp"

namespace codeact::internal {
namespace {

// Records the code it was asked to run and the tenant it ran for; runs nothing.
class RecordingExecutor final : public Executor {
 public:
  ExecutionResult Execute(const ExecutionRequest& request, const RunSnapshot&) override {
    std::lock_guard lock(mu);
    last_code = request.code;
    ExecutionResult r;
    r.outcome = Outcome::kOk;
    r.exit_code = 0;
    r.stdout_text = "ran\n";
    return r;
  }
  BackendKind backend() const override { return BackendKind::kLocal; }
  IsolationLevel isolation() const override { return IsolationLevel::kProcess; }
  BackendTraits Traits(const RunSnapshot&) const override {
    return BackendTraits{false, false, "", "every call starts a fresh interpreter."};
  }

  std::mutex mu;
  std::string last_code;
};

TEST(ExecuteCodeWiringTest, ToolsCallRunsThroughTheClientSessionsAndTheRecorder) {
  auto executor = std::make_unique<RecordingExecutor>();
  RecordingExecutor* fake = executor.get();
  auto created = CodeActProvider::Create(ProviderOptions{}, std::move(executor));
  ASSERT_TRUE(created.ok()) << created.status().message();
  std::shared_ptr<CodeActProvider> provider = std::move(*created);
  auto sessions = std::make_shared<ClientSessions>(provider);

  McpServerOptions options;
  options.log_to_stderr = false;
  std::atomic<int> recorded{0};
  WireExecuteCode(options, *provider, sessions, InvokeOptions{}, [&](ExecutionResult r) {
    ++recorded;
    r.message = "seen by the recorder";
    return r;
  });
  EXPECT_EQ(options.instructions, provider->Instructions());
  ASSERT_TRUE(options.tool_definition);
  EXPECT_NE(options.tool_definition().find("\"session\""), std::string::npos);

  McpServer server(std::move(options));
  const auto response = server.HandleLine(
      R"x({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_code",)x"
      R"x("arguments":{"code":"print(1)"}}})x");
  ASSERT_TRUE(response.has_value());
  EXPECT_NE(response->find(R"("id":7)"), std::string::npos) << *response;
  EXPECT_NE(response->find(R"("isError":false)"), std::string::npos) << *response;
  EXPECT_NE(response->find("seen by the recorder"), std::string::npos) << *response;
  EXPECT_EQ(recorded.load(), 1);
  std::lock_guard lock(fake->mu);
  EXPECT_EQ(fake->last_code, "print(1)");
}

TEST(ExecuteCodeWiringTest, WithoutARecorderTheResultIsTheSessionsOwn) {
  auto created = CodeActProvider::Create(ProviderOptions{}, std::make_unique<RecordingExecutor>());
  ASSERT_TRUE(created.ok()) << created.status().message();
  std::shared_ptr<CodeActProvider> provider = std::move(*created);
  McpServerOptions options;
  WireExecuteCode(options, *provider, std::make_shared<ClientSessions>(provider), InvokeOptions{});
  ASSERT_TRUE(options.execute);
  const ExecutionResult r = options.execute(R"({"code": "1"})", CancellationToken(), nullptr);
  EXPECT_EQ(r.outcome, Outcome::kOk);
  EXPECT_EQ(r.stdout_text, "ran\n");
}

}  // namespace
}  // namespace codeact::internal
