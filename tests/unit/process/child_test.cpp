// Child, CappedBuffer and DrainAvailable against real children (python3.11 and /bin/sh).
#include "process/child.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "os/pipe_io.hpp"

namespace codeact::internal {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr char kPython[] = "/usr/bin/python3.11";
const std::string kFixtures = std::string(CODEACT_TEST_FIXTURES) + "/process/";
// Generous: these only bound a broken test, they are never waited out when things work.
constexpr auto kDeadline = 30s;

LaunchSpec PythonSpec(std::vector<std::string> args) {
  LaunchSpec spec;
  spec.executable = kPython;
  spec.args = {"-I"};
  spec.args.insert(spec.args.end(), args.begin(), args.end());
  spec.environment = {{"CODEACT_TEST_VAR", "visible"}};
  spec.working_dir = "/";
  return spec;
}

struct Output {
  std::string out;
  std::string err;
  bool complete = false;  // both streams reached EOF before the deadline
};

// Reads stdout and stderr until both reach EOF (or the deadline).
Output ReadToEof(const Child& child) {
  CappedBuffer out(1 << 24), err(1 << 24);
  bool out_open = true, err_open = true;
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while ((out_open || err_open) && std::chrono::steady_clock::now() < deadline) {
    pollfd fds[2] = {{child.stdout_fd(), static_cast<short>(out_open ? POLLIN : 0), 0},
                     {child.stderr_fd(), static_cast<short>(err_open ? POLLIN : 0), 0}};
    if (::poll(fds, 2, 100) < 0) continue;
    if (out_open && fds[0].revents != 0) out_open = DrainAvailable(child.stdout_fd(), out);
    if (err_open && fds[1].revents != 0) err_open = DrainAvailable(child.stderr_fd(), err);
  }
  return {out.Take(), err.Take(), !out_open && !err_open};
}

// Reads `fd` until a newline arrives (or the deadline); returns the line without it.
std::string ReadLine(int fd) {
  CappedBuffer buffer(1 << 20);
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (buffer.data().find('\n') == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 100) > 0 && !DrainAvailable(fd, buffer)) break;
  }
  const std::string& data = buffer.data();
  return data.substr(0, data.find('\n'));
}

// report.py's "key values..." lines; "env" lines collect into `env`.
struct Report {
  std::map<std::string, std::string> fields;
  std::set<std::string> env;
};

Report ParseReport(const std::string& text) {
  Report report;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "env") {
      report.env.insert(value);
    } else {
      report.fields[key] = value;
    }
  }
  return report;
}

int CountOpenFds() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (const dirent* ent = ::readdir(dir)) {
    if (ent->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - 1;  // the listing's own fd
}

// (state, ppid) from /proc/<pid>/stat; state '\0' if the process is gone.
std::pair<char, pid_t> ProcState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return {'\0', 0};
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  char state = '\0';
  pid_t ppid = 0;
  rest >> state >> ppid;
  return {state, ppid};
}

// Field `index` (1-based, as in proc(5)) of /proc/<pid>/stat, for fields after the name.
long StatField(pid_t pid, int index) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= index; ++i) rest >> field;
  return std::stol(field);
}

struct ChildCount {
  int alive = 0;
  int zombies = 0;
};

ChildCount CountMyChildren() {
  ChildCount count;
  const pid_t self = ::getpid();
  DIR* dir = ::opendir("/proc");
  while (const dirent* ent = ::readdir(dir)) {
    const pid_t pid = static_cast<pid_t>(std::atol(ent->d_name));
    if (pid <= 0) continue;
    const auto [state, ppid] = ProcState(pid);
    if (ppid != self) continue;
    (state == 'Z' ? count.zombies : count.alive) += 1;
  }
  ::closedir(dir);
  return count;
}

