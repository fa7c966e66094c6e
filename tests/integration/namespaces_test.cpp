// The `namespaces` isolation level against real children (the isolation probes at both levels:
// isolation_probes_test.cpp): the limit fixtures giving the same outcomes at both levels, tool
// calls, mounts at their mount paths, seccomp denials as clean errors, and setup failures as
// setup_error results naming the step.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "backends/local/local_executor.hpp"
#include "backends/local/sandbox_plan.hpp"
#include "bridge/host_loop.hpp"
#include "common/data_dir.hpp"
#include "files/mount_capture.hpp"
#include "process/child.hpp"
#include "process/helper_command.hpp"
#include "process/run_cgroup.hpp"
#include "sandbox/sandbox_config.hpp"
#include "selftest/isolation_probes.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace fs = std::filesystem;
using testing::Fixture;
using testing::LocalExecutor;
using testing::Snapshot;

ExecutionResult RunSandboxed(const std::string& code, const RunSnapshot& snapshot = Snapshot()) {
  return LocalExecutor(IsolationLevel::kNamespaces)->Execute({code}, snapshot);
}

// --- The limit fixtures end the same way at both levels.

TEST(NamespacesTest, LimitFixturesGiveTheSameOutcomeAtBothLevels) {
  struct Case {
    const char* fixture;
    Outcome expected;
    void (*limits)(ExecutionLimits&);
  };
  const Case cases[] = {
      {"sleep_past_wall_clock.py", Outcome::kTimeout,
       [](ExecutionLimits& l) { l.wall_timeout_ms = 1000; }},
      {"busy_cpu.py", Outcome::kCpuLimit, [](ExecutionLimits& l) { l.cpu_time_s = 1; }},
      {"allocate_memory.py", Outcome::kMemoryLimit,
       [](ExecutionLimits& l) { l.memory_bytes = 256LL << 20; }},
      {"stdout_flood_print.py", Outcome::kOk,
       [](ExecutionLimits& l) { l.max_stdout_bytes = 4096; }},
      {"stdout_flood_fd.py", Outcome::kOk, [](ExecutionLimits& l) { l.max_stdout_bytes = 4096; }},
      {"huge_exception.py", Outcome::kError, nullptr},
      {"ignore_sigterm.py", Outcome::kTimeout,
       [](ExecutionLimits& l) { l.wall_timeout_ms = 1000; }},
      {"swallow_base_exception.py", Outcome::kTimeout,
       [](ExecutionLimits& l) { l.wall_timeout_ms = 1000; }},
      {"atexit_loop.py", Outcome::kOk, nullptr},
      {"forge_frame.py", Outcome::kError, nullptr},
  };
  for (const Case& c : cases) {
    ExecutionLimits limits;
    if (c.limits) c.limits(limits);
    for (IsolationLevel level : {IsolationLevel::kProcess, IsolationLevel::kNamespaces}) {
      const auto executor = LocalExecutor(level);
      const ExecutionResult r = executor->Execute({Fixture(c.fixture)}, Snapshot(limits));
      // Without a cgroup for runs (a non-root host) an explicit memory limit is refused up front.
      const Outcome expected =
          testing::ExplicitLimitsRefusedHere(limits) ? Outcome::kSetupError : c.expected;
      EXPECT_EQ(OutcomeName(r.outcome), OutcomeName(expected))
          << c.fixture << " at " << IsolationName(level) << ": " << r.message
          << r.stderr_text.substr(0, 300);
      // The level a result names is the executor's (the provider stamps it from there).
      EXPECT_EQ(IsolationName(executor->isolation()), IsolationName(level));
      if (std::string(c.fixture).find("flood") != std::string::npos) {
        EXPECT_TRUE(r.stdout_truncated) << c.fixture;
        EXPECT_EQ(r.stdout_text.size(), 4096u) << c.fixture;
      }
    }
  }
}

