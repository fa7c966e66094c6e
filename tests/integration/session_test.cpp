// Sessions (session.hpp) over the local backend at the namespaces level: state that crosses the
// runs of one session, nothing that crosses sessions, every limit inside a session, expiry, the
// maximum, a run killed mid-session (pause, resume and the freeze: session_pause_test.cpp) — and no
// process, fd, cgroup or directory left behind.
#include "codeact/session.hpp"

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "codeact/provider.hpp"
#include "files/scratch_owner.hpp"
#include "integration/session_fixture.hpp"
#include "process/run_cgroup.hpp"
#include "provider/client_sessions.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

using namespace std::chrono_literals;
using testing::CountOpenFds;
using testing::CountSessionDirs;
using testing::CountZombieChildren;
using testing::Eventually;
using testing::OnlySessionCpuMs;
using testing::Open;
using testing::Options;
using testing::SessionGroupDirs;

TEST(SessionTest, GlobalsImportsAndFilesCrossTheRunsOfOneSession) {
  PROVIDER_OR_SKIP(provider, Options());
  auto s = Open(*provider, "calc");
  ExecutionResult first = s->Execute(
      testing::Program("session/globals_imports_and_files_cross_the_runs_of_one_session"));
  ASSERT_TRUE(first.success()) << first.message << first.stderr_text;
  EXPECT_EQ(first.session_state, SessionState::kNew);
  EXPECT_EQ(first.session, "calc");
  ExecutionResult second = s->Execute(
      "import tempfile, os\nx += 1\n"
      "[x, json.dumps([1]), open('kept.txt').read(), "
      "open(os.path.join(tempfile.gettempdir(), 't.txt')).read()]");
  ASSERT_TRUE(second.success()) << second.message << second.stderr_text;
  EXPECT_EQ(second.session_state, SessionState::kKept);
  EXPECT_EQ(second.output_json, R"([42,"[1]","work","tmp"])");
  EXPECT_GT(s->last_used(), s->created());
}

TEST(SessionTest, FortyIncrementsGiveForty) {
  PROVIDER_OR_SKIP(provider, Options());
  auto s = Open(*provider);
  ASSERT_TRUE(s->Execute("n = 0").success());
  ExecutionResult r;
  for (int i = 0; i < 40; ++i) {
    r = s->Execute("n += 1\nn");
    ASSERT_TRUE(r.success()) << i << ": " << r.message;
    ASSERT_EQ(r.session_state, SessionState::kKept);
  }
  EXPECT_EQ(r.output_json, "40");
}

// The interpreter outlives the thread of the call that started it (the parent-death signal
// follows the thread that forked: the executor starts session children on its own).
TEST(SessionTest, TheInterpreterOutlivesTheThreadThatStartedIt) {
  ProviderOptions o = Options();
  if (::geteuid() == 0) o.executor.isolation = IsolationLevel::kProcess;  // no launcher between
  PROVIDER_OR_SKIP(provider, o);
  auto s = Open(*provider);
  ExecutionResult first;
  std::thread([&] { first = s->Execute("t = 'kept'"); }).join();
  ASSERT_TRUE(first.success()) << first.message;
  ExecutionResult later = s->Execute("t");
  ASSERT_TRUE(later.success()) << later.message;
  EXPECT_EQ(later.session_state, SessionState::kKept);
  EXPECT_EQ(later.output_json, "\"kept\"");
}

TEST(SessionTest, NothingCrossesSessionsOrStatelessRuns) {
  PROVIDER_OR_SKIP(provider, Options());
  auto a = Open(*provider, "a");
  auto b = Open(*provider, "b");
  ExecutionResult pid =
      a->Execute(testing::Program("session/nothing_crosses_sessions_or_stateless_runs"));
  ASSERT_TRUE(pid.success()) << pid.message;
  const std::string probe =
      "import os, tempfile, glob\n"
      "['secret' in globals(), os.path.exists('a.txt'),\n"
      " os.path.exists(os.path.join(tempfile.gettempdir(), 'a.txt')), os.getcwd(),\n"
      " tempfile.gettempdir()]";
  ExecutionResult in_b = b->Execute(probe);
  ASSERT_TRUE(in_b.success()) << in_b.message << in_b.stderr_text;
  EXPECT_EQ(in_b.output_json.substr(0, 19), "[false,false,false,") << in_b.output_json;
  ExecutionResult stateless = provider->Execute(probe);
  ASSERT_TRUE(stateless.success()) << stateless.message;
  EXPECT_EQ(stateless.output_json.substr(0, 19), "[false,false,false,") << stateless.output_json;
  EXPECT_FALSE(stateless.session.has_value());
  EXPECT_FALSE(stateless.session_state.has_value());

  // Signals: b cannot reach a's interpreter (a pid namespace each), nor any process of a.
  ExecutionResult kill =
      b->Execute(testing::Program("session/nothing_crosses_sessions_or_stateless_runs_2"));
  ASSERT_TRUE(kill.success()) << kill.message << kill.stderr_text;
  EXPECT_EQ(kill.output_json, "[]");
  ExecutionResult still = a->Execute("secret");
  ASSERT_TRUE(still.success()) << still.message;
  EXPECT_EQ(still.session_state, SessionState::kKept);
  EXPECT_EQ(still.output_json, "\"A\"");
}

