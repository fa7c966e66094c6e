// A cgroup per run, at both local levels, with validation off (the executor is what is tested):
// memory the address-space limit never sees (memfd) ends as memory_limit, a setsid fork storm
// ends on the wall clock and leaves nothing behind, a daemon that rewrote its environment dies
// with the run, usage is reported, pooled and forked children are in their run's group, no group
// outlives its run, and where no cgroup can be made an explicit memory or process limit is
// refused while the defaults degrade with a note. Then the CLI as an unprivileged user (issue
// 19): its own subtree, made by `codeact setup-cgroups --user`. The last tests take the cgroup v2
// path on a real cgroup2 hierarchy, mounted in a private mount namespace (the kernel of a cgroup
// v1 host has one too; issue 19): where it offers no memory or pids controller, as here, what v2
// does without them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "backends/local/local_executor.hpp"
#include "backends/run_outcome.hpp"
#include "testing/cli_support.hpp"
#include "codeact/executor.hpp"
#include "codeact/json.hpp"
#include "files/mount_capture.hpp"
#include "process/child.hpp"
#include "process/run_cgroup.hpp"
#include "process/session_cgroups.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;
using Clock = std::chrono::steady_clock;
using testing::Fixture;
using testing::NewLocalExecutor;
using testing::Snapshot;

std::shared_ptr<const internal::CgroupSite> Site() {
  return internal::CgroupSite::ForThisProcess();
}

#define SKIP_WITHOUT_CGROUPS()                                                         \
  if (!Site()->pids() || !Site()->memory()) {                                          \
    GTEST_SKIP() << "no pids and memory cgroup can be made here: " << Site()->missing; \
  }

// The executor's environment notes, one a line.
std::string Notes(const Executor& executor) {
  std::string out;
  for (const auto& note : internal::EnvironmentNotes(executor)) out += note + "\n";
  return out;
}

bool NamespacesAvailable() {
  static const bool available = [] {
    ExecutorOptions options;
    options.isolation = IsolationLevel::kNamespaces;
    options.warm_pool_size = 0;
    return CreateExecutor(options).ok();
  }();
  return available;
}

// The executors under test: each level, cold and (process level) pooled with and without the fork
// server.
struct LevelSetup {
  const char* name;
  IsolationLevel level;
  int pool;
  bool fork_server;
};
constexpr LevelSetup kSetups[] = {
    {"process, cold", IsolationLevel::kProcess, 0, false},
    {"process, pooled", IsolationLevel::kProcess, 1, false},
    {"process, fork server", IsolationLevel::kProcess, 1, true},
    {"namespaces, cold", IsolationLevel::kNamespaces, 0, false},
    {"namespaces, pooled", IsolationLevel::kNamespaces, 1, false},
};

// Runs `code` on the setup's executor; a pooled setup waits until its pool holds a child first.
ExecutionResult RunOn(const LevelSetup& setup, Executor& executor, const std::string& code,
                      const RunSnapshot& s) {
  if (setup.pool > 0) {
    testing::Eventually(
        [&] {
          executor.Warm(s);
          return !internal::IdleChildPids(executor, &s).empty();
        },
        std::chrono::seconds(30));
  }
  return executor.Execute({code}, s);
}

std::string RandomMarker() {
  std::random_device rd;
  return "codeact-cgroup-test-" + std::to_string(rd()) + std::to_string(rd());
}

// Live (non-zombie) processes whose environment holds `entry`.
std::set<pid_t> ProcessesWithEnv(const std::string& entry) {
  std::set<pid_t> found;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string env = testing::ReadFile("/proc/" + name + "/environ");
    if (env.find(entry) != std::string::npos && testing::ProcessAlive(std::stoi(name)))
      found.insert(std::stoi(name));
  }
  return found;
}

// Whether `pid` has SIGKILL pending (or is gone): it will never run user code again.
bool SigkillPending(pid_t pid) {
  const std::string status = testing::ReadFile("/proc/" + std::to_string(pid) + "/status");
  for (const char* field : {"\nSigPnd:\t", "\nShdPnd:\t"}) {
    const auto at = status.find(field);
    if (at == std::string::npos) return true;
    const unsigned long long mask =
        std::stoull(status.substr(at + std::strlen(field), 16), nullptr, 16);
    if (mask & (1ULL << (SIGKILL - 1))) return true;
  }
  return status.empty();
}

// Whether `pid` will never run user code again: SIGKILL pending, or already exiting (the kernel
// took the signal off the pending set and is tearing the process down: PF_EXITING, 0x4, in the
// flags of /proc/<pid>/stat), or gone.
bool Dying(pid_t pid) {
  if (SigkillPending(pid)) return true;
  const std::string stat = testing::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return true;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i < 9; ++i) rest >> field;  // state, ppid, pgrp, session, tty_nr, tpgid
  unsigned long flags = 0;
  rest >> flags;
  return (flags & 0x4) != 0;
}

// Whether `pid` is one of `roots` or descends from one (by parent pids).
bool DescendsFrom(pid_t pid, const std::set<pid_t>& roots) {
  for (int depth = 0; pid > 1 && depth < 64; ++depth) {
    if (roots.count(pid)) return true;
    const std::string stat = testing::ReadFile("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) return false;
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    rest >> state >> pid;
  }
  return false;
}

// Run groups of this test process still present, in any hierarchy.
int OwnCgroups() {
  int n = 0;
  const std::string mine = std::to_string(getpid()) + "-";
  for (const auto& h : Site()->hierarchies) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(h.dir, ec))
      n += e.path().filename().string().rfind(mine, 0) == 0;
  }
  return n;
}

