// The local executor against real children: each limit has a misbehaving fixture
// (tests/fixtures/limits) run WITHOUT validation, so the executor itself is what is tested.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "codeact/executor.hpp"
#include "common/egress_target.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

using testing::Fixture;
using testing::LocalExecutor;
using testing::Snapshot;
namespace bj = boost::json;

EgressTarget Target(const std::string& text) {
  StatusOr<EgressTarget> target = internal::ParseEgressTarget(text);
  EXPECT_TRUE(target.ok()) << target.status().ToString();
  return target.ok() ? *target : EgressTarget{};
}

ExecutionResult RunCode(const std::string& code, const RunSnapshot& snapshot = Snapshot()) {
  return LocalExecutor()->Execute({code}, snapshot);
}

std::set<pid_t> Pids(const std::string& text) {
  std::set<pid_t> pids;
  std::istringstream in(text);
  for (pid_t p; in >> p;) pids.insert(p);
  return pids;
}

TEST(LocalExecutorTest, HelloWithOutputValue) {
  const ExecutionResult r = RunCode("print('hello')\n{'a': 1, 2: (3, float('nan'))}\n");
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_TRUE(r.success());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_text, "hello\n");
  EXPECT_TRUE(r.output_present);
  EXPECT_EQ(bj::parse(r.output_json), bj::parse(R"({"a":1,"2":[3,null]})"));
}

TEST(LocalExecutorTest, UserExceptionHasTracebackWithUserLines) {
  const ExecutionResult r = RunCode("x = 1\ny = 0\nprint(x / y)\n");
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->type, "ZeroDivisionError");
  EXPECT_NE(r.error->traceback.find("line 3"), std::string::npos) << r.error->traceback;
  EXPECT_NE(r.error->traceback.find("print(x / y)"), std::string::npos) << r.error->traceback;
  EXPECT_EQ(r.error->traceback.find("runner.py"), std::string::npos) << r.error->traceback;
}

TEST(LocalExecutorTest, WallClockKillsAndKeepsEarlierOutput) {
  ExecutionLimits limits;
  limits.wall_timeout_ms = 1000;
  const auto start = std::chrono::steady_clock::now();
  const ExecutionResult r = RunCode(Fixture("sleep_past_wall_clock.py"), Snapshot(limits));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.outcome, Outcome::kTimeout);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(r.stdout_text, "started\n");
  EXPECT_LT(took, std::chrono::milliseconds(2000));
}

TEST(LocalExecutorTest, CpuLimit) {
  ExecutionLimits limits;
  limits.cpu_time_s = 1;
  limits.wall_timeout_ms = 20'000;
  const ExecutionResult r = RunCode(Fixture("busy_cpu.py"), Snapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kCpuLimit) << r.message;
  EXPECT_GT(r.exit_code, 128);
}

// Network targets are served by the host's egress tools (egress_client_test.cpp,
// egress_cli_test.cpp), or refused where this executor's egress is off: never silently ignored.
TEST(LocalExecutorTest, NetworkTargetsWithoutEgressAreRefusedNotIgnored) {
  ExecutorOptions options;
  options.warm_pool_size = 0;
  options.isolation = IsolationLevel::kProcess;
  options.egress.enabled = false;
  auto executor = CreateExecutor(options);
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  RunSnapshot snapshot = Snapshot();
  snapshot.network_targets = {Target("api.example.com")};
  EXPECT_FALSE((*executor)->Traits(snapshot).network_targets);
  const ExecutionResult r = (*executor)->Execute({"print(1)"}, snapshot);
  EXPECT_EQ(r.outcome, Outcome::kSetupError);
  EXPECT_EQ(r.stdout_text, "");
  EXPECT_NE(r.message.find("network targets (api.example.com) need egress, which this executor "
                           "has turned off"),
            std::string::npos)
      << r.message;
}

