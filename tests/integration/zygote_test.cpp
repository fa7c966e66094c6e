// The namespaces level's zygote (a root host's fork server inside the sandbox,
// src/sandbox/zygote_child.hpp): each child it forks has its own uid, its own mount, pid, net and
// IPC namespaces and its own cgroup, sees a fresh /tmp and working directory, and can neither
// reach nor signal its siblings; a zygote is replaced after its number of forks. Seen from the
// host (/proc) and tried from inside.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "backends/local/local_executor.hpp"
#include "codeact/json.hpp"
#include "process/run_cgroup.hpp"
#include "selftest/isolation_probes.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

std::string NsOf(pid_t pid, const char* ns) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/" + ns, ec).string();
}

std::string UidOf(pid_t pid) {
  const std::string status = testing::ReadFile("/proc/" + std::to_string(pid) + "/status");
  const auto at = status.find("Uid:\t");
  return at == std::string::npos ? "" : status.substr(at + 5, status.find('\t', at + 5) - at - 5);
}

RunSnapshot ZygoteSnapshot() {
  RunSnapshot s = testing::Snapshot();
  s.policy.extra_allowed_imports.insert(s.policy.extra_allowed_imports.end(),
                                        {"os", "socket", "time"});
  return s;
}

class ZygoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0 || !internal::CgroupSite::ForThisProcess()->any()) {
      GTEST_SKIP() << "the namespaces level forks from a zygote only on a root host with cgroups "
                      "(a uid and a cgroup per child); here each child starts cold";
    }
    executor_ = testing::NewLocalExecutor(2, 60'000, true, IsolationLevel::kNamespaces);
    ASSERT_TRUE(testing::Eventually(
        [&] {
          executor_->Warm(snapshot_);
          return internal::IdleChildPids(*executor_, &snapshot_).size() >= 2;
        },
        std::chrono::seconds(60)));
    ASSERT_FALSE(internal::ForkServerPids(*executor_).empty());
  }

  ExecutionResult Run(const std::string& code) { return executor_->Execute({code}, snapshot_); }

  RunSnapshot snapshot_ = ZygoteSnapshot();
  std::unique_ptr<Executor> executor_;
};

TEST_F(ZygoteTest, EachChildHasItsOwnUidNamespacesAndCgroup) {
  const auto idle = internal::IdleChildPids(*executor_, &snapshot_);
  ASSERT_EQ(idle.size(), 2u);
  const auto launchers = internal::ForkServerPids(*executor_);
  const pid_t zygote_launcher = launchers.front();
  for (const char* ns : {"mnt", "pid", "net", "ipc", "cgroup"}) {
    const std::string a = NsOf(idle[0], ns);
    const std::string b = NsOf(idle[1], ns);
    ASSERT_FALSE(a.empty()) << ns;
    EXPECT_NE(a, b) << "two children share their " << ns << " namespace";
    EXPECT_NE(a, NsOf(zygote_launcher, ns)) << "a child shares the launcher's " << ns;
  }
  const std::string uid_a = UidOf(idle[0]);
  const std::string uid_b = UidOf(idle[1]);
  EXPECT_NE(uid_a, "0");
  EXPECT_NE(uid_a, uid_b);
  for (pid_t launcher : launchers)
    EXPECT_NE(uid_a, UidOf(launcher)) << "a child runs as a zygote's uid";
  const std::string status = testing::ReadFile("/proc/" + std::to_string(idle[0]) + "/status");
  EXPECT_NE(status.find("CapEff:\t0000000000000000"), std::string::npos) << status;
  EXPECT_NE(status.find("CapBnd:\t0000000000000000"), std::string::npos) << status;
  EXPECT_NE(status.find("Seccomp:\t2"), std::string::npos) << status;
  const std::string cgroups = testing::ReadFile("/proc/" + std::to_string(idle[0]) + "/cgroup");
  EXPECT_NE(cgroups.find("/" + internal::CgroupSubtreeName(0) + "/"), std::string::npos) << cgroups;
}