class CgroupLevelTest : public ::testing::TestWithParam<LevelSetup> {
 protected:
  void SetUp() override {
    if (!Site()->pids() || !Site()->memory())
      GTEST_SKIP() << "no pids and memory cgroup here: " << Site()->missing;
    if (GetParam().level == IsolationLevel::kNamespaces && !NamespacesAvailable()) {
      GTEST_SKIP() << "the namespaces level is not available here";
    }
    // Without the runtime guard, which keeps the code from forking and from reading /proc: what
    // is tested here is the cgroup beneath it.
    executor_ =
        NewLocalExecutor(GetParam().pool, 60'000, GetParam().fork_server, GetParam().level, false);
  }
  ExecutionResult Run(const std::string& code, const RunSnapshot& s = Snapshot()) {
    return RunOn(GetParam(), *executor_, code, s);
  }
  std::unique_ptr<Executor> executor_;
};

TEST_P(CgroupLevelTest, MemoryWrittenToMemfdsIsAMemoryLimit) {
  ExecutionLimits limits;
  limits.memory_bytes = 256LL << 20;
  const ExecutionResult r = Run(Fixture("memfd_fill.py"), Snapshot(limits));
  EXPECT_EQ(OutcomeName(r.outcome), "memory_limit") << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("held 1 GiB"), std::string::npos);
  EXPECT_NE(r.message.find("OOM killer"), std::string::npos) << r.message;
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  ASSERT_TRUE(r.usage.peak_memory_bytes.has_value());
  EXPECT_LE(*r.usage.peak_memory_bytes, 256LL << 20);
}

TEST_P(CgroupLevelTest, ASetsidForkStormEndsOnTheWallClockAndLeavesNothing) {
  const std::string marker = RandomMarker();
  ExecutionLimits limits;
  limits.wall_timeout_ms = 5000;
  limits.max_processes = 1000;
  RunSnapshot s = Snapshot(limits);
  s.environment["CODEACT_STORM"] = marker;
  const auto start = Clock::now();
  const ExecutionResult r = Run(Fixture("setsid_fork_storm.py"), s);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  EXPECT_EQ(OutcomeName(r.outcome), "timeout") << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "storming\n");
  EXPECT_LT(took.count(), 6000) << "the run returned after " << took.count() << " ms";
  RecordProperty("storm_return_ms", static_cast<int>(took.count()));
  // When Execute returns, every storm process has SIGKILL pending (exiting takes a while after a
  // storm), and soon none is left. (The pool's next child for this snapshot, and its fork server,
  // carry the marker too: they are not the run's.)
  auto storm = [&] {
    std::set<pid_t> pool;
    for (pid_t p : internal::IdleChildPids(*executor_)) pool.insert(p);
    for (pid_t p : internal::ForkServerPids(*executor_)) pool.insert(p);
    std::set<pid_t> found;
    for (pid_t p : ProcessesWithEnv("CODEACT_STORM=" + marker)) {
      if (!DescendsFrom(p, pool)) found.insert(p);
    }
    return found;
  };
  const auto left = storm();
  int not_dying = 0;
  for (pid_t pid : left) not_dying += !SigkillPending(pid);
  EXPECT_EQ(not_dying, 0) << "of " << left.size() << " storm processes left when the run returned";
  EXPECT_TRUE(testing::Eventually([&] { return storm().empty(); }, std::chrono::seconds(30)))
      << storm().size() << " storm processes outlived the run";
}

TEST_P(CgroupLevelTest, UsageIsReported) {
  const ExecutionResult r = Run("x = bytearray(96 << 20)\nsum(range(3_000_000))\n");
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  ASSERT_TRUE(r.usage.cpu_ms.has_value());
  EXPECT_GT(*r.usage.cpu_ms, 0);
  ASSERT_TRUE(r.usage.peak_memory_bytes.has_value());
  EXPECT_GE(*r.usage.peak_memory_bytes, 96LL << 20);
  EXPECT_LT(*r.usage.peak_memory_bytes, 1LL << 30);
  EXPECT_FALSE(r.usage.workdir_bytes.has_value());
  const auto json = bj::parse(ToJson(r));
  EXPECT_EQ(json.at("usage").at("peak_memory_bytes").as_int64(), *r.usage.peak_memory_bytes);
  EXPECT_TRUE(json.at("usage").at("workdir_bytes").is_null());
}