// A request that asks the child to validate reaches only an executor made to (its traits say
// so); any other refuses it rather than run code no one validated.
TEST(LocalExecutorTest, ValidationInTheChildIsRefusedWhereTheExecutorDoesNotOfferIt) {
  ExecutorOptions options;
  options.warm_pool_size = 0;
  options.isolation = IsolationLevel::kNamespaces;
  auto executor = CreateExecutor(options);
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  const RunSnapshot snapshot = Snapshot();
  EXPECT_FALSE((*executor)->Traits(snapshot).validates_in_child);
  ExecutionRequest request{"print('ran')"};
  request.validate_in_child = ValidationPolicy{};
  const ExecutionResult refused = (*executor)->Execute(request, snapshot);
  EXPECT_EQ(refused.outcome, Outcome::kSetupError);
  EXPECT_EQ(refused.stdout_text, "");
  EXPECT_NE(refused.message.find("do not validate code"), std::string::npos) << refused.message;

  options.validate_in_child = true;
  auto validating = CreateExecutor(options);
  ASSERT_TRUE(validating.ok()) << validating.status().ToString();
  EXPECT_TRUE((*validating)->Traits(snapshot).validates_in_child);
  request.code = "print('ran')\nimport subprocess\n";
  const ExecutionResult rejected = (*validating)->Execute(request, snapshot);
  EXPECT_EQ(rejected.outcome, Outcome::kValidationFailed);
  EXPECT_EQ(rejected.stdout_text, "");
  ASSERT_EQ(rejected.violations.size(), 1u);
  EXPECT_EQ(rejected.violations[0].rule, "import-blocked");
}

// The host validates while the child compiles (ExecutionRequest::host_verdict), and the child
// runs none of the code before the verdict: a verdict that takes its time and then rejects
// leaves no trace of code that would have written its marker at once; one that passes lets the
// same code run. At both levels.
TEST(LocalExecutorTest, NoCodeRunsBeforeTheHostsVerdict) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("codeact-verdict-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  for (IsolationLevel level : {IsolationLevel::kProcess, IsolationLevel::kNamespaces}) {
    const std::shared_ptr<Executor> executor = LocalExecutor(level);
    RunSnapshot snapshot = Snapshot();
    snapshot.mounts.push_back({dir.string(), "/out", MountMode::kReadWrite, 1 << 20});
    snapshot.environment["RW"] = dir.string();
    EXPECT_TRUE(executor->Traits(snapshot).overlaps_validation);
    ExecutionRequest request{
        "import os\n"
        "open(('/out' if os.path.isdir('/out') else os.environ['RW']) + '/marker', 'w')"
        ".write('ran')\n"};
    std::atomic<int> verdicts{0};
    request.host_verdict = [&] {
      ++verdicts;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      ValidationReport report;
      report.ok = false;
      report.violations.push_back({1, 0, "call-blocked", "open is not allowed", ""});
      return report;
    };
    const ExecutionResult rejected = executor->Execute(request, snapshot);
    EXPECT_EQ(rejected.outcome, Outcome::kValidationFailed) << rejected.message;
    ASSERT_EQ(rejected.violations.size(), 1u);
    EXPECT_EQ(rejected.violations[0].rule, "call-blocked");
    EXPECT_EQ(verdicts.load(), 1);
    EXPECT_EQ(rejected.interpreter, "") << "no interpreter ran the code";
    EXPECT_FALSE(std::filesystem::exists(dir / "marker")) << IsolationName(level);

    request.host_verdict = [&] {
      ++verdicts;
      return ValidationReport{};
    };
    const ExecutionResult passed = executor->Execute(request, snapshot);
    EXPECT_EQ(passed.outcome, Outcome::kOk) << passed.message << passed.stderr_text;
    EXPECT_EQ(verdicts.load(), 2);
    EXPECT_TRUE(std::filesystem::exists(dir / "marker")) << IsolationName(level);
    std::filesystem::remove(dir / "marker");
  }
  std::filesystem::remove_all(dir);
}

// A malformed target never gets here: CodeActProvider::AddNetworkTarget refuses it (ProviderTest).
TEST(LocalExecutorTest, ToolsNamedLikeEgressToolsAreRefused) {
  RunSnapshot snapshot = Snapshot();
  snapshot.network_targets = {Target("api.example.com")};
  snapshot.tools.push_back({"http_get", "mine", R"({"type":"object"})", false,
                            [](const std::string&) { return ToolResult::Success("1"); }});
  ExecutionResult r = RunCode("print(1)", snapshot);
  EXPECT_EQ(r.outcome, Outcome::kSetupError);
  EXPECT_NE(r.message.find("the host tool \"http_get\" has the name of a built-in egress tool"),
            std::string::npos)
      << r.message;
  // Without targets the name is the tool's own.
  snapshot.network_targets.clear();
  r = RunCode("print(await http_get(q=1))", snapshot);
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "1\n");
}

TEST(LocalExecutorTest, MemoryLimit) {
  ExecutionLimits limits;
  limits.memory_bytes = 512LL << 20;
  const ExecutionResult r = RunCode(Fixture("allocate_memory.py"), Snapshot(limits));
  if (testing::ExplicitLimitsRefusedHere(limits)) {  // a non-root host without its cgroup subtree
    EXPECT_EQ(r.outcome, Outcome::kSetupError) << r.message;
    EXPECT_NE(r.message.find("the memory_bytes limit of 512 MiB needs a cgroup"), std::string::npos)
        << r.message;
  } else {
    EXPECT_EQ(r.outcome, Outcome::kMemoryLimit) << r.message << r.stderr_text;
  }
  EXPECT_EQ(r.stdout_text.find("allocated"), std::string::npos);
}

