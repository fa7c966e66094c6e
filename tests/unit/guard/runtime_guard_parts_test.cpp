// The runtime guard's parts without Python (src/guard, src/sandbox/seccomp_*): the import
// patterns, the audit rules, and the seccomp programs and Landlock loaded for real in forked
// test processes, each asked what the kernel now answers.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "files/mount_capture.hpp"
#include "guard/audit_rules.hpp"
#include "guard/import_patterns.hpp"
#include "guard/landlock.hpp"
#include "guard/signal_filter.hpp"
#include "sandbox/seccomp_programs.hpp"
#include "sandbox/seccomp_rules.hpp"

namespace codeact::internal {
namespace {

// --- Import patterns (the Python twin is validator/runtime_policy.py) --------------------------

TEST(ImportPatternsTest, ExactWildcardDenyAndTheLongestPrefix) {
  const ImportPatterns p(
      {"math", "os", "os.path", "xml.*", "!xml.dom", "pkg.sub.*", "!pkg", "__future__"});
  for (const char* allowed : {"math", "os", "os.path", "xml", "xml.etree.ElementTree", "pkg.sub",
                              "pkg.sub.x", "__future__"}) {
    EXPECT_TRUE(p.Allows(allowed)) << allowed;
  }
  for (const char* denied :
       {"", "socket", "math.x", "os.sys", "xml.dom", "xml.dom.minidom", "xml._private",
        "xml.etree._x", "pkg", "pkg.other", "xml.subprocess", "xml.SubProcess"}) {
    EXPECT_FALSE(p.Allows(denied)) << denied;
  }
  EXPECT_FALSE(ImportPatterns({"subprocess"}).Allows("subprocess"));
  EXPECT_FALSE(ImportPatterns().Allows("math"));
}

// A name that is not allowed is refused (a "!" pattern or "subprocess" decided: the guard raises
// PermissionError) or merely not available (no pattern matched: ModuleNotFoundError).
TEST(ImportPatternsTest, RefusedNamesAreTheDeniedOnesNotTheUnknownOnes) {
  const ImportPatterns p({"math", "os", "xml.*", "!xml.dom", "!sys", "!ctypes", "!asyncio.x"});
  for (const char* refused :
       {"sys", "sys.monitoring", "ctypes", "ctypes.util", "xml.dom", "xml.dom.minidom", "asyncio.x",
        "subprocess", "numpy.subprocess", "SubProcess", ""}) {
    EXPECT_TRUE(p.Refuses(refused)) << refused;
  }
  for (const char* unavailable : {"numpy", "numpy.linalg", "pandas", "asyncio", "syslog"}) {
    EXPECT_FALSE(p.Allows(unavailable)) << unavailable;
    EXPECT_FALSE(p.Refuses(unavailable)) << unavailable;
  }
  EXPECT_FALSE(p.Refuses("xml.etree"));  // allowed, so not refused
}

// --- Audit rules ---------------------------------------------------------------------------------

TEST(AuditRulesTest, GuardedProcPaths) {
  for (const char* guarded :
       {"/proc/self/mem", "/proc/1/environ", "/proc/thread-self/fd", "/proc/self/fd/3",
        "/proc/12/task/13/mem", "/proc/sys", "/proc/sys/kernel/hostname",
        "//proc/./self/../self/environ", "/proc/self/map_files/x"}) {
    EXPECT_TRUE(IsGuardedProcPath(guarded)) << guarded;
  }
  for (const char* other :
       {"/proc/self/status", "/proc/cpuinfo", "/proc", "/proc/self", "self/mem", "/tmp/mem",
        "/procx/self/mem", "/proc/abc/mem", "/work/proc/self/mem"}) {
    EXPECT_FALSE(IsGuardedProcPath(other)) << other;
  }
}

TEST(AuditRulesTest, EventsAndAttributes) {
  EXPECT_EQ(ClassifyAuditEvent("os.system").action, AuditAction::kDeny);
  EXPECT_STREQ(ClassifyAuditEvent("subprocess.Popen").rule, "process creation");
  EXPECT_EQ(ClassifyAuditEvent("socket.connect").action, AuditAction::kDeny);
  EXPECT_EQ(ClassifyAuditEvent("socket.__new__").action, AuditAction::kCheckSocket);
  EXPECT_EQ(ClassifyAuditEvent("ctypes.dlopen").action, AuditAction::kDeny);
  EXPECT_EQ(ClassifyAuditEvent("sys._getframe").action, AuditAction::kDenyFromUserCode);
  EXPECT_EQ(ClassifyAuditEvent("marshal.loads").action, AuditAction::kDenyFromUserCode);
  EXPECT_EQ(ClassifyAuditEvent("open").action, AuditAction::kCheckPath);
  EXPECT_EQ(ClassifyAuditEvent("os.chmod").action, AuditAction::kCheckMode);
  // The standard library compiles and executes code of its own: not the hook's business.
  for (const char* event : {"compile", "exec", "import", "os.listxattr", "socketx"}) {
    EXPECT_EQ(ClassifyAuditEvent(event).action, AuditAction::kAllow) << event;
  }
  EXPECT_TRUE(IsGuardedAttribute("tb_frame", false));
  EXPECT_TRUE(IsGuardedAttribute("__code__", true));
  EXPECT_FALSE(IsGuardedAttribute("__defaults__", false));  // inspect reads it; harmless
  EXPECT_FALSE(IsGuardedAttribute("counter", true));
}

// --- Seccomp programs
// ------------------------------------------------------------------------------

TEST(SeccompProgramsTest, TheCompiledProgramsAreThisLibseccompsBuildOfTheRules) {
  using Add = RuleStatus (*)(scmp_filter_ctx);
  for (auto [add, program] :
       {std::pair<Add, SeccompProgram>{AddLauncherRules, LauncherSeccompProgram()},
        std::pair<Add, SeccompProgram>{AddGuardRules, GuardSeccompProgram()}}) {
    std::string error;
    const std::vector<sock_filter> built = BuildSeccompProgram(add, error);
    ASSERT_FALSE(built.empty()) << error;
    ASSERT_EQ(built.size(), program.length);
    EXPECT_EQ(std::memcmp(built.data(), program.filter, built.size() * sizeof(sock_filter)), 0);
  }
}

// Runs `checks` in a forked process after `arm` (which returns 0 or an errno); returns the
// failures, one per line ("<check>: <errno text>"), or why the process itself failed.
struct Check {
  const char* name;
  int expected_errno;          // 0: must succeed
  std::function<long()> call;  // returns -1 with errno set on failure
};

std::string RunChecks(const std::function<int()>& arm, const std::vector<Check>& checks) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string failures;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || arm() != 0) {
      failures = std::string("arming failed: ") + std::strerror(errno) + "\n";
    } else {
      for (const auto& c : checks) {
        errno = 0;
        const long rc = c.call();
        const int err = rc == -1 ? errno : 0;
        if (err != c.expected_errno) {
          failures += std::string(c.name) + ": " + (err ? std::strerror(err) : "succeeded") + "\n";
        }
      }
    }
    [[maybe_unused]] ssize_t n = write(fds[1], failures.data(), failures.size());
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    out += "the check process died: " + std::to_string(status);
  return out;
}