// A child is in its run's group before it runs anything: idle pooled children (seen from the
// host) and the code of a run (seen from inside, where the level shows host paths).
TEST_P(CgroupLevelTest, ChildrenAreInTheirRunsGroup) {
  const std::regex run_group("/" + internal::CgroupSubtreeName(geteuid()) +
                             "/[0-9]+-[0-9]+-[0-9]+\n");
  auto groups_of = [&](const std::string& cgroup_file) {
    int n = 0;
    for (const char* c : {":pids:", ":memory:", ":cpu:", ":cpuacct:", ":cpu,cpuacct:", "0::"}) {
      const std::string text = cgroup_file;
      const auto at = text.find(c);
      if (at == std::string::npos) continue;
      const std::string line = text.substr(at, text.find('\n', at) - at + 1);
      n += std::regex_search(line, run_group);
    }
    return n;
  };
  const int expected = static_cast<int>(Site()->hierarchies.size());
  if (GetParam().pool > 0) {
    RunSnapshot s = Snapshot();
    testing::Eventually([&] {
      executor_->Warm(s);
      return !internal::IdleChildPids(*executor_, &s).empty();
    });
    const auto idle = internal::IdleChildPids(*executor_, &s);
    ASSERT_FALSE(idle.empty());
    for (pid_t pid : idle) {
      const std::string file = testing::ReadFile("/proc/" + std::to_string(pid) + "/cgroup");
      EXPECT_EQ(groups_of(file), expected) << file;
    }
  }
  if (GetParam().level == IsolationLevel::kProcess) {
    const ExecutionResult r = Run("print(open('/proc/self/cgroup').read())");
    EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
    EXPECT_EQ(groups_of(r.stdout_text), expected) << r.stdout_text;
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, CgroupLevelTest, ::testing::ValuesIn(kSetups),
                         [](const ::testing::TestParamInfo<LevelSetup>& info) {
                           std::string id;
                           for (char c : std::string(info.param.name))
                             id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return id;
                         });

// At the process level, the token sweep cannot find a daemon that left the group and replaced its
// environment; its run's group still holds it.
TEST(CgroupTest, ADaemonThatRewroteItsEnvironmentDiesWithTheRun) {
  SKIP_WITHOUT_CGROUPS();
  for (const LevelSetup& setup : {kSetups[0], kSetups[2]}) {
    // Without the runtime guard, which would refuse the fork: the cgroup is what is tested.
    auto executor =
        NewLocalExecutor(setup.pool, 60'000, setup.fork_server, IsolationLevel::kProcess, false);
    const ExecutionResult r =
        RunOn(setup, *executor, Fixture("env_rewriting_daemon.py"), Snapshot());
    EXPECT_EQ(r.outcome, Outcome::kOk) << setup.name << ": " << r.message << r.stderr_text;
    const pid_t daemon = std::atoi(r.stdout_text.c_str());
    ASSERT_GT(daemon, 0) << r.stdout_text;
    EXPECT_TRUE(testing::WaitAllDead({daemon}).empty())
        << setup.name << ": daemon " << daemon << " survived";
  }
}

// Pooled children, fork servers, timeouts and crashes: no group outlives its run, or the
// executor's idle children.
TEST(CgroupTest, ManyRunsLeaveNoCgroupBehind) {
  SKIP_WITHOUT_CGROUPS();
  ExecutionLimits quick;
  quick.wall_timeout_ms = 300;
  for (const LevelSetup& setup : kSetups) {
    if (setup.level == IsolationLevel::kNamespaces && !NamespacesAvailable()) continue;
    {
      auto executor = NewLocalExecutor(setup.pool, 60'000, setup.fork_server, setup.level);
      for (int i = 0; i < 12; ++i) {
        const int kind = i % 4;
        const char* code = kind == 0   ? "import time\ntime.sleep(5)\n"
                           : kind == 1 ? "import os\nos._exit(3)\n"
                                       : "print(1)\n";
        const ExecutionResult r =
            executor->Execute({code}, Snapshot(kind == 0 ? quick : ExecutionLimits{}));
        EXPECT_EQ(r.outcome, kind == 0   ? Outcome::kTimeout
                             : kind == 1 ? Outcome::kError
                                         : Outcome::kOk)
            << setup.name << " " << i << " " << r.message;
      }
    }
    EXPECT_TRUE(testing::Eventually([] { return OwnCgroups() == 0; }))
        << setup.name << ": " << OwnCgroups() << " left";
  }
}

// Where no cgroup can be made (simulated by pointing the library at an empty cgroup root): the
// defaults degrade with a note, an explicit memory or process limit is refused, and leftovers are
// still found by the run token.
TEST(CgroupTest, WithoutCgroupsExplicitLimitsAreRefusedAndDefaultsDegrade) {
  auto root = internal::TempDir::Create("codeact-no-cgroups-");
  ASSERT_TRUE(root.ok());
  setenv("CODEACT_CGROUP_ROOT", root->path().c_str(), 1);
  std::vector<IsolationLevel> levels = {IsolationLevel::kProcess};
  if (NamespacesAvailable()) levels.push_back(IsolationLevel::kNamespaces);
  for (IsolationLevel level : levels) {
    auto executor =
        NewLocalExecutor(0, 60'000, true, level, /*runtime_guard=*/false);  // the daemon forks
    const ExecutionResult ok = executor->Execute({"print(1)"}, Snapshot());
    EXPECT_EQ(ok.outcome, Outcome::kOk) << ok.message;
    // The note is the executor's, said once, not the result's.
    const std::string notes = Notes(*executor);
    EXPECT_EQ(ok.message.find("no cgroup for this run"), std::string::npos) << ok.message;
    EXPECT_NE(notes.find("no cgroup for this run"), std::string::npos) << notes;
    EXPECT_NE(notes.find("memory is bounded by RLIMIT_AS alone"), std::string::npos) << notes;
    EXPECT_FALSE(ok.usage.peak_memory_bytes.has_value());

    ExecutionLimits memory;
    memory.memory_bytes = 256LL << 20;
    const ExecutionResult refused = executor->Execute({"print(1)"}, Snapshot(memory));
    EXPECT_EQ(refused.outcome, Outcome::kSetupError);
    EXPECT_EQ(refused.stdout_text, "");
    EXPECT_NE(refused.message.find(
                  "the memory_bytes limit of 256 MiB needs a cgroup, and none can be made here: "),
              std::string::npos)
        << refused.message;

    // Processes are bounded without a cgroup where the run has a uid of its own (a root host) or
    // a user namespace (RLIMIT_NPROC counts its tasks alone); otherwise refused.
    ExecutionLimits processes;
    processes.max_processes = 8;
    const ExecutionResult also = executor->Execute({"print(1)"}, Snapshot(processes));
    if (geteuid() == 0 || level == IsolationLevel::kNamespaces) {
      EXPECT_EQ(also.outcome, Outcome::kOk) << also.message;
    } else {
      EXPECT_EQ(also.outcome, Outcome::kSetupError);
      EXPECT_NE(also.message.find("the max_processes limit of 8 processes needs a cgroup"),
                std::string::npos)
          << also.message;
    }

    if (level == IsolationLevel::kProcess) {
      const ExecutionResult daemon = executor->Execute({Fixture("daemon.py")}, Snapshot());
      EXPECT_EQ(daemon.outcome, Outcome::kOk) << daemon.message;
      EXPECT_TRUE(testing::WaitAllDead({std::atoi(daemon.stdout_text.c_str())}).empty());
    }
  }
  unsetenv("CODEACT_CGROUP_ROOT");
}

// The pid of a process that has ended and been reaped: an owner that is gone. -1 if none started.
pid_t ReapedPid() {
  internal::LaunchSpec probe;
  probe.executable = "/bin/true";
  probe.bridge = false;
  auto gone = internal::Child::Start(probe);
  if (!gone.ok()) return -1;
  (*gone)->Wait();
  return (*gone)->pid();
}

// Groups of an owner that is gone (a host killed with SIGKILL leaves its groups behind) are
// removed when the next host starts, with what is still in them.
TEST(CgroupTest, TheNextStartRemovesTheGroupsOfADeadOwner) {
  SKIP_WITHOUT_CGROUPS();
  const pid_t dead_owner = ReapedPid();
  ASSERT_GT(dead_owner, 0);
  const std::string name = std::to_string(dead_owner) + "-12345-1";
  internal::LaunchSpec left;
  left.executable = "/bin/sleep";
  left.args = {"3600"};
  left.bridge = false;
  for (const auto& h : Site()->hierarchies) {
    ASSERT_EQ(mkdir((h.dir + "/" + name).c_str(), 0755), 0) << h.dir;
    left.cgroup_procs.push_back(h.dir + "/" + name + "/cgroup.procs");
  }
  auto sleeper = internal::Child::Start(left);
  ASSERT_TRUE(sleeper.ok()) << sleeper.status().ToString();

  const auto run = testing::RunCli({"run", "--isolation", "process", "-"}, "print(1)");
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(internal::WaitForExit(**sleeper, Clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ((*sleeper)->Wait().signal, SIGKILL);
  for (const auto& h : Site()->hierarchies) EXPECT_FALSE(fs::exists(h.dir + "/" + name)) << h.dir;
}

// --- Issue 19: a non-root user. Run as `nobody` through setpriv, at the process level.

constexpr uid_t kNobody = 65534;

class UnprivilegedCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to nobody and to set up its subtree";
    if (!fs::exists("/usr/bin/setpriv")) GTEST_SKIP() << "no setpriv";
    if (Site()->hierarchies.empty() || Site()->hierarchies[0].v2)
      GTEST_SKIP() << "needs cgroup v1 here";
    RemoveNobodysSubtree();
    // The user's own temporary directory: /tmp need not be writable for it.
    auto dir = internal::TempDir::Create("codeact-nobody-");
    ASSERT_TRUE(dir.ok());
    ASSERT_EQ(chown(dir->path().c_str(), kNobody, kNobody), 0);
    tmp_.emplace(std::move(*dir));
  }
  void TearDown() override { RemoveNobodysSubtree(); }

  testing::ProgramRun RunAsNobody(std::vector<std::string> args, const std::string& stdin_data) {
    args.insert(args.begin(), {"/usr/bin/env", "TMPDIR=" + tmp_->path(), "/usr/bin/setpriv",
                               "--reuid=65534", "--regid=65534", "--clear-groups", CODEACT_BINARY});
    return testing::RunProgram(args, stdin_data);
  }
  static void RemoveNobodysSubtree() {
    for (const auto& h : Site()->hierarchies) {
      ::rmdir((fs::path(h.dir).parent_path() / internal::CgroupSubtreeName(kNobody)).c_str());
    }
  }
  std::optional<internal::TempDir> tmp_;
};

// Without its subtree a user's runs say so once, in the log (issue 31: not in every result), and
// an explicit memory limit holds all the same: RLIMIT_AS, with the runtime guard denying memfds
// and Landlock closing /dev/shm.
TEST_F(UnprivilegedCgroupTest, WithoutItsSubtreeAUserRunsWithANoteAndAnExplicitMemoryLimitHolds) {
  const auto ok = RunAsNobody({"run", "--isolation", "process", "-"}, "print(1)");
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  const auto result = bj::parse(ok.out);
  const std::string message(result.at("message").as_string());
  const std::string missing =
      "codeact-65534 does not exist (run `codeact setup-cgroups --user NAME` once as root)";
  EXPECT_EQ(message.find(missing), std::string::npos) << message;
  EXPECT_NE(ok.err.find(missing), std::string::npos) << ok.err;

  const auto held =
      RunAsNobody({"run", "--isolation", "process", "--no-validate", "--memory-mb", "256", "-"},
                  Fixture("allocate_memory.py"));
  const auto w = bj::parse(held.out);
  EXPECT_EQ(w.at("outcome").as_string(), "memory_limit") << held.out << held.err;
  EXPECT_NE(held.err.find("memory is bounded by RLIMIT_AS, with memfd_create and SysV shm denied"),
            std::string::npos)
      << held.err;
}

TEST_F(UnprivilegedCgroupTest, AfterSetupCgroupsAUsersRunsHaveGroupsInItsOwnSubtree) {
  const auto setup = testing::RunCli({"setup-cgroups", "--user", "nobody"});
  ASSERT_EQ(setup.exit_code, 0) << setup.err;
  int lines = 0;
  for (std::size_t at = 0; (at = setup.out.find("/codeact-65534\n", at)) != std::string::npos; ++at)
    ++lines;
  EXPECT_EQ(lines, static_cast<int>(Site()->hierarchies.size())) << setup.out;

  // The runtime guard denies memfd_create now, so the group is shown holding an allocation: the
  // peak it reports is the group's reading.
  const auto run =
      RunAsNobody({"run", "--isolation", "process", "--no-validate", "--memory-mb", "256", "-"},
                  Fixture("allocate_memory.py"));
  const auto r = bj::parse(run.out);
  EXPECT_EQ(r.at("outcome").as_string(), "memory_limit") << run.out << run.err;
  EXPECT_TRUE(r.at("usage").at("peak_memory_bytes").is_int64()) << run.out;

  // With its subtree the user's runs carry no note about cgroups (the runtime guard keeps the code
  // from reading /proc/self/cgroup; the memory_limit above is the group's).
  const auto plain =
      RunAsNobody({"run", "--isolation", "process", "--no-validate", "-"}, "print(1)");
  const auto w = bj::parse(plain.out);
  EXPECT_EQ(w.at("outcome").as_string(), "ok") << plain.out << plain.err;
  EXPECT_EQ(std::string(w.at("message").as_string()).find("cgroup"), std::string::npos)
      << plain.out;
}

// --- Issue 19: the cgroup v2 path on a real cgroup2 hierarchy. This machine is cgroup v1 (its
// cgroup2 hierarchy holds no controller but hugetlb), so the test mounts cgroup2 itself in a
// private mount namespace — which a v1 host allows as root — and reaches it through
// /proc/<holder>/root. A cgroup2 mount shows the one v2 hierarchy of the kernel: the groups made
// here are real v2 groups, visible through every cgroup2 mount of the host.

class CgroupV2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to mount cgroup2 in a mount namespace";
    auto dir = internal::TempDir::Create("codeact-cgroup2-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    mount_point_.emplace(std::move(*dir));
    const char* mount_path = mount_point_->path().c_str();
    int ready[2];
    ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
    holder_ = fork();
    ASSERT_GE(holder_, 0);
    if (holder_ == 0) {
      // Holds the mount namespace until the test kills it (or dies).
      char status = 0;
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (unshare(CLONE_NEWNS) != 0) {
        status = 1;
      } else if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        status = 2;
      } else if (mount("cgroup2", mount_path, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                       nullptr) != 0) {
        status = 3;
      }
      const int err = errno;
      if (write(ready[1], &status, 1) != 1 || write(ready[1], &err, sizeof err) != sizeof err ||
          status != 0) {
        _exit(1);
      }
      while (true) pause();
    }
    close(ready[1]);
    char status = 1;
    int err = 0;
    const bool told =
        read(ready[0], &status, 1) == 1 && read(ready[0], &err, sizeof err) == sizeof err;
    close(ready[0]);
    if (!told || status != 0) {
      GTEST_SKIP() << "no cgroup2 hierarchy can be mounted here: "
                   << (status == 1   ? "unshare(CLONE_NEWNS)"
                       : status == 2 ? "making / private"
                                     : "mount -t cgroup2")
                   << " failed: " << std::strerror(err);
    }
    root_ = "/proc/" + std::to_string(holder_) + "/root" + mount_point_->path();
    ASSERT_TRUE(fs::exists(root_ + "/cgroup.controllers")) << root_;
    subtree_existed_ = fs::exists(root_ + "/codeact");
    offered_ = testing::ReadFile(root_ + "/cgroup.controllers");
  }

  void TearDown() override {
    unsetenv("CODEACT_CGROUP_ROOT");
    if (holder_ <= 0) return;
    if (!root_.empty()) {
      // No run group of this process is left (an executor removes its last ones as their
      // processes finish exiting), and the subtree goes if this test made it.
      const std::string mine = std::to_string(getpid()) + "-";
      auto own = [&] {
        int n = 0;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(root_ + "/codeact", ec))
          n += e.path().filename().string().rfind(mine, 0) == 0;
        return n;
      };
      EXPECT_TRUE(testing::Eventually([&] { return own() == 0; }, std::chrono::seconds(30)))
          << own() << " run groups left in " << root_ << "/codeact";
      if (!subtree_existed_) rmdir((root_ + "/codeact").c_str());
    }
    kill(holder_, SIGKILL);
    waitpid(holder_, nullptr, 0);
  }

  bool Offered(const char* controller) const {
    std::istringstream words(offered_);
    for (std::string w; words >> w;)
      if (w == controller) return true;
    return false;
  }

  std::shared_ptr<const internal::CgroupSite> NewSite() const {
    return std::make_shared<const internal::CgroupSite>(
        internal::CgroupSite::Discover(root_, 0, "/"));
  }

  // A sleeping process in `group`: it joins itself before exec.
  static std::unique_ptr<internal::Child> Sleeper(const internal::RunCgroup* group,
                                                  std::map<std::string, std::string> env = {}) {
    internal::LaunchSpec spec;
    spec.executable = "/bin/sleep";
    spec.args = {"3600"};
    spec.bridge = false;
    spec.environment = std::move(env);
    if (group != nullptr) spec.cgroup_procs = group->procs_files();
    auto child = internal::Child::Start(spec);
    if (!child.ok()) ADD_FAILURE() << child.status().ToString();
    return child.ok() ? std::move(*child) : nullptr;
  }

  // The line of /proc/<pid>/cgroup for the v2 hierarchy.
  static std::string V2Line(pid_t pid) {
    const std::string text = testing::ReadFile("/proc/" + std::to_string(pid) + "/cgroup");
    const auto at = text.find("0::");
    return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at + 1);
  }

  std::optional<internal::TempDir> mount_point_;
  pid_t holder_ = -1;
  std::string root_;  // the cgroup2 root, as this process reaches it
  std::string offered_;
  bool subtree_existed_ = false;
};