// True once `pid` no longer runs (gone, or a zombie of whoever adopted it).
bool WaitUntilDead(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (std::chrono::steady_clock::now() < deadline) {
    const char state = ProcState(pid).first;
    if (state == '\0' || state == 'Z' || state == 'X') return true;
    ::poll(nullptr, 0, 2);  // re-check shortly; the deadline above is what bounds the wait
  }
  return false;
}

TEST(ChildTest, SeesExactlyTheGivenEnvironment) {
  ASSERT_EQ(::setenv("CODEACT_HOST_SECRET", "hunter2", 1), 0);
  auto child = Child::Start(PythonSpec({kFixtures + "report.py"}));
  ::unsetenv("CODEACT_HOST_SECRET");
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const Output output = ReadToEof(**child);
  ASSERT_TRUE(output.complete);
  const ExitInfo exit = (*child)->Wait();
  ASSERT_TRUE(exit.exited) << output.err;
  EXPECT_EQ(exit.exit_code, 0) << output.err;

  const Report report = ParseReport(output.out);
  const std::string& token = (*child)->run_token();
  EXPECT_EQ(token.size(), 32u);
  EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(report.env,
            (std::set<std::string>{"CODEACT_TEST_VAR=visible", "CODEACT_RUN_TOKEN=" + token}));
  EXPECT_EQ(output.out.find("hunter2"), std::string::npos);
}

TEST(ChildTest, RunTokensDiffer) {
  auto a = Child::Start(PythonSpec({"-c", "pass"}));
  auto b = Child::Start(PythonSpec({"-c", "pass"}));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->run_token(), (*b)->run_token());
}

TEST(ChildTest, ChildHasOnlyStdioAndBridgeFdsAndHostEndsAreCloexec) {
  // A descriptor the host forgot to mark close-on-exec must not reach the child.
  const int leaky = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 0);
  auto child = Child::Start(PythonSpec({kFixtures + "report.py"}));
  ::close(leaky);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const Child& c = **child;

  for (int fd : {c.stdout_fd(), c.stderr_fd(), c.bridge_to_child_fd(), c.bridge_from_child_fd()}) {
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(::fcntl(fd, F_GETFD) & FD_CLOEXEC) << "fd " << fd;
  }
  for (int fd : {c.stdout_fd(), c.stderr_fd(), c.bridge_from_child_fd()}) {
    EXPECT_TRUE(::fcntl(fd, F_GETFL) & O_NONBLOCK) << "fd " << fd;
  }
  EXPECT_FALSE(::fcntl(c.bridge_to_child_fd(), F_GETFL) & O_NONBLOCK)
      << "to_child is documented as blocking";

  const Output output = ReadToEof(c);
  ASSERT_TRUE(output.complete);
  EXPECT_EQ(ParseReport(output.out).fields["fds"], "0 1 2 3 4") << output.err;
}

TEST(ChildTest, HostWithClosedStdioStillGivesTheChildItsLayout) {
  // A daemonised host has 0-2 closed, so the child-side sources land on 0-4 themselves, where a
  // naive dup2 sequence would clobber them (or keep O_CLOEXEC on dup2(fd, fd)). The host ends
  // then live on 0-2 too, so this runs in a forked copy of the test process that reports back.
  int result[2];
  ASSERT_EQ(::pipe2(result, O_CLOEXEC), 0);
  const pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    for (int fd = 0; fd < 3; ++fd) ::close(fd);
    std::string text;
    auto child = Child::Start(PythonSpec({kFixtures + "report.py"}));
    if (!child.ok()) {
      text = child.status().ToString();
    } else {
      text = ReadToEof(**child).out + "exit " + std::to_string((*child)->Wait().exit_code) + "\n";
    }
    (void)!::write(result[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(result[1]);
  std::string text;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(result[0], chunk, sizeof chunk)) > 0)
    text.append(chunk, static_cast<std::size_t>(n));
  ::close(result[0]);
  ::waitpid(helper, nullptr, 0);
  Report report = ParseReport(text);
  EXPECT_EQ(report.fields["fds"], "0 1 2 3 4") << text;
  EXPECT_EQ(report.fields["stdin"], "/dev/null b''");
  EXPECT_EQ(report.fields["exit"], "0");
}

