// The warm pool of the local executor against real children: pooled runs behave exactly like
// cold ones under every limit fixture, nothing of one run reaches the next, the pool replaces
// children that died idle, follows a change of start key, shrinks when idle, and leaves no
// process behind when the executor goes away or the host is SIGKILLed.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "backends/local/local_executor.hpp"
#include "codeact/executor.hpp"
#include "process/child.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

using internal::IdleChildPids;
using internal::PoolCounters;
using testing::Eventually;
using testing::Fixture;
using testing::NewLocalExecutor;
using testing::Snapshot;
namespace bj = boost::json;

std::set<pid_t> Pids(const std::string& text) {
  std::set<pid_t> pids;
  std::istringstream in(text);
  for (pid_t p; in >> p;) pids.insert(p);
  return pids;
}

// Warms `executor` for `snapshot` until it holds `count` ready children for it; their pids.
std::vector<pid_t> WaitForIdle(Executor& executor, const RunSnapshot& snapshot,
                               std::size_t count = 1) {
  std::vector<pid_t> idle;
  Eventually(
      [&] {
        executor.Warm(snapshot);
        return (idle = IdleChildPids(executor, &snapshot)).size() >= count;
      },
      std::chrono::seconds(30));
  return idle;
}

// Runs `code` on a ready pooled child, and asserts that the pool (not a cold start) served it.
ExecutionResult RunPooled(Executor& executor, const std::string& code,
                          const RunSnapshot& snapshot) {
  EXPECT_FALSE(WaitForIdle(executor, snapshot).empty()) << "the pool did not fill";
  const auto served = PoolCounters(executor).served;
  ExecutionResult r = executor.Execute({code}, snapshot);
  EXPECT_EQ(PoolCounters(executor).served, served + 1) << "the run did not take a pooled child";
  return r;
}

struct LimitCase {
  const char* fixture;
  ExecutionLimits limits;
  Outcome outcome;
  bool forks = false;  // runs without the runtime guard, which refuses fork before any limit is hit
};

ExecutionLimits With(void (*set)(ExecutionLimits&)) {
  ExecutionLimits l;
  set(l);
  return l;
}