TEST_F(CgroupV2Test, TheSiteIsV2AndSaysWhichControllersAreMissingAndWhy) {
  const auto site = NewSite();
  ASSERT_EQ(site->hierarchies.size(), 1u) << site->missing;
  const auto& h = site->hierarchies[0];
  EXPECT_EQ(h.dir, root_ + "/codeact");
  EXPECT_TRUE(fs::is_directory(h.dir));
  EXPECT_TRUE(h.v2);
  EXPECT_TRUE(h.kill) << "no cgroup.kill (kernel before 5.14?)";
  EXPECT_TRUE(h.cpuacct);
  for (const char* c : {"pids", "memory"}) {
    const bool held = std::string(c) == "pids" ? h.pids : h.memory;
    if (Offered(c)) {
      EXPECT_TRUE(held) << c << " is offered by " << root_ << " but not enabled: " << site->missing;
      continue;
    }
    EXPECT_FALSE(held) << c;
    EXPECT_NE(
        site->missing.find("the " + std::string(c) + " controller is not available in " + h.dir +
                           ": it is not offered by " + root_ + " (cgroup.controllers: \""),
        std::string::npos)
        << site->missing;
  }
  // On a hybrid host (this one) the reason names the v1 hierarchy that holds the controller.
  if (!Offered("memory") &&
      testing::ReadFile("/proc/self/cgroup").find(":memory:") != std::string::npos) {
    EXPECT_NE(site->missing.find("\"), as it is bound to a cgroup v1 hierarchy"), std::string::npos)
        << site->missing;
  }
  RecordProperty("offered", offered_);
  RecordProperty("missing", site->missing);
}

