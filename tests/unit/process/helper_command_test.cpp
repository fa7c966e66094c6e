// RunCommand against real commands (cat, sh, head, true, pwd) found in PATH.
#include "process/helper_command.hpp"

#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace codeact::internal {
namespace {

using namespace std::chrono_literals;

// Only a broken test ever waits this long.
constexpr auto kGenerous = 30s;

int CountOpenFds() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (const dirent* ent = ::readdir(dir)) {
    if (ent->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - 1;
}

char ProcState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return '\0';
  return stat[stat.rfind(')') + 2];
}

int CountMyChildren() {
  int count = 0;
  const pid_t self = ::getpid();
  DIR* dir = ::opendir("/proc");
  while (const dirent* ent = ::readdir(dir)) {
    const long pid = std::atol(ent->d_name);
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    std::istringstream rest(stat.substr(stat.rfind(')') + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == self) ++count;
  }
  ::closedir(dir);
  return count;
}

TEST(RunCommandTest, CatEchoesStdinToStdout) {
  auto result = RunCommand({"cat"}, std::string("hello\0world\n", 12), kGenerous);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->exit.exited);
  EXPECT_EQ(result->exit.exit_code, 0);
  EXPECT_EQ(result->stdout_text, std::string("hello\0world\n", 12));
  EXPECT_EQ(result->stderr_text, "");
  EXPECT_FALSE(result->timed_out);
  EXPECT_FALSE(result->stdout_truncated);
}

TEST(RunCommandTest, LargeStdinAndStdoutAtOnceDoNotDeadlock) {
  // Far more than a pipe buffer in both directions at the same time.
  std::string payload;
  for (int i = 0; payload.size() < (3u << 20); ++i) payload += std::to_string(i) + "\n";
  auto result = RunCommand({"cat"}, payload, kGenerous, 8LL << 20);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(result->stdout_text.size(), payload.size());
  EXPECT_TRUE(result->stdout_text == payload);
}

TEST(RunCommandTest, NonZeroExitKeepsStderr) {
  auto result = RunCommand({"sh", "-c", "echo partial; echo oops >&2; exit 3"}, "", kGenerous);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->exit.exited);
  EXPECT_EQ(result->exit.exit_code, 3);
  EXPECT_EQ(result->stdout_text, "partial\n");
  EXPECT_EQ(result->stderr_text, "oops\n");
}

TEST(RunCommandTest, TimeoutKillsTheWholeGroupAndKeepsEarlierOutput) {
  // The background sleep holds stdout open: only the group kill ends the run. The timeout only
  // has to outlast starting sh and one echo, even on a loaded machine.
  auto result = RunCommand({"sh", "-c", "sleep 1000 & echo $!; wait"}, "", 2s);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->timed_out);
  EXPECT_FALSE(result->exit.exited);
  EXPECT_EQ(result->exit.signal, SIGKILL);
  ASSERT_FALSE(result->stdout_text.empty());
  const pid_t sleeper = static_cast<pid_t>(std::stol(result->stdout_text));
  const auto deadline = std::chrono::steady_clock::now() + kGenerous;
  char state = ProcState(sleeper);
  while (state != '\0' && state != 'Z' && std::chrono::steady_clock::now() < deadline) {
    ::poll(nullptr, 0, 2);
    state = ProcState(sleeper);
  }
  EXPECT_TRUE(state == '\0' || state == 'Z')
      << "background sleep " << sleeper << " survived the timeout";
}

TEST(RunCommandTest, OutputIsCappedPerStreamByteAccurately) {
  auto result = RunCommand({"sh", "-c", "head -c 100000 /dev/zero; head -c 5000 /dev/zero >&2"}, "",
                           kGenerous, 1000);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->exit.exited);
  EXPECT_EQ(result->exit.exit_code, 0);
  EXPECT_EQ(result->stdout_text, std::string(1000, '\0'));
  EXPECT_EQ(result->stderr_text, std::string(1000, '\0'));
  EXPECT_TRUE(result->stdout_truncated);
  EXPECT_TRUE(result->stderr_truncated);
  EXPECT_EQ(result->stdout_bytes, 100000);  // the real size, for messages about the cut
  EXPECT_EQ(result->stderr_bytes, 5000);
}

// A cancelled command's group dies at once, the call returns without waiting for its timeout,
// and a background process in the group goes with it.
TEST(RunCommandTest, CancellationKillsTheGroupAtOnce) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("codeact-run-command-cancel-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string pid_file = dir + "/sleeper";
  CancellationSource cancel;
  std::thread canceller([&] {
    const auto deadline = std::chrono::steady_clock::now() + kGenerous;
    // The shell creates the file before `echo` writes the pid into it (one write).
    const auto written = [&] {
      std::error_code ec;
      return std::filesystem::file_size(pid_file, ec) > 0 && !ec;
    };
    while (!written() && std::chrono::steady_clock::now() < deadline) {
      ::poll(nullptr, 0, 5);
    }
    cancel.Cancel("the run ended");
  });
  const auto start = std::chrono::steady_clock::now();
  auto result = RunCommand({"sh", "-c", "sleep 1000 & echo $! > " + pid_file + "; wait"}, "", 600s,
                           1 << 20, "", cancel.token());
  const auto took = std::chrono::steady_clock::now() - start;
  canceller.join();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->cancelled);
  EXPECT_FALSE(result->timed_out);
  EXPECT_FALSE(result->exit.exited);
  EXPECT_EQ(result->exit.signal, SIGKILL);
  EXPECT_LT(took, 20s);
  std::ifstream in(pid_file);
  pid_t sleeper = 0;
  ASSERT_TRUE(in >> sleeper);
  const auto deadline = std::chrono::steady_clock::now() + kGenerous;
  char state = ProcState(sleeper);
  while (state != '\0' && state != 'Z' && std::chrono::steady_clock::now() < deadline) {
    ::poll(nullptr, 0, 2);
    state = ProcState(sleeper);
  }
  EXPECT_TRUE(state == '\0' || state == 'Z')
      << "background sleep " << sleeper << " survived the cancellation";
  std::filesystem::remove_all(dir);
}