TEST(NamespacesTest, ChildSeesOnlyStdioAndTheBridgeAndTheHostEnvironmentIsGone) {
  EXPECT_EQ(RunSandboxed(Fixture("list_fds.py")).stdout_text, "0 1 2 3 4\n");
  RunSnapshot s = Snapshot();
  s.environment["VISIBLE"] = "yes";
  const ExecutionResult r = RunSandboxed(Fixture("read_env.py"), s);
  EXPECT_NE(r.stdout_text.find("VISIBLE"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("PATH"), std::string::npos) << r.stdout_text;
}

TEST(NamespacesTest, ToolCallsWorkUnchanged) {
  RunSnapshot s = Snapshot();
  s.tools.push_back({"add", "Adds", R"({"type":"object"})", false, [](const std::string& kwargs) {
                       const auto v = boost::json::parse(kwargs);
                       return ToolResult::Success(
                           std::to_string(v.at("a").as_int64() + v.at("b").as_int64()));
                     }});
  const ExecutionResult r =
      RunSandboxed("total = 0\nfor i in range(20):\n    total += await add(a=i, b=1)\ntotal", s);
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.output_json, "210");
  EXPECT_EQ(r.tool_calls, 20);
}

// The launcher's own work, read from /proc: without the runtime guard, which keeps /proc out of
// reach (and would add its own filter).
TEST(NamespacesTest, TheCodeRunsAsAnUnprivilegedUserUnderSeccompWithNoNewPrivileges) {
  const ExecutionResult r = testing::UnguardedLocalExecutor(IsolationLevel::kNamespaces)
                                ->Execute({"import os\nstatus = dict(l.split(':\\t', 1) for l in "
                                           "open('/proc/self/status').read().splitlines() "
                                           "if ':\\t' in l)\nprint(os.getuid(), os.getpid() > 1, "
                                           "status['Seccomp'], status['NoNewPrivs'], "
                                           "status['CapEff'], status['CapBnd'])"},
                                          Snapshot());
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "1000 True 2 1 0000000000000000 0000000000000000\n");
}

// What /proc shows of the host is masked for a cold start (the launcher's): the directories empty
// and on a read-only file system, the files empty, and no capability left in the bounding set.
// Without the runtime guard, which keeps /proc out of reach (a forked child's are seen from the
// host: zygote_test.cpp).
TEST(NamespacesTest, TheHostsProcIsMaskedAndTheBoundingSetEmpty) {
  const std::string code =
      "import os\nseen = []\n"
      "for d in ('acpi', 'scsi', 'irq', 'bus', 'fs', 'driver', 'tty'):\n"
      "    p = '/proc/' + d\n"
      "    if os.path.isdir(p):\n"
      "        try:\n            os.mkdir(p + '/x')\n            made = True\n"
      "        except OSError:\n            made = False\n"
      "        seen.append((os.listdir(p), bool(os.statvfs(p).f_flag & os.ST_RDONLY), made))\n"
      "files = [f for f in ('kcore', 'kallsyms', 'timer_list', 'sched_debug') if "
      "os.path.exists('/proc/' + f)]\n"
      "empty = [open('/proc/' + f, 'rb').read(64) == b'' for f in files]\n"
      "bnd = [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapBnd')]\n"
      "print(len(seen) > 0, all(s == ([], True, False) for s in seen), len(files) > 0, all(empty), "
      "bnd)";
  const ExecutionResult r =
      testing::UnguardedLocalExecutor(IsolationLevel::kNamespaces)->Execute({code}, Snapshot());
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "True True True True ['0000000000000000']\n");
}

