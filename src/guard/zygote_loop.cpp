#include "guard/zygote_loop.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "os/proc_stat.hpp"
#include "protocol/zygote_messages.hpp"
#include "sandbox/privileges.hpp"
#include "sandbox/zygote_child.hpp"

namespace codeact::internal {
namespace {

constexpr int kSetupFailedExit = 125;  // a child that failed before it said ready
constexpr std::size_t kMaxDatagram = 8192;
constexpr int kMaxFds = protocol::kForkRunFds + protocol::kMaxForkCgroupFds;
constexpr std::string_view kTokenKey = "CODEACT_RUN_TOKEN=";

[[noreturn]] void HostGone() { ::_exit(0); }

// A child's step: on failure it ends before it says ready.
void Check(bool ok) {
  if (!ok) ::_exit(kSetupFailedExit);
}

void SendToHost(int socket_fd, const std::string& message) {
  while (::send(socket_fd, message.data(), message.size(), MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) HostGone();
  }
}

// Where the run token's value lies in this process's environment block, the memory between
// /proc/self/stat's env_start and env_end (fields 50 and 51) that /proc/<pid>/environ shows. A
// forked child has the same addresses and writes its own token there.
struct TokenSlot {
  char* at = nullptr;
  std::size_t size = 0;
};

std::optional<TokenSlot> FindTokenSlot() {
  char stat[4096];
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const ssize_t n = ::read(fd, stat, sizeof stat);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  const std::string_view line(stat, static_cast<std::size_t>(n));
  const std::uint64_t start = ProcStatNumber(line, 50).value_or(0);
  const std::uint64_t end = ProcStatNumber(line, 51).value_or(0);
  if (start == 0 || end <= start) return std::nullopt;
  const std::string_view block(reinterpret_cast<char*>(start), end - start);
  std::size_t at = 0;
  if (!block.starts_with(kTokenKey)) {
    at = block.find(std::string(1, '\0') + std::string(kTokenKey));
    if (at == std::string_view::npos) return std::nullopt;
    ++at;
  }
  at += kTokenKey.size();
  const std::size_t value_end = block.find('\0', at);
  if (value_end == std::string_view::npos) return std::nullopt;
  return TokenSlot{reinterpret_cast<char*>(start) + at, value_end - at};
}

struct Datagram {
  std::string text;
  std::vector<int> fds;
  bool truncated = false;

  void CloseFds() {
    for (int fd : fds) ::close(fd);
    fds.clear();
  }
};

// One datagram with its fds; false when there is none yet.
bool Receive(int socket_fd, Datagram& d) {
  char buf[kMaxDatagram];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return false;
  if (n <= 0) HostGone();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      d.fds.push_back(fd);
    }
  }
  d.text.assign(buf, static_cast<std::size_t>(n));
  d.truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
  return true;
}

void ReapChildren(std::set<pid_t>& children, int socket_fd) {
  while (true) {
    int status = 0;
    rusage usage{};
    const pid_t pid = ::wait4(-1, &status, WNOHANG, &usage);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    children.erase(pid);
    const std::int64_t cpu_us =
        (static_cast<std::int64_t>(usage.ru_utime.tv_sec) + usage.ru_stime.tv_sec) * 1'000'000 +
        usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
    SendToHost(socket_fd, protocol::EncodeExited(pid, status, cpu_us));
  }
}

class Zygote {
 public:
  explicit Zygote(const ZygoteLoopOptions& options) : options_(options) {}

