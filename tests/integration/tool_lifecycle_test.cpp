// Tool calls end with their run: a hung command tool is killed when its run times out, the
// worker threads that ran the calls are free again, and the answers about oversized or too
// deeply nested data say what happened.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include "bridge/tool_workers.hpp"
#include "codeact/command_tool.hpp"
#include "codeact/executor.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::LocalExecutor;

int CountThreads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

HostTool Command(const std::string& name, std::vector<std::string> command) {
  CommandToolSpec spec;
  spec.name = name;
  spec.command = std::move(command);
  return MakeCommandTool(std::move(spec));
}

RunSnapshot WithTools(std::vector<HostTool> tools, std::int64_t wall_timeout_ms = 30'000) {
  RunSnapshot s;
  s.tools = std::move(tools);
  s.limits.wall_timeout_ms = wall_timeout_ms;
  return s;
}

TEST(ToolLifecycleTest, AHungCommandToolDiesWithItsRunAndItsThreadIsFreed) {
  const fs::path pids =
      fs::temp_directory_path() / ("codeact-hung-tool-" + std::to_string(::getpid()));
  fs::create_directories(pids);
  // Each call records its pid (the sleep's, after exec) and then hangs far past the run's clock.
  const HostTool hang = Command("hang",
                                // The host's pid (/proc is the host's), also when the tool runs in
                                // a pid namespace of its own, where $$ would be 1.
                                {"/bin/sh", "-c",
                                 "read pid rest < /proc/self/stat; echo $pid > \"$(mktemp " +
                                     pids.string() + "/pid.XXXXXX)\"; exec sleep 30"});
  const HostTool quick = Command("quick", {"/bin/sh", "-c", "echo 1"});
  auto code = [&](const char* tool) {
    return "import asyncio\ncalls = asyncio.gather(*(call_tool('" + std::string(tool) +
           "') for _ in range(3)))\n";
  };
  // The hung calls must all have started before the wall clock ends the run, however slow the
  // machine: the code waits for their pid files (it runs at the process level, unvalidated).
  const std::string hang_code = code("hang") +
                                "import os\n"
                                "while len(os.listdir(" +
                                bj::serialize(bj::value(pids.string())) +
                                ")) < 3:\n"
                                "    await asyncio.sleep(0.01)\n"
                                "await calls\n";

  // Three calls at once leave three idle workers: the baseline the hung calls must return to.
  const ExecutionResult warm = testing::UnguardedLocalExecutor()->Execute(
      {code("quick") + "await calls\n"}, WithTools({quick}));
  ASSERT_EQ(warm.outcome, Outcome::kOk) << warm.message << warm.stderr_text;
  ASSERT_TRUE(
      testing::Eventually([] { return internal::ToolWorkers::Instance().Counts().busy == 0; }));
  const int baseline = CountThreads();

  // Two rounds: hung handlers kept past the first run would need three new threads in the second.
  for (int round = 0; round < 2; ++round) {
    // Unguarded: the code watches a host directory, which the guard's Landlock keeps from it.
    const ExecutionResult r =
        testing::UnguardedLocalExecutor()->Execute({hang_code}, WithTools({hang}, 5000));
    const auto replied = Clock::now();
    ASSERT_EQ(r.outcome, Outcome::kTimeout)
        << r.message << r.stderr_text << (r.error ? r.error->traceback : "");
    std::set<pid_t> sleepers;
    for (const auto& e : fs::directory_iterator(pids)) {
      std::ifstream in(e.path());
      pid_t pid = 0;
      if (in >> pid) sleepers.insert(pid);
      fs::remove(e.path());
    }
    ASSERT_EQ(sleepers.size(), 3u) << "round " << round << ": the calls did not all start";
    // Gone within a second of the reply: killed and reaped, not left to its 30 s.
    std::set<pid_t> alive = sleepers;
    while (!alive.empty() && Clock::now() - replied < std::chrono::seconds(1)) {
      for (auto it = alive.begin(); it != alive.end();)
        it = testing::ProcessAlive(*it) ? std::next(it) : alive.erase(it);
    }
    EXPECT_TRUE(alive.empty()) << "round " << round << ": " << alive.size()
                               << " tool processes outlived the run by 1 s";
    EXPECT_TRUE(testing::Eventually([] {
      return internal::ToolWorkers::Instance().Counts().busy == 0;
    })) << "tool handler threads still busy after their run";
    // Hung handlers kept past their run would each hold a thread: three more every round.
    EXPECT_TRUE(testing::Eventually([&] { return CountThreads() <= baseline; }))
        << "round " << round << ": " << CountThreads() << " threads, " << baseline << " before";
  }
  fs::remove_all(pids);
}