TEST(RunCommandTest, ACommandCancelledBeforeItStartsNeverRuns) {
  const std::string marker = std::filesystem::temp_directory_path() /
                             ("codeact-run-command-never-" + std::to_string(::getpid()));
  CancellationSource cancel;
  cancel.Cancel("too late");
  auto result =
      RunCommand({"sh", "-c", "touch " + marker}, "", kGenerous, 1 << 20, "", cancel.token());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->cancelled);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(RunCommandTest, MissingExecutableIsNotFound) {
  auto in_path = RunCommand({"codeact-no-such-command-xyz"}, "", kGenerous);
  ASSERT_FALSE(in_path.ok());
  EXPECT_EQ(in_path.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(in_path.status().message(), "command not found in PATH: codeact-no-such-command-xyz");

  auto absolute = RunCommand({"/nonexistent/tool"}, "", kGenerous);
  ASSERT_FALSE(absolute.ok());
  EXPECT_EQ(absolute.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(absolute.status().message(),
            "execve(/nonexistent/tool) failed: No such file or directory");

  EXPECT_EQ(RunCommand({}, "", kGenerous).status().code(), StatusCode::kInvalidArgument);
}

TEST(RunCommandTest, CommandThatIgnoresStdinDoesNotRaiseSigpipe) {
  auto result = RunCommand({"true"}, std::string(4 << 20, 'x'), kGenerous);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->exit.exited);
  EXPECT_EQ(result->exit.exit_code, 0);
  sigset_t pending;
  ::sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE));
}

TEST(RunCommandTest, InheritsTheHostEnvironmentAndUsesWorkingDir) {
  ASSERT_EQ(::setenv("CODEACT_RUN_COMMAND_TEST", "inherited", 1), 0);
  char dir_template[] = "/tmp/codeact-run-command-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = std::filesystem::canonical(dir_template).string();
  auto result = RunCommand({"sh", "-c", "printf '%s %s' \"$CODEACT_RUN_COMMAND_TEST\" \"$(pwd)\""},
                           "", kGenerous, 1 << 20, dir);
  ::unsetenv("CODEACT_RUN_COMMAND_TEST");
  std::filesystem::remove(dir);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stdout_text, "inherited " + dir);

  auto missing = RunCommand({"true"}, "", kGenerous, 1 << 20, "/nonexistent/codeact-dir");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "chdir(/nonexistent/codeact-dir) failed: No such file or directory");
}

TEST(RunCommandTest, ConcurrentCallsFromEightThreadsStayApart) {
  const int fds_before = CountOpenFds();
  const int children_before = CountMyChildren();
  constexpr int kThreads = 8;
  constexpr int kRunsPerThread = 10;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      for (int run = 0; run < kRunsPerThread; ++run) {
        std::string payload;
        while (payload.size() < 200000)
          payload += "thread " + std::to_string(t) + " run " + std::to_string(run) + "\n";
        auto result = RunCommand({"cat"}, payload, kGenerous);
        if (!result.ok()) {
          failures[t] = result.status().ToString();
        } else if (result->stdout_text != payload || result->exit.exit_code != 0) {
          failures[t] = "wrong output in run " + std::to_string(run);
        }
        if (!failures[t].empty()) return;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_EQ(CountOpenFds(), fds_before);
  EXPECT_EQ(CountMyChildren(), children_before);
}

// A command that double-forks a setsid daemon (its own session and group, stdio on /dev/null)
// and exits: with kAllDescendants the daemon dies with the command (its cgroup, or its pid
// namespace), where a kill of the process group alone would miss it. Also on a timeout.
TEST(RunCommandTest, AllDescendantsContainsADoubleForkedSetsidDaemon) {
  const std::string dir = ::testing::TempDir() + "run-command-daemon-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  for (const bool hang : {false, true}) {
    const std::string pid_file = dir + (hang ? "/hang.pid" : "/exit.pid");
    const std::string script =
        "(setsid sh -c 'read pid rest < /proc/self/stat; echo $pid > " + pid_file +
        "; exec sleep 300' </dev/null >/dev/null 2>&1 &) </dev/null >/dev/null 2>&1; while [ ! "
        "-s " +
        pid_file + " ]; do sleep 0.01; done; " + (hang ? "exec sleep 300" : "echo done");
    auto r = RunCommand({"/bin/sh", "-c", script}, "", hang ? 2s : kGenerous, 1 << 20, "", {},
                        CommandContainment::kAllDescendants);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->timed_out, hang);
    if (!hang) EXPECT_EQ(r->stdout_text, "done\n");
    std::ifstream in(pid_file);
    pid_t daemon = 0;
    ASSERT_TRUE(static_cast<bool>(in >> daemon)) << "the daemon never wrote its pid";
    const auto until = std::chrono::steady_clock::now() + kGenerous;
    while (ProcState(daemon) != '\0' && ProcState(daemon) != 'Z' &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(10ms);  // polling /proc: the daemon is not our child
    }
    const char state = ProcState(daemon);
    EXPECT_TRUE(state == '\0' || state == 'Z')
        << "the daemon " << daemon << " outlived the command (" << (hang ? "timeout" : "exit")
        << "), state " << state;
    if (state != '\0' && state != 'Z') ::kill(daemon, SIGKILL);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace codeact::internal