TEST(ChildTest, WithoutBridgeOnlyStdioIsOpen) {
  LaunchSpec spec = PythonSpec({kFixtures + "report.py"});
  spec.bridge = false;
  auto child = Child::Start(spec);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_EQ((*child)->bridge_to_child_fd(), -1);
  EXPECT_EQ((*child)->bridge_from_child_fd(), -1);
  EXPECT_EQ(ParseReport(ReadToEof(**child).out).fields["fds"], "0 1 2");
}

TEST(ChildTest, StdinIsDevNullAndCwdIsSet) {
  auto child = Child::Start(PythonSpec({kFixtures + "report.py"}));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const Report report = ParseReport(ReadToEof(**child).out);
  EXPECT_EQ(report.fields.at("stdin"), "/dev/null b''");
  EXPECT_EQ(report.fields.at("cwd"), "/");
}

TEST(ChildTest, RunsInItsOwnProcessGroupWithParentDeathSignal) {
  auto child = Child::Start(PythonSpec({kFixtures + "report.py"}));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const Report report = ParseReport(ReadToEof(**child).out);
  EXPECT_EQ(report.fields.at("pid"), std::to_string((*child)->pid()));
  EXPECT_EQ(report.fields.at("pgid"), std::to_string((*child)->pid()));
  EXPECT_EQ(report.fields.at("pdeathsig"), std::to_string(SIGKILL));
}

TEST(ChildTest, EveryRlimitIsVisibleInTheChild) {
  LaunchSpec spec = PythonSpec({kFixtures + "report.py"});
  spec.limits.Set(RLIMIT_CPU, 7, 8);
  spec.limits.Set(RLIMIT_AS, 768LL << 20, 768LL << 20);
  spec.limits.Set(RLIMIT_FSIZE, 1LL << 20, 1LL << 20);
  spec.limits.Set(RLIMIT_NOFILE, 64, 64);
  spec.limits.Set(RLIMIT_NPROC, 50, 50);  // we run as root, where the kernel does not enforce it
  auto child = Child::Start(spec);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const Output output = ReadToEof(**child);
  Report report = ParseReport(output.out);
  EXPECT_EQ(report.fields["RLIMIT_CPU"], "7 8") << output.err;
  EXPECT_EQ(report.fields["RLIMIT_AS"],
            std::to_string(768LL << 20) + " " + std::to_string(768LL << 20));
  EXPECT_EQ(report.fields["RLIMIT_FSIZE"], "1048576 1048576");
  EXPECT_EQ(report.fields["RLIMIT_NOFILE"], "64 64");
  EXPECT_EQ(report.fields["RLIMIT_NPROC"], "50 50");
  EXPECT_EQ(report.fields["RLIMIT_CORE"], "0 0");
}

TEST(ChildTest, SignalMaskAndIgnoredSignalsAreReset) {
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);
  struct sigaction ignore = {}, old_action = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGUSR2, &ignore, &old_action), 0);  // SIG_IGN survives exec unless reset

  auto child = Child::Start(PythonSpec({kFixtures + "report.py"}));
  ::sigaction(SIGUSR2, &old_action, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const Report report = ParseReport(ReadToEof(**child).out);
  EXPECT_EQ(report.fields.at("blocked"), "");
  EXPECT_EQ(report.fields.at("sigusr2"), "default");
}

TEST(ChildTest, BridgeCarriesBytesBothWaysAndCloseGivesEof) {
  auto child = Child::Start(PythonSpec({kFixtures + "bridge_echo.py"}));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  Child& c = **child;
  ASSERT_TRUE(WriteAll(c.bridge_to_child_fd(), "ping").ok());
  c.CloseBridgeToChild();
  EXPECT_EQ(c.bridge_to_child_fd(), -1);

  CappedBuffer answer(1024);
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  bool open = true;
  while (open && std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{c.bridge_from_child_fd(), POLLIN, 0};
    if (::poll(&pfd, 1, 100) > 0) open = DrainAvailable(c.bridge_from_child_fd(), answer);
  }
  EXPECT_EQ(answer.data(), "got:ping");
  const ExitInfo exit = c.Wait();
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.exit_code, 0);
}

