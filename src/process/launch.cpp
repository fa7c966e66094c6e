#include "process/launch.hpp"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "os/errno_status.hpp"
#include "os/pipe.hpp"
#include "os/resource_limits.hpp"
#include "process/child.hpp"
#include "sandbox/idmap.hpp"

extern "C" char** environ;

namespace codeact::internal {
namespace {

// How the child is made, and how exec-setup failures reach the parent
// --------------------------------------------------------------------
// clone(CLONE_VM | CLONE_VFORK), as posix_spawn does, rather than fork: the child shares the
// host's memory until its execve, so no page table is copied and no page is copy-on-write
// faulted. On the 2-core test VM a fork of a 60 MB process took ~30 ms more than a vfork, and
// the host holds its memory map's lock meanwhile, stalling every thread that allocates: that sat
// on the path of every cold start and of every refill of a server. Only the calling thread
// waits (until the child's execve or _exit); the host's other threads go on, so the child must
// not touch memory they use: it runs on a stack of its own, reads only the ChildSetup built
// before the clone, allocates nothing, and makes raw system calls where glibc's wrappers would
// reach the host's threads (setresuid/setresgid/setgroups broadcast to "all threads").
// Boost.Process's launchers were dropped for this: their child code allocates (notify_fork) and
// calls ::exit() after a failed exec. The child runs the whole checklist *and the execve
// itself*: on any failure it writes a SetupFailure record to a report pipe of our own
// (O_CLOEXEC) and _exit()s. The parent reads that pipe until EOF: EOF with no record means
// execve succeeded (the close-on-exec write end vanished), a record names the failing step.
enum class Step : std::int32_t {
  kSignalDisposition,
  kSignalMask,
  kSetpgid,
  kUnshareMountNs,
  kPrivateMounts,
  kWorkdirTmpfs,
  kAttachTree,
  kSetgroups,
  kSetresgid,
  kSetresuid,
  kParentDeathSignal,
  kParentExited,
  kJoinCgroup,
  kChdir,
  kMoveFd,
  kDup2,
  kCloseRange,
  kSetrlimit,
  kExecve,
};

struct SetupFailure {
  std::int32_t step;
  std::int32_t err;
  std::int32_t detail;  // fd number (kDup2, kMoveFd), resource index (kSetrlimit), signal
};

struct LimitSetting {
  int resource;
  rlimit value;
};

// Everything the child needs, computed before fork: after fork the child only reads this,
// makes system calls and writes a fixed-size record (all async-signal-safe).
struct ChildSetup {
  pid_t parent_pid = -1;
  bool own_pid_namespace = false;  // LaunchPlan::own_pid_namespace: getppid() is 0 there
  int report_fd = -1;
  int fds[kMaxChildFds] = {-1, -1, -1, -1, -1};
  int fd_count = 0;
  const char* working_dir = nullptr;
  const char* cgroup_join[kMaxCgroupJoinFiles] = {};
  int cgroup_count = 0;
  LimitSetting limits[ResourceLimits::kMax + 1] = {};  // RLIMIT_CORE and the plan's
  int limit_count = 0;
  int fallback_close_max = 0;  // upper bound for the close loop when close_range is missing
  // Identity (LaunchPlan::run_as_uid): uid -1 keeps the host's.
  long run_as_uid = -1;
  const char* workdir_tmpfs_options = nullptr;  // "size=N,mode=0700,uid=U,gid=U", or none
  const std::pair<int, std::string>* trees = nullptr;
  int tree_count = 0;
};

[[noreturn]] void FailSetup(int report_fd, Step step, int err, int detail = 0) {
  const SetupFailure record{static_cast<std::int32_t>(step), err != 0 ? err : EINVAL, detail};
  // A 12-byte write to a pipe is atomic; if it fails there is no one else to tell.
  [[maybe_unused]] ssize_t ignored = ::write(report_fd, &record, sizeof record);
  ::_exit(127);
}

int CloseRange(unsigned first, unsigned last) {
  // The raw system call: glibc's close_range wrapper may be missing on older systems.
  return ::syscall(SYS_close_range, first, last, 0) == 0 ? 0 : errno;
}

constexpr int kMaxKeptFds = 8;

// Closes every fd >= first except those in `keep` (sorted, unique, all >= first).
// Returns 0 or an errno.
int CloseFdsExcept(int first, const int* keep, int keep_count, int fallback_max) {
  int err = 0;
  int low = first;
  for (int i = 0; i < keep_count && err == 0; ++i) {
    if (keep[i] > low) err = CloseRange(low, keep[i] - 1);
    low = keep[i] + 1;
  }
  if (err == 0) err = CloseRange(low, ~0U);
  if (err != ENOSYS) return err;
  // Kernels before 5.9 have no close_range: close up to the NOFILE limit read before fork.
  for (int fd = first, next_keep = 0; fd < fallback_max; ++fd) {
    if (next_keep < keep_count && fd == keep[next_keep]) {
      ++next_keep;
    } else {
      ::close(fd);
    }
  }
  return 0;
}

// Adds `fd` to the sorted set `keep` if it is >= first, not there yet, and close-on-exec.
void AddKeptFd(int fd, int first, int* keep, int& keep_count) {
  if (fd < first || keep_count == kMaxKeptFds) return;
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags < 0 || (flags & FD_CLOEXEC) == 0) return;  // would outlive exec: close it
  int at = 0;
  while (at < keep_count && keep[at] < fd) ++at;
  if (at < keep_count && keep[at] == fd) return;
  for (int i = keep_count; i > at; --i) keep[i] = keep[i - 1];
  keep[at] = fd;
  ++keep_count;
}

// The steps of RunChildSetup. Each runs in the child between fork and exec, so each is
// async-signal-safe, and each either completes or reports its failure and _exit()s.

// The host may ignore signals or block them in the forking thread (we block all of them around
// fork ourselves so no host handler can run here). Reset dispositions first, then unblock, so
// nothing pending is delivered to a host handler.
void ResetSignals(int report_fd) {
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    // glibc reserves two real-time signals for itself and answers EINVAL for them.
    if (::sigaction(sig, &default_action, nullptr) != 0 && errno != EINVAL) {
      FailSetup(report_fd, Step::kSignalDisposition, errno, sig);
    }
  }
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  if (::sigprocmask(SIG_SETMASK, &empty_mask, nullptr) != 0) {
    FailSetup(report_fd, Step::kSignalMask, errno);
  }
}