std::vector<LimitCase> LimitCases() {
  return {
      {"sleep_past_wall_clock.py", With([](auto& l) { l.wall_timeout_ms = 1000; }),
       Outcome::kTimeout},
      {"busy_cpu.py", With([](auto& l) { l.cpu_time_s = 1, l.wall_timeout_ms = 20'000; }),
       Outcome::kCpuLimit},
      {"allocate_memory.py", With([](auto& l) { l.memory_bytes = 512LL << 20; }),
       Outcome::kMemoryLimit},
      {"stdout_flood_print.py", With([](auto& l) { l.max_stdout_bytes = 1000; }), Outcome::kOk},
      {"stdout_flood_fd.py", With([](auto& l) { l.max_stdout_bytes = 4096; }), Outcome::kOk},
      {"huge_exception.py", {}, Outcome::kError},
      {"fork_children.py", With([](auto& l) {
         l.wall_timeout_ms = 3000;
         l.max_processes = 100;  // RLIMIT_NPROC applies to a root host's per-run uids
       }),
       Outcome::kTimeout, true},
      {"daemon.py", {}, Outcome::kOk, true},
      {"ignore_sigterm.py", With([](auto& l) { l.wall_timeout_ms = 1000; }), Outcome::kTimeout},
      {"swallow_base_exception.py", With([](auto& l) { l.wall_timeout_ms = 1000; }),
       Outcome::kTimeout},
      {"atexit_loop.py", With([](auto& l) { l.wall_timeout_ms = 5000; }), Outcome::kOk},
      {"read_env.py", {}, Outcome::kOk},
      {"list_fds.py", {}, Outcome::kOk},
      {"forge_frame.py", {}, Outcome::kError},
  };
}

class PooledLimitTest : public ::testing::TestWithParam<std::tuple<LimitCase, bool>> {};

// The fixture behind every limit gives the same result on a pooled child (forked from a fork
// server, or an interpreter of its own) as on a cold one: same outcome, exit code, output (pids
// aside) and error; and what it forked is dead either way.
TEST_P(PooledLimitTest, SameResultAsAColdStart) {
  const auto& [c, fork_server] = GetParam();
  const std::string code = Fixture(c.fixture);
  RunSnapshot snapshot = Snapshot(c.limits);
  snapshot.environment["VISIBLE"] = "yes";
  const auto pooled_executor =
      NewLocalExecutor(1, 60'000, fork_server, IsolationLevel::kProcess, !c.forks);
  const ExecutionResult pooled = RunPooled(*pooled_executor, code, snapshot);
  const ExecutionResult cold =
      (c.forks ? testing::UnguardedLocalExecutor() : testing::LocalExecutor())
          ->Execute({code}, snapshot);

  EXPECT_EQ(pooled.outcome, c.outcome) << pooled.message << pooled.stderr_text;
  EXPECT_EQ(cold.outcome, c.outcome) << cold.message << cold.stderr_text;
  EXPECT_EQ(pooled.exit_code, cold.exit_code);
  EXPECT_EQ(pooled.stdout_truncated, cold.stdout_truncated);
  EXPECT_EQ(pooled.error.has_value(), cold.error.has_value());
  if (pooled.error && cold.error) {
    EXPECT_EQ(pooled.error->type, cold.error->type);
    EXPECT_EQ(pooled.error->message, cold.error->message);
  }
  const std::string name = c.fixture;
  if (name == "fork_children.py" || name == "daemon.py") {
    const auto pooled_pids = Pids(pooled.stdout_text);
    const auto cold_pids = Pids(cold.stdout_text);
    EXPECT_EQ(pooled_pids.size(), cold_pids.size()) << pooled.stdout_text;
    EXPECT_FALSE(pooled_pids.empty());
    EXPECT_TRUE(testing::WaitAllDead(pooled_pids).empty());
    EXPECT_TRUE(testing::WaitAllDead(cold_pids).empty());
  } else {
    EXPECT_EQ(pooled.stdout_text, cold.stdout_text);
  }
  if (name == "read_env.py") {
    EXPECT_EQ(pooled.stdout_text.find("CODEACT_WARM"), std::string::npos) << pooled.stdout_text;
    EXPECT_NE(pooled.stdout_text.find("VISIBLE"), std::string::npos) << pooled.stdout_text;
  }
  if (name == "list_fds.py") EXPECT_EQ(pooled.stdout_text, "0 1 2 3 4\n");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PooledLimitTest,
                         ::testing::Combine(::testing::ValuesIn(LimitCases()), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<LimitCase, bool>>& info) {
                           std::string name = std::get<0>(info.param).fixture;
                           name = name.substr(0, name.find('.'));
                           std::erase(name, '_');
                           return name + (std::get<1>(info.param) ? "Forked" : "Started");
                         });

TEST(WarmPoolTest, StateOfOneRunIsNeverVisibleInTheNext) {
  const auto executor = NewLocalExecutor(2);
  const RunSnapshot snapshot = Snapshot();
  const ExecutionResult first = RunPooled(
      *executor, testing::Program("warm_pool/state_of_one_run_is_never_visible_in_the_next"),
      snapshot);
  ASSERT_EQ(first.outcome, Outcome::kOk) << first.message << first.stderr_text;
  const ExecutionResult second = RunPooled(
      *executor, testing::Program("warm_pool/state_of_one_run_is_never_visible_in_the_next_2"),
      snapshot);
  ASSERT_EQ(second.outcome, Outcome::kOk) << second.message << second.stderr_text;
  const auto newline = second.stdout_text.find('\n');
  EXPECT_EQ(second.stdout_text.substr(0, newline), "False False False False False []");
  EXPECT_NE(second.stdout_text.substr(newline + 1), first.stdout_text)
      << "both runs had the same directory";
  // The first run's directory is gone with its child.
  const std::string first_dir = first.stdout_text.substr(0, first.stdout_text.size() - 1);
  EXPECT_TRUE(Eventually([&] { return !std::filesystem::exists(first_dir); })) << first_dir;
}

TEST(WarmPoolTest, AChildThatDiedWhileIdleIsReplacedTransparently) {
  const auto executor = NewLocalExecutor(1);
  const RunSnapshot snapshot = Snapshot();
  const std::vector<pid_t> idle = WaitForIdle(*executor, snapshot);
  ASSERT_EQ(idle.size(), 1u);
  ASSERT_EQ(kill(idle[0], SIGKILL), 0);
  ASSERT_TRUE(testing::WaitAllDead({idle[0]}).empty());

  const ExecutionResult r = executor->Execute({"print(6 * 7)"}, snapshot);
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "42\n");
  EXPECT_GE(PoolCounters(*executor).replaced, 1);
  // A new child takes its place, and the dead one was reaped.
  EXPECT_TRUE(Eventually([&] {
    const auto now = IdleChildPids(*executor);
    return now.size() == 1 && now[0] != idle[0];
  }));
  EXPECT_TRUE(Eventually([] { return testing::CountZombieChildren() == 0; }));
  const ExecutionResult after = RunPooled(*executor, "print('again')", snapshot);
  EXPECT_EQ(after.stdout_text, "again\n");
}

TEST(WarmPoolTest, AChildThatDiedIdleIsNoticedWithoutARun) {
  const auto executor = NewLocalExecutor(1);
  const RunSnapshot snapshot = Snapshot();
  const std::vector<pid_t> idle = WaitForIdle(*executor, snapshot);
  ASSERT_EQ(idle.size(), 1u);
  ASSERT_EQ(kill(idle[0], SIGKILL), 0);
  // The pool's health check finds it, reaps it and starts another, with no run asking.
  EXPECT_TRUE(Eventually([&] {
    const auto now = IdleChildPids(*executor);
    return now.size() == 1 && now[0] != idle[0];
  }));
  EXPECT_EQ(PoolCounters(*executor).replaced, 1);
  EXPECT_TRUE(Eventually([] { return testing::CountZombieChildren() == 0; }));
}

TEST(WarmPoolTest, AChangeOfStartKeyGetsChildrenStartedUnderTheNewConfig) {
  const auto executor = NewLocalExecutor(1);
  const std::string code =
      "import os, resource\nprint(os.environ['MODE'], "
      "resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n";
  RunSnapshot a = Snapshot();
  a.environment["MODE"] = "a";
  a.limits.max_open_files = 200;  // an rlimit that needs no cgroup: any host can run this test
  RunSnapshot b = a;
  b.environment["MODE"] = "b";
  RunSnapshot c = a;
  c.limits.max_open_files = 100;

  EXPECT_EQ(RunPooled(*executor, code, a).stdout_text, "a 200\n");
  // Straight after a change no child of the new key is ready: the run must not get one of the
  // old key's.
  EXPECT_EQ(executor->Execute({code}, b).stdout_text, "b 200\n");
  EXPECT_EQ(executor->Execute({code}, c).stdout_text, "a 100\n");
  EXPECT_EQ(RunPooled(*executor, code, b).stdout_text, "b 200\n");
  EXPECT_EQ(RunPooled(*executor, code, c).stdout_text, "a 100\n");
  EXPECT_EQ(RunPooled(*executor, code, a).stdout_text, "a 200\n");
}

// Issue 33: "8 requests with 8 different limits.max_open_files took the server from 8 to 64
// descendant processes". The keys of one tenant are bounded (WarmPool::kMaxKeysPerTenant): the
// idle children and fork servers of only its two most recent keys stay, and another tenant's
// keys do not push them out.
TEST(WarmPoolTest, EightLimitSetsOfOneTenantKeepTwoKeysOfIdleProcesses) {
  const auto executor = NewLocalExecutor(2);
  const auto make = [](int i, std::string tenant) {
    RunSnapshot s = Snapshot();
    s.tenant = std::move(tenant);
    s.limits.max_open_files = 300 + i;  // an rlimit: a start key of its own, on any host
    return s;
  };
  for (int i = 0; i < 8; ++i) {
    const ExecutionResult r = executor->Execute({"1"}, make(i, "caller-a"));
    ASSERT_EQ(r.outcome, Outcome::kOk) << i << ": " << r.message;
  }
  const RunSnapshot last = make(7, "caller-a");
  const RunSnapshot before_last = make(6, "caller-a");
  ASSERT_TRUE(Eventually(
      [&] {
        return IdleChildPids(*executor, &last).size() == 2 &&
               IdleChildPids(*executor, &before_last).size() == 2;
      },
      std::chrono::seconds(60)));
  for (int i = 0; i < 6; ++i) {
    const RunSnapshot old = make(i, "caller-a");
    EXPECT_TRUE(IdleChildPids(*executor, &old).empty()) << "key " << i << " kept its children";
  }
  EXPECT_EQ(IdleChildPids(*executor).size(), 4u);
  // Two keys' fork servers at most (zygotes per key: up to one per core, at most the pool size).
  EXPECT_TRUE(Eventually([&] { return internal::ForkServerPids(*executor).size() <= 4; }))
      << internal::ForkServerPids(*executor).size();

  // Another tenant's key is its own, and leaves caller-a's two.
  const RunSnapshot other = make(7, "caller-b");
  ASSERT_EQ(executor->Execute({"1"}, other).outcome, Outcome::kOk);
  ASSERT_TRUE(Eventually([&] { return IdleChildPids(*executor, &other).size() == 2; },
                         std::chrono::seconds(60)));
  EXPECT_EQ(IdleChildPids(*executor, &last).size(), 2u);
  EXPECT_EQ(IdleChildPids(*executor, &before_last).size(), 2u);
}

TEST(WarmPoolTest, ARunThatFindsNoReadyChildStartsItsOwnInsteadOfWaiting) {
  const auto executor = NewLocalExecutor(1);
  const RunSnapshot snapshot = Snapshot();
  std::vector<std::future<ExecutionResult>> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(
        std::async(std::launch::async, [&] { return executor->Execute({"print(1)"}, snapshot); }));
  }
  for (auto& run : runs) {
    const ExecutionResult r = run.get();
    EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
    EXPECT_EQ(r.stdout_text, "1\n");
  }
  EXPECT_GE(PoolCounters(*executor).missed, 3);
}

TEST(WarmPoolTest, TheKeyShrinksToNothingWhenIdle) {
  const auto executor = NewLocalExecutor(2, /*pool_idle_timeout_ms=*/300);
  const RunSnapshot snapshot = Snapshot();
  const std::vector<pid_t> idle = WaitForIdle(*executor, snapshot, 2);
  ASSERT_EQ(idle.size(), 2u);
  // Nobody uses the key now: its children are stopped, and reaped.
  EXPECT_TRUE(Eventually([&] { return IdleChildPids(*executor).empty(); }));
  EXPECT_TRUE(testing::WaitAllDead({idle.begin(), idle.end()}).empty());
  // Its fork server goes with it.
  EXPECT_TRUE(Eventually([&] { return internal::ForkServerPids(*executor).empty(); }));
  EXPECT_TRUE(Eventually([] { return testing::CountZombieChildren() == 0; }));
  // And the next run still works (cold, then the key fills again).
  const ExecutionResult r = executor->Execute({"print(1)"}, snapshot);
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
}

TEST(WarmPoolTest, DestroyingTheExecutorLeavesNoProcessFdOrDirectoryBehind) {
  const testing::ScopedTmpdir scoped_tmp("codeact-pool-test");
  const std::string& tmp = scoped_tmp.path();
  const int fds_before = testing::CountOpenFds();
  std::vector<pid_t> idle;
  {
    auto executor = NewLocalExecutor(2);
    const RunSnapshot snapshot = Snapshot();
    for (int i = 0; i < 20; ++i) {
      const ExecutionResult r = executor->Execute({"print(1)"}, snapshot);
      ASSERT_EQ(r.outcome, Outcome::kOk) << i << " " << r.message;
    }
    idle = WaitForIdle(*executor, snapshot, 2);
    ASSERT_EQ(idle.size(), 2u);
    const auto zygotes = internal::ForkServerPids(*executor);
    ASSERT_GE(zygotes.size(), 1u);  // one per core, up to the pool's size
    idle.insert(idle.end(), zygotes.begin(), zygotes.end());
    EXPECT_FALSE(std::filesystem::is_empty(tmp));  // the idle children's directories
  }
  // The destructor kills everything and reaps what it forked itself. Forked children are not the
  // host's: they are SIGKILLed and die with their fork server, a moment later.
  EXPECT_TRUE(testing::WaitAllDead({idle.begin(), idle.end()}).empty());
  EXPECT_EQ(testing::CountZombieChildren(), 0);
  EXPECT_LE(testing::CountOpenFds(), fds_before);
  EXPECT_TRUE(std::filesystem::is_empty(tmp));
}

// Reads one line from a non-blocking fd, waiting up to `timeout`.
std::string ReadLine(int fd, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string line;
  char c;
  while (line.empty() || line.back() != '\n') {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = read(fd, &c, 1);
    if (n == 0) break;
    if (n == 1) line += c;
  }
  return line;
}

// `pid` and every process below it (/proc/<pid>/task/<pid>/children, recursively).
std::set<pid_t> WithDescendants(pid_t pid) {
  std::set<pid_t> all{pid};
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  for (pid_t child; in >> child;) {
    const std::set<pid_t> below = WithDescendants(child);
    all.insert(below.begin(), below.end());
  }
  return all;
}

// The pool host (tests/testing/pool_host.cpp) with a pool of 2 at `level`, and this process's
// TMPDIR: a non-root user may have no other place for scratch directories.
internal::LaunchSpec PoolHostSpec(const char* level) {
  internal::LaunchSpec spec;
  spec.executable = CODEACT_POOL_HOST;
  spec.args = {"2", level};
  spec.bridge = false;
  if (const char* tmp = std::getenv("TMPDIR")) spec.environment["TMPDIR"] = tmp;
  return spec;
}

// At the namespaces level each pooled pid is a sandbox launcher with its init and interpreter,
// or, on a root host with cgroups, an interpreter forked by the zygote inside its own sandbox
// (the zygote's launcher printed after them): all of them must die with the host.
TEST(WarmPoolTest, AHostKilledWithSigkillLeavesNoSandboxedChildBehind) {
  internal::LaunchSpec spec = PoolHostSpec("namespaces");
  spec.limits.Set(RLIMIT_AS, 16LL << 30, 16LL << 30);
  auto host = internal::Child::Start(spec);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  const std::string line = ReadLine((*host)->stdout_fd(), std::chrono::seconds(60));
  const std::set<pid_t> printed = Pids(line);
  const bool zygotes = printed.size() > 2;  // and the launchers of one or two zygotes
  ASSERT_TRUE(printed.size() >= 2u && printed.size() <= 4u)
      << "pool host printed (2 sandboxed children, and the launchers of its zygotes): " << line;
  std::set<pid_t> all;
  for (pid_t pid : printed) {
    const std::set<pid_t> tree = WithDescendants(pid);
    if (!zygotes) EXPECT_EQ(tree.size(), 3u) << "launcher, init and interpreter under " << pid;
    all.insert(tree.begin(), tree.end());
  }
  // Each zygote's tree: launcher, init, zygote, and its children (also printed on their own).
  if (zygotes) EXPECT_EQ(all.size(), 2 + 3 * (printed.size() - 2)) << line;
  ASSERT_EQ(kill((*host)->pid(), SIGKILL), 0);
  EXPECT_EQ((*host)->Wait().signal, SIGKILL);
  EXPECT_TRUE(testing::WaitAllDead(all).empty()) << "sandboxed children outlived their host";
}

TEST(WarmPoolTest, AHostKilledWithSigkillLeavesNoChildBehind) {
  internal::LaunchSpec spec = PoolHostSpec("process");
  spec.limits.Set(RLIMIT_AS, 16LL << 30,
                  16LL << 30);  // a host with threads and an embedded interpreter
  auto host = internal::Child::Start(spec);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  const std::string line = ReadLine((*host)->stdout_fd(), std::chrono::seconds(60));
  const std::set<pid_t> children = Pids(line);
  ASSERT_TRUE(children.size() == 3u || children.size() == 4u)
      << "pool host printed (2 children, 1 or 2 fork servers): " << line;
  for (pid_t pid : children) ASSERT_TRUE(testing::ProcessAlive(pid)) << pid;

  ASSERT_EQ(kill((*host)->pid(), SIGKILL), 0);  // the host alone: no cleanup code runs
  const internal::ExitInfo exit = (*host)->Wait();
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_TRUE(testing::WaitAllDead(children).empty()) << "pooled children outlived their host";
}

TEST(ForkServerTest, PooledChildrenAreForkedFromTheKeysForkServer) {
  const auto executor = NewLocalExecutor(1);
  const RunSnapshot snapshot = Snapshot();
  const ExecutionResult r = RunPooled(*executor, "import os\nprint(os.getppid())", snapshot);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  const auto zygotes = internal::ForkServerPids(*executor);
  ASSERT_EQ(zygotes.size(), 1u);
  EXPECT_EQ(r.stdout_text, std::to_string(zygotes[0]) + "\n");

  const auto started = NewLocalExecutor(1, 60'000, /*fork_server=*/false);
  const ExecutionResult own = RunPooled(*started, "import os\nprint(os.getppid())", snapshot);
  EXPECT_EQ(own.stdout_text, std::to_string(getpid()) + "\n");
  EXPECT_TRUE(internal::ForkServerPids(*started).empty());
}

// The zygote spends CPU on every fork, so it runs under a larger CPU limit than the runs; each
// forked child has exactly the runs' limit, as a cold child has.
TEST(ForkServerTest, ForkedChildrenHaveTheRunsCpuLimitAndTheZygoteOutlivesIt) {
  const auto executor = NewLocalExecutor(1);
  ExecutionLimits limits;
  limits.cpu_time_s = 1;
  const RunSnapshot snapshot = Snapshot(limits);
  const std::string code = "import resource\nprint(*resource.getrlimit(resource.RLIMIT_CPU))\n";
  EXPECT_EQ(RunPooled(*executor, code, snapshot).stdout_text, "1 2\n");
  EXPECT_EQ(testing::LocalExecutor()->Execute({code}, snapshot).stdout_text, "1 2\n");
  const auto zygotes = internal::ForkServerPids(*executor);
  ASSERT_EQ(zygotes.size(), 1u);
  const std::string limits_text =
      testing::ReadFile("/proc/" + std::to_string(zygotes[0]) + "/limits");
  EXPECT_NE(limits_text.find("Max cpu time              86400"), std::string::npos) << limits_text;
}

// Read through /proc and a fork, beneath the runtime guard (which refuses both).
TEST(ForkServerTest, AForkedChildCarriesARunTokenOfItsOwn) {
  const auto executor =
      NewLocalExecutor(1, 60'000, true, IsolationLevel::kProcess, /*runtime_guard=*/false);
  const RunSnapshot snapshot = Snapshot();
  // The token the host's /proc sweep looks for, as /proc shows it and as a program exec'd by the
  // code would inherit it; then a forked grandchild's view.
  const std::string code =
      testing::Program("warm_pool/a_forked_child_carries_a_run_token_of_its_own");
  std::set<std::string> tokens;
  for (int i = 0; i < 2; ++i) {
    const ExecutionResult r = RunPooled(*executor, code, snapshot);
    ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
    std::istringstream in(r.stdout_text);
    std::string shown, inherited, grandchild, zygote;
    in >> shown >> inherited >> grandchild >> zygote;
    EXPECT_EQ(shown.size(), 32u) << r.stdout_text;
    EXPECT_EQ(inherited, shown);
    EXPECT_EQ(grandchild, shown);
    EXPECT_NE(zygote, shown);
    // The zygote is not dumpable: a child cannot read its environment (or memory, or fds).
    EXPECT_EQ(zygote, "unreadable");
    tokens.insert(shown);
  }
  EXPECT_EQ(tokens.size(), 2u) << "two runs shared a token";
}

TEST(ForkServerTest, AForkServerThatDiedIsReplacedAndRunsGoOn) {
  const auto executor = NewLocalExecutor(1);
  const RunSnapshot snapshot = Snapshot();
  const auto idle = WaitForIdle(*executor, snapshot);
  ASSERT_EQ(idle.size(), 1u);
  const auto zygotes = internal::ForkServerPids(*executor);
  ASSERT_EQ(zygotes.size(), 1u);
  ASSERT_EQ(kill(zygotes[0], SIGKILL), 0);
  // Its idle child dies with it (parent-death signal); runs go on without a failure.
  EXPECT_TRUE(testing::WaitAllDead({idle[0]}).empty());
  for (int i = 0; i < 3; ++i) {
    const ExecutionResult r = executor->Execute({"print('still here')"}, snapshot);
    EXPECT_EQ(r.stdout_text, "still here\n") << r.message << r.stderr_text;
  }
  // A new fork server takes over, and pooled children come from it again.
  const ExecutionResult r = RunPooled(*executor, "import os\nprint(os.getppid())", snapshot);
  const auto now = internal::ForkServerPids(*executor);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now[0], zygotes[0]);
  EXPECT_EQ(r.stdout_text, std::to_string(now[0]) + "\n");
  EXPECT_TRUE(Eventually([] { return testing::CountZombieChildren() == 0; }));
}

}  // namespace
}  // namespace codeact