TEST(ChildTest, WriteAllToADeadChildIsAStatusNotSigpipe) {
  auto child = Child::Start(PythonSpec({"-c", "pass"}));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  ASSERT_TRUE((*child)->Wait().exited);
  const Status status = WriteAll((*child)->bridge_to_child_fd(), "frame nobody reads");
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  sigset_t pending;
  ::sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE)) << "the guarded write left a SIGPIPE behind";
}

TEST(ChildTest, MissingWorkingDirFailsTheStartWithTheStepAndLeavesNothing) {
  const int fds_before = CountOpenFds();
  const ChildCount children_before = CountMyChildren();
  LaunchSpec spec = PythonSpec({"-c", "pass"});
  spec.working_dir = "/nonexistent/codeact-test-dir";
  auto child = Child::Start(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(child.status().message(),
            "chdir(/nonexistent/codeact-test-dir) failed: No such file or directory");
  EXPECT_EQ(CountOpenFds(), fds_before);
  EXPECT_EQ(CountMyChildren().alive, children_before.alive);
  EXPECT_EQ(CountMyChildren().zombies, children_before.zombies);
}

TEST(ChildTest, MissingExecutableFailsTheStartWithExecve) {
  const int fds_before = CountOpenFds();
  const ChildCount children_before = CountMyChildren();
  LaunchSpec spec = PythonSpec({});
  spec.executable = "/nonexistent/python3";
  auto child = Child::Start(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(child.status().message(),
            "execve(/nonexistent/python3) failed: No such file or directory");
  EXPECT_EQ(CountOpenFds(), fds_before);
  EXPECT_EQ(CountMyChildren().alive, children_before.alive);
  EXPECT_EQ(CountMyChildren().zombies, children_before.zombies);
}

TEST(ChildTest, AnRlimitTheKernelRefusesFailsTheStart) {
  // Even root cannot raise RLIMIT_NOFILE above fs.nr_open: the start must fail, not run unlimited.
  std::ifstream nr_open_file("/proc/sys/fs/nr_open");
  std::int64_t nr_open = 0;
  ASSERT_TRUE(nr_open_file >> nr_open);
  const int fds_before = CountOpenFds();
  const ChildCount children_before = CountMyChildren();
  LaunchSpec spec = PythonSpec({"-c", "pass"});
  spec.limits.Set(RLIMIT_NOFILE, nr_open + 1, nr_open + 1);
  auto child = Child::Start(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(child.status().message(), "setrlimit(RLIMIT_NOFILE, " + std::to_string(nr_open + 1) +
                                          ") failed: Operation not permitted");
  EXPECT_EQ(CountOpenFds(), fds_before);
  EXPECT_EQ(CountMyChildren().alive, children_before.alive);
  EXPECT_EQ(CountMyChildren().zombies, children_before.zombies);
}

TEST(ChildTest, AFixedStepTheKernelRefusesFailsTheStartWithItsCall) {
  // Dropping to another uid starts by clearing the supplementary groups, which only a privileged
  // process may do.
  if (::geteuid() == 0) GTEST_SKIP() << "root may call setgroups; run as a non-root user";
  const int fds_before = CountOpenFds();
  LaunchSpec spec = PythonSpec({"-c", "pass"});
  spec.run_as_uid = ::getuid() + 1;
  auto child = Child::Start(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().message(), "setgroups({}) failed: Operation not permitted");
  EXPECT_EQ(CountOpenFds(), fds_before);
}

TEST(ChildTest, InvalidSpecsAreRejectedBeforeFork) {
  LaunchSpec relative = PythonSpec({});
  relative.executable = "python3";
  EXPECT_EQ(Child::Start(relative).status().code(), StatusCode::kInvalidArgument);
  LaunchSpec bad_env = PythonSpec({});
  bad_env.environment["A=B"] = "c";
  EXPECT_EQ(Child::Start(bad_env).status().code(), StatusCode::kInvalidArgument);
  LaunchSpec negative = PythonSpec({});
  negative.limits.Set(RLIMIT_AS, -1, -1);
  EXPECT_EQ(Child::Start(negative).status().code(), StatusCode::kInvalidArgument);
  LaunchSpec nul_arg = PythonSpec({std::string("a\0b", 3)});
  EXPECT_EQ(Child::Start(nul_arg).status().code(), StatusCode::kInvalidArgument);
}

TEST(ChildTest, CpuLimitKillsABusyLoop) {
  LaunchSpec spec = PythonSpec({kFixtures + "busy_loop.py"});
  spec.limits.Set(RLIMIT_CPU, 1, 2);
  auto child = Child::Start(spec);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const ExitInfo exit = (*child)->Wait();
  EXPECT_FALSE(exit.exited);
  EXPECT_THAT(exit.signal, ::testing::AnyOf(SIGXCPU, SIGKILL));
  // The kernel enforces RLIMIT_CPU on tick-sampled time, while wait4 reports the precise
  // runtime: on a contended machine the two differ by well over 10%.
  EXPECT_GE(exit.cpu_seconds, 0.5);
}

TEST(ChildTest, KillAllKillsTheGroupAndASetsidDaemon) {
  auto child = Child::Start(PythonSpec({kFixtures + "setsid_daemon.py"}));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const std::string line = ReadLine((*child)->stdout_fd());
  ASSERT_FALSE(line.empty()) << "the daemon never reported its pid";
  const pid_t daemon = static_cast<pid_t>(std::stol(line));
  // It really left the child's group and session: a group kill cannot reach it.
  ASSERT_NE(ProcState(daemon).first, '\0');
  EXPECT_EQ(StatField(daemon, 5), daemon) << "pgrp";
  EXPECT_EQ(StatField(daemon, 6), daemon) << "session";

  (*child)->KillAll();
  const ExitInfo exit = (*child)->Wait();
  EXPECT_FALSE(exit.exited);
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_TRUE(WaitUntilDead(daemon)) << "daemon " << daemon << " survived KillAll";

  (*child)->KillAll();  // idempotent, also after the reap
  EXPECT_EQ((*child)->Wait().signal, SIGKILL);
}

TEST(ChildTest, WaitAndTryWaitAreIdempotent) {
  auto child = Child::Start(PythonSpec({"-c", "import sys; sys.exit(5)"}));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const ExitInfo first = (*child)->Wait();
  EXPECT_TRUE(first.exited);
  EXPECT_EQ(first.exit_code, 5);
  const auto again = (*child)->TryWait();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->exit_code, 5);
  EXPECT_EQ((*child)->Wait().exit_code, 5);
}

TEST(ChildTest, TryWaitDoesNotBlockOnARunningChild) {
  auto child = Child::Start(PythonSpec({kFixtures + "bridge_echo.py"}));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_FALSE((*child)->TryWait().has_value());
  (*child)->KillAll();
  EXPECT_EQ((*child)->Wait().signal, SIGKILL);
}

TEST(ChildTest, KillAllFromAWatchdogThreadEndsABlockedWait) {
  auto child = Child::Start(PythonSpec({kFixtures + "bridge_echo.py"}));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  Child& c = **child;
  ExitInfo waited;
  std::thread waiter([&] { waited = c.Wait(); });
  c.KillAll();  // whether or not the waiter is already blocked in Wait
  waiter.join();
  EXPECT_FALSE(waited.exited);
  EXPECT_EQ(waited.signal, SIGKILL);
  EXPECT_EQ(c.Wait().signal, SIGKILL);
}

TEST(ChildTest, DestructorKillsAndReapsARunningChild) {
  pid_t pid;
  {
    auto child = Child::Start(PythonSpec({kFixtures + "bridge_echo.py"}));
    ASSERT_TRUE(child.ok()) << child.status().ToString();
    pid = (*child)->pid();
  }
  EXPECT_EQ(ProcState(pid).first, '\0');
}

TEST(ChildTest, ManyStartKillWaitCyclesLeakNoFdsChildrenOrZombies) {
  const int fds_before = CountOpenFds();
  const ChildCount children_before = CountMyChildren();
  for (int i = 0; i < 200; ++i) {
    LaunchSpec spec;
    spec.executable = "/bin/sh";
    spec.args = {"-c", "read line <&3; exit 7"};
    auto child = Child::Start(spec);
    ASSERT_TRUE(child.ok()) << "cycle " << i << ": " << child.status().ToString();
    if (i % 2 == 0) {
      (*child)->KillAll();
      ASSERT_EQ((*child)->Wait().signal, SIGKILL) << "cycle " << i;
    } else {
      (*child)->CloseBridgeToChild();
      const ExitInfo exit = (*child)->Wait();
      ASSERT_TRUE(exit.exited) << "cycle " << i;
      ASSERT_EQ(exit.exit_code, 7) << "cycle " << i;
    }
  }
  EXPECT_EQ(CountOpenFds(), fds_before);
  const ChildCount children_after = CountMyChildren();
  EXPECT_EQ(children_after.alive, children_before.alive);
  EXPECT_EQ(children_after.zombies, 0);
}

TEST(CappedBufferTest, StoresExactlyTheCapAndCountsEverything) {
  CappedBuffer buffer(10);
  buffer.Append("abc", 3);
  buffer.Append("d\0f", 3);
  buffer.Append("ghi", 3);
  EXPECT_FALSE(buffer.truncated());
  buffer.Append("jkl", 3);
  EXPECT_TRUE(buffer.truncated());
  EXPECT_EQ(buffer.data(), std::string("abcd\0fghij", 10));
  EXPECT_EQ(buffer.total_bytes(), 12);
  buffer.Append("mno", 3);
  EXPECT_EQ(buffer.data().size(), 10u);
  EXPECT_EQ(buffer.total_bytes(), 15);
}

TEST(CappedBufferTest, ExactlyFullIsNotTruncated) {
  CappedBuffer buffer(4);
  buffer.Append("ab", 2);
  buffer.Append("cd", 2);
  EXPECT_FALSE(buffer.truncated());
  EXPECT_EQ(buffer.Take(), "abcd");
  CappedBuffer zero(0);
  zero.Append("", 0);
  EXPECT_FALSE(zero.truncated());
  zero.Append("x", 1);
  EXPECT_TRUE(zero.truncated());
  EXPECT_EQ(zero.data(), "");
  EXPECT_EQ(zero.total_bytes(), 1);
}

TEST(CappedBufferTest, DrainAvailableReadsMoreThanTheCapFromAPipe) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  std::string payload;
  for (int i = 0; payload.size() < 50000; ++i) payload += std::to_string(i) + ",";
  ASSERT_EQ(::write(fds[1], payload.data(), payload.size()), static_cast<ssize_t>(payload.size()));

  CappedBuffer buffer(1000);
  EXPECT_TRUE(DrainAvailable(fds[0], buffer)) << "would block: the writer is still open";
  EXPECT_EQ(buffer.data(), payload.substr(0, 1000));
  EXPECT_EQ(buffer.total_bytes(), static_cast<std::int64_t>(payload.size()));
  EXPECT_TRUE(buffer.truncated());

  ::close(fds[1]);
  EXPECT_FALSE(DrainAvailable(fds[0], buffer)) << "EOF once the writer is closed";
  EXPECT_EQ(buffer.total_bytes(), static_cast<std::int64_t>(payload.size()));
  ::close(fds[0]);
}

}  // namespace
}  // namespace codeact::internal