// Joins the run's cgroup: "0" (the child itself, single-threaded) to each of its join files
// (RunCgroup::join_files).
void JoinCgroups(const ChildSetup& setup, int report_fd) {
  for (int i = 0; i < setup.cgroup_count; ++i) {
    const int fd = ::open(setup.cgroup_join[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0) FailSetup(report_fd, Step::kJoinCgroup, errno, i);
    const bool written = ::write(fd, "0", 1) == 1;
    const int err = errno;
    ::close(fd);
    if (!written) FailSetup(report_fd, Step::kJoinCgroup, err, i);
  }
}

// A private mount namespace with the run's working directory as a sized tmpfs and its mounts'
// idmapped trees attached, then the run's own uid (and gid, with no supplementary groups).
void BecomeRunIdentity(const ChildSetup& setup, int report_fd) {
  const auto uid = static_cast<uid_t>(setup.run_as_uid);
  if (setup.workdir_tmpfs_options != nullptr || setup.tree_count > 0) {
    if (::unshare(CLONE_NEWNS) != 0) FailSetup(report_fd, Step::kUnshareMountNs, errno);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      FailSetup(report_fd, Step::kPrivateMounts, errno);
    }
    if (setup.workdir_tmpfs_options != nullptr &&
        ::mount("tmpfs", setup.working_dir, "tmpfs", MS_NOSUID | MS_NODEV,
                setup.workdir_tmpfs_options) != 0) {
      FailSetup(report_fd, Step::kWorkdirTmpfs, errno);
    }
    for (int i = 0; i < setup.tree_count; ++i) {
      if (int err = AttachTree(setup.trees[i].first, setup.trees[i].second.c_str()); err != 0) {
        FailSetup(report_fd, Step::kAttachTree, err, i);
      }
    }
  }
  // Raw system calls: glibc's wrappers signal every thread of the (shared) host to follow.
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) FailSetup(report_fd, Step::kSetgroups, errno);
  if (::syscall(SYS_setresgid, uid, uid, uid) != 0) FailSetup(report_fd, Step::kSetresgid, errno);
  if (::syscall(SYS_setresuid, uid, uid, uid) != 0) FailSetup(report_fd, Step::kSetresuid, errno);
}

