#include "process/metadata_supervisor.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>

#include "os/background_thread.hpp"
#include "os/errno_status.hpp"
#include "sandbox/metadata_filter.hpp"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif
#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

namespace codeact::internal {
namespace {

constexpr std::uint64_t kNoLinks = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
constexpr int kMaxDepth = 4096;   // ".." steps from an object up to its root
constexpr int kOpenRetries = 64;  // openat2's EAGAIN (a rename raced the walk)
constexpr int kNoAnswer = -1;     // the calling task is gone: nothing to answer

struct Identity {
  std::uint64_t dev_major = 0, dev_minor = 0, ino = 0, mnt_id = 0;
  std::uint32_t nlink = 0;
  std::uint16_t mode = 0;
  bool mount_root = false;
  bool Same(const Identity& o) const {
    return ino == o.ino && mnt_id == o.mnt_id && dev_major == o.dev_major &&
           dev_minor == o.dev_minor;
  }
};

bool Identify(int fd, Identity& out) {
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
              STATX_TYPE | STATX_INO | STATX_NLINK | STATX_MNT_ID, &sx) != 0) {
    return false;
  }
  if ((sx.stx_mask & (STATX_TYPE | STATX_INO | STATX_MNT_ID)) !=
      (STATX_TYPE | STATX_INO | STATX_MNT_ID)) {
    return false;
  }
  out.dev_major = sx.stx_dev_major;
  out.dev_minor = sx.stx_dev_minor;
  out.ino = sx.stx_ino;
  out.mnt_id = sx.stx_mnt_id;
  out.nlink = sx.stx_nlink;
  out.mode = sx.stx_mode;
  out.mount_root = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 &&
                   (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  return true;
}

// openat2, or an errno (as a negative value).
int OpenAt2(int dir, const char* path, std::uint64_t flags, std::uint64_t resolve) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.resolve = resolve;
  for (int attempt = 0; attempt < kOpenRetries; ++attempt) {
    const long fd = ::syscall(SYS_openat2, dir, path, &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno != EAGAIN && errno != EINTR) return -errno;
  }
  return -EAGAIN;
}

// What a failed resolution answers: a link, an escape or a mount crossing are not the run's.
int ResolveErrno(int err) {
  switch (err) {
    case ELOOP:
    case EXDEV:
    case EAGAIN:
    case ENXIO:
      return EPERM;
    default:
      return err;
  }
}

std::string ProcFd(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

}  // namespace

// --- ContainedResolver ------------------------------------------------------------------------

ContainedResolver::ContainedResolver(std::vector<UniqueFd> roots) : roots_(std::move(roots)) {}