  std::string Serve() {
    const int sock = options_.socket_fd;
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) Fatal("prctl(PR_SET_DUMPABLE, 0)");
    const int flags = ::fcntl(sock, F_GETFL);
    if (flags < 0 || ::fcntl(sock, F_SETFL, flags & ~O_NONBLOCK) != 0) Fatal("fcntl(socket)");
    const std::optional<TokenSlot> slot = FindTokenSlot();
    if (!slot) Fatal("no CODEACT_RUN_TOKEN in the environment block");
    slot_ = *slot;
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    if (::sigprocmask(SIG_BLOCK, &chld, &original_mask_) != 0) Fatal("sigprocmask");
    const int sigfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd < 0) Fatal("signalfd");
    if (options_.namespaces) {
      own_pid_ns_ = ::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
      if (own_pid_ns_ < 0) Fatal("open /proc/self/ns/pid");
      // Its own capabilities stay (it never execs); every child it forks inherits the empty set.
      if (const int err = EmptyBoundingSet(); err != 0) {
        errno = err;
        Fatal("empty the capability bounding set");
      }
    }
    zygote_ = ::getpid();
    SendToHost(sock, protocol::EncodeZygoteReady(zygote_));
    while (true) {
      pollfd p[2] = {{sock, POLLIN, 0}, {sigfd, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        Fatal("poll");
      }
      if (p[1].revents != 0) {
        signalfd_siginfo info;
        while (::read(sigfd, &info, sizeof info) > 0) {
        }
        ReapChildren(children_, sock);
      }
      if (p[0].revents == 0) continue;
      Datagram d;
      if (!Receive(sock, d)) continue;
      if (std::optional<std::string> token = Handle(d)) return std::move(*token);
      d.CloseFds();
    }
  }

 private:
  [[noreturn]] static void Fatal(const char* what) {
    std::fprintf(stderr, "codeact zygote: %s: %s\n", what, std::strerror(errno));
    ::_exit(kSetupFailedExit);
  }

  void Refuse(const std::string& why) {
    SendToHost(options_.socket_fd, protocol::EncodeForkFailed(why));
  }

  // Acts on one datagram; the token only in a child forked for it.
  std::optional<std::string> Handle(Datagram& d) {
    if (d.truncated) {
      Refuse("a fork server message over " + std::to_string(kMaxDatagram) +
             " bytes or with more than " + std::to_string(kMaxFds) + " fds");
      return std::nullopt;
    }
    std::string error;
    std::optional<protocol::HostMessage> m = protocol::DecodeHostMessage(d.text, error);
    if (!m) {
      Refuse(error);  // the host waits for an answer to a fork
      return std::nullopt;
    }
    if (m->kill) {
      // Only an unreaped child: its pid cannot have been reused.
      if (children_.count(static_cast<pid_t>(m->pid)) != 0)
        ::killpg(static_cast<pid_t>(m->pid), SIGKILL);
      return std::nullopt;
    }
    const protocol::ForkRequest& f = m->fork;
    const std::size_t wanted = protocol::kForkRunFds + static_cast<std::size_t>(f.cgroup_fds);
    if (d.fds.size() != wanted) {
      Refuse("a fork message needs the child's " + std::to_string(wanted) + " fds, got " +
             std::to_string(d.fds.size()));
      return std::nullopt;
    }
    for (int fd : d.fds) {
      if (fd < protocol::kForkRunFds) {  // recvmsg gives the lowest free numbers
        Refuse("the zygote's fds 0-4 are not all open");
        return std::nullopt;
      }
    }
    if (options_.namespaces != (f.tmp_bytes > 0) || (options_.namespaces && f.uid <= 0)) {
      Refuse("a fork message for another kind of zygote");
      return std::nullopt;
    }
    if (options_.namespaces &&
        (::setns(own_pid_ns_, CLONE_NEWPID) != 0 || ::unshare(CLONE_NEWPID) != 0)) {
      // Back in its own first: a second unshare would fail.
      Refuse(std::string("a new pid namespace: ") + std::strerror(errno));
      return std::nullopt;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      Refuse(std::string("fork: ") + std::strerror(errno));
      return std::nullopt;
    }
    if (pid == 0) {
      if (options_.namespaces) {
        BecomeNamespacedChild(f, d.fds);
      } else {
        BecomeRunChild(f, d.fds);
      }
      return f.token;
    }
    children_.insert(pid);
    ::setpgid(pid, pid);  // also here, so that the group exists once the host knows the pid
    SendToHost(options_.socket_fd, protocol::EncodeForked(pid));
    return std::nullopt;
  }

  void LeaveZygote(const std::string& token, rlim_t cpu_soft, rlim_t cpu_hard) const {
    const rlimit cpu{cpu_soft, cpu_hard};
    Check(::setrlimit(RLIMIT_CPU, &cpu) == 0);
    Check(::sigprocmask(SIG_SETMASK, &original_mask_, nullptr) == 0);
    Check(::setpgid(0, 0) == 0);
    Check(token.size() == slot_.size);
    std::memcpy(slot_.at, token.data(), token.size());
    Check(::setenv("CODEACT_RUN_TOKEN", token.c_str(), 1) == 0);
  }

  // The run's cgroup: "0" (this child, single-threaded) to each join file the host passed after
  // the run's fds (RunCgroup::join_files).
  static void JoinRunCgroup(const std::vector<int>& fds) {
    for (std::size_t i = protocol::kForkRunFds; i < fds.size(); ++i) {
      Check(::write(fds[i], "0", 1) == 1);
    }
  }

  static void TakeRunFds(const std::vector<int>& fds) {
    for (int target = 0; target < protocol::kForkRunFds; ++target) {
      Check(::dup3(fds[static_cast<std::size_t>(target)], target, target < 3 ? 0 : O_CLOEXEC) ==
            target);
    }
  }

  // Every fd but the run's closed; its bridge's write end non-blocking.
  static void KeepRunFdsOnly() {
    Check(::close_range(protocol::kForkRunFds, ~0U, 0) == 0);
    const int flags = ::fcntl(4, F_GETFL);
    Check(flags >= 0 && ::fcntl(4, F_SETFL, flags | O_NONBLOCK) == 0);
  }

  void BecomeRunChild(const protocol::ForkRequest& f, const std::vector<int>& fds) const {
    const auto cpu = static_cast<rlim_t>(options_.run_cpu_seconds);
    LeaveZygote(f.token, cpu, cpu + 1);
    JoinRunCgroup(fds);
    if (f.uid >= 0) {
      const auto uid = static_cast<uid_t>(f.uid);
      if (f.workdir_bytes > 0) {
        Check(::unshare(CLONE_NEWNS) == 0);
        Check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0);
        const std::string options = "size=" + std::to_string(f.workdir_bytes) +
                                    ",mode=0700,uid=" + std::to_string(uid) +
                                    ",gid=" + std::to_string(uid);
        Check(::mount("tmpfs", f.workdir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) ==
              0);
      }
      Check(::setgroups(0, nullptr) == 0);
      Check(::setresgid(uid, uid, uid) == 0);
      Check(::setresuid(uid, uid, uid) == 0);
    }
    // Dumpable again, as a cold child is after exec: its /proc files are its own uid's.
    Check(::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0);
    Check(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0);  // after the uid change
    Check(::getppid() == zygote_);  // else the zygote died before prctl: no signal would come
    Check(::chdir(f.workdir.c_str()) == 0);
    TakeRunFds(fds);
    KeepRunFdsOnly();
  }

  void BecomeNamespacedChild(const protocol::ForkRequest& f, const std::vector<int>& fds) const {
    const auto cpu = static_cast<rlim_t>(options_.run_cpu_seconds);
    LeaveZygote(f.token, cpu, cpu);  // pid 1 ignores SIGXCPU: the hard limit's SIGKILL ends it
    TakeRunFds(fds);                 // the bridge first: a failed step below is reported on it
    ZygoteChildSpec spec;
    spec.uid = static_cast<uid_t>(f.uid);
    spec.tmp_bytes = f.tmp_bytes;
    spec.work_bytes = f.workdir_bytes;
    spec.cgroup_join_fds.assign(fds.begin() + protocol::kForkRunFds, fds.end());
    ContainZygoteChild(spec);
    KeepRunFdsOnly();
  }

  const ZygoteLoopOptions options_;
  TokenSlot slot_;
  sigset_t original_mask_{};
  int own_pid_ns_ = -1;
  pid_t zygote_ = 0;
  std::set<pid_t> children_;
};

}  // namespace

std::string ServeForks(const ZygoteLoopOptions& options) { return Zygote(options).Serve(); }

}  // namespace codeact::internal
