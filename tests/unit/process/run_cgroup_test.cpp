// RunCgroup and CgroupSite: where the groups go (on fake cgroup trees, for v1 and v2, root and
// other users), and against this host's real cgroups (skipped, with the reason, where none can
// be made): limits written, a child joins before exec, the kill outruns a setsid fork storm, the
// usage and OOM counters, and the removal of a dead owner's groups.
#include "process/run_cgroup.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "files/mount_capture.hpp"
#include "process/child.hpp"
#include "testing/fixtures.hpp"

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Touch(const std::string& path, const std::string& text = "") {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// This host's site, or a reason to skip.
std::shared_ptr<const CgroupSite> RealSite() { return CgroupSite::ForThisProcess(); }

#define SKIP_WITHOUT_CGROUPS(site)                                                     \
  if (!(site)->any() || !(site)->pids() || !(site)->memory()) {                        \
    GTEST_SKIP() << "no pids and memory cgroup can be made here: " << (site)->missing; \
  }

bool Alive(pid_t pid) {
  const std::string stat = Read("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// Whether `pid` has SIGKILL pending, or is gone.
bool SigkillPending(pid_t pid) {
  const std::string status = Read("/proc/" + std::to_string(pid) + "/status");
  for (const char* field : {"\nSigPnd:\t", "\nShdPnd:\t"}) {
    const auto at = status.find(field);
    if (at == std::string::npos) return true;
    if (std::stoull(status.substr(at + std::strlen(field), 16), nullptr, 16) &
        (1ULL << (SIGKILL - 1)))
      return true;
  }
  return false;
}

TEST(CgroupSiteTest, EachUserHasASubtreeOfItsOwn) {
  EXPECT_EQ(CgroupSubtreeName(0), "codeact");
  EXPECT_EQ(CgroupSubtreeName(1000), "codeact-1000");
}

TEST(CgroupSiteTest, V1FindsEachHierarchyAndTheUsersSubtree) {
  auto root = TempDir::Create("codeact-fake-cgroup-");
  ASSERT_TRUE(root.ok());
  const std::string r = root->path();
  for (const char* h : {"pids", "memory", "cpu,cpuacct", "unified"})
    Touch(r + "/" + h + "/cgroup.procs");
  fs::create_directory_symlink("cpu,cpuacct", r + "/cpuacct");
  Touch(r + "/memory/codeact-1000/memory.memsw.limit_in_bytes");

  const CgroupSite site = CgroupSite::Discover(r, 1000, "/");
  ASSERT_EQ(site.hierarchies.size(), 3u) << site.missing;
  EXPECT_EQ(site.missing, "");
  EXPECT_TRUE(site.pids());
  EXPECT_TRUE(site.memory());
  EXPECT_TRUE(site.swap_accounted);
  int with_cpuacct = 0;
  for (const auto& h : site.hierarchies) {
    EXPECT_FALSE(h.v2);
    EXPECT_EQ(fs::path(h.dir).filename(), "codeact-1000") << h.dir;
    EXPECT_TRUE(fs::is_directory(h.dir)) << h.dir;  // made here because the test runs as root
    with_cpuacct += h.cpuacct;
    if (h.cpuacct) EXPECT_EQ(fs::path(h.dir).parent_path().filename(), "cpu,cpuacct");
  }
  EXPECT_EQ(with_cpuacct, 1);

  const CgroupSite as_root = CgroupSite::Discover(r, 0, "/");
  ASSERT_EQ(as_root.hierarchies.size(), 3u);
  EXPECT_EQ(fs::path(as_root.hierarchies[0].dir).filename(), "codeact");
  EXPECT_FALSE(as_root.swap_accounted);  // no memory.memsw.* in root's subtree of this fake tree
}

TEST(CgroupSiteTest, V1WithoutAHierarchySaysWhich) {
  auto root = TempDir::Create("codeact-fake-cgroup-");
  ASSERT_TRUE(root.ok());
  Touch(root->path() + "/pids/cgroup.procs");
  const CgroupSite site = CgroupSite::Discover(root->path(), 0, "/");
  EXPECT_TRUE(site.pids());
  EXPECT_FALSE(site.memory());
  EXPECT_NE(site.missing.find("no memory hierarchy under " + root->path()), std::string::npos)
      << site.missing;

  const CgroupSite nothing = CgroupSite::Discover(root->path() + "/absent", 0, "/");
  EXPECT_FALSE(nothing.any());
  EXPECT_FALSE(nothing.missing.empty());
}

TEST(CgroupSiteTest, V2UsesTheRootSubtreeForRootAndTheDelegatedOneForAUser) {
  auto root = TempDir::Create("codeact-fake-cgroup2-");
  ASSERT_TRUE(root.ok());
  const std::string r = root->path();
  Touch(r + "/cgroup.controllers", "cpu memory pids\n");
  Touch(r + "/cgroup.subtree_control", "memory pids\n");
  // What the kernel would show in the subtree once the controllers are enabled.
  for (const std::string dir :
       {r + "/codeact", r + "/user.slice/user-1000.slice/user@1000.service/codeact"}) {
    Touch(dir + "/cgroup.controllers", "memory pids\n");
    Touch(dir + "/cgroup.subtree_control", "memory pids\n");
    Touch(dir + "/cgroup.kill");
    Touch(dir + "/cgroup.freeze");
    Touch(dir + "/memory.swap.max");
  }
  const CgroupSite as_root = CgroupSite::Discover(r, 0, "/system.slice/x.service");
  ASSERT_EQ(as_root.hierarchies.size(), 1u) << as_root.missing;
  EXPECT_EQ(as_root.hierarchies[0].dir, r + "/codeact");
  EXPECT_TRUE(as_root.hierarchies[0].v2);
  EXPECT_TRUE(as_root.hierarchies[0].kill);
  EXPECT_TRUE(as_root.pids() && as_root.memory() && as_root.swap_accounted);

  const CgroupSite user = CgroupSite::Discover(
      r, 1000, "/user.slice/user-1000.slice/user@1000.service/app.slice/codeact.scope");
  ASSERT_EQ(user.hierarchies.size(), 1u) << user.missing;
  EXPECT_EQ(user.hierarchies[0].dir, r + "/user.slice/user-1000.slice/user@1000.service/codeact");

  // A session scope is not delegated: moving a process out of it needs the slice's cgroup.procs.
  const CgroupSite session =
      CgroupSite::Discover(r, 1000, "/user.slice/user-1000.slice/session-3.scope");
  EXPECT_FALSE(session.any());
  EXPECT_NE(session.missing.find("user@1000.service"), std::string::npos) << session.missing;
}

// A controller the root does not offer (on a hybrid host: bound to a v1 hierarchy) is missing,
// and the site says which and why; cpu.stat and cgroup.kill need no controller.
TEST(CgroupSiteTest, V2WithoutAnOfferedControllerSaysWhy) {
  auto root = TempDir::Create("codeact-fake-cgroup2-");
  ASSERT_TRUE(root.ok());
  const std::string r = root->path();
  Touch(r + "/cgroup.controllers", "cpu hugetlb\n");
  Touch(r + "/cgroup.subtree_control", "cpu\n");
  Touch(r + "/codeact/cgroup.controllers", "cpu\n");
  Touch(r + "/codeact/cgroup.subtree_control", "cpu\n");
  Touch(r + "/codeact/cgroup.kill");
  const CgroupSite site = CgroupSite::Discover(r, 0, "/");
  ASSERT_EQ(site.hierarchies.size(), 1u) << site.missing;
  EXPECT_TRUE(site.hierarchies[0].kill && site.hierarchies[0].cpu && site.hierarchies[0].cpuacct);
  EXPECT_FALSE(site.pids() || site.memory());
  for (const std::string c : {"pids", "memory"}) {
    EXPECT_NE(site.missing.find("the " + c + " controller is not available in " + r +
                                "/codeact: it is not offered by " + r +
                                " (cgroup.controllers: \"cpu hugetlb\""),
              std::string::npos)
        << site.missing;
  }
}

TEST(RunCgroupTest, CreateRefusesASiteWithoutHierarchies) {
  auto site = std::make_shared<CgroupSite>();
  site->missing = "no cgroup hierarchy is mounted at /x";
  auto group = RunCgroup::Create(site, {32, 1LL << 30});
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(group.status().message(), "no cgroup hierarchy is mounted at /x");
}

// Joining is a step of the launch checklist: a child that cannot join does not start.
TEST(RunCgroupTest, AChildThatCannotJoinItsGroupDoesNotStart) {
  LaunchSpec spec;
  spec.executable = "/bin/true";
  spec.bridge = false;
  spec.cgroup_join = {"/nonexistent-codeact-cgroup/tasks"};
  auto child = Child::Start(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(
      child.status().message(),
      "write 0 (join) to /nonexistent-codeact-cgroup/tasks failed: No such file or directory");
}

TEST(RunCgroupTest, LimitsAreWrittenAndTheGroupIsRemovedAfterwards) {
  auto site = RealSite();
  SKIP_WITHOUT_CGROUPS(site);
  std::vector<std::string> dirs;
  {
    auto group = RunCgroup::Create(site, {7, 96LL << 20});
    ASSERT_TRUE(group.ok()) << group.status().ToString();
    EXPECT_EQ((*group)->join_files().size(), site->hierarchies.size());
    for (std::size_t i = 0; i < site->hierarchies.size(); ++i) {
      // A v1 group is joined through `tasks` (no global lock), a v2 one through cgroup.procs.
      const auto& h = site->hierarchies[i];
      EXPECT_EQ((*group)->join_files()[i],
                h.dir + "/" + (*group)->name() + (h.v2 ? "/cgroup.procs" : "/tasks"));
    }
    for (const auto& h : site->hierarchies) {
      const std::string dir = h.dir + "/" + (*group)->name();
      dirs.push_back(dir);
      ASSERT_TRUE(fs::is_directory(dir)) << dir;
      if (h.pids) EXPECT_EQ(Read(dir + "/pids.max"), "7\n");
      if (h.memory && !h.v2) {
        EXPECT_EQ(Read(dir + "/memory.limit_in_bytes"), std::to_string(96LL << 20) + "\n");
        if (site->swap_accounted)
          EXPECT_EQ(Read(dir + "/memory.memsw.limit_in_bytes"), std::to_string(96LL << 20) + "\n");
      }
      if (h.memory && h.v2) EXPECT_EQ(Read(dir + "/memory.max"), std::to_string(96LL << 20) + "\n");
    }
    EXPECT_TRUE((*group)->Pids().empty());
  }
  for (const auto& dir : dirs) EXPECT_FALSE(fs::exists(dir)) << dir;
}

// The checklist joins the group between fork and exec; the kill then outruns a fork storm whose
// processes leave the process group, and the counters say what the group used.
TEST(RunCgroupTest, AJoinedChildAndItsSetsidForkStormAreKilledTogether) {
  auto site = RealSite();
  SKIP_WITHOUT_CGROUPS(site);
  auto group = RunCgroup::Create(site, {400, 512LL << 20});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  LaunchSpec spec;
  spec.executable = "/usr/bin/python3.11";
  // Each process forks 12 times at most (4096 processes in all, should the group not hold).
  spec.args = {
      "-I", "-c",
      testing::Program("run_cgroup/a_joined_child_and_its_setsid_fork_storm_are_killed_together")};
  spec.working_dir = "/";
  spec.bridge = false;
  spec.cgroup_join = (*group)->join_files();
  auto child = Child::Start(spec);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  // The storm fills the group up to pids.max.
  const auto end = Clock::now() + std::chrono::seconds(30);
  while ((*group)->Pids().size() < 100 && Clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto pids = (*group)->Pids();
  ASSERT_GE(pids.size(), 100u);
  EXPECT_LE(pids.size(), 400u);
  EXPECT_NE(std::find(pids.begin(), pids.end(), (*child)->pid()), pids.end());

  const auto start = Clock::now();
  EXPECT_TRUE((*group)->KillAll());
  const auto took = Clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(1))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  // None of them runs user code again: each has SIGKILL pending; their exits follow.
  for (pid_t p : (*group)->Pids()) EXPECT_TRUE(SigkillPending(p)) << p;
  EXPECT_TRUE((*group)->WaitUntilEmpty(std::chrono::seconds(30)));
  for (pid_t p : pids) EXPECT_FALSE(Alive(p) && p != (*child)->pid()) << p;
  EXPECT_EQ((*child)->Wait().signal, SIGKILL);

  const CgroupUsage usage = (*group)->Usage();
  ASSERT_TRUE(usage.cpu_ms.has_value());
  EXPECT_GT(*usage.cpu_ms, 0);
  ASSERT_TRUE(usage.peak_memory_bytes.has_value());
  EXPECT_GT(*usage.peak_memory_bytes, 1 << 20);
  EXPECT_EQ((*group)->OomKills(), 0);
}

TEST(RunCgroupTest, MemfdPagesCountAndEndInAnOomKill) {
  auto site = RealSite();
  SKIP_WITHOUT_CGROUPS(site);
  auto group = RunCgroup::Create(site, {32, 128LL << 20});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  LaunchSpec spec;
  spec.executable = "/usr/bin/python3.11";
  spec.args = {"-I", "-c", testing::Program("run_cgroup/memfd_pages_count_and_end_in_an_oom_kill")};
  spec.working_dir = "/";
  spec.bridge = false;
  spec.cgroup_join = (*group)->join_files();
  auto child = Child::Start(spec);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const ExitInfo exit = (*child)->Wait();
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_EQ((*group)->OomKills(), 1);
  ASSERT_TRUE((*group)->Usage().peak_memory_bytes.has_value());
  EXPECT_LE(*(*group)->Usage().peak_memory_bytes, 128LL << 20);
  EXPECT_GT(*(*group)->Usage().peak_memory_bytes, 100LL << 20);
}

TEST(RunCgroupTest, JoinMovesAProcessTheHostDidNotStartItself) {
  auto site = RealSite();
  SKIP_WITHOUT_CGROUPS(site);
  auto group = RunCgroup::Create(site, {32, 256LL << 20});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  LaunchSpec spec;
  spec.executable = "/bin/sleep";
  spec.args = {"3600"};
  spec.bridge = false;
  auto child = Child::Start(spec);
  ASSERT_TRUE(child.ok());
  EXPECT_TRUE((*group)->Pids().empty());
  ASSERT_TRUE((*group)->Join((*child)->pid()).ok());
  EXPECT_EQ((*group)->Pids(), std::vector<pid_t>{(*child)->pid()});
  EXPECT_NE(
      Read("/proc/" + std::to_string((*child)->pid()) + "/cgroup").find("/" + (*group)->name()),
      std::string::npos);
  EXPECT_TRUE((*group)->KillAll());
  EXPECT_EQ((*child)->Wait().signal, SIGKILL);
}

// Groups are named <owner pid>-<owner start time>-<n>: one whose owner is gone (here: a live pid
// with another start time, as after pid reuse) is removed with what is left in it; the groups
// of live owners and names of other shapes are left alone.
TEST(RunCgroupTest, StaleGroupsOfADeadOwnerAreRemovedWithTheirProcesses) {
  auto site = RealSite();
  SKIP_WITHOUT_CGROUPS(site);
  const std::string stale = std::to_string(::getpid()) + "-1-1";
  const std::string foreign = "not-a-run-group";
  std::vector<std::string> procs;
  for (const auto& h : site->hierarchies) {
    ASSERT_EQ(::mkdir((h.dir + "/" + stale).c_str(), 0755), 0) << h.dir;
    ASSERT_EQ(::mkdir((h.dir + "/" + foreign).c_str(), 0755), 0) << h.dir;
    procs.push_back(h.dir + "/" + stale + "/cgroup.procs");
  }
  auto live = RunCgroup::Create(site, {32, 256LL << 20});
  ASSERT_TRUE(live.ok());
  LaunchSpec spec;
  spec.executable = "/bin/sleep";
  spec.args = {"3600"};
  spec.bridge = false;
  spec.cgroup_join = procs;
  auto left = Child::Start(spec);
  ASSERT_TRUE(left.ok()) << left.status().ToString();

  EXPECT_EQ(RemoveStaleRunGroups(*site), 1);
  EXPECT_EQ((*left)->Wait().signal, SIGKILL);
  for (const auto& h : site->hierarchies) {
    EXPECT_FALSE(fs::exists(h.dir + "/" + stale)) << h.dir;
    EXPECT_TRUE(fs::exists(h.dir + "/" + (*live)->name())) << h.dir;
    EXPECT_TRUE(fs::exists(h.dir + "/" + foreign)) << h.dir;
    ::rmdir((h.dir + "/" + foreign).c_str());
  }
}

// A dead owner's sessions' parent group (session_cgroups.hpp) holds a session's group, whose
// process is frozen in the v1 freezer hierarchy: it is thawed, killed, and every group removed.
TEST(RunCgroupTest, StaleSessionGroupsAreRemovedNestedAndFrozen) {
  auto site = RealSite();
  SKIP_WITHOUT_CGROUPS(site);
  const std::string parent = std::to_string(::getpid()) + "-1-7";
  const std::string nested = std::to_string(::getpid()) + "-1-8";
  std::vector<std::string> procs;
  std::string freezer;
  for (const auto& h : site->hierarchies) {
    ASSERT_EQ(::mkdir((h.dir + "/" + parent).c_str(), 0755), 0) << h.dir;
    ASSERT_EQ(::mkdir((h.dir + "/" + parent + "/" + nested).c_str(), 0755), 0) << h.dir;
    procs.push_back(h.dir + "/" + parent + "/" + nested + "/cgroup.procs");
    if (!h.v2 && freezer.empty()) {
      const std::string controller_dir = h.dir.substr(0, h.dir.rfind('/'));
      freezer = controller_dir.substr(0, controller_dir.rfind('/')) + "/freezer/" +
                h.dir.substr(h.dir.rfind('/') + 1);
    }
  }
  const bool frozen = !freezer.empty() &&
                      (::mkdir(freezer.c_str(), 0755) == 0 || errno == EEXIST) &&
                      ::mkdir((freezer + "/" + nested).c_str(), 0755) == 0;
  if (frozen) procs.push_back(freezer + "/" + nested + "/cgroup.procs");
  LaunchSpec spec;
  spec.executable = "/bin/sleep";
  spec.args = {"3600"};
  spec.bridge = false;
  spec.cgroup_join = procs;
  auto left = Child::Start(spec);
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  if (frozen) {
    std::ofstream(freezer + "/" + nested + "/freezer.state") << "FROZEN";
  }

  EXPECT_GE(RemoveStaleRunGroups(*site), 1);
  EXPECT_EQ((*left)->Wait().signal, SIGKILL);
  for (const auto& h : site->hierarchies) {
    EXPECT_FALSE(fs::exists(h.dir + "/" + parent)) << h.dir;
  }
  if (frozen) EXPECT_FALSE(fs::exists(freezer + "/" + nested));
}

}  // namespace
}  // namespace codeact::internal