// Puts the plan's fds at 0..fd_count-1. A source may itself sit on 0-4 (a host with stdio
// closed, or a descriptor another thread just freed), where an earlier dup2 would clobber it:
// every such fd, and the report pipe, moves above the layout first. Returns the report pipe's fd.
int LayOutFds(const ChildSetup& setup, int report_fd) {
  int sources[kMaxChildFds];
  for (int i = 0; i < setup.fd_count; ++i) {
    sources[i] = setup.fds[i];
    if (sources[i] < kMaxChildFds) {
      sources[i] = ::fcntl(sources[i], F_DUPFD_CLOEXEC, kMaxChildFds);
      if (sources[i] < 0) FailSetup(report_fd, Step::kMoveFd, errno, setup.fds[i]);
    }
  }
  if (report_fd < kMaxChildFds) {
    const int moved = ::fcntl(report_fd, F_DUPFD_CLOEXEC, kMaxChildFds);
    if (moved < 0) FailSetup(report_fd, Step::kMoveFd, errno, report_fd);
    report_fd = moved;
  }
  for (int target = 0; target < setup.fd_count; ++target) {
    // dup2 clears FD_CLOEXEC on the target, so exactly these survive the exec.
    if (::dup2(sources[target], target) < 0) FailSetup(report_fd, Step::kDup2, errno, target);
  }
  return report_fd;
}

// Closes everything above the layout, including any descriptor the host opened without
// O_CLOEXEC. The report pipe is kept until execve closes it (O_CLOEXEC).
void CloseOtherFds(const ChildSetup& setup, int report_fd) {
  int keep[kMaxKeptFds];
  int keep_count = 0;
  AddKeptFd(report_fd, setup.fd_count, keep, keep_count);
  if (int err = CloseFdsExcept(setup.fd_count, keep, keep_count, setup.fallback_close_max);
      err != 0) {
    FailSetup(report_fd, Step::kCloseRange, err);
  }
}

// Runs in the child between clone and exec: the checklist, in order. Never returns.
[[noreturn]] void RunChildSetup(const ChildSetup& setup, const char* executable,
                                const char* const* argv, const char* const* envp) {
  int report_fd = setup.report_fd;

  // 1. Signals: default dispositions, nothing blocked.
  ResetSignals(report_fd);

  // 2. Own process group, so the host can kill everything the program starts in one call.
  // (Boost.Process 1.81 has no process-group initializer.)
  if (::setpgid(0, 0) != 0) FailSetup(report_fd, Step::kSetpgid, errno);

  // 2a. Join the run's cgroup before the program can fork or allocate (and while the child still
  // has the host's credentials, which own the cgroup files): from here on all its processes and
  // memory count against the group, and the group's kill reaches them.
  JoinCgroups(setup, report_fd);

  // 2b. A root host: the run's own mounts in a private mount namespace (its working directory a
  // sized tmpfs, the mounts idmapped trees), then the run's own unprivileged uid for good.
  if (setup.run_as_uid >= 0) BecomeRunIdentity(setup, report_fd);

  // 3. Die with the host. If the parent already died between fork and prctl, the signal
  // will never come: detect that by the parent pid changing (reparenting).
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    FailSetup(report_fd, Step::kParentDeathSignal, errno);
  // In a pid namespace of its own the parent is outside it (getppid() is 0): its thread is held
  // by CLONE_VFORK until the exec, so only the death of the whole host can come between.
  if (::getppid() != (setup.own_pid_namespace ? 0 : setup.parent_pid))
    FailSetup(report_fd, Step::kParentExited, ESRCH);

  // 4. Working directory (before the fd layout, so a relative path means the host's cwd).
  if (setup.working_dir != nullptr && ::chdir(setup.working_dir) != 0) {
    FailSetup(report_fd, Step::kChdir, errno);
  }

  // 5. Fd layout: the plan's fds at 0..n-1 (the report pipe may move above them).
  report_fd = LayOutFds(setup, report_fd);

  // 6. Close everything else.
  CloseOtherFds(setup, report_fd);

  // 7. Resource limits.
  for (int i = 0; i < setup.limit_count; ++i) {
    const LimitSetting& limit = setup.limits[i];
    if (::setrlimit(limit.resource, &limit.value) != 0) {
      FailSetup(report_fd, Step::kSetrlimit, errno, i);
    }
  }

  // 8. Exec; a failure goes through the report pipe and _exit.
  ::execve(executable, const_cast<char* const*>(argv), const_cast<char* const*>(envp));
  FailSetup(report_fd, Step::kExecve, errno);
}