int ArmGuardFilters() {
  if (int err = LoadSeccompProgram(GuardSeccompProgram(), true); err != 0) return errno = err;
  const auto signals = SelfTargetFilter(getpid(), getpgrp());
  if (int err = LoadSeccompProgram({signals.data(), signals.size()}, true); err != 0)
    return errno = err;
  return 0;
}

long ThreadRuns() {
  pthread_t thread;
  static int ran = 0;
  if (int err = pthread_create(
          &thread, nullptr,
          [](void*) -> void* {
            ran = 1;
            return nullptr;
          },
          nullptr);
      err != 0) {
    errno = err;
    return -1;
  }
  pthread_join(thread, nullptr);
  return ran ? 0 : (errno = EINVAL, -1);
}

long UnixConnect(int type) {
  const int fd = socket(AF_UNIX, type, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, "/run/codeact-test-no-such.sock");
  const long rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  close(fd);
  errno = err;
  return rc;
}

long PairSend() {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return -1;
  const long rc = send(pair[0], "x", 1, 0);
  close(pair[0]);
  close(pair[1]);
  return rc < 0 ? -1 : 0;
}

TEST(GuardSeccompTest, RefusesWhatTheGuardRefusesAndLetsThreadsAndSocketpairsBe) {
  auto dir = TempDir::Create("codeact-guard-seccomp-");
  ASSERT_TRUE(dir.ok());
  const std::string file = dir->path() + "/f";
  const std::string created = dir->path() + "/g";
  close(open(file.c_str(), O_CREAT | O_WRONLY, 0644));
  const pid_t parent = getpid();
  const std::vector<Check> checks = {
      {"fork", EPERM, [] { return static_cast<long>(syscall(SYS_fork)); }},
      {"vfork", EPERM, [] { return syscall(SYS_vfork); }},
      {"clone without CLONE_THREAD", EPERM, [] { return syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0); }},
      {"clone3", ENOSYS, [] { return syscall(SYS_clone3, nullptr, 0); }},
      {"a thread", 0, ThreadRuns},
      {"execve", EPERM,
       [] {
         char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
         return static_cast<long>(execve("/bin/true", argv, nullptr));
       }},
      {"socket AF_INET", EPERM, [] { return static_cast<long>(socket(AF_INET, SOCK_STREAM, 0)); }},
      {"socket AF_NETLINK", EPERM,
       [] { return static_cast<long>(socket(AF_NETLINK, SOCK_DGRAM, 0)); }},
      {"connect AF_UNIX", EPERM, [] { return UnixConnect(SOCK_STREAM); }},
      {"socketpair and send", 0, PairSend},
      {"sendto an address", EPERM,
       [] {
         sockaddr_un addr{};
         addr.sun_family = AF_UNIX;
         const int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
         const long rc = sendto(fd, "x", 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
         close(fd);
         return rc;
       }},
      {"chmod setuid", EPERM, [&] { return static_cast<long>(chmod(file.c_str(), 04755)); }},
      {"chmod setgid", EPERM, [&] { return static_cast<long>(chmod(file.c_str(), 02755)); }},
      {"fchmodat setuid", EPERM,
       [&] { return static_cast<long>(fchmodat(AT_FDCWD, file.c_str(), 04755, 0)); }},
      {"chmod plain", 0, [&] { return static_cast<long>(chmod(file.c_str(), 0755)); }},
      {"open O_CREAT setuid", EPERM,
       [&] { return static_cast<long>(open(created.c_str(), O_CREAT | O_WRONLY, 04755)); }},
      {"mkdir setgid", EPERM,
       [&] { return static_cast<long>(mkdir((created + "d").c_str(), 02755)); }},
      {"setxattr", EPERM,
       [&] { return static_cast<long>(setxattr(file.c_str(), "user.x", "1", 1, 0)); }},
      {"fchmodat2", ENOSYS, [&] { return syscall(452, AT_FDCWD, file.c_str(), 0755, 0); }},
      {"openat2", ENOSYS,
       [&] {
         open_how how{};
         how.flags = O_RDONLY;
         return syscall(SYS_openat2, AT_FDCWD, file.c_str(), &how, sizeof how);
       }},
      {"an unknown system call", ENOSYS, [] { return syscall(500); }},
      {"a number in the gap of the table", ENOSYS, [] { return syscall(400); }},
      // Past the table's end, and known to this kernel (EFAULT without the filter, from 6.8).
      {"listmount, newer than the table", ENOSYS,
       [] { return syscall(458, nullptr, nullptr, 0, 0); }},
      {"ptrace", EPERM, [] { return syscall(SYS_ptrace, 0, 0, 0, 0); }},
      {"unshare", EPERM, [] { return static_cast<long>(unshare(CLONE_NEWUSER)); }},
      {"personality", EPERM, [] { return syscall(SYS_personality, 0xffffffff); }},
      {"io_uring_setup", EPERM, [] { return syscall(SYS_io_uring_setup, 1, nullptr); }},
      {"bpf", EPERM, [] { return syscall(SYS_bpf, 0, nullptr, 0); }},
      {"userfaultfd", EPERM, [] { return syscall(SYS_userfaultfd, 0); }},
      {"kill self", 0, [] { return static_cast<long>(kill(getpid(), 0)); }},
      {"kill own group", 0, [] { return static_cast<long>(kill(0, 0)); }},
      {"kill -own group", 0, [] { return static_cast<long>(kill(-getpgrp(), 0)); }},
      {"kill the parent", EPERM, [&] { return static_cast<long>(kill(parent, 0)); }},
      {"kill init", EPERM, [] { return static_cast<long>(kill(1, 0)); }},
      {"kill everyone", EPERM, [] { return static_cast<long>(kill(-1, 0)); }},
      {"tgkill self", 0, [] { return syscall(SYS_tgkill, getpid(), gettid(), 0); }},
      {"tgkill the parent", EPERM, [&] { return syscall(SYS_tgkill, parent, parent, 0); }},
      {"tkill the parent", EPERM, [&] { return syscall(SYS_tkill, parent, 0); }},
      {"rt_sigqueueinfo the parent", EPERM,
       [&] {
         siginfo_t info{};
         return syscall(SYS_rt_sigqueueinfo, parent, 0, &info);
       }},
      {"pidfd_open the parent", EPERM, [&] { return syscall(SYS_pidfd_open, parent, 0); }},
      {"pidfd_open self", 0,
       [] {
         const long fd = syscall(SYS_pidfd_open, getpid(), 0);
         if (fd >= 0) close(static_cast<int>(fd));
         return fd < 0 ? -1L : 0L;
       }},
      {"pidfd_send_signal", EPERM, [] { return syscall(SYS_pidfd_send_signal, 0, 0, nullptr, 0); }},
      {"ioctl TIOCSTI", EPERM,
       [] {
         char c = 'x';
         return static_cast<long>(ioctl(0, TIOCSTI, &c));
       }},
  };
  // setpgid: "kill -own group" needs a group of our own (a forked test process shares gtest's).
  EXPECT_EQ(RunChecks([] { return setpgid(0, 0) == 0 ? ArmGuardFilters() : errno; }, checks), "");
}

