// Every isolation probe of `codeact selftest` (docs/threat-model.md, resources/selftest/) against
// real children: contained at the namespaces level; at the process level, the documented truth with
// the runtime guard (everything, the filesystem and /proc given Landlock) and without it.
#include "selftest/isolation_probes.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <string>

#include "backends/local/local_executor.hpp"
#include "process/child.hpp"
#include "process/helper_command.hpp"
#include "process/run_cgroup.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace fs = std::filesystem;
using testing::LocalExecutor;
using testing::Snapshot;

struct ProbeCase {
  std::string name;
  bool contained_at_namespaces_level;
  bool contained_at_process_level;   // without the runtime guard
  bool needs_landlock = false;       // what the guard contains of it, it contains through Landlock
  bool contained_with_guard = true;  // at the process level, with the runtime guard
};

class IsolationProbeTest : public ::testing::TestWithParam<ProbeCase> {};

// Each level promises exactly what docs/threat-model.md says, and keeps its promises.
TEST_P(IsolationProbeTest, AtTheNamespacesLevelAsTheThreatModelSays) {
  auto report =
      internal::RunIsolationProbe(*LocalExecutor(IsolationLevel::kNamespaces), GetParam().name);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->promised, GetParam().contained_at_namespaces_level);
  if (report->promised) EXPECT_TRUE(report->contained) << report->observed;
}

TEST_P(IsolationProbeTest, AtTheProcessLevelWithTheRuntimeGuard) {
  const auto executor = LocalExecutor(IsolationLevel::kProcess);
  auto report = internal::RunIsolationProbe(*executor, GetParam().name);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  if (GetParam().needs_landlock && internal::GuardStatus(*executor).landlock_abi == 0) {
    EXPECT_FALSE(report->promised);
    GTEST_SKIP() << "this kernel has no Landlock: the guard does not fence files; observed "
                 << report->observed;
  }
  EXPECT_EQ(report->promised, GetParam().contained_with_guard);
  if (report->promised) EXPECT_TRUE(report->contained) << report->observed;
}

TEST_P(IsolationProbeTest, AtTheProcessLevelWithoutTheRuntimeGuard) {
  auto report = internal::RunIsolationProbe(
      *testing::UnguardedLocalExecutor(IsolationLevel::kProcess), GetParam().name);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  // The run's pids cgroup bounds a fork loop at the process level too, where one can be made.
  const bool contained =
      GetParam().contained_at_process_level ||
      (GetParam().name == "fork repeatedly" && internal::CgroupSite::ForThisProcess()->pids());
  EXPECT_EQ(report->promised, contained);
  if (report->promised) EXPECT_TRUE(report->contained) << report->observed;
}

// A run's memory cgroup holds memfd and tmpfs pages, which RLIMIT_AS does not see.
const bool kMemoryCgroup = internal::CgroupSite::ForThisProcess()->memory();

INSTANTIATE_TEST_SUITE_P(
    Probes, IsolationProbeTest,
    ::testing::Values(
        ProbeCase{"read /etc/passwd", true, false, true}, ProbeCase{"list /", true, false, true},
        ProbeCase{"read a host environment secret", true, true},
        ProbeCase{"write outside the working directory and mounts", true, false, true},
        ProbeCase{"follow a planted symlink out of a mount", true, false, true},
        ProbeCase{"connect to a local TCP port", true, false},
        ProbeCase{"see host processes", true, false, true},
        ProbeCase{"stat a private file outside the mounts", true, false, false, false},
        ProbeCase{"see a host process at /proc/PID", true, false, false, false},
        ProbeCase{"read another process's CPU clock", true, false, false, false},
        ProbeCase{"allocate past the memory limit", true, true},
        ProbeCase{"spin past the CPU limit", true, true},
        ProbeCase{"sleep past the wall clock", true, true},
        ProbeCase{"print past the output cap", true, true},
        ProbeCase{"fork repeatedly", true, false},
        ProbeCase{"spawn a daemon that outlives the run", true, true},
        ProbeCase{"write a /proc/sys setting", true, true},
        ProbeCase{"plant a setuid file through a mount", true, false},
        ProbeCase{"make a private file outside the mounts readable", true, false, false, true},
        ProbeCase{"chmod a device node", true, true},
        ProbeCase{"read the host's environment through /proc", true, false, true},
        ProbeCase{"hold memory in memfds", true, kMemoryCgroup},
        ProbeCase{"hold memory in /dev/shm", true, false, true},
        ProbeCase{"change another process's limits or priority", true, false},
        ProbeCase{"leave a world-writable file in a mount", true, false},
        ProbeCase{"fill the working directory", true, true},
        ProbeCase{"capture thousands of long-path files", true, true},
        ProbeCase{"outrun the wall clock with a setsid fork storm", true, false},
        ProbeCase{"ignore SIGTERM", true, true}),
    [](const ::testing::TestParamInfo<ProbeCase>& info) {
      std::string id;
      for (char c : info.param.name) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return id;
    });

TEST(IsolationProbeListTest, EveryProbeHasATestCase) {
  EXPECT_EQ(internal::IsolationProbeNames().size(), 29u);
}

// An interpreter outside the system paths (pyenv under /root, a venv with copied binaries) is
// shown with its installation, so the directories on its way appear at /. They are the sandbox's
// own, not the host's: "list /" must stay contained. /var/tmp stands in for /root (the sandbox
// refuses an installation under /tmp, and a test does not write to /root).
TEST(IsolationProbeListTest, AnInterpreterOutsideTheSystemPathsIsNoFalseAlarm) {
  const fs::path venv = fs::path("/var/tmp") / ("codeact-probe-venv-" + std::to_string(::getpid()));
  fs::remove_all(venv);
  auto made = internal::RunCommand(
      {"/usr/bin/python3.11", "-m", "venv", "--copies", "--without-pip", venv.string()}, "",
      std::chrono::seconds(120));
  if (!made.ok() || !made->exit.exited || made->exit.exit_code != 0) {
    fs::remove_all(venv);
    GTEST_SKIP() << "cannot make a venv with copied binaries in /var/tmp: "
                 << (made.ok() ? made->stderr_text : made.status().ToString());
  }
  ExecutorOptions options;
  options.isolation = IsolationLevel::kNamespaces;
  options.warm_pool_size = 0;
  options.python_path = (venv / "bin" / "python3.11").string();
  options.runtime_guard = false;  // its Landlock would keep the code from listing /var at all
  auto executor = CreateExecutor(options);
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  const ExecutionResult seen =
      (*executor)->Execute({"import os\nprint(os.listdir('/var'))"}, Snapshot());
  auto report = internal::RunIsolationProbe(**executor, "list /");
  fs::remove_all(venv);
  EXPECT_EQ(seen.stdout_text, "['tmp']\n")
      << "the interpreter's way is not at /var, so this proves nothing: " << seen.stdout_text
      << seen.message;
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->contained) << report->observed;
}

}  // namespace
}  // namespace codeact