// The launcher's filter, through ctypes: without the runtime guard, whose audit hook refuses
// ctypes and non-AF_UNIX sockets before they reach the kernel.
TEST(NamespacesTest, DeniedSystemCallsAreCleanErrorsAndTheCodeGoesOn) {
  RunSnapshot s = Snapshot();
  s.policy.extra_allowed_imports.push_back("ctypes");
  s.policy.extra_allowed_imports.push_back("socket");
  const ExecutionResult r =
      testing::UnguardedLocalExecutor(IsolationLevel::kNamespaces)
          ->Execute({testing::Program(
                        "namespaces/denied_system_calls_are_clean_errors_and_the_code_goes_on")},
                    s);
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(
      r.stdout_text,
      "['denied', 'denied', 'denied', 'unix ok', ('ptrace', -1, 'Operation not permitted'), "
      "('unshare', -1, 'Operation not permitted'), ('mount', -1, 'Operation not permitted')]\n");
}

TEST(NamespacesTest, MountsAppearAtTheirMountPathsAndReadOnlyIsReadOnly) {
  auto root = internal::TempDir::Create("codeact-ns-mounts-");
  ASSERT_TRUE(root.ok());
  fs::create_directories(root->path() + "/rw");
  fs::create_directories(root->path() + "/ro");
  std::ofstream(root->path() + "/ro/in.txt") << "input";
  RunSnapshot s = Snapshot();
  s.mounts.push_back({root->path() + "/ro", "/in", MountMode::kReadOnly, 1 << 20});
  s.mounts.push_back({root->path() + "/rw", "/out", MountMode::kReadWrite, 1 << 20});
  const ExecutionResult r = RunSandboxed(
      "from pathlib import Path\ntext = Path('/in/in.txt').read_text()\n"
      "Path('/out/copy.txt').write_text(text.upper())\n"
      "try:\n    Path('/in/new.txt').write_text('x')\nexcept OSError as e:\n    print(e.strerror)\n"
      "print(Path.cwd(), Path('" +
          root->path() + "').exists())",
      s);
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << (r.error ? r.error->traceback : "");
  EXPECT_EQ(r.stdout_text, "Read-only file system\n/work False\n");
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].path, "/out/copy.txt");
  EXPECT_EQ(r.files[0].data, "INPUT");
  EXPECT_FALSE(fs::exists(root->path() + "/ro/new.txt"));
}

// --- Identity: on a root host no run acts as root, each has a uid of its own, and files in a
// read-write mount belong to the mount directory's owner.

// The host uid behind the code's uid, as the code sees it: what its uid 1000 maps to in its
// user namespace, or its own uid at the process level (the initial namespace).
constexpr const char* kHostUidCode =
    "import os\nm = open('/proc/self/uid_map').read().split()\nprint(m[1] if m[0] == '1000' else "
    "os.getuid())\n";

TEST(IdentityTest, ARootHostRunsEachChildAsAnUnprivilegedUidOfItsOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "a non-root host runs its children as itself";
  const RunUidRange range;
  for (IsolationLevel level : {IsolationLevel::kNamespaces, IsolationLevel::kProcess}) {
    auto executor = testing::UnguardedLocalExecutor(level);  // the guard keeps /proc from the code
    std::vector<std::thread> threads;
    std::vector<std::string> seen(4);
    for (std::size_t i = 0; i < seen.size(); ++i) {
      threads.emplace_back([&, i] {
        seen[i] = executor
                      ->Execute({std::string(kHostUidCode) + "import time\ntime.sleep(0.5)\n"},
                                Snapshot())
                      .stdout_text;
      });
    }
    for (auto& t : threads) t.join();
    std::set<std::string> distinct(seen.begin(), seen.end());
    EXPECT_EQ(distinct.size(), seen.size())
        << "concurrent runs shared a uid at " << IsolationName(level);
    for (const auto& text : seen) {
      const long long uid = std::atoll(text.c_str());
      EXPECT_GE(uid, range.first) << text;
      EXPECT_LT(uid, static_cast<long long>(range.first) + range.count) << text;
    }
  }
}