// Issue 31: the resource, priority and scheduling calls reach only the process itself; SysV
// IPC, message queues, inotify and memfds are refused; a chmod may not weaken a mode, nor a
// umask lose 022. The target here is the test process itself, the forked check's parent.
TEST(GuardSeccompTest, ResourceAndSchedulingCallsReachOnlyTheProcessItself) {
  auto dir = TempDir::Create("codeact-guard-seccomp-");
  ASSERT_TRUE(dir.ok());
  const std::string file = dir->path() + "/f";
  close(open(file.c_str(), O_CREAT | O_WRONLY, 0644));
  const pid_t parent = getpid();
  rlimit parent_as{};
  ASSERT_EQ(prlimit(parent, RLIMIT_AS, nullptr, &parent_as), 0);
  const int parent_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(parent));
  constexpr id_t kNoSuchId = 0x3ffffff0;  // a uid and a process group nothing has
  const std::vector<Check> checks = {
      // Each attempt on another process would leave it as it is, were it let through; a group or
      // a user no process has stands for the caller's own (the rule is on `which`).
      {"prlimit64 the parent", EPERM,
       [&] { return static_cast<long>(prlimit(parent, RLIMIT_AS, &parent_as, nullptr)); }},
      {"prlimit64 self (0)", 0,
       [] {
         rlimit r{};
         getrlimit(RLIMIT_NOFILE, &r);
         return static_cast<long>(prlimit(0, RLIMIT_NOFILE, &r, nullptr));
       }},
      {"prlimit64 self (pid)", 0,
       [] {
         rlimit r{};
         return static_cast<long>(prlimit(getpid(), RLIMIT_NOFILE, nullptr, &r));
       }},
      {"setrlimit", 0,
       [] {
         rlimit r{};
         getrlimit(RLIMIT_NOFILE, &r);
         return static_cast<long>(setrlimit(RLIMIT_NOFILE, &r));
       }},
      {"setpriority the parent", EPERM,
       [&] {
         return static_cast<long>(
             setpriority(PRIO_PROCESS, static_cast<id_t>(parent), parent_nice));
       }},
      {"setpriority a user", EPERM,
       [] { return static_cast<long>(setpriority(PRIO_USER, kNoSuchId, 17)); }},
      {"setpriority a group", EPERM,
       [] { return static_cast<long>(setpriority(PRIO_PGRP, kNoSuchId, 17)); }},
      // One step nicer than now: a host under nice may be past 1 already, and lowering it needs
      // CAP_SYS_NICE.
      {"setpriority self", 0,
       [] {
         const int now = getpriority(PRIO_PROCESS, 0);
         return static_cast<long>(setpriority(PRIO_PROCESS, 0, std::min(19, now + 1)));
       }},
      {"sched_setaffinity the parent", EPERM,
       [&] {
         cpu_set_t set;
         CPU_ZERO(&set);
         CPU_SET(0, &set);
         return static_cast<long>(sched_setaffinity(parent, sizeof set, &set));
       }},
      {"sched_setaffinity self", 0,
       [] {
         cpu_set_t set;
         sched_getaffinity(0, sizeof set, &set);
         return static_cast<long>(sched_setaffinity(0, sizeof set, &set));
       }},
      {"sched_setscheduler the parent", EPERM,
       [&] {
         sched_param p{};
         return static_cast<long>(sched_setscheduler(parent, SCHED_OTHER, &p));
       }},
      {"sched_setparam the parent", EPERM,
       [&] {
         sched_param p{};
         return static_cast<long>(sched_setparam(parent, &p));
       }},
      {"sched_setattr the parent", EPERM,
       [&] {
         std::uint32_t attr[14] = {56};  // size; SCHED_OTHER, nice 0
         return syscall(SYS_sched_setattr, parent, attr, 0);
       }},
      {"ioprio_set the parent", EPERM, [&] { return syscall(SYS_ioprio_set, 1, parent, 0); }},
      {"ioprio_set a user", EPERM, [] { return syscall(SYS_ioprio_set, 3, kNoSuchId, 0); }},
      {"ioprio_set a group", EPERM, [] { return syscall(SYS_ioprio_set, 2, kNoSuchId, 0); }},
      {"ioprio_set self", 0, [] { return syscall(SYS_ioprio_set, 1, 0, (2 << 13) | 4); }},
      {"shmget", EPERM, [] { return static_cast<long>(shmget(IPC_PRIVATE, 4096, 0600)); }},
      {"msgget", EPERM, [] { return static_cast<long>(msgget(IPC_PRIVATE, 0600)); }},
      {"semget", EPERM, [] { return static_cast<long>(semget(IPC_PRIVATE, 1, 0600)); }},
      {"mq_open", EPERM,
       [] { return syscall(SYS_mq_open, "codeact-test", O_CREAT | O_RDWR, 0600, nullptr); }},
      {"inotify_init1", EPERM, [] { return static_cast<long>(inotify_init1(0)); }},
      {"memfd_create", EPERM, [] { return syscall(SYS_memfd_create, "x", 0); }},
      {"chmod o+w", EPERM, [&] { return static_cast<long>(chmod(file.c_str(), 0646)); }},
      {"chmod 0777", EPERM, [&] { return static_cast<long>(chmod(file.c_str(), 0777)); }},
      {"chmod sticky", EPERM, [&] { return static_cast<long>(chmod(file.c_str(), 01755)); }},
      {"fchmodat o+w", EPERM,
       [&] { return static_cast<long>(fchmodat(AT_FDCWD, file.c_str(), 0666, 0)); }},
      {"chmod 0644", 0, [&] { return static_cast<long>(chmod(file.c_str(), 0644)); }},
      {"umask 0", EPERM, [] { return syscall(SYS_umask, 0); }},
      {"umask 002", EPERM, [] { return syscall(SYS_umask, 002); }},
      {"umask 077", 0, [] { return syscall(SYS_umask, 077); }},
  };
  EXPECT_EQ(RunChecks(ArmGuardFilters, checks), "");
  rlimit after{};
  ASSERT_EQ(prlimit(parent, RLIMIT_AS, nullptr, &after), 0);
  EXPECT_EQ(after.rlim_cur, parent_as.rlim_cur);
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(parent)), parent_nice);
}