namespace {

bool IsRoot(const std::vector<UniqueFd>& roots, const Identity& id) {
  for (const UniqueFd& r : roots) {
    Identity rid;
    if (Identify(r.get(), rid) && rid.Same(id)) return true;
  }
  return false;
}

// The number of ".." steps from directory `dir` up to a root on the same mount (0: `dir` is a
// root), or -1.
int RootDepth(const std::vector<UniqueFd>& roots, int dir) {
  UniqueFd cur(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (!cur) return -1;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    Identity id;
    if (!Identify(cur.get(), id) || !S_ISDIR(id.mode)) return -1;
    if (IsRoot(roots, id)) return depth;
    UniqueFd parent(::openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    Identity pid;
    if (!parent || !Identify(parent.get(), pid)) return -1;
    if (pid.mnt_id != id.mnt_id) return -1;  // a mount boundary below every root
    if (pid.Same(id)) return -1;             // the top of the tree
    cur = std::move(parent);
  }
  return -1;
}

}  // namespace

int ContainedResolver::CheckObject(int object) const {
  Identity id;
  if (!Identify(object, id)) return EPERM;
  if (IsRoot(roots_, id)) return EPERM;  // a root's own mode is not the run's
  if (S_ISDIR(id.mode)) return RootDepth(roots_, object) > 0 ? 0 : EPERM;
  if (id.nlink > 1) return EPERM;  // another name of it may lie outside
  return 0;
}

int ContainedResolver::Contained(int object, bool directory) const {
  return directory ? (RootDepth(roots_, object) >= 0 ? 0 : EPERM) : CheckObject(object);
}

int ContainedResolver::Resolve(int base, bool in_root, std::string_view path, bool follow_last,
                               UniqueFd& out) const {
  if (path.empty()) return ENOENT;
  if (path.find('\0') != std::string_view::npos) return EINVAL;
  std::string p(path);
  bool trailing_slash = false;
  while (p.size() > 1 && p.back() == '/') {
    p.pop_back();
    trailing_slash = true;
  }
  const std::size_t slash = p.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
  std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
  const std::uint64_t scope = in_root ? RESOLVE_IN_ROOT : 0;
  if (name.empty() || name == "." || name == "..") {
    const int fd = OpenAt2(base, p.c_str(), O_PATH | O_DIRECTORY, kNoLinks | scope);
    if (fd < 0) return ResolveErrno(-fd);
    UniqueFd target(fd);
    if (int err = CheckObject(target.get()); err != 0) return err;
    out = std::move(target);
    return 0;
  }
  const int dfd = OpenAt2(base, dir.c_str(), O_PATH | O_DIRECTORY, kNoLinks | scope);
  if (dfd < 0) return ResolveErrno(-dfd);
  UniqueFd parent(dfd);
  if (int err = Contained(parent.get(), /*directory=*/true); err != 0) return err;
  // The last step from the checked directory: beneath it, no link, no mount point.
  const std::uint64_t flags =
      O_PATH | (follow_last ? 0 : O_NOFOLLOW) | (trailing_slash ? O_DIRECTORY : 0);
  const int tfd =
      OpenAt2(parent.get(), name.c_str(), flags, kNoLinks | RESOLVE_BENEATH | RESOLVE_NO_XDEV);
  if (tfd < 0) return ResolveErrno(-tfd);
  UniqueFd target(tfd);
  if (int err = CheckObject(target.get()); err != 0) return err;
  out = std::move(target);
  return 0;
}

int ContainedResolver::CheckFd(int fd, int child_root) const {
  Identity id;
  if (!Identify(fd, id)) return EPERM;
  if (S_ISDIR(id.mode)) return CheckObject(fd);
  if (IsRoot(roots_, id) || id.nlink != 1) return EPERM;
  // A file on a mount whose root is one of the run's (the namespaces level's /work, /tmp, rw
  // mounts; a root host's private /work tmpfs) lies beneath that root.
  for (const UniqueFd& r : roots_) {
    Identity rid;
    if (Identify(r.get(), rid) && rid.mount_root && rid.mnt_id == id.mnt_id) return 0;
  }
  // Else the name the kernel shows for it, resolved again from the child's root, must lead to
  // this very file through a directory of the run's.
  char link[4096];
  const ssize_t n = ::readlink(ProcFd(fd).c_str(), link, sizeof link - 1);
  if (n <= 0 || link[0] != '/') return EPERM;
  const std::string_view shown(link, static_cast<std::size_t>(n));
  if (shown.size() >= 10 && shown.substr(shown.size() - 10) == " (deleted)") return EPERM;
  UniqueFd again;
  if (Resolve(child_root, /*in_root=*/true, shown, /*follow_last=*/false, again) != 0) return EPERM;
  Identity aid;
  return Identify(again.get(), aid) && aid.Same(id) ? 0 : EPERM;
}

// --- MetadataSupervisor ---------------------------------------------------------------------

struct MetadataSupervisor::State {
  UniqueFd channel;
  UniqueFd stop;
  UniqueFd listener;
  std::thread thread;
  MetadataHello hello;
  uid_t host_uid = 0;
  gid_t host_gid = 0;
  bool deny_all = false;
  std::unique_ptr<ContainedResolver> resolver;

  void Run();
  bool Handshake();
  int Serve(const seccomp_notif& req);
};

namespace {

// Waits for `fd` or the stop event: true when `fd` is ready.
bool WaitFor(int fd, int stop) {
  while (true) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop, POLLIN, 0}};
    const int r = ::poll(p, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || p[1].revents != 0) return false;
    if (p[0].revents & POLLIN) return true;
    if (p[0].revents != 0) return false;  // hung up: the child is gone
  }
}