TEST(IdentityTest, FilesInAReadWriteMountBelongToTheMountDirectorysOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "a non-root host's files are its own";
  for (IsolationLevel level : {IsolationLevel::kNamespaces, IsolationLevel::kProcess}) {
    auto root = internal::TempDir::Create("codeact-idmap-");
    ASSERT_TRUE(root.ok());
    // The process level shows mounts at their host paths: their parents must let the run's uid
    // pass (docs/threat-model.md, mounts).
    ASSERT_EQ(::chmod(root->path().c_str(), 0711), 0);
    const std::string owned = root->path() + "/owned";
    const std::string root_owned = root->path() + "/root-owned";
    fs::create_directories(owned);
    fs::create_directories(root_owned);
    ASSERT_EQ(::chown(owned.c_str(), 4321, 4321), 0);
    ASSERT_EQ(::chmod(owned.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(root_owned.c_str(), 0755), 0);  // root's, and writable only by root
    RunSnapshot s = Snapshot();
    s.mounts.push_back({owned, "/a", MountMode::kReadWrite, 1 << 20});
    s.mounts.push_back({root_owned, "/b", MountMode::kReadWrite, 1 << 20});
    const bool sandboxed = level == IsolationLevel::kNamespaces;
    const std::string a = sandboxed ? "/a" : owned;
    const std::string b = sandboxed ? "/b" : root_owned;
    const ExecutionResult r = LocalExecutor(level)->Execute(
        {"open('" + a + "/x', 'w').write('1')\nopen('" + b + "/y', 'w').write('2')\n"}, s);
    ASSERT_EQ(r.outcome, Outcome::kOk)
        << IsolationName(level) << ": " << r.message << (r.error ? r.error->traceback : "");
    struct stat st {};
    ASSERT_EQ(::lstat((owned + "/x").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 4321u) << IsolationName(level);
    EXPECT_EQ(st.st_gid, 4321u) << IsolationName(level);
    ASSERT_EQ(::lstat((root_owned + "/y").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << IsolationName(level);
  }
}

TEST(IdentityTest, TheWorkingDirectoryIsBoundedAtTheNamespacesLevel) {
  ExecutionLimits limits;
  limits.max_workdir_bytes = 8LL << 20;
  const ExecutionResult r = RunSandboxed(
      testing::Program("namespaces/the_working_directory_is_bounded_at_the_namespaces_level"),
      Snapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_EQ(r.stdout_text, "No space left on device\n");
}

TEST(NamespacesTest, AMountPathTheSandboxProvidesIsASetupError) {
  auto root = internal::TempDir::Create("codeact-ns-reserved-");
  ASSERT_TRUE(root.ok());
  RunSnapshot s = Snapshot();
  s.mounts.push_back({root->path(), "/usr/data", MountMode::kReadWrite, 1 << 20});
  const ExecutionResult r = RunSandboxed("print(1)", s);
  EXPECT_EQ(r.outcome, Outcome::kSetupError);
  EXPECT_NE(r.message.find("/usr is provided by the sandbox"), std::string::npos) << r.message;
}

TEST(NamespacesTest, WorkingDirectoryAndTmpArePrivateToEachRun) {
  const std::string code =
      "from pathlib import Path\nprint(sorted(p.name for p in Path('.').iterdir()), "
      "sorted(p.name for p in Path('/tmp').iterdir()))\nPath('left.txt').write_text('x')\n"
      "Path('/tmp/left.txt').write_text('x')";
  for (int i = 0; i < 2; ++i) {
    const ExecutionResult r = RunSandboxed(code);
    EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
    EXPECT_EQ(r.stdout_text, "[] []\n");
  }
}

// The warm pool at this level: pooled children are sandboxed children, bound with the mounts
// they were started for, and each serves one run.
TEST(NamespacesTest, PooledChildrenAreSandboxedAndServeOneRunEach) {
  ExecutorOptions options;
  options.isolation = IsolationLevel::kNamespaces;
  options.warm_pool_size = 1;
  auto executor = CreateExecutor(options);
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  auto root = internal::TempDir::Create("codeact-ns-pool-");
  ASSERT_TRUE(root.ok());
  RunSnapshot s = Snapshot();
  s.mounts.push_back({root->path(), "/out", MountMode::kReadWrite, 1 << 20});
  const std::string code =
      testing::Program("namespaces/pooled_children_are_sandboxed_and_serve_one_run_each");
  for (int i = 0; i < 4; ++i) {
    const ExecutionResult r = (*executor)->Execute({code}, s);
    EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
    EXPECT_EQ(IsolationName((*executor)->isolation()), "namespaces");
    EXPECT_EQ(r.stdout_text, i == 0 ? "1000 [] False\n" : "1000 ['n.txt'] False\n");
  }
}

// Sandboxed runs leave nothing behind either: no fd, zombie, scratch directory or cgroup (in any
// hierarchy), also when the wall clock kills the run.
TEST(NamespacesTest, ManyRunsLeaveNoZombieFdTempDirOrCgroup) {
  LocalExecutor(IsolationLevel::kNamespaces);  // its runner.pyc directory predates TMPDIR
  const testing::ScopedTmpdir scoped_tmp("codeact-ns-leak-test");
  const std::string& tmp = scoped_tmp.path();
  auto cgroups = [] {
    int n = 0;
    std::error_code ec;
    const std::string mine = std::to_string(getpid()) + "-";
    for (const auto& h : internal::CgroupSite::ForThisProcess()->hierarchies) {
      for (const auto& e : fs::directory_iterator(h.dir, ec))
        n += e.path().filename().string().rfind(mine, 0) == 0;
    }
    return n;
  };
  ExecutionLimits quick;
  quick.wall_timeout_ms = 300;
  RunSandboxed("print(1)");
  const int fds_before = testing::CountOpenFds();
  for (int i = 0; i < 60; ++i) {
    const bool kill = i % 10 == 0;
    const ExecutionResult r = RunSandboxed(kill ? "import time\ntime.sleep(5)\n" : "print(1)\n",
                                           Snapshot(kill ? quick : ExecutionLimits{}));
    ASSERT_EQ(r.outcome, kill ? Outcome::kTimeout : Outcome::kOk) << i << " " << r.message;
  }
  EXPECT_TRUE(testing::Eventually([&] { return testing::CountOpenFds() <= fds_before; }))
      << testing::CountOpenFds() << " fds, " << fds_before << " before";
  EXPECT_TRUE(testing::Eventually([] { return testing::CountZombieChildren() == 0; }));
  EXPECT_TRUE(testing::Eventually([&] { return fs::is_empty(tmp); }));
  EXPECT_TRUE(testing::Eventually([&] { return cgroups() == 0; })) << cgroups() << " cgroups left";
}

// The launcher run directly with `binds` in `scratch` (which has a work/): the setup_error frame it
// sent (OK when none came) and how it ended.
std::pair<Status, internal::ExitInfo> LaunchWithBinds(const std::string& scratch,
                                                      std::vector<internal::SandboxBind> binds) {
  fs::create_directories(scratch + "/work");
  internal::SandboxConfig c;
  c.scratch_dir = scratch;
  c.system_paths = internal::DefaultSystemPaths();
  c.binds = std::move(binds);
  c.command = {"/usr/bin/python3.11", "-c", "pass"};
  internal::LaunchSpec spec;
  spec.executable = internal::SandboxLauncherPath();
  spec.args = internal::EncodeSandboxArgs(c);
  spec.working_dir = scratch;
  auto child = internal::Child::Start(spec);
  if (!child.ok()) return {child.status(), {}};
  const Status frame =
      internal::WaitForReadyFrame((*child)->bridge_from_child_fd(), std::chrono::seconds(10));
  return {frame, (*child)->Wait()};
}

// A failed containment step reaches the host as the launcher's setup_error frame, naming the step
// and the errno, and the launcher exits with kSandboxSetupFailedExit.
TEST(NamespacesTest, AFailedStepIsReportedWithItsNameAndErrno) {
  auto scratch = internal::TempDir::Create("codeact-ns-fail-");
  ASSERT_TRUE(scratch.ok());
  ASSERT_FALSE(internal::SandboxLauncherPath().empty());
  const auto [frame, exit] =
      LaunchWithBinds(scratch->path(), {{"/nonexistent-codeact-host-path", "/data", true}});
  EXPECT_EQ(frame.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(frame.message(),
            "sandbox setup: open the mount source /nonexistent-codeact-host-path failed: No such "
            "file or directory");
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.exit_code, internal::kSandboxSetupFailedExit);
}

// A mount beneath another is bound, whichever order the two were added in, where its mount point
// is a directory in the outer mount's host directory; where it is missing or a link, the run is
// refused before anything starts, naming the point, and nothing is made in that directory.
TEST(NamespacesTest, AMountBeneathAnotherNeedsItsPointInTheOuterHostDirectory) {
  auto scratch = internal::TempDir::Create("codeact-ns-beneath-");
  ASSERT_TRUE(scratch.ok());
  const std::string outer = scratch->path() + "/outer", inner = scratch->path() + "/inner";
  fs::create_directories(outer);
  fs::create_directories(inner);
  std::ofstream(inner + "/in.txt") << "inner";
  ::chmod(scratch->path().c_str(), 0755);
  RunSnapshot s;
  s.mounts.push_back({inner, "/data/sub", MountMode::kReadOnly});  // the inner one first
  s.mounts.push_back({outer, "/data", MountMode::kReadWrite});
  const std::string code = "print(open('/data/sub/in.txt').read())";
  auto executor = LocalExecutor(IsolationLevel::kNamespaces);

  ExecutionResult r = executor->Execute({code}, s);
  EXPECT_EQ(r.outcome, Outcome::kSetupError) << r.stdout_text;
  EXPECT_NE(r.message.find("mount /data/sub lies beneath the mount /data, so its mount point is " +
                           outer + "/sub in that mount's host directory, which does not exist"),
            std::string::npos)
      << r.message;
  EXPECT_FALSE(fs::exists(outer + "/sub"));

  fs::create_directory(outer + "/sub");
  r = executor->Execute({code}, s);
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "inner\n");

  fs::remove(outer + "/sub");
  fs::create_directory_symlink(inner, outer + "/sub");
  r = executor->Execute({code}, s);
  EXPECT_EQ(r.outcome, Outcome::kSetupError);
  EXPECT_NE(r.message.find("which is a symbolic link"), std::string::npos) << r.message;
}

// A mount's host path is stored resolved (ValidateMount). A link that appears on it later (a run
// that can write a read-write mount above it could make one) must not choose which host
// directory a later run's mount shows: the run is refused, and the link's target stays unseen.
// At both levels on a root host (mount trees); the process level of a non-root host reaches
// mounts by their paths (docs/threat-model.md).
TEST(NamespacesTest, ALinkThatAppearsOnAMountsHostPathIsRefused) {
  std::vector<IsolationLevel> levels = {IsolationLevel::kNamespaces};
  if (::geteuid() == 0) levels.push_back(IsolationLevel::kProcess);
  for (const IsolationLevel level : levels) {
    auto scratch = internal::TempDir::Create("codeact-ns-link-");
    ASSERT_TRUE(scratch.ok());
    ::chmod(scratch->path().c_str(), 0755);
    const std::string mine = scratch->path() + "/proj/sub/data";
    const std::string other = scratch->path() + "/elsewhere/data";
    fs::create_directories(mine);
    fs::create_directories(other);
    std::ofstream(mine + "/in.txt") << "mine";
    std::ofstream(other + "/in.txt") << "secret";
    RunSnapshot s;
    s.mounts.push_back({mine, "/data", MountMode::kReadOnly});
    const std::string path = level == IsolationLevel::kNamespaces ? "/data" : mine;
    const std::string code = "print(open('" + path + "/in.txt').read())";
    auto executor = LocalExecutor(level);
    ExecutionResult r = executor->Execute({code}, s);
    ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
    EXPECT_EQ(r.stdout_text, "mine\n");

    fs::rename(scratch->path() + "/proj/sub", scratch->path() + "/proj/sub.old");
    fs::create_directory_symlink(scratch->path() + "/elsewhere", scratch->path() + "/proj/sub");
    r = executor->Execute({code}, s);
    EXPECT_EQ(r.outcome, Outcome::kSetupError) << IsolationName(level) << ": " << r.stdout_text;
    EXPECT_NE(r.message.find("a symbolic link on its path"), std::string::npos) << r.message;
    EXPECT_EQ(r.stdout_text.find("secret"), std::string::npos);
  }
}

// A mount beneath another is bound onto its point as the launcher finds it in the outer mount's
// host directory: never made there, never reached through a symbolic link (a run that could
// write that directory could otherwise send a later run's mount elsewhere). The host refuses such
// a layout before it starts anything (CheckSandboxMounts); this is the launcher's own line, for a
// directory changed in between.
TEST(NamespacesTest, TheLauncherMakesNoMountPointInAHostDirectoryAndFollowsNoLinkToOne) {
  for (const bool as_link : {false, true}) {
    auto scratch = internal::TempDir::Create("codeact-ns-nested-");
    auto hosts = internal::TempDir::Create("codeact-ns-nested-hosts-");
    ASSERT_TRUE(scratch.ok() && hosts.ok());
    const std::string outer = hosts->path() + "/outer", inner = hosts->path() + "/inner",
                      decoy = hosts->path() + "/decoy";
    for (const auto& d : {outer, inner, decoy}) fs::create_directories(d);
    if (as_link) fs::create_directory_symlink(decoy, outer + "/sub");
    const auto [frame, exit] =
        LaunchWithBinds(scratch->path(), {{outer, "/data", false}, {inner, "/data/sub", true}});
    EXPECT_EQ(frame.code(), StatusCode::kFailedPrecondition) << frame.message();
    // The new root is mounted on the scratch directory.
    const std::string point = scratch->path() + "/data/sub";
    EXPECT_NE(frame.message().find(as_link ? point + " (a symbolic link)"
                                           : point + " is missing in a host directory"),
              std::string::npos)
        << frame.message();
    EXPECT_EQ(exit.exit_code, internal::kSandboxSetupFailedExit);
    if (as_link) {
      EXPECT_TRUE(fs::is_empty(decoy));
    } else {
      EXPECT_FALSE(fs::exists(outer + "/sub"));
    }
  }
}

TEST(NamespacesTest, BadLauncherArgumentsAreASetupErrorToo) {
  internal::LaunchSpec spec;
  spec.executable = internal::SandboxLauncherPath();
  spec.args = {"--scratch", "relative/path", "--", "/bin/true"};
  auto child = internal::Child::Start(spec);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const Status frame =
      internal::WaitForReadyFrame((*child)->bridge_from_child_fd(), std::chrono::seconds(10));
  EXPECT_EQ(frame.message(),
            "sandbox setup: arguments failed: Invalid argument (--scratch needs an absolute path: "
            "relative/path)");
  EXPECT_EQ((*child)->Wait().exit_code, internal::kSandboxSetupFailedExit);
}

TEST(NamespacesTest, AutoChoosesTheNamespacesLevelWhereTheKernelAllowsIt) {
  auto executor = CreateExecutor({});
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  const Status probe = [] {
    auto plan = internal::PlanSandbox("/usr/bin/python3.11", CODEACT_SOURCE_DIR "/resources");
    return plan.ok() ? internal::ProbeSandbox(*plan, "/usr/bin/python3.11") : plan.status();
  }();
  EXPECT_EQ((*executor)->isolation(),
            probe.ok() ? IsolationLevel::kNamespaces : IsolationLevel::kProcess)
      << probe.ToString();
  if (!probe.ok())
    GTEST_SKIP() << "this kernel does not allow the namespaces level: " << probe.message();
}

}  // namespace
}  // namespace codeact