TEST(LocalExecutorTest, StdoutFloodThroughPrintIsCappedExactly) {
  ExecutionLimits limits;
  limits.max_stdout_bytes = 1000;
  const ExecutionResult r = RunCode(Fixture("stdout_flood_print.py"), Snapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_EQ(r.stdout_text, std::string(1000, 'x'));
}

TEST(LocalExecutorTest, StdoutFloodThroughRawFdIsCappedExactly) {
  ExecutionLimits limits;
  limits.max_stdout_bytes = 4096;
  const ExecutionResult r = RunCode(Fixture("stdout_flood_fd.py"), Snapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_EQ(r.stdout_text, std::string(4096, 'y'));
}

TEST(LocalExecutorTest, HugeExceptionMessageStaysUnderTheFrameCap) {
  const ExecutionResult r = RunCode(Fixture("huge_exception.py"));
  EXPECT_EQ(r.outcome, Outcome::kError) << r.message;
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->type, "ValueError");
  EXPECT_LT(r.error->message.size(), 1u << 20);
  EXPECT_GT(r.error->message.size(), 1000u);
}

// The runtime guard refuses fork outright; beneath it, the group kill and the sweep must hold.
TEST(LocalExecutorTest, ForkedChildrenAreAllDeadAfterTheRun) {
  ExecutionLimits limits;
  limits.wall_timeout_ms = 3000;
  limits.max_processes =
      100;  // a root host's runs have uids of their own, and RLIMIT_NPROC applies
  const ExecutionResult r =
      testing::UnguardedLocalExecutor()->Execute({Fixture("fork_children.py")}, Snapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kTimeout);
  const auto pids = Pids(r.stdout_text);
  EXPECT_EQ(pids.size(), 50u) << r.stdout_text << r.stderr_text;
  EXPECT_TRUE(testing::WaitAllDead(pids).empty());
}

TEST(LocalExecutorTest, DaemonThatLeftTheGroupIsDeadAfterTheRun) {
  ExecutionLimits limits;
  // Where RLIMIT_NPROC alone bounds a run (a non-root host without a cgroup), it counts every
  // process and thread of the user, this test's among them.
  limits.max_processes = 100;
  const ExecutionResult r =
      testing::UnguardedLocalExecutor()->Execute({Fixture("daemon.py")}, Snapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  const auto pids = Pids(r.stdout_text);
  ASSERT_EQ(pids.size(), 1u) << r.stdout_text;
  EXPECT_TRUE(testing::WaitAllDead(pids).empty());
}

TEST(LocalExecutorTest, IgnoredSigtermAndSwallowedExceptionsStillEndOnTheWallClock) {
  ExecutionLimits limits;
  limits.wall_timeout_ms = 1000;
  for (const char* fixture : {"ignore_sigterm.py", "swallow_base_exception.py"}) {
    const auto start = std::chrono::steady_clock::now();
    const ExecutionResult r = RunCode(Fixture(fixture), Snapshot(limits));
    EXPECT_EQ(r.outcome, Outcome::kTimeout) << fixture;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500)) << fixture;
  }
}