// Reads a NUL-terminated string of the child's at `address`.
int ReadString(int mem, std::uint64_t address, std::string& out) {
  if (address == 0) return EFAULT;
  char buf[4097];
  const ssize_t n = ::pread(mem, buf, sizeof buf, static_cast<off_t>(address));
  if (n <= 0) return EFAULT;
  const void* nul = std::memchr(buf, '\0', static_cast<std::size_t>(n));
  if (nul == nullptr) return n == static_cast<ssize_t>(sizeof buf) ? ENAMETOOLONG : EFAULT;
  out.assign(buf, static_cast<std::size_t>(static_cast<const char*>(nul) - buf));
  return 0;
}

int ReadBytes(int mem, std::uint64_t address, void* out, std::size_t size) {
  const ssize_t n = ::pread(mem, out, size, static_cast<off_t>(address));
  return n == static_cast<ssize_t>(size) ? 0 : EFAULT;
}

int Result(int rc) { return rc == 0 ? 0 : errno; }

}  // namespace

bool MetadataSupervisor::State::Handshake() {
  if (!WaitFor(channel.get(), stop.get())) return false;
  std::string payload(kMaxMetadataMessage, '\0');
  iovec iov{payload.data(), payload.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4) + CMSG_SPACE(sizeof(ucred))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(channel.get(), &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  std::vector<UniqueFd> fds;
  const ucred* cred = nullptr;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); n > 0 && c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET) continue;
    if (c->cmsg_type == SCM_RIGHTS) {
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.emplace_back(fd);
      }
    } else if (c->cmsg_type == SCM_CREDENTIALS) {
      cred = reinterpret_cast<const ucred*>(CMSG_DATA(c));
    }
  }
  channel.reset();  // one message only
  if (n <= 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || fds.size() != 1 ||
      cred == nullptr) {
    return false;
  }
  if (!DecodeMetadataHello(std::string_view(payload.data(), static_cast<std::size_t>(n)), hello))
    return false;
  // A seccomp listener answers ID_VALID for an unknown id with ENOENT; anything else would not.
  std::uint64_t probe = 0;
  if (::ioctl(fds[0].get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &probe) == 0 || errno != ENOENT)
    return false;
  listener = std::move(fds[0]);
  host_uid = cred->uid;
  host_gid = cred->gid;
  // The roots, opened in the child's own tree now, before any of its code has run.
  const std::string proc_root = "/proc/" + std::to_string(cred->pid) + "/root";
  UniqueFd child_root(::open(proc_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  std::vector<UniqueFd> roots;
  if (child_root) {
    for (const std::string& path : hello.roots) {
      const int fd =
          OpenAt2(child_root.get(), path.c_str(), O_PATH, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
      if (fd >= 0) roots.emplace_back(fd);
    }
  }
  resolver = std::make_unique<ContainedResolver>(std::move(roots));
  // The calls are made with the child's file-system ids: a root host's thread gives up root's
  // file capabilities with its fsuid (this thread only: raw calls, not glibc's broadcast).
  if (::geteuid() == 0) {
    if (::syscall(SYS_setgroups, 0, nullptr) != 0) deny_all = true;
    ::setfsgid(host_gid);
    ::setfsuid(host_uid);
    if (static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) != host_uid ||
        static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) != host_gid) {
      deny_all = true;
    }
  } else if (host_uid != ::geteuid()) {
    deny_all = true;  // another uid's calls cannot be made with its rights from here
  }
  return true;
}

void MetadataSupervisor::State::Run() {
  YieldOnWakeUp();  // woken by the child's calls, and by its exit after the run's reply is due
  try {
    if (!Handshake()) return;
    while (WaitFor(listener.get(), stop.get())) {
      seccomp_notif req;
      std::memset(&req, 0, sizeof req);
      if (::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
        if (errno == EINTR || errno == ENOENT) continue;
        return;
      }
      const int err = deny_all ? EPERM : Serve(req);
      if (err == kNoAnswer) continue;
      seccomp_notif_resp resp;
      std::memset(&resp, 0, sizeof resp);
      resp.id = req.id;
      resp.error = -err;
      resp.val = 0;
      ::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp);  // ENOENT: the task is gone
    }
  } catch (...) {
    // Allocation failure: the listener closes with the state, and the child's calls fail.
  }
}