// A root host's process level gives each session's child its own uid and scratch directory;
// with the runtime guard /tmp (the literal path) is out of the code's reach as well.
TEST(SessionTest, NothingCrossesSessionsAtTheProcessLevelOnARootHost) {
  if (::geteuid() != 0) GTEST_SKIP() << "the process level keeps sessions apart only as root";
  ProviderOptions o = Options();
  o.executor.isolation = IsolationLevel::kProcess;
  PROVIDER_OR_SKIP(provider, o);
  auto a = Open(*provider, "a");
  auto b = Open(*provider, "b");
  ExecutionResult wrote = a->Execute(
      testing::Program("session/nothing_crosses_sessions_at_the_process_level_on_a_root_host"));
  ASSERT_TRUE(wrote.success()) << wrote.message << wrote.stderr_text;
  EXPECT_TRUE(wrote.output_json.ends_with(",false]")) << wrote.output_json;
  ExecutionResult in_b = b->Execute(
      "import os, tempfile\n['secret' in globals(), os.path.exists('a.txt'),\n"
      " os.path.exists(os.path.join(tempfile.gettempdir(), 'a.txt')), os.getuid()]");
  ASSERT_TRUE(in_b.success()) << in_b.message << in_b.stderr_text;
  EXPECT_TRUE(in_b.output_json.starts_with("[false,false,false,")) << in_b.output_json;
  // Another uid: b's code may not signal a's interpreter.
  const std::string a_pid =
      wrote.output_json.substr(wrote.output_json.find(',') + 1,
                               wrote.output_json.rfind(',') - wrote.output_json.find(',') - 1);
  ExecutionResult kill = b->Execute(
      "import os, signal\ntry:\n    os.kill(" + a_pid +
      ", signal.SIGKILL)\n    r = 'killed'\nexcept OSError as e:\n    r = type(e).__name__\nr");
  ASSERT_TRUE(kill.success()) << kill.message << kill.stderr_text;
  EXPECT_NE(kill.output_json, "\"killed\"");
  ExecutionResult still = a->Execute("secret");
  EXPECT_EQ(still.session_state, SessionState::kKept);
  EXPECT_EQ(still.output_json, "\"A\"");
}

TEST(SessionTest, WallClockPerRunEndsTheInterpreterAndTheNextRunRestarts) {
  ExecutionLimits limits;
  limits.wall_timeout_ms = 1500;
  PROVIDER_OR_SKIP(provider, Options(limits));
  auto s = Open(*provider);
  ASSERT_TRUE(s->Execute("x = 1").success());
  ExecutionResult r = s->Execute("while True:\n    pass");
  EXPECT_EQ(r.outcome, Outcome::kTimeout) << r.message;
  EXPECT_NE(r.message.find("wall-clock limit of 1500 ms"), std::string::npos) << r.message;
  ExecutionResult next = s->Execute("'x' in globals()");
  ASSERT_TRUE(next.success()) << next.message;
  EXPECT_EQ(next.session_state, SessionState::kRestarted);
  EXPECT_EQ(next.output_json, "false");
  EXPECT_NE(next.message.find("the last one ended (a run ended as timeout)"), std::string::npos)
      << next.message;
}