// What the cloned child starts from: everything it reads, built before the clone.
struct CloneArgs {
  const ChildSetup* setup;
  const char* executable;
  const char* const* argv;
  const char* const* envp;
};

int CloneChildMain(void* arg) {
  const auto* a = static_cast<const CloneArgs*>(arg);
  RunChildSetup(*a->setup, a->executable, a->argv, a->envp);
}

std::string StepMessage(const SetupFailure& failure, const ChildSetup& setup,
                        const LaunchPlan& plan) {
  // The steps whose call is the same in every launch; the others name the run's details.
  static constexpr std::pair<Step, const char*> kFixedCalls[] = {
      {Step::kSignalMask, "sigprocmask(SIG_SETMASK, {})"},
      {Step::kSetpgid, "setpgid(0, 0)"},
      {Step::kUnshareMountNs, "unshare(CLONE_NEWNS)"},
      {Step::kPrivateMounts, "mount(/, MS_REC | MS_PRIVATE)"},
      {Step::kSetgroups, "setgroups({})"},
      {Step::kParentDeathSignal, "prctl(PR_SET_PDEATHSIG, SIGKILL)"}};
  for (const auto& [fixed, call] : kFixedCalls) {
    if (static_cast<Step>(failure.step) == fixed) {
      return std::string(call) + " failed: " + ErrnoText(failure.err);
    }
  }
  std::string step;
  switch (static_cast<Step>(failure.step)) {
    case Step::kSignalDisposition:
      step = "sigaction(" + std::to_string(failure.detail) + ", SIG_DFL)";
      break;
    case Step::kWorkdirTmpfs:
      step = "mount a tmpfs on the working directory " + plan.working_dir;
      break;
    case Step::kAttachTree:
      step = "attach the tree of " +
             (failure.detail >= 0 && failure.detail < static_cast<int>(plan.trees.size())
                  ? plan.trees[failure.detail].second
                  : std::string("a mount"));
      break;
    case Step::kSetresgid:
      step = "setresgid(" + std::to_string(plan.run_as_uid) + ")";
      break;
    case Step::kSetresuid:
      step = "setresuid(" + std::to_string(plan.run_as_uid) + ")";
      break;
    case Step::kParentExited:
      return "the parent exited while the child was starting (PR_SET_PDEATHSIG would never fire)";
    case Step::kJoinCgroup:
      step = "write 0 (join) to " + (failure.detail >= 0 && failure.detail < setup.cgroup_count
                                         ? std::string(setup.cgroup_join[failure.detail])
                                         : std::string("a cgroup join file"));
      break;
    case Step::kChdir:
      step = "chdir(" + plan.working_dir + ")";
      break;
    case Step::kMoveFd:
      step = "fcntl(" + std::to_string(failure.detail) + ", F_DUPFD_CLOEXEC)";
      break;
    case Step::kDup2:
      step = "dup2 onto fd " + std::to_string(failure.detail);
      break;
    case Step::kCloseRange:
      step = "close_range(" + std::to_string(setup.fd_count) + ", ~0U)";
      break;
    case Step::kSetrlimit:
      if (failure.detail >= 0 && failure.detail < setup.limit_count) {
        const LimitSetting& limit = setup.limits[failure.detail];
        step = std::string("setrlimit(") + RlimitName(limit.resource) + ", " +
               std::to_string(limit.value.rlim_cur) + ")";
      } else {
        step = "setrlimit";
      }
      break;
    case Step::kExecve:
      step = "execve(" + plan.executable + ")";
      break;
    default:
      step = "child setup step " + std::to_string(failure.step);
      break;
  }
  return step + " failed: " + ErrnoText(failure.err);
}