namespace {

// One intercepted call of the child's: the calling task's /proc directory and memory, and the
// object the call points at once AtPath or AtFd found it. Each step answers 0 or an errno.
class InterceptedCall {
 public:
  InterceptedCall(int procdir, int mem, const ContainedResolver& resolver,
                  const MetadataHello& hello, uid_t host_uid, gid_t host_gid)
      : procdir_(procdir),
        mem_(mem),
        resolver_(resolver),
        hello_(hello),
        host_uid_(host_uid),
        host_gid_(host_gid) {}

  int mem() const { return mem_; }

  // Where the call points: a path from a directory (AT_FDCWD: the cwd), or an fd.
  int AtPath(int dir, std::uint64_t address, bool follow, bool empty_is_fd) {
    std::string path;
    if (address == 0 && !empty_is_fd) return EFAULT;
    if (address != 0) {
      if (int err = ReadString(mem_, address, path); err != 0) return err;
    }
    if (path.empty()) {
      if (!empty_is_fd) return ENOENT;
      if (dir == AT_FDCWD) {
        UniqueFd cwd(::openat(procdir_, "cwd", O_PATH | O_CLOEXEC));
        UniqueFd root(::openat(procdir_, "root", O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!cwd || !root) return EPERM;
        if (int err = resolver_.CheckFd(cwd.get(), root.get()); err != 0) return err;
        target_ = std::move(cwd);
        return 0;
      }
    } else {
      const bool absolute = path[0] == '/';
      const std::string base_name = absolute          ? "root"
                                    : dir == AT_FDCWD ? "cwd"
                                                      : "fd/" + std::to_string(dir);
      UniqueFd base(::openat(procdir_, base_name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!base) return errno == ENOENT ? EBADF : errno;
      return resolver_.Resolve(base.get(), absolute, path, follow, target_);
    }
    // An fd of the child's (empty path with AT_EMPTY_PATH, or NULL for utimensat).
    if (dir < 0) return EBADF;
    UniqueFd object(::openat(procdir_, ("fd/" + std::to_string(dir)).c_str(), O_PATH | O_CLOEXEC));
    UniqueFd root(::openat(procdir_, "root", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!object) return errno == ENOENT ? EBADF : EPERM;
    if (!root) return EPERM;
    if (int err = resolver_.CheckFd(object.get(), root.get()); err != 0) return err;
    target_ = std::move(object);
    return 0;
  }
  int AtFd(int fd) { return AtPath(fd, 0, true, true); }

  int Chmod(std::uint64_t mode) {
    if ((mode & (S_ISUID | S_ISGID)) != 0) return EPERM;
    Identity tid;
    if (!Identify(target_.get(), tid)) return EPERM;
    if (S_ISLNK(tid.mode)) return EOPNOTSUPP;
    return Result(::chmod(ProcFd(target_.get()).c_str(), static_cast<mode_t>(mode & 07777)));
  }
  int Chown(std::uint64_t u, std::uint64_t g) {
    const auto uid = static_cast<std::uint32_t>(u);
    const auto gid = static_cast<std::uint32_t>(g);
    constexpr std::uint32_t kKeep = 0xFFFFFFFFu;
    if ((uid != kKeep && static_cast<long>(uid) != hello_.uid) ||
        (gid != kKeep && static_cast<long>(gid) != hello_.gid)) {
      return EPERM;  // never another owner
    }
    return Result(::fchownat(target_.get(), "", uid == kKeep ? static_cast<uid_t>(-1) : host_uid_,
                             gid == kKeep ? static_cast<gid_t>(-1) : host_gid_, AT_EMPTY_PATH));
  }
  int Utime(const timespec* times) {
    return Result(::utimensat(AT_FDCWD, ProcFd(target_.get()).c_str(), times, 0));
  }
  // 1: a NULL array (now); 0: the two times read into `out`; or -errno.
  int ReadTimevals(std::uint64_t address, timespec* out) {
    if (address == 0) return 1;  // now
    struct {
      std::int64_t sec, usec;
    } tv[2];
    if (ReadBytes(mem_, address, tv, sizeof tv) != 0) return -EFAULT;
    for (int i = 0; i < 2; ++i) {
      if (tv[i].usec < 0 || tv[i].usec >= 1000000) return -EINVAL;
      out[i] = {static_cast<time_t>(tv[i].sec), static_cast<long>(tv[i].usec * 1000)};
    }
    return 0;
  }
  int RemoveXattr(std::uint64_t name_address) {
    std::string name;
    if (int err = ReadString(mem_, name_address, name); err != 0) return err;
    if (name.rfind("user.", 0) != 0) return EPERM;  // the user namespace of attributes only
    return Result(::removexattr(ProcFd(target_.get()).c_str(), name.c_str()));
  }

 private:
  const int procdir_;
  const int mem_;
  const ContainedResolver& resolver_;
  const MetadataHello& hello_;
  const uid_t host_uid_;
  const gid_t host_gid_;
  UniqueFd target_;
};

// The arguments read for a call were the calling task's only if it is still waiting.
bool StillWaiting(int listener, const seccomp_notif& req) {
  std::uint64_t id = req.id;
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

// Answer's share for the calls that set times (utime, utimes, futimesat, utimensat): times the
// child's memory does not hold are EFAULT (EINVAL for a bad timeval) at once. Any other call
// Answer does not know (the set*xattr calls, which the main filter refuses first) is EPERM.
int AnswerTimes(InterceptedCall& call, const seccomp_notif& req, int listener) {
  const auto* a = req.data.args;
  auto dirfd = [&](int i) { return static_cast<int>(static_cast<std::int32_t>(a[i])); };
  int err = 0;
  const int nr = req.data.nr;
  timespec ts[2];
  switch (nr) {
#ifdef __NR_utime
    case __NR_utime: {
      std::int64_t times[2];
      const timespec* use = nullptr;
      if (a[1] != 0) {
        if (ReadBytes(call.mem(), a[1], times, sizeof times) != 0) return EFAULT;
        ts[0] = {static_cast<time_t>(times[0]), 0};
        ts[1] = {static_cast<time_t>(times[1]), 0};
        use = ts;
      }
      if ((err = call.AtPath(AT_FDCWD, a[0], true, false)) == 0) err = call.Utime(use);
      break;
    }
#endif
#ifdef __NR_utimes
    case __NR_utimes:
#endif
#ifdef __NR_futimesat
    case __NR_futimesat:
#endif
#if defined(__NR_utimes) || defined(__NR_futimesat)
    {
      const bool at = nr != __NR_utimes;
      const int got = call.ReadTimevals(a[at ? 2 : 1], ts);
      if (got < 0) return -got;
      if ((err = call.AtPath(at ? dirfd(0) : AT_FDCWD, a[at ? 1 : 0], true, false)) == 0)
        err = call.Utime(got == 1 ? nullptr : ts);
      break;
    }
#endif
    case __NR_utimensat: {
      const timespec* use = nullptr;
      if (a[2] != 0) {
        if (ReadBytes(call.mem(), a[2], ts, sizeof ts) != 0) return EFAULT;
        use = ts;
      }
      // A NULL path is futimens on the dirfd; AT_EMPTY_PATH with "" the same.
      const bool fd_call = a[1] == 0 || (a[3] & AT_EMPTY_PATH) != 0;
      if ((err = call.AtPath(dirfd(0), a[1], (a[3] & AT_SYMLINK_NOFOLLOW) == 0, fd_call)) == 0)
        err = call.Utime(use);
      break;
    }
    default:  // the set*xattr calls and anything else
      return EPERM;
  }
  return StillWaiting(listener, req) ? err : kNoAnswer;
}

// The answer to one call, by its number: 0 or an errno (the call's own, or EPERM); kNoAnswer
// when the calling task stopped waiting while its arguments were read (`listener` says).
int Answer(InterceptedCall& call, const seccomp_notif& req, int listener) {
  const auto* a = req.data.args;
  auto dirfd = [&](int i) { return static_cast<int>(static_cast<std::int32_t>(a[i])); };
  int err = 0;
  const int nr = req.data.nr;
  switch (nr) {
#ifdef __NR_chmod
    case __NR_chmod:
      if ((err = call.AtPath(AT_FDCWD, a[0], true, false)) == 0) err = call.Chmod(a[1]);
      break;
#endif
    case __NR_fchmodat:
      if ((err = call.AtPath(dirfd(0), a[1], true, false)) == 0) err = call.Chmod(a[2]);
      break;
    case 452:  // fchmodat2
      if ((err = call.AtPath(dirfd(0), a[1], (a[3] & AT_SYMLINK_NOFOLLOW) == 0,
                             (a[3] & AT_EMPTY_PATH) != 0)) == 0) {
        err = call.Chmod(a[2]);
      }
      break;
    case __NR_fchmod:
      if ((err = call.AtFd(dirfd(0))) == 0) err = call.Chmod(a[1]);
      break;
#ifdef __NR_chown
    case __NR_chown:
      if ((err = call.AtPath(AT_FDCWD, a[0], true, false)) == 0) err = call.Chown(a[1], a[2]);
      break;
#endif
#ifdef __NR_lchown
    case __NR_lchown:
      if ((err = call.AtPath(AT_FDCWD, a[0], false, false)) == 0) err = call.Chown(a[1], a[2]);
      break;
#endif
    case __NR_fchown:
      if ((err = call.AtFd(dirfd(0))) == 0) err = call.Chown(a[1], a[2]);
      break;
    case __NR_fchownat:
      if ((err = call.AtPath(dirfd(0), a[1], (a[4] & AT_SYMLINK_NOFOLLOW) == 0,
                             (a[4] & AT_EMPTY_PATH) != 0)) == 0) {
        err = call.Chown(a[2], a[3]);
      }
      break;
    case __NR_removexattr:
      if ((err = call.AtPath(AT_FDCWD, a[0], true, false)) == 0) err = call.RemoveXattr(a[1]);
      break;
    case __NR_lremovexattr:
      if ((err = call.AtPath(AT_FDCWD, a[0], false, false)) == 0) err = call.RemoveXattr(a[1]);
      break;
    case __NR_fremovexattr:
      if ((err = call.AtFd(dirfd(0))) == 0) err = call.RemoveXattr(a[1]);
      break;
    default:  // the calls that set times; AnswerTimes refuses anything else
      return AnswerTimes(call, req, listener);
  }
  return StillWaiting(listener, req) ? err : kNoAnswer;
}

}  // namespace

int MetadataSupervisor::State::Serve(const seccomp_notif& req) {
  const std::string proc = "/proc/" + std::to_string(req.pid);
  UniqueFd procdir(::open(proc.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!procdir) return kNoAnswer;
  std::uint64_t id = req.id;
  // From here on procdir is the calling task's, not a reused pid's.
  if (::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0) return kNoAnswer;
  UniqueFd mem(::openat(procdir.get(), "mem", O_RDONLY | O_CLOEXEC));
  if (!mem) return EPERM;
  InterceptedCall call(procdir.get(), mem.get(), *resolver, hello, host_uid, host_gid);
  return Answer(call, req, listener.get());
}

MetadataSupervisor::MetadataSupervisor(std::shared_ptr<State> state) : state_(std::move(state)) {}

StatusOr<std::unique_ptr<MetadataSupervisor>> MetadataSupervisor::Start(UniqueFd channel) {
  const int on = 1;
  if (::setsockopt(channel.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
    return ErrnoStatus("setsockopt(SO_PASSCRED)", errno);
  auto state = std::make_shared<State>();
  state->channel = std::move(channel);
  state->stop.reset(::eventfd(0, EFD_CLOEXEC));
  if (!state->stop) return ErrnoStatus("eventfd", errno);
  try {
    state->thread = std::thread([raw = state.get()] { raw->Run(); });
  } catch (const std::exception& e) {
    return Internal(std::string("the metadata supervisor's thread: ") + e.what());
  }
  return std::unique_ptr<MetadataSupervisor>(new MetadataSupervisor(std::move(state)));
}

StatusOr<std::unique_ptr<MetadataSupervisor>> MakeMetadataChannel(UniqueFd& child_end) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    return ErrnoStatus("socketpair", errno);
  child_end.reset(pair[1]);
  return MetadataSupervisor::Start(UniqueFd(pair[0]));
}

MetadataSupervisor::~MetadataSupervisor() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = ::write(state_->stop.get(), &one, sizeof one);
  if (state_->thread.joinable()) state_->thread.join();
}

}  // namespace codeact::internal