// "Three runs of 0.6 s CPU each under --cpu 1 all succeed": the limit is renewed per run.
TEST(SessionTest, CpuTimeIsCountedPerRun) {
  ExecutionLimits limits;
  limits.cpu_time_s = 1;
  limits.wall_timeout_ms = 60'000;
  PROVIDER_OR_SKIP(provider, Options(limits));
  auto s = Open(*provider);
  const std::string spin = testing::Program("session/cpu_time_is_counted_per_run");
  for (int i = 1; i <= 3; ++i) {
    ExecutionResult r = s->Execute(spin);
    ASSERT_TRUE(r.success()) << i << ": " << OutcomeName(r.outcome) << " " << r.message;
    EXPECT_EQ(r.output_json, std::to_string(i));
    ASSERT_TRUE(r.usage.cpu_ms.has_value());
    EXPECT_GE(*r.usage.cpu_ms, 550);
    EXPECT_LT(*r.usage.cpu_ms, 1000);
  }
  ExecutionResult over = s->Execute("while True:\n    pass");
  EXPECT_EQ(over.outcome, Outcome::kCpuLimit) << over.message;
  EXPECT_NE(over.message.find("CPU time limit of 1 s exceeded"), std::string::npos) << over.message;
  EXPECT_EQ(s->Execute("1").session_state, SessionState::kRestarted);
}

TEST(SessionTest, MemoryIsBoundedPerSession) {
  ExecutionLimits limits;
  limits.memory_bytes = 256LL << 20;
  PROVIDER_OR_SKIP(provider, Options(limits));
  auto s = Open(*provider);
  ASSERT_TRUE(s->Execute("keep = bytearray(64 << 20)").success());
  ExecutionResult r = s->Execute("more = [bytearray(32 << 20) for _ in range(12)]");
  EXPECT_EQ(r.outcome, Outcome::kMemoryLimit) << r.message << r.stderr_text;
  EXPECT_EQ(s->Execute("'keep' in globals()").output_json, "false");
}

TEST(SessionTest, OutputCapsApplyPerRun) {
  ExecutionLimits limits;
  limits.max_stdout_bytes = 1000;
  limits.max_output_bytes = 1000;
  PROVIDER_OR_SKIP(provider, Options(limits));
  auto s = Open(*provider);
  ExecutionResult loud = s->Execute("y = 7\nprint('x' * 5000)");
  EXPECT_TRUE(loud.stdout_truncated);
  EXPECT_EQ(loud.stdout_text.size(), 1000u);
  ExecutionResult quiet = s->Execute("print('ok')\ny");
  ASSERT_TRUE(quiet.success()) << quiet.message;
  EXPECT_FALSE(quiet.stdout_truncated);  // the cap starts again
  EXPECT_EQ(quiet.stdout_text, "ok\n");
  EXPECT_EQ(quiet.session_state, SessionState::kKept);
  ExecutionResult big = s->Execute("'v' * 5000");
  EXPECT_EQ(big.outcome, Outcome::kOutputLimit) << big.message;
  EXPECT_EQ(s->Execute("'y' in globals()").session_state, SessionState::kRestarted);
}

TEST(SessionTest, ToolBudgetIsRenewedPerRun) {
  ExecutionLimits limits;
  limits.max_tool_calls = 2;
  PROVIDER_OR_SKIP(provider, Options(limits));
  std::atomic<int> calls{0};
  EXPECT_TRUE(provider
                  ->AddTool({"ping", "ping", R"({"type":"object","properties":{}})", false,
                             [&](const std::string&) {
                               ++calls;
                               return ToolResult::Success("1");
                             }})
                  .ok());
  auto s = Open(*provider);
  const std::string two = "a = await ping()\nb = await ping()\na + b";
  ExecutionResult r1 = s->Execute(two);
  ASSERT_TRUE(r1.success()) << r1.message << r1.stderr_text;
  ExecutionResult r2 = s->Execute(two);
  ASSERT_TRUE(r2.success()) << r2.message;
  EXPECT_EQ(r2.session_state, SessionState::kKept);
  EXPECT_EQ(r2.tool_calls, 2);
  ExecutionResult r3 = s->Execute(testing::Program("session/tool_budget_is_renewed_per_run"));
  ASSERT_TRUE(r3.success()) << r3.message;
  EXPECT_NE(r3.output_json.find("ToolBudgetExceeded"), std::string::npos) << r3.output_json;
  EXPECT_EQ(calls.load(), 6);
}