TEST(GuardSeccompTest, OtherArchitecturesCallsKillTheProcess) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ArmGuardFilters() != 0) _exit(2);
    syscall(0x40000000 | SYS_getpid);  // the x32 ABI's getpid
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(LauncherSeccompTest, SharesTheGuardsRulesButLetsProcessesBe) {
  auto dir = TempDir::Create("codeact-launcher-seccomp-");
  ASSERT_TRUE(dir.ok());
  const std::string file = dir->path() + "/f";
  close(open(file.c_str(), O_CREAT | O_WRONLY, 0644));
  const std::vector<Check> checks = {
      {"fork", 0,
       [] {
         const pid_t child = fork();
         if (child == 0) _exit(0);
         if (child > 0) waitpid(child, nullptr, 0);
         return child < 0 ? -1L : 0L;
       }},
      {"clone CLONE_NEWUSER", EPERM,
       [] { return syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0); }},
      {"socket AF_INET", EPERM, [] { return static_cast<long>(socket(AF_INET, SOCK_STREAM, 0)); }},
      {"chmod setuid", EPERM, [&] { return static_cast<long>(chmod(file.c_str(), 04755)); }},
      {"an unknown system call", ENOSYS, [] { return syscall(500); }},
      {"listmount, newer than the table", ENOSYS,
       [] { return syscall(458, nullptr, nullptr, 0, 0); }},
      {"fchmodat2", ENOSYS, [&] { return syscall(452, AT_FDCWD, file.c_str(), 0755, 0); }},
      {"mount", EPERM, [] { return syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, nullptr); }},
  };
  EXPECT_EQ(RunChecks([] { return LoadSeccompProgram(LauncherSeccompProgram(), false); }, checks),
            "");
}