// A child's own /proc is masked as a cold start's is (namespaces_test.cpp tries it from inside,
// which the guard's Landlock forbids here): seen from the host, the last mount at each masked
// directory is a read-only tmpfs, and each masked file has a mount of its own.
TEST_F(ZygoteTest, EachChildsProcIsMaskedAsAColdStartsIs) {
  const auto idle = internal::IdleChildPids(*executor_, &snapshot_);
  ASSERT_FALSE(idle.empty());
  std::map<std::string, std::string> top;  // mount point -> "options fstype" of the last mount
  std::istringstream mountinfo(
      testing::ReadFile("/proc/" + std::to_string(idle[0]) + "/mountinfo"));
  for (std::string line; std::getline(mountinfo, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point, options, field;
    fields >> id >> parent >> dev >> root >> point >> options;
    while (fields >> field && field != "-") {
    }
    std::string fstype;
    fields >> fstype;
    top[point] = options + " " + fstype;
  }
  int masked = 0;
  for (const char* d : {"acpi", "scsi", "irq", "bus", "fs", "driver", "tty"}) {
    if (!std::filesystem::is_directory(std::string("/proc/") + d)) continue;
    ++masked;
    const std::string seen = top[std::string("/proc/") + d];
    EXPECT_TRUE(seen.starts_with("ro,") && seen.ends_with(" tmpfs")) << d << ": " << seen;
  }
  EXPECT_GT(masked, 0);
  for (const char* f : {"kcore", "kallsyms", "sysrq-trigger"}) {
    if (std::filesystem::exists(std::string("/proc/") + f))
      EXPECT_EQ(top.count(std::string("/proc/") + f), 1u) << f << " is not masked";
  }
  EXPECT_TRUE(top["/proc/sys"].starts_with("ro,")) << top["/proc/sys"];
}

TEST_F(ZygoteTest, EveryRunSeesAFreshTmpAndWorkingDirectoryAndOnlyItself) {
  const ExecutionResult first = Run(
      testing::Program("zygote/every_run_sees_a_fresh_tmp_and_working_directory_and_only_itself"));
  ASSERT_EQ(first.outcome, Outcome::kOk) << first.message << first.stderr_text;
  EXPECT_EQ(first.stdout_text, "1 ['left'] ['left']\n");
  const ExecutionResult second = Run(testing::Program(
      "zygote/every_run_sees_a_fresh_tmp_and_working_directory_and_only_itself_2"));
  ASSERT_EQ(second.outcome, Outcome::kOk) << second.message << second.stderr_text;
  EXPECT_EQ(second.stdout_text, "[1] [] []\n");
}

// Two runs at once: one listens on an abstract AF_UNIX socket, the other tries to connect to it
// for as long as the first one listens. The guard's audit hook refuses the bind already; beneath
// it, each child's own network namespace (EachChildHasItsOwnUidNamespacesAndCgroup) would.
TEST_F(ZygoteTest, ConcurrentRunsCannotReachEachOthersAbstractSockets) {
  std::random_device rd;
  const std::string name = "codeact-zygote-test-" + std::to_string(rd());
  auto listener = std::async(std::launch::async, [&] {
    return Run("import socket, time\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0" + name +
               "')\ns.listen(1)\nprint('listening', flush=True)\ntime.sleep(3)\n");
  });
  const ExecutionResult dialer =
      Run("import socket, time\nend = time.time() + 2.5\nreached = False\n"
          "while time.time() < end and not reached:\n"
          "    c = socket.socket(socket.AF_UNIX)\n    try:\n        c.connect('\\0" +
          name +
          "')\n        reached = True\n    except OSError:\n        time.sleep(0.05)\n"
          "    c.close()\nprint('reached' if reached else 'refused')\n");
  const ExecutionResult listened = listener.get();
  if (listened.outcome == Outcome::kOk) {
    EXPECT_EQ(listened.stdout_text, "listening\n");
  } else {
    ASSERT_TRUE(listened.error.has_value()) << ToJson(listened);
    EXPECT_EQ(listened.error->message, "codeact guard: network: socket.bind is not allowed");
  }
  ASSERT_EQ(dialer.outcome, Outcome::kOk) << ToJson(dialer);
  EXPECT_EQ(dialer.stdout_text, "refused\n");
}

TEST_F(ZygoteTest, AZygoteIsReplacedAfterItsForks) {
  const auto first = internal::ForkServerPids(*executor_);
  auto replaced = [&] {
    const auto now = internal::ForkServerPids(*executor_);
    return std::any_of(first.begin(), first.end(),
                       [&](pid_t p) { return std::find(now.begin(), now.end(), p) == now.end(); });
  };
  for (int i = 0; i < 300 * static_cast<int>(first.size()) && !replaced(); ++i) {
    const ExecutionResult r = Run("x = 1\n");
    ASSERT_EQ(r.outcome, Outcome::kOk) << r.message;
  }
  ASSERT_TRUE(replaced()) << "no zygote was replaced after 300 runs each";
  // A replaced zygote lives on while pooled children it forked wait: runs take those first.
  for (int i = 0; i < 4; ++i) ASSERT_EQ(Run("x = 1\n").outcome, Outcome::kOk);
  for (pid_t p : first) {
    if (!replaced()) break;
    const auto now = internal::ForkServerPids(*executor_);
    if (std::find(now.begin(), now.end(), p) == now.end())
      EXPECT_TRUE(testing::Eventually([&] { return !testing::ProcessAlive(p); })) << p;
  }
}

// Every attack of the threat model, each run in a child of the zygote: contained as promised.
TEST_F(ZygoteTest, EveryIsolationProbeIsContained) {
  auto reports = internal::RunIsolationProbes(*executor_);
  ASSERT_TRUE(reports.ok()) << reports.status().ToString();
  ASSERT_EQ(reports->size(), internal::IsolationProbeNames().size());
  for (const auto& report : *reports) {
    EXPECT_TRUE(report.promised) << report.name;
    EXPECT_TRUE(report.contained) << report.name << ": " << report.observed;
  }
}

}  // namespace
}  // namespace codeact