// The session's child keeps the tools it opened with, marks included: an approved run may call a
// gated tool, a run that names none needs no approval, and one that calls it unapproved is
// refused before it runs.
TEST(SessionTest, AnApprovedRunMayCallAGatedTool) {
  PROVIDER_OR_SKIP(provider, Options());
  EXPECT_TRUE(provider
                  ->AddTool({"refund", "refund", R"({"type":"object","properties":{}})",
                             /*requires_approval=*/true,
                             [](const std::string&) { return ToolResult::Success("\"done\""); }})
                  .ok());
  auto s = Open(*provider);
  InvokeOptions approved;
  approved.approved = true;
  ExecutionResult r = s->Execute("x = await refund()\nx", approved);
  ASSERT_TRUE(r.success()) << r.message << r.stderr_text;
  EXPECT_EQ(r.output_json, "\"done\"");
  EXPECT_TRUE(s->Execute("x").success());
  EXPECT_EQ(s->Execute("await refund()").outcome, Outcome::kApprovalRequired);
}

TEST(SessionTest, AChangedToolRegistryIsRefusedWithTheReason) {
  PROVIDER_OR_SKIP(provider, Options());
  auto s = Open(*provider);
  ASSERT_TRUE(s->Execute("z = 1").success());
  EXPECT_TRUE(provider
                  ->AddTool({"late", "late", R"({"type":"object","properties":{}})", false,
                             [](const std::string&) { return ToolResult::Success("1"); }})
                  .ok());
  ExecutionResult r = s->Execute("z");
  EXPECT_EQ(r.outcome, Outcome::kSetupError);
  EXPECT_NE(r.message.find("tools changed after the session"), std::string::npos) << r.message;
  auto fresh = Open(*provider);
  EXPECT_TRUE(fresh->Execute("await late()").success());
}

TEST(SessionTest, ARunKilledMidSessionIsFollowedByARestart) {
  PROVIDER_OR_SKIP(provider, Options());
  auto s = Open(*provider);
  ASSERT_TRUE(s->Execute("w = 5").success());
  ExecutionResult killed = s->Execute("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)");
  EXPECT_EQ(killed.outcome, Outcome::kKilled) << killed.message;
  ExecutionResult next = s->Execute("'w' in globals()");
  EXPECT_EQ(next.session_state, SessionState::kRestarted);
  EXPECT_EQ(next.output_json, "false");
  ExecutionResult exited = s->Execute("import os\nos._exit(0)");
  EXPECT_NE(exited.outcome, Outcome::kOk);
  EXPECT_EQ(s->Execute("2").session_state, SessionState::kRestarted);
  // Each ended interpreter goes with its directory and group (removed off the caller's path):
  // one of each is left, then none.
  EXPECT_TRUE(testing::Eventually([] { return CountSessionDirs() == 1; })) << CountSessionDirs();
  s->Close();
  EXPECT_TRUE(testing::Eventually([] { return CountSessionDirs() == 0; })) << CountSessionDirs();
  EXPECT_EQ(CountZombieChildren(), 0);
}

TEST(SessionTest, AnIdleSessionExpiresAndItsNameStartsAgain) {
  SessionSettings settings;
  settings.idle_expiry_ms = 300;
  PROVIDER_OR_SKIP(provider, Options({}, settings));
  internal::ClientSessions client(provider);
  ExecutionResult r = client.Invoke(R"({"code": "v = 3", "session": "idle"})", InvokeOptions{});
  ASSERT_TRUE(r.success()) << r.message;
  EXPECT_EQ(r.session_state, SessionState::kNew);
  ASSERT_TRUE(Eventually([&] { return provider->OpenSessionCount() == 0; }));
  EXPECT_TRUE(Eventually([] { return CountSessionDirs() == 0; }));
  ExecutionResult again =
      client.Invoke(R"x({"code": "'v' in globals()", "session": "idle"})x", InvokeOptions{});
  ASSERT_TRUE(again.success()) << again.message;
  EXPECT_EQ(again.session_state, SessionState::kNew);
  EXPECT_EQ(again.output_json, "false");
  EXPECT_NE(again.message.find("the earlier session \"idle\" expired after 300 ms without use"),
            std::string::npos)
      << again.message;
}

TEST(SessionTest, TheSessionMaximumIsRefusedWithTheReason) {
  SessionSettings settings;
  settings.max_sessions = 2;
  PROVIDER_OR_SKIP(provider, Options({}, settings));
  auto one = Open(*provider);
  auto two = Open(*provider);
  auto three = provider->OpenSession();
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(three.status().message().find("the limit of 2 open sessions"), std::string::npos);
  one->Close();
  EXPECT_TRUE(provider->OpenSession().ok());
}