// --- Landlock ----------------------------------------------------------------------------------

TEST(LandlockTest, OnlyTheGivenPathsAndNoProc) {
  const int abi = LandlockAbi();
  if (abi < 1) GTEST_SKIP() << "this kernel has no Landlock";
  auto dir = TempDir::Create("codeact-landlock-");
  ASSERT_TRUE(dir.ok());
  auto outside = TempDir::Create("codeact-landlock-outside-");
  ASSERT_TRUE(outside.ok());
  const std::string work = dir->path();
  const std::string secret = outside->path() + "/secret";
  close(open(secret.c_str(), O_CREAT | O_WRONLY, 0644));
  LandlockPaths paths;
  paths.exec = {"/usr", "/nonexistent-skipped"};
  paths.write = {work, "/dev/null"};
  const std::vector<Check> checks = {
      {"read beneath exec", 0,
       [] {
         const int fd = open("/usr/lib/os-release", O_RDONLY);
         if (fd >= 0) close(fd);
         return fd < 0 ? -1L : 0L;
       }},
      {"write beneath exec", EACCES,
       [] { return static_cast<long>(open("/usr/codeact-test", O_CREAT | O_WRONLY, 0644)); }},
      {"create beneath write", 0,
       [&] {
         const int fd = open((work + "/new").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
         if (fd >= 0) close(fd);
         return fd < 0 ? -1L : 0L;
       }},
      {"rename within write", 0,
       [&] {
         mkdir((work + "/sub").c_str(), 0700);
         return static_cast<long>(rename((work + "/new").c_str(), (work + "/sub/new").c_str()));
       }},
      {"a device node beneath write", EACCES,
       [&] {
         return static_cast<long>(mknod((work + "/null").c_str(), S_IFCHR | 0600, makedev(1, 3)));
       }},
      {"/dev/null with O_TRUNC", 0,
       [] {
         const int fd = open("/dev/null", O_WRONLY | O_TRUNC);
         if (fd >= 0) close(fd);
         return fd < 0 ? -1L : 0L;
       }},
      {"read outside", EACCES, [&] { return static_cast<long>(open(secret.c_str(), O_RDONLY)); }},
      {"list /", EACCES, [] { return static_cast<long>(open("/", O_RDONLY | O_DIRECTORY)); }},
      {"/proc/self/status", EACCES,
       [] { return static_cast<long>(open("/proc/self/status", O_RDONLY)); }},
      {"/etc/passwd", EACCES, [] { return static_cast<long>(open("/etc/passwd", O_RDONLY)); }},
  };
  EXPECT_EQ(RunChecks(
                [&] {
                  const std::string error = ApplyLandlock(paths, abi);
                  if (!error.empty()) errno = EINVAL;
                  return error.empty() ? 0 : EINVAL;
                },
                checks),
            "");
}

TEST(LandlockTest, TcpIsRefusedFromAbi4) {
  const int abi = LandlockAbi();
  if (abi < 4) GTEST_SKIP() << "Landlock ABI " << abi << " has no network rules";
  const std::vector<Check> checks = {
      {"connect TCP", EACCES,
       [] {
         const int fd = socket(AF_INET, SOCK_STREAM, 0);
         sockaddr_in addr{};
         addr.sin_family = AF_INET;
         addr.sin_port = htons(9);
         addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
         const long rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
         const int err = errno;
         close(fd);
         errno = err;
         return rc;
       }},
  };
  EXPECT_EQ(RunChecks(
                [&] {
                  return ApplyLandlock({{"/usr"}, {}, {}}, abi).empty() ? 0 : EINVAL;
                },
                checks),
            "");
}

}  // namespace
}  // namespace codeact::internal
