// A paused session, and the freeze between a session's calls: what its code leaves running
// stops when the run returns (session_child.hpp). The other session tests: session_test.cpp.
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
#include "codeact/session.hpp"
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

TEST(SessionTest, APausedSessionUsesNoCpuAndItsRunKeepsItsWallClock) {
  ExecutionLimits limits;
  limits.wall_timeout_ms = 4000;
  PROVIDER_OR_SKIP(provider, Options(limits));
  auto s = Open(*provider);
  ASSERT_TRUE(s->Execute("q = 1").success());
  if (Status p = s->Pause(); !p.ok()) GTEST_SKIP() << "no cgroup freezer here: " << p.message();
  ASSERT_TRUE(s->Resume().ok());
  ExecutionResult r;
  std::thread run([&] {
    r = s->Execute(testing::Program(
        "session_pause/a_paused_session_uses_no_cpu_and_its_run_keeps_its_wall_clock"));
  });
  ASSERT_TRUE(Eventually([] { return OnlySessionCpuMs().value_or(0) > 150; }));
  ASSERT_TRUE(s->Pause().ok());
  EXPECT_TRUE(s->paused());
  const auto before = OnlySessionCpuMs();
  // A measuring window, not a wait for an event: longer than the run's whole wall clock, which
  // the run would exceed if paused time counted.
  std::this_thread::sleep_for(4500ms);
  const auto after = OnlySessionCpuMs();
  ASSERT_TRUE(before && after);
  EXPECT_LT(*after - *before, 20) << "a frozen session used CPU";
  ExecutionResult refused = provider->Execute("1");  // other runs go on meanwhile
  EXPECT_TRUE(refused.success());
  ASSERT_TRUE(s->Resume().ok());
  run.join();
  ASSERT_TRUE(r.success()) << OutcomeName(r.outcome) << " " << r.message;
  EXPECT_EQ(r.output_json, "2");
  EXPECT_EQ(r.session_state, SessionState::kKept);
}

TEST(SessionTest, APausedSessionRunsNothingUntilResumed) {
  PROVIDER_OR_SKIP(provider, Options());
  auto s = Open(*provider);
  ASSERT_TRUE(s->Execute("k = 9").success());
  if (Status p = s->Pause(); !p.ok()) GTEST_SKIP() << "no cgroup freezer here: " << p.message();
  ExecutionResult r = s->Execute("k");
  EXPECT_EQ(r.outcome, Outcome::kSetupError);
  EXPECT_NE(r.message.find("is paused"), std::string::npos) << r.message;
  ASSERT_TRUE(s->Resume().ok());
  EXPECT_EQ(s->Execute("k").output_json, "9");
}

// Between calls a session is frozen (session_child.hpp): what its code leaves running stops when
// the run returns, at both levels. The process level holds sessions apart only on a root host.
class SessionFreezeTest : public ::testing::TestWithParam<IsolationLevel> {
 protected:
  ProviderOptions LevelOptions(ExecutionLimits limits = {}) const {
    ProviderOptions o = Options(limits);
    o.executor.isolation = GetParam();
    o.policy.extra_allowed_imports.push_back("asyncio");
    return o;
  }
};

// "asyncio.get_running_loop().run_in_executor(None, spin) used 5-6 s of CPU in the seconds after
// the result came back": now none, and the next call still has the session's globals.
TEST_P(SessionFreezeTest, ASpinningThreadUsesNoCpuAfterTheRunReturned) {
  ExecutionLimits limits;
  limits.cpu_time_s = 2;
  limits.wall_timeout_ms = 20'000;
  PROVIDER_OR_SKIP(provider, LevelOptions(limits));
  auto s = Open(*provider);
  ExecutionResult r = s->Execute(testing::Fixture("session_spin_thread.py"));
  ASSERT_TRUE(r.success()) << OutcomeName(r.outcome) << " " << r.message << r.stderr_text;
  const auto before = OnlySessionCpuMs();
  ASSERT_TRUE(before.has_value());
  // A measuring window, not a wait for an event: a spinning thread would use all of it.
  std::this_thread::sleep_for(1000ms);
  const auto after = OnlySessionCpuMs();
  ASSERT_TRUE(after.has_value());
  EXPECT_LT(*after - *before, 20) << "the session's leftover thread ran between calls";
  EXPECT_FALSE(s->paused());
  // The next call thaws it: the spinner's CPU time in it is that call's, and it keeps the
  // globals (the counter the spinner raised, too).
  ExecutionResult next = s->Execute(
      testing::Program("session_pause/a_spinning_thread_uses_no_cpu_after_the_run_returned"));
  ASSERT_TRUE(next.success()) << OutcomeName(next.outcome) << " " << next.message;
  EXPECT_EQ(next.session_state, SessionState::kKept);
  ASSERT_TRUE(next.output_json.starts_with(R"(["spinning",true,)")) << next.output_json;
  // The interpreter's CPU time over the loop, nearly all of it the spinner's (the main thread
  // sleeps): the call's usage holds it.
  const std::int64_t spent_ms = std::stoll(next.output_json.substr(17));
  EXPECT_GT(spent_ms, 0);
  ASSERT_TRUE(next.usage.cpu_ms.has_value());
  EXPECT_GE(*next.usage.cpu_ms, spent_ms)
      << "the leftover thread's CPU time counts against the call";
}

// A thread writing into a read-write mount after the run's result was taken: nothing more lands
// on the host until the next call.
TEST_P(SessionFreezeTest, AWritingThreadWritesNothingAfterTheRunReturned) {
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() /
      ("codeact-freeze-" + std::to_string(::getpid()) + "-" + std::to_string(int(GetParam())));
  std::filesystem::create_directories(out);
  struct Remove {
    std::filesystem::path p;
    ~Remove() { std::filesystem::remove_all(p); }
  } remove{out};
  if (::geteuid() != 0) std::filesystem::permissions(out, std::filesystem::perms::all);
  ProviderOptions o = LevelOptions();
  PROVIDER_OR_SKIP(provider, o);
  const bool process = GetParam() == IsolationLevel::kProcess;
  ASSERT_TRUE(provider->AddMount({out.string(), "/out", MountMode::kReadWrite, 1 << 20}).ok());
  provider->SetEnvironment({{"OUT", process ? out.string() : "/out"}});
  auto s = Open(*provider);
  ExecutionResult r = s->Execute(testing::Fixture("session_write_thread.py"));
  ASSERT_TRUE(r.success()) << OutcomeName(r.outcome) << " " << r.message << r.stderr_text
                           << (r.error ? r.error->traceback : "");
  const auto size = [&] {
    std::error_code ec;
    return std::filesystem::file_size(out / "ticks.txt", ec);
  };
  const auto at_return = size();
  ASSERT_GT(at_return, 0u);
  // A measuring window: the writer, were it running, writes megabytes in it.
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(size(), at_return) << "the session's leftover thread wrote after the run returned";
  ExecutionResult next = s->Execute("kept");
  ASSERT_TRUE(next.success()) << next.message;
  EXPECT_EQ(next.session_state, SessionState::kKept);
  EXPECT_EQ(next.output_json, "\"writing\"");
}

INSTANTIATE_TEST_SUITE_P(Levels, SessionFreezeTest,
                         ::testing::Values(IsolationLevel::kProcess, IsolationLevel::kNamespaces),
                         [](const auto& info) {
                           return info.param == IsolationLevel::kProcess ? "Process" : "Namespaces";
                         });

}  // namespace
}  // namespace codeact