void ReapBlocking(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

Status ValidatePlan(const LaunchPlan& plan) {
  auto has_nul = [](const std::string& s) { return s.find('\0') != std::string::npos; };
  if (plan.executable.empty()) return InvalidArgument("the executable path is empty");
  if (has_nul(plan.executable)) return InvalidArgument("the executable path contains a NUL byte");
  for (const std::string& arg : plan.args) {
    if (has_nul(arg)) return InvalidArgument("an argument contains a NUL byte");
  }
  if (plan.environment) {
    for (const std::string& entry : *plan.environment) {
      if (has_nul(entry)) return InvalidArgument("an environment entry contains a NUL byte");
    }
  }
  if (has_nul(plan.working_dir))
    return InvalidArgument("the working directory contains a NUL byte");
  if (plan.run_as_uid == 0 || plan.run_as_uid > 0xFFFFFFFELL)
    return InvalidArgument("run_as_uid must be an unprivileged uid");
  if (plan.private_workdir_bytes > 0 && plan.working_dir.empty()) {
    return InvalidArgument("a private working-directory tmpfs needs a working directory");
  }
  for (const auto& [fd, path] : plan.trees) {
    if (fd < 0 || path.empty() || path[0] != '/')
      return InvalidArgument("a tree needs an fd and an absolute path");
  }
  if (plan.child_fds.size() != 3 && plan.child_fds.size() != kMaxChildFds) {
    return Internal("LaunchProcess needs 3 or 5 child fds");
  }
  for (int fd : plan.child_fds) {
    if (fd < 0) return Internal("LaunchProcess got an invalid child fd");
  }
  if (plan.limits) {
    for (const Rlimit& l : *plan.limits) {
      if (l.soft < 0 || l.hard < l.soft)
        return InvalidArgument("resource limits must not be negative");
    }
  }
  if (plan.cgroup_join.size() > static_cast<std::size_t>(kMaxCgroupJoinFiles)) {
    return Internal("LaunchProcess got more cgroup join files than hierarchies exist");
  }
  for (const std::string& file : plan.cgroup_join) {
    if (file.empty() || has_nul(file)) return InvalidArgument("unusable cgroup join file path");
  }
  return Status::Ok();
}

void AddLimit(ChildSetup& setup, int resource, std::int64_t soft, std::int64_t hard) {
  LimitSetting& limit = setup.limits[setup.limit_count++];
  limit.resource = resource;
  limit.value.rlim_cur = static_cast<rlim_t>(soft);
  limit.value.rlim_max = static_cast<rlim_t>(hard);
}

// Blocks every signal in the calling thread for the fork, so no host handler runs in the
// child before it resets the dispositions.
class ScopedBlockAllSignals {
 public:
  ScopedBlockAllSignals() {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &old_);
  }
  ~ScopedBlockAllSignals() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  ScopedBlockAllSignals(const ScopedBlockAllSignals&) = delete;
  ScopedBlockAllSignals& operator=(const ScopedBlockAllSignals&) = delete;

 private:
  sigset_t old_;
};

// Fills `setup` from `plan` (all but the report pipe); `workdir_tmpfs_options` holds the text
// setup.workdir_tmpfs_options points to.
void FillSetup(const LaunchPlan& plan, ChildSetup& setup, std::string& workdir_tmpfs_options) {
  setup.parent_pid = ::getpid();
  setup.own_pid_namespace = plan.own_pid_namespace;
  setup.fd_count = static_cast<int>(plan.child_fds.size());
  for (int i = 0; i < setup.fd_count; ++i) setup.fds[i] = plan.child_fds[i];
  setup.working_dir = plan.working_dir.empty() ? nullptr : plan.working_dir.c_str();
  for (const std::string& file : plan.cgroup_join)
    setup.cgroup_join[setup.cgroup_count++] = file.c_str();
  if (plan.limits) {
    AddLimit(setup, RLIMIT_CORE, 0, 0);
    for (const Rlimit& l : *plan.limits) {
      if (l.resource != RLIMIT_CORE) AddLimit(setup, l.resource, l.soft, l.hard);
    }
  }
  if (plan.run_as_uid >= 0) {
    setup.run_as_uid = static_cast<long>(plan.run_as_uid);
    if (plan.private_workdir_bytes > 0) {
      const std::string id = std::to_string(plan.run_as_uid);
      workdir_tmpfs_options = "size=" + std::to_string(plan.private_workdir_bytes) +
                              ",mode=0700,uid=" + id + ",gid=" + id;
      setup.workdir_tmpfs_options = workdir_tmpfs_options.c_str();
    }
    setup.trees = plan.trees.data();
    setup.tree_count = static_cast<int>(plan.trees.size());
  }
  rlimit nofile{};
  setup.fallback_close_max = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    setup.fallback_close_max = static_cast<int>(std::min<rlim_t>(nofile.rlim_cur, 1 << 30));
  }
}