TEST_F(CgroupV2Test, ARunsGroupIsMadeInTheSubtreeAndProcessesJoinIt) {
  const auto site = NewSite();
  auto group = internal::RunCgroup::Create(site, {32, 256LL << 20});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  const std::string name = (*group)->name();
  const std::string dir = root_ + "/codeact/" + name;
  EXPECT_TRUE(std::regex_match(name, std::regex(std::to_string(getpid()) + "-[0-9]+-[0-9]+")))
      << name;
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_EQ((*group)->procs_files(), std::vector<std::string>{dir + "/cgroup.procs"});
  // Limits land only where the controller is: none here.
  EXPECT_EQ(fs::exists(dir + "/pids.max"), site->pids());
  EXPECT_EQ(fs::exists(dir + "/memory.max"), site->memory());

  auto joined = Sleeper(group->get());  // joins itself between fork and exec
  auto moved = Sleeper(nullptr);        // moved in by the host (a fork server's child)
  ASSERT_TRUE(joined && moved);
  EXPECT_EQ(V2Line(moved->pid()), "0::/\n") << "not in the root group at first";
  ASSERT_TRUE((*group)->Join(moved->pid()).ok());
  std::vector<pid_t> pids = (*group)->Pids();
  std::sort(pids.begin(), pids.end());
  std::vector<pid_t> expected = {joined->pid(), moved->pid()};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(pids, expected);
  for (pid_t pid : expected) EXPECT_EQ(V2Line(pid), "0::/codeact/" + name + "\n") << pid;

  group->reset();  // kills what is inside (cgroup.kill), waits, removes the group
  EXPECT_EQ(joined->Wait().signal, SIGKILL);
  EXPECT_EQ(moved->Wait().signal, SIGKILL);
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(CgroupV2Test, CgroupKillWritesEndEveryProcessOfTheGroup) {
  const auto site = NewSite();
  auto group = internal::RunCgroup::Create(site, {});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  auto sleeper = Sleeper(group->get());
  ASSERT_TRUE(sleeper);
  // The kernel's own kill, written by hand: what KillAll writes where the site has `kill`.
  const std::string kill_file = root_ + "/codeact/" + (*group)->name() + "/cgroup.kill";
  std::ofstream(kill_file) << "1";
  EXPECT_TRUE(internal::WaitForExit(*sleeper, Clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(sleeper->Wait().signal, SIGKILL);
  EXPECT_TRUE((*group)->WaitUntilEmpty(std::chrono::seconds(10)));
}

// Processes that leave their session and keep forking, killed through cgroup.kill: none survives,
// not even one forked while the kill was under way, and the group is then removed.
TEST_F(CgroupV2Test, AForkStormIsKilledByCgroupKillWithNoSurvivors) {
  const auto site = NewSite();
  ASSERT_TRUE(site->any()) << site->missing;
  ASSERT_TRUE(site->hierarchies[0].kill) << "KillAll would take the v1 path: no cgroup.kill";
  auto group = internal::RunCgroup::Create(site, {});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  const std::string dir = root_ + "/codeact/" + (*group)->name();
  const std::string marker = RandomMarker();
  // 100 processes in sessions of their own, each forking a short sleep in a loop: without a pids
  // controller nothing bounds them but this script, so it stays small.
  internal::LaunchSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c",
               "i=0; while [ $i -lt 100 ]; do i=$((i+1)); "
               "setsid sh -c 'while :; do sleep 0.2; done' & done; echo storming; "
               "while :; do sleep 0.2; done"};
  spec.environment = {{"CODEACT_STORM", marker}, {"PATH", "/usr/bin:/bin"}};
  spec.bridge = false;
  spec.cgroup_procs = (*group)->procs_files();
  auto storm_root = internal::Child::Start(spec);
  ASSERT_TRUE(storm_root.ok()) << storm_root.status().ToString();
  auto storm = [&] { return ProcessesWithEnv("CODEACT_STORM=" + marker); };
  ASSERT_TRUE(
      testing::Eventually([&] { return (*group)->Pids().size() >= 150; }, std::chrono::seconds(30)))
      << (*group)->Pids().size() << " processes in the group";
  const auto in_group = (*group)->Pids().size();

  const auto start = Clock::now();
  EXPECT_TRUE((*group)->KillAll());
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  const auto left = storm();
  std::string not_dying;
  for (pid_t pid : left) {
    if (!Dying(pid)) not_dying += testing::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  }
  EXPECT_EQ(not_dying, "") << "of " << left.size() << " storm processes left when KillAll returned";
  EXPECT_TRUE((*group)->WaitUntilEmpty(std::chrono::seconds(20)))
      << (*group)->Pids().size() << " left";
  EXPECT_TRUE(testing::Eventually([&] { return storm().empty(); }, std::chrono::seconds(30)))
      << storm().size() << " storm processes outlived the kill";
  EXPECT_EQ((*storm_root)->Wait().signal, SIGKILL);
  RecordProperty("storm_processes", static_cast<int>(in_group));
  RecordProperty("kill_ms", static_cast<int>(took.count()));

  group->reset();
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(CgroupV2Test, CpuStatGivesTheGroupsCpuTime) {
  const auto site = NewSite();
  auto group = internal::RunCgroup::Create(site, {});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  internal::LaunchSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"};
  spec.bridge = false;
  spec.cgroup_procs = (*group)->procs_files();
  auto busy = internal::Child::Start(spec);
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  const internal::ExitInfo exit = (*busy)->Wait();
  ASSERT_TRUE(exit.exited && exit.exit_code == 0);
  const internal::CgroupUsage usage = (*group)->Usage();
  ASSERT_TRUE(usage.cpu_ms.has_value()) << "cpu.stat usage_usec not read";
  EXPECT_GT(*usage.cpu_ms, 0);
  // The group holds what its (reaped) process used, within the child's own rusage and some slack.
  EXPECT_LE(*usage.cpu_ms, static_cast<std::int64_t>(exit.cpu_seconds * 1000) + 50);
  EXPECT_EQ(usage.peak_memory_bytes.has_value(), site->memory());
  EXPECT_EQ((*group)->OomKills(), 0);
}

TEST_F(CgroupV2Test, TheGroupsOfADeadOwnerAreRemovedWithWhatIsInThem) {
  const auto site = NewSite();
  const pid_t dead_owner = ReapedPid();
  ASSERT_GT(dead_owner, 0);
  const std::string dir = site->hierarchies[0].dir + "/" + std::to_string(dead_owner) + "-12345-1";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
  internal::LaunchSpec left;
  left.executable = "/bin/sleep";
  left.args = {"3600"};
  left.bridge = false;
  left.cgroup_procs = {dir + "/cgroup.procs"};
  auto sleeper = internal::Child::Start(left);
  ASSERT_TRUE(sleeper.ok()) << sleeper.status().ToString();

  EXPECT_GE(internal::RemoveStaleRunGroups(*site), 1);
  EXPECT_TRUE(internal::WaitForExit(**sleeper, Clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ((*sleeper)->Wait().signal, SIGKILL);
  EXPECT_FALSE(fs::exists(dir));
}

// The executor on a v2 site without controllers (CODEACT_CGROUP_ROOT): runs go in a v2 group
// that dies with them, explicit memory and process limits are refused with the controller's
// name, and the defaults degrade with a note.
TEST_F(CgroupV2Test, TheExecutorRunsInAV2GroupAndRefusesLimitsItsControllersCannotHold) {
  if (Offered("memory") && Offered("pids"))
    GTEST_SKIP() << "this cgroup2 hierarchy offers memory and pids: nothing to refuse";
  setenv("CODEACT_CGROUP_ROOT", root_.c_str(), 1);
  ASSERT_FALSE(internal::CgroupSite::ForThisProcess()->memory());
  std::vector<IsolationLevel> levels = {IsolationLevel::kProcess};
  if (NamespacesAvailable()) levels.push_back(IsolationLevel::kNamespaces);
  const std::regex run_group("0::/codeact/" + std::to_string(getpid()) + "-[0-9]+-[0-9]+\n");
  for (IsolationLevel level : levels) {
    const std::string name = level == IsolationLevel::kProcess ? "process" : "namespaces";
    // Without the runtime guard, which keeps the code from reading /proc and from forking.
    auto executor = NewLocalExecutor(0, 60'000, false, level, /*runtime_guard=*/false);
    const ExecutionResult ok =
        executor->Execute({"print(open('/proc/self/cgroup').read())"}, Snapshot());
    EXPECT_EQ(ok.outcome, Outcome::kOk) << name << ": " << ok.message << ok.stderr_text;
    if (level == IsolationLevel::kProcess) {
      EXPECT_TRUE(std::regex_search(ok.stdout_text, run_group)) << name << ": " << ok.stdout_text;
    } else {  // a cgroup namespace rooted at the run's group
      EXPECT_NE(ok.stdout_text.find("\n0::/\n"), std::string::npos)
          << name << ": " << ok.stdout_text;
    }
    EXPECT_NE(Notes(*executor).find("the run's cgroup lacks a controller (the "), std::string::npos)
        << name << ": " << Notes(*executor);
    ASSERT_TRUE(ok.usage.cpu_ms.has_value()) << name;
    EXPECT_FALSE(ok.usage.peak_memory_bytes.has_value()) << name;

    ExecutionLimits memory;
    memory.memory_bytes = 256LL << 20;
    const ExecutionResult refused = executor->Execute({"print(1)"}, Snapshot(memory));
    EXPECT_EQ(refused.outcome, Outcome::kSetupError) << name;
    EXPECT_EQ(refused.stdout_text, "") << name;
    EXPECT_NE(
        refused.message.find("the memory_bytes limit of 256 MiB needs the memory controller in the "
                             "run's cgroup, which is missing here: "),
        std::string::npos)
        << name << ": " << refused.message;
    EXPECT_NE(
        refused.message.find("the memory controller is not available in " + root_ + "/codeact: "),
        std::string::npos)
        << name << ": " << refused.message;

    // A root host's run has a uid of its own: RLIMIT_NPROC bounds its processes.
    ExecutionLimits processes;
    processes.max_processes = 8;
    const ExecutionResult also = executor->Execute({"print(1)"}, Snapshot(processes));
    if (geteuid() == 0 || level == IsolationLevel::kNamespaces) {
      EXPECT_EQ(also.outcome, Outcome::kOk) << name << ": " << also.message;
    } else {
      EXPECT_EQ(also.outcome, Outcome::kSetupError) << name;
      EXPECT_NE(also.message.find("the max_processes limit of 8 processes needs the pids "
                                  "controller in the run's cgroup, which is missing here: "),
                std::string::npos)
          << name << ": " << also.message;
    }

    // Seen from the host, a run's processes are in its group: ended here through cgroup.kill.
    ExecutionLimits long_wall;
    long_wall.wall_timeout_ms = 30'000;
    std::set<std::string> earlier;  // groups of the runs above, maybe not yet removed
    std::error_code listing;
    for (const auto& e : fs::directory_iterator(root_ + "/codeact", listing))
      earlier.insert(e.path());
    std::optional<ExecutionResult> waited;
    std::thread run([&] {
      waited = executor->Execute({"import time\ntime.sleep(3600)\n"}, Snapshot(long_wall));
    });
    std::string populated;
    const bool found = testing::Eventually(
        [&] {
          std::error_code ec;
          for (const auto& e : fs::directory_iterator(root_ + "/codeact", ec)) {
            const std::string group = e.path().filename();
            if (group.rfind(std::to_string(getpid()) + "-", 0) == 0 && !earlier.count(e.path()) &&
                !testing::ReadFile(e.path() / "cgroup.procs").empty()) {
              populated = e.path();
              return true;
            }
          }
          return false;
        },
        std::chrono::seconds(30));
    EXPECT_TRUE(found) << name << ": no run group of this process holds a process";
    if (found) std::ofstream(populated + "/cgroup.kill") << "1";
    RecordProperty("killed_" + name, populated);
    run.join();
    ASSERT_TRUE(waited.has_value());
    EXPECT_NE(waited->outcome, Outcome::kOk) << name;
    EXPECT_NE(waited->outcome, Outcome::kTimeout) << name << ": the kill did not end the run";

    if (level == IsolationLevel::kProcess) {
      // A daemon that left the process group and rewrote its environment: only the group finds it.
      const ExecutionResult daemon =
          executor->Execute({Fixture("env_rewriting_daemon.py")}, Snapshot());
      EXPECT_EQ(daemon.outcome, Outcome::kOk) << daemon.message << daemon.stderr_text;
      const pid_t pid = std::atoi(daemon.stdout_text.c_str());
      ASSERT_GT(pid, 0) << daemon.stdout_text;
      EXPECT_TRUE(testing::WaitAllDead({pid}).empty()) << "daemon " << pid << " survived its run";
    }
  }
}

// Sessions on cgroup v2. Pausing needs no controller: every non-root v2 group has its own
// cgroup.freeze, so the freezer is tested on the real hierarchy here. The sessions' parent group
// needs the memory controller, which this hierarchy lacks: opening a session is then refused with
// the reason, never run without its memory budget.
TEST_F(CgroupV2Test, ASessionsGroupFreezesAndThawsThroughItsOwnCgroupFreeze) {
  const auto site = NewSite();
  auto group = internal::RunCgroup::Create(site, {});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  const std::string dir = root_ + "/codeact/" + (*group)->name();
  internal::LaunchSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c", "while :; do :; done"};  // never sleeps while it may run
  spec.bridge = false;
  spec.cgroup_procs = (*group)->procs_files();
  auto busy = internal::Child::Start(spec);
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  const pid_t pid = (*busy)->pid();
  // Field 3 of /proc/<pid>/stat: R while it loops; a frozen task waits in the kernel (S).
  auto state = [pid] {
    const std::string stat = testing::ReadFile("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = stat.rfind(')');
    return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
  };
  auto cpu_ticks = [pid] {  // utime + stime, fields 14 and 15
    const std::string stat = testing::ReadFile("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) return -1LL;
    std::istringstream rest(stat.substr(paren + 2));
    std::string field;
    for (int i = 3; i <= 13; ++i) rest >> field;
    long long utime = 0, stime = 0;
    rest >> utime >> stime;
    return utime + stime;
  };
  ASSERT_TRUE(testing::Eventually([&] { return cpu_ticks() > 0; }, std::chrono::seconds(30)));

  auto freezer = internal::FreezerGroup::Create(*site, **group);
  ASSERT_TRUE(freezer.ok()) << freezer.status().ToString();
  EXPECT_TRUE((*freezer)->procs_files().empty()) << "v2: the group's own file, no group to join";
  ASSERT_TRUE((*freezer)->Freeze(std::chrono::seconds(10)).ok());
  EXPECT_TRUE((*freezer)->frozen());
  EXPECT_NE(testing::ReadFile(dir + "/cgroup.events").find("frozen 1"), std::string::npos);
  EXPECT_TRUE(testing::Eventually([&] { return state() == 'S'; }, std::chrono::seconds(10)))
      << "state " << state() << ": a busy loop that sleeps is frozen";
  const long long frozen_at = cpu_ticks();
  EXPECT_EQ(state(), 'S');
  EXPECT_EQ(cpu_ticks(), frozen_at);

  ASSERT_TRUE((*freezer)->Thaw().ok());
  EXPECT_FALSE((*freezer)->frozen());
  EXPECT_NE(testing::ReadFile(dir + "/cgroup.events").find("frozen 0"), std::string::npos);
  EXPECT_TRUE(
      testing::Eventually([&] { return cpu_ticks() > frozen_at; }, std::chrono::seconds(30)))
      << "it runs again once thawed";

  // Frozen again, then ended: the group's kill reaches frozen processes too.
  ASSERT_TRUE((*freezer)->Freeze(std::chrono::seconds(10)).ok());
  freezer->reset();  // thaws (v2: the group is the session's, removed with it)
  group->reset();
  EXPECT_EQ((*busy)->Wait().signal, SIGKILL);
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(CgroupV2Test, WithoutTheMemoryControllerSessionsAreRefusedWithTheReason) {
  if (Offered("memory")) GTEST_SKIP() << "this cgroup2 hierarchy offers memory";
  const auto site = NewSite();
  auto parent = internal::SessionParentGroup::Create(site, 1LL << 30);
  ASSERT_FALSE(parent.ok());
  EXPECT_EQ(parent.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(parent.status().message().find("memory"), std::string::npos)
      << parent.status().message();

  setenv("CODEACT_CGROUP_ROOT", root_.c_str(), 1);
  auto executor = NewLocalExecutor(0, 60'000, false, IsolationLevel::kProcess,
                                   /*runtime_guard=*/false);
  auto session = executor->OpenSession(Snapshot(), SessionSettings{});
  ASSERT_FALSE(session.ok()) << "a session without its memory budget";
  RecordProperty("refusal", session.status().message());
  EXPECT_NE(session.status().message().find("memory"), std::string::npos)
      << session.status().message();
}

}  // namespace
}  // namespace codeact
