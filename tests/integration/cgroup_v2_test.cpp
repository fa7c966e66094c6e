// The cgroup v2 path on a real cgroup2 hierarchy (issue 19), mounted in a private mount namespace
// (the kernel of a cgroup v1 host has one too): where it offers no memory or pids controller, as
// here, what v2 does without them. The other cgroup tests: cgroup_test.cpp.
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
#include "codeact/executor.hpp"
#include "codeact/json.hpp"
#include "files/mount_capture.hpp"
#include "integration/cgroup_fixture.hpp"
#include "process/child.hpp"
#include "process/run_cgroup.hpp"
#include "process/session_cgroups.hpp"
#include "testing/cli_support.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;
using Clock = std::chrono::steady_clock;
using testing::Dying;
using testing::Fixture;
using testing::NamespacesAvailable;
using testing::NewLocalExecutor;
using testing::Notes;
using testing::ProcessesWithEnv;
using testing::RandomMarker;
using testing::ReapedPid;
using testing::SigkillPending;
using testing::Snapshot;

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
    if (group != nullptr) spec.cgroup_join = group->join_files();
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
  EXPECT_EQ((*group)->join_files(), std::vector<std::string>{dir + "/cgroup.procs"});
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
  spec.cgroup_join = (*group)->join_files();
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
  spec.cgroup_join = (*group)->join_files();
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
  left.cgroup_join = {dir + "/cgroup.procs"};
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
  spec.cgroup_join = (*group)->join_files();
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
  EXPECT_TRUE((*freezer)->join_files().empty()) << "v2: the group's own file, no group to join";
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