// The child's pid (<= 0: none was created, `err` says why).
struct ForkResult {
  pid_t pid = -1;
  int err = 0;
};

// The child's stack: enough for the checklist's frames (the largest holds a few small arrays).
constexpr std::size_t kChildStackBytes = 256 << 10;

// Clones the child with every signal blocked; it runs RunChildSetup on its own stack. Returns
// once it has exec'd or exited.
ForkResult Fork(const LaunchPlan& plan, const ChildSetup& setup, const char* const* envp) {
  ForkResult result;
  std::vector<const char*> argv;
  argv.reserve(plan.args.size() + 2);
  argv.push_back(plan.executable.c_str());
  for (const std::string& arg : plan.args) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  void* stack = ::mmap(nullptr, kChildStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    result.err = errno;
    return result;
  }
  CloneArgs args{&setup, plan.executable.c_str(), argv.data(), envp};
  {
    ScopedBlockAllSignals block_signals;
    int flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
    // A pid namespace needs CAP_SYS_ADMIN: a user namespace of its own gives it that.
    if (plan.own_pid_namespace) flags |= CLONE_NEWPID | (::geteuid() == 0 ? 0 : CLONE_NEWUSER);
    result.pid =
        ::clone(CloneChildMain, static_cast<char*>(stack) + kChildStackBytes, flags, &args);
    if (result.pid < 0) result.err = errno;
  }
  ::munmap(stack, kChildStackBytes);  // the child has left it: exec'd or exited
  return result;
}

// Reads the child's setup report until EOF or a whole record; the bytes read (0: it exec'd).
std::size_t ReadSetupReport(int fd, SetupFailure& failure) {
  std::size_t got = 0;
  while (got < sizeof failure) {
    const ssize_t n = ::read(fd, reinterpret_cast<char*>(&failure) + got, sizeof failure - got);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  return got;
}

}  // namespace

ExitInfo ExitInfoFrom(int status, double cpu_seconds) {
  ExitInfo info;
  if (WIFEXITED(status)) {
    info.exited = true;
    info.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signal = WTERMSIG(status);
  }
  info.cpu_seconds = cpu_seconds;
  return info;
}

ExitInfo ExitInfoFrom(int status, const rusage& usage) {
  return ExitInfoFrom(
      status, static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6);
}

StatusOr<pid_t> LaunchProcess(const LaunchPlan& plan) {
  if (Status valid = ValidatePlan(plan); !valid.ok()) return valid;

  // Everything the child touches is built here, before fork.
  std::vector<const char*> envp;
  if (plan.environment) {
    envp.reserve(plan.environment->size() + 1);
    for (const std::string& entry : *plan.environment) envp.push_back(entry.c_str());
    envp.push_back(nullptr);
  }
  ChildSetup setup;
  std::string workdir_tmpfs_options;  // setup points into it
  FillSetup(plan, setup, workdir_tmpfs_options);

  auto report = MakePipe();
  if (!report.ok()) return report.status();
  // Read after the launcher returns, when the child has exec'd or exited; another thread's
  // fork may briefly hold a copy of the write end, so the read is a blocking read to EOF.
  setup.report_fd = report->write.get();
  const ForkResult forked = Fork(plan, setup, plan.environment ? envp.data() : ::environ);
  report->write.reset();

  const pid_t pid = forked.pid;
  if (pid <= 0) return ErrnoStatus("clone", forked.err != 0 ? forked.err : EAGAIN);
  SetupFailure failure{};
  const std::size_t got = ReadSetupReport(report->read.get(), failure);
  if (got == sizeof failure) {
    ReapBlocking(pid);  // it has _exit()ed already
    return Status(CodeForErrno(failure.err), StepMessage(failure, setup, plan));
  }
  if (got != 0) {
    ::kill(pid, SIGKILL);
    ReapBlocking(pid);
    return Internal("starting " + plan.executable +
                    " failed: truncated setup report from the child");
  }
  return pid;
}

}  // namespace codeact::internal