// Without the runtime guard, which would refuse the fork: a process the session's code leaves
// running goes with the session too.
TEST(SessionTest, CloseLeavesNoProcessFdCgroupOrDirectory) {
  const int fds_before = CountOpenFds();
  {
    ProviderOptions unguarded = Options();
    unguarded.executor.runtime_guard = false;
    PROVIDER_OR_SKIP(provider, unguarded);
    auto s = Open(*provider);
    ExecutionResult r =
        s->Execute(testing::Program("session/close_leaves_no_process_fd_cgroup_or_directory"));
    ASSERT_TRUE(r.success()) << r.message << r.stderr_text << (r.error ? r.error->traceback : "");
    if (Status p = s->Pause(); p.ok()) {
      // Closing a frozen session kills it too.
    }
    s->Close();
    EXPECT_TRUE(s->closed());
    EXPECT_EQ(s->closed_reason(), "closed");
    EXPECT_EQ(s->Execute("1").outcome, Outcome::kSetupError);
    // The directory is removed off the caller's path, right after.
    EXPECT_TRUE(Eventually([] { return CountSessionDirs() == 0; })) << CountSessionDirs();
    EXPECT_EQ(CountZombieChildren(), 0);
    // Only the provider's parent groups are left while it lives.
    auto child_groups = [] {
      int children = 0;
      for (const auto& dir : SessionGroupDirs()) {
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(dir, ec))
          children += e.is_directory() ? 1 : 0;
      }
      return children;
    };
    EXPECT_TRUE(Eventually([&] { return child_groups() == 0; })) << child_groups();
  }
  EXPECT_TRUE(Eventually([] { return SessionGroupDirs().empty(); }));
  EXPECT_EQ(CountOpenFds(), fds_before);
}

// Sessions need an executor that keeps them apart: one that cannot says so.
TEST(SessionTest, AnExecutorWithoutSessionsRefusesWithTheReason) {
  struct Stateless final : Executor {
    ExecutionResult Execute(const ExecutionRequest&, const RunSnapshot&) override {
      return NotRunResult(Outcome::kOk, "");
    }
    BackendKind backend() const override { return BackendKind::kHyperlight; }
    IsolationLevel isolation() const override { return IsolationLevel::kMicroVm; }
    BackendTraits Traits(const RunSnapshot&) const override { return {}; }
  };
  auto provider = CodeActProvider::Create({}, std::make_unique<Stateless>());
  ASSERT_TRUE(provider.ok());
  auto s = (*provider)->OpenSession();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  internal::ClientSessions client(*provider);
  ExecutionResult r = client.Invoke(R"({"code": "1", "session": "x"})", InvokeOptions{});
  EXPECT_EQ(r.outcome, Outcome::kUnavailable);
  EXPECT_EQ(r.session, "x");
  EXPECT_NE(r.message.find("does not keep sessions"), std::string::npos) << r.message;
}

TEST(SessionTest, TheProcessLevelWithoutOwnUidsRefusesSessions) {
  if (::geteuid() == 0) GTEST_SKIP() << "a root host gives each child its own uid";
  ProviderOptions o = Options();
  o.executor.isolation = IsolationLevel::kProcess;
  auto provider = CodeActProvider::Create(o);
  ASSERT_TRUE(provider.ok()) << provider.status().message();
  auto s = (*provider)->OpenSession();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(s.status().message().find("sessions need the namespaces level"), std::string::npos);
}

TEST(SessionTest, ClientNamesAreScopedToTheirClient) {
  PROVIDER_OR_SKIP(provider, Options());
  internal::ClientSessions alice(provider);
  internal::ClientSessions bob(provider);
  ASSERT_TRUE(alice.Invoke(R"({"code": "m = 'alice'", "session": "s"})", {}).success());
  ExecutionResult b = bob.Invoke(R"x({"code": "'m' in globals()", "session": "s"})x", {});
  ASSERT_TRUE(b.success()) << b.message;
  EXPECT_EQ(b.output_json, "false");
  EXPECT_EQ(b.session_state, SessionState::kNew);
  ExecutionResult a = alice.Invoke(R"({"code": "m", "session": "s"})", {});
  EXPECT_EQ(a.output_json, "\"alice\"");
  EXPECT_EQ(a.session_state, SessionState::kKept);
  ExecutionResult bad = alice.Invoke(R"({"code": "1", "session": 5})", {});
  EXPECT_EQ(bad.outcome, Outcome::kValidationFailed);
  EXPECT_NE(bad.message.find("\"session\" must be a string"), std::string::npos);
}

}  // namespace
}  // namespace codeact