// A command tool that double-forks a setsid daemon (out of its process group and session, its
// stdio on /dev/null) must not leave it running: not when the tool exits at once, nor when the
// tool hangs and its run's wall clock ends the call. As root the tool has a cgroup of its own;
// elsewhere a pid namespace of its own (RunCommand, CommandContainment::kAllDescendants).
TEST(ToolLifecycleTest, ADaemonACommandToolStartsDiesWithTheCall) {
  const fs::path dir =
      fs::temp_directory_path() / ("codeact-daemon-tool-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const bool hang : {false, true}) {
    const std::string pid_file = (dir / (hang ? "hang.pid" : "exit.pid")).string();
    // The daemon writes its host pid; the tool waits for that, then exits (or hangs).
    const std::string daemon = "setsid sh -c 'read pid rest < /proc/self/stat; echo $pid > " +
                               pid_file + "; exec sleep 300' </dev/null >/dev/null 2>&1 &";
    const HostTool tool = Command(
        "daemon", {"/bin/sh", "-c",
                   "(" + daemon + ") </dev/null >/dev/null 2>&1; while [ ! -s " + pid_file +
                       " ]; do sleep 0.01; done; " + (hang ? "exec sleep 300" : "echo started")});
    const ExecutionResult r = LocalExecutor()->Execute({"print(await daemon())\n"},
                                                       WithTools({tool}, hang ? 3000 : 30'000));
    if (hang) {
      EXPECT_EQ(r.outcome, Outcome::kTimeout) << r.message << r.stderr_text;
    } else {
      EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
      EXPECT_EQ(r.stdout_text, "started\n");
    }
    std::ifstream in(pid_file);
    pid_t pid = 0;
    ASSERT_TRUE(static_cast<bool>(in >> pid)) << "the daemon never wrote its pid";
    const std::set<pid_t> alive = testing::WaitAllDead({pid});
    EXPECT_TRUE(alive.empty()) << "the daemon " << pid << " of a command tool outlived its call ("
                               << (hang ? "the run's wall clock" : "the tool exited") << ")";
    for (pid_t p : alive) ::kill(p, SIGKILL);
  }
  fs::remove_all(dir);
}

TEST(ToolLifecycleTest, AnOversizedToolResultIsNamedWithItsRealSize) {
  const HostTool big =
      Command("big", {"python3", "-c", "import sys; sys.stdout.write('x' * (50 << 20))"});
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_lifecycle/an_oversized_tool_result_is_named_with_its_real_size")},
      WithTools({big}));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text,
            "ToolResultTooLarge | the tool's result of 52428800 bytes exceeds the frame limit of "
            "1048576 bytes\n");
}

TEST(ToolLifecycleTest, ToolArgumentsNestedTooDeeplyAreACatchableError) {
  std::atomic<int> calls{0};
  HostTool echo{"echo", "echoes", R"({"type":"object"})", false,
                [&calls](const std::string& kwargs) {
                  ++calls;
                  return ToolResult::Success(std::to_string(kwargs.size()));
                }};
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_lifecycle/tool_arguments_nested_too_deeply_are_a_catchable_error")},
      WithTools({echo}));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text,
            "87\nToolArgumentsTooDeep | the arguments of echo are nested deeper than 128 levels\n");
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace codeact