TEST(LocalExecutorTest, AtexitAndDelLoopsDoNotHoldTheRun) {
  ExecutionLimits limits;
  limits.wall_timeout_ms = 5000;
  const auto start = std::chrono::steady_clock::now();
  const ExecutionResult r = RunCode(Fixture("atexit_loop.py"), Snapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_EQ(r.stdout_text, "done\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(3000));
}

TEST(LocalExecutorTest, HostSecretIsNotVisible) {
  setenv("CODEACT_TEST_SECRET", "hunter2", 1);
  RunSnapshot s = Snapshot();
  s.environment["VISIBLE"] = "yes";
  const ExecutionResult r = RunCode(Fixture("read_env.py"), s);
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_EQ(r.stdout_text.find("CODEACT_TEST_SECRET"), std::string::npos);
  EXPECT_EQ(r.stdout_text.find("PATH"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("VISIBLE"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("LANG"), std::string::npos);
}

TEST(LocalExecutorTest, ChildSeesOnlyStdioAndTheBridge) {
  const ExecutionResult r = RunCode(Fixture("list_fds.py"));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_EQ(r.stdout_text, "0 1 2 3 4\n");
}

TEST(LocalExecutorTest, ForgedFrameEndsTheRunWithAClearError) {
  const ExecutionResult r = RunCode(Fixture("forge_frame.py"));
  EXPECT_EQ(r.outcome, Outcome::kError);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->type, "BridgeError");
  EXPECT_NE(r.error->message.find("malformed bridge frame"), std::string::npos) << r.error->message;

  // Well-formed JSON with the wrong field types is refused just as clearly.
  const ExecutionResult typed =
      RunCode("import os\nos.write(4, b'{\"type\":\"tool_call\",\"id\":\"x\"}\\n')\n");
  EXPECT_EQ(typed.outcome, Outcome::kError);
  ASSERT_TRUE(typed.error.has_value());
  EXPECT_EQ(typed.error->message,
            "malformed tool_call frame from the child: \"id\" must be an integer");
}

TEST(LocalExecutorTest, BadLimitsAreRefusedNotIgnored) {
  ExecutionLimits limits;
  limits.max_open_files = 0;
  const ExecutionResult r = RunCode("print(1)", Snapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kSetupError);
  EXPECT_NE(r.message.find("max_open_files"), std::string::npos);
}

TEST(LocalExecutorTest, ManyRunsLeaveNoZombieFdOrTempDir) {
  // The executor keeps a directory of its own (the compiled runner) for its lifetime: create it
  // before TMPDIR points at the directory that must end empty.
  testing::LocalExecutor();
  const testing::ScopedTmpdir scoped_tmp("codeact-leak-test");
  const std::string& tmp = scoped_tmp.path();
  ExecutionLimits quick;
  quick.wall_timeout_ms = 300;
  RunCode("print(1)");  // warm up lazily created state
  const int fds_before = testing::CountOpenFds();
  for (int i = 0; i < 300; ++i) {
    const bool kill = i % 10 == 0;
    const ExecutionResult r = RunCode(kill ? "import time\ntime.sleep(5)\n" : "print(1)\n",
                                      Snapshot(kill ? quick : ExecutionLimits{}));
    ASSERT_EQ(r.outcome, kill ? Outcome::kTimeout : Outcome::kOk) << i << " " << r.message;
  }
  // Finished runs are reaped and cleaned off the caller's path: wait for that to settle. The
  // baseline may still hold the warm-up run's fds (slow reaping, e.g. under sanitizers), so a
  // leak shows as growth: 300 runs would leave hundreds of fds behind.
  EXPECT_TRUE(testing::Eventually([&] { return testing::CountOpenFds() <= fds_before; }))
      << testing::CountOpenFds() << " fds, " << fds_before << " before";
  EXPECT_TRUE(testing::Eventually([] { return testing::CountZombieChildren() == 0; }));
  EXPECT_TRUE(testing::Eventually([&] { return std::filesystem::is_empty(tmp); }));
}

}  // namespace
}  // namespace codeact

namespace codeact {
namespace {

TEST(LocalExecutorTest, AChildThatClosesItsBridgeAndGoesOnEndsAsATimeout) {
  ExecutionLimits limits;
  limits.wall_timeout_ms = 1000;
  const auto start = std::chrono::steady_clock::now();
  const ExecutionResult r =
      RunCode("import os, time\nos.close(4)\ntime.sleep(30)\n", Snapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kTimeout) << r.message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
}

TEST(LocalExecutorTest, AChildThatExitsWithoutAResultSaysSo) {
  const ExecutionResult r = RunCode("import os\nos._exit(7)\n");
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_NE(r.message.find("exited with code 7 without a result"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace codeact

namespace codeact {
namespace {

// Children start from the runner compiled once by the executor, not from its source; the
// runner's own frames still stay out of tracebacks, which name the source file.
TEST(LocalExecutorTest, ChildrenStartFromTheCompiledRunner) {
  // /proc is out of the guard's reach; the command line is the host's business anyway.
  const ExecutionResult r = testing::UnguardedLocalExecutor()->Execute(
      {"print(open('/proc/self/cmdline', 'rb').read().split(b'\\0')[-2].decode())\n"}, Snapshot());
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_TRUE(r.stdout_text.ends_with("/runner.pyc\n")) << r.stdout_text;
  const ExecutionResult failed = RunCode("def f():\n    raise KeyError('k')\nf()\n");
  ASSERT_TRUE(failed.error.has_value());
  EXPECT_NE(failed.error->traceback.find("line 2, in f"), std::string::npos)
      << failed.error->traceback;
  EXPECT_EQ(failed.error->traceback.find("runner"), std::string::npos) << failed.error->traceback;
}

}  // namespace
}  // namespace codeact
