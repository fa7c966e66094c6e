#include "sandbox/idmap.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <utility>

namespace codeact::internal {
namespace {

int WriteFile(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = ok ? 0 : errno;
  ::close(fd);
  return err;
}

// Closes every fd but `a` and `b` (close_range: a system call, safe after a fork).
void KeepOnly(int a, int b) {
  if (a > b) std::swap(a, b);
  if (a > 0) ::close_range(0, static_cast<unsigned>(a) - 1, 0);
  if (b > a + 1) ::close_range(static_cast<unsigned>(a) + 1, static_cast<unsigned>(b) - 1, 0);
  ::close_range(static_cast<unsigned>(b) + 1, ~0U, 0);
}

int Fail(IdmapError& error, int err, std::string step) {
  error.err = err != 0 ? err : EINVAL;
  error.step = std::move(step);
  return -1;
}

}  // namespace

int MakeIdmapUserns(uid_t ns_uid, gid_t ns_gid, uid_t host_id, IdmapError& error) {
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) return Fail(error, errno, "pipe2");
  // The helper says on `ready` that it has unshared (a byte; EOF when it could not), so that the
  // wait is an event: polling its ns link with usleep(50) cost 0.2-1 ms of every namespaces-level
  // start on the 2-core test VM (a few sleeps, each rounded up by the scheduler).
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(gate[0]);
    ::close(gate[1]);
    return Fail(error, err, "pipe2");
  }
  // The helper only closes fds, unshares, writes a byte and waits for the pipe to close: safe
  // after a fork in a multi-threaded host.
  const pid_t helper = ::fork();
  if (helper < 0) {
    const int err = errno;
    for (int fd : {gate[0], gate[1], ready[0], ready[1]}) ::close(fd);
    return Fail(error, err, "fork the idmap helper");
  }
  if (helper == 0) {
    // Its two ends only: a copy of another thread's `gate`, taken by this fork, would keep that
    // thread's helper waiting for its end, while that helper may hold this one's.
    KeepOnly(gate[0], ready[1]);
    if (::unshare(CLONE_NEWUSER) != 0) ::_exit(1);
    if (::write(ready[1], "u", 1) != 1) ::_exit(1);
    ::close(ready[1]);
    char byte;
    while (::read(gate[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }
  ::close(gate[0]);
  ::close(ready[1]);
  char said = 0;
  ssize_t got;
  while ((got = ::read(ready[0], &said, 1)) < 0 && errno == EINTR) {
  }
  ::close(ready[0]);
  const std::string proc = "/proc/" + std::to_string(helper);
  int fd = -1;
  // The helper is in its own user namespace when its ns link differs from ours.
  char mine[64] = {}, its[64] = {};
  const bool own_namespace = got == 1 &&
                             ::readlink("/proc/self/ns/user", mine, sizeof mine - 1) > 0 &&
                             ::readlink((proc + "/ns/user").c_str(), its, sizeof its - 1) > 0 &&
                             std::strcmp(mine, its) != 0;
  int err = 0;
  std::string step;
  if (!own_namespace) {
    err = ECHILD;
    step = "the idmap helper's unshare(CLONE_NEWUSER)";
  } else if ((err = WriteFile(proc + "/uid_map", std::to_string(ns_uid) + " " +
                                                     std::to_string(host_id) + " 1")) != 0) {
    step = "write the idmap helper's uid_map";
  } else if ((err = WriteFile(proc + "/setgroups", "deny")) != 0) {
    step = "write the idmap helper's setgroups";
  } else if ((err = WriteFile(proc + "/gid_map", std::to_string(ns_gid) + " " +
                                                     std::to_string(host_id) + " 1")) != 0) {
    step = "write the idmap helper's gid_map";
  } else if ((fd = ::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC)) < 0) {
    err = errno;
    step = "open the idmap helper's user namespace";
  }
  ::close(gate[1]);
  while (::waitpid(helper, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (fd < 0) return Fail(error, err, step);
  return fd;
}

namespace {

// open_tree of `dir_fd` + `pathname` (flags: AT_EMPTY_PATH for an fd alone), then its attributes.
int CloneTree(int dir_fd, const char* pathname, unsigned extra_flags, const std::string& path,
              int userns_fd, bool read_only, IdmapError& error, bool* idmap_unsupported) {
  const int tree =
      static_cast<int>(::syscall(SYS_open_tree, dir_fd, pathname,
                                 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | extra_flags));
  if (tree < 0) return Fail(error, errno, "open_tree(" + path + ")");
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (read_only ? MOUNT_ATTR_RDONLY : 0);
  if (userns_fd >= 0) {
    attr.attr_set |= MOUNT_ATTR_IDMAP;
    attr.userns_fd = static_cast<__u64>(userns_fd);
  }
  if (::syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) !=
      0) {
    const int err = errno;
    ::close(tree);
    // EINVAL: this filesystem (or one mounted beneath) does not support idmapped mounts.
    if (idmap_unsupported != nullptr && userns_fd >= 0 && err == EINVAL) *idmap_unsupported = true;
    return Fail(error, err, "mount_setattr(" + path + (userns_fd >= 0 ? ", idmap)" : ")"));
  }
  return tree;
}

}  // namespace

int DetachedTree(const std::string& path, int userns_fd, bool read_only, IdmapError& error,
                 bool* idmap_unsupported) {
  return CloneTree(AT_FDCWD, path.c_str(), 0, path, userns_fd, read_only, error, idmap_unsupported);
}

int OpenWithoutLinks(int dir_fd, const char* path, int flags, bool beneath) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags) | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | (beneath ? RESOLVE_BENEATH : 0);
  return static_cast<int>(::syscall(SYS_openat2, dir_fd, path, &how, sizeof how));
}

int MountTree(const std::string& host_path, bool read_only, uid_t run_uid, IdmapError& error) {
  const int source = OpenWithoutLinks(AT_FDCWD, host_path.c_str(), O_PATH, /*beneath=*/false);
  if (source < 0) {
    const int err = errno;
    return Fail(
        error, err,
        "open the mount source " + host_path +
            (err == ELOOP ? " (a symbolic link on its path, which was stored without one)" : ""));
  }
  struct stat st {};
  int tree = -1;
  if (::fstat(source, &st) != 0) {
    tree = Fail(error, errno, "stat " + host_path);
  } else if (const int userns = MakeIdmapUserns(st.st_uid, st.st_gid, run_uid, error);
             userns >= 0) {
    bool unsupported = false;
    tree = CloneTree(source, "", AT_EMPTY_PATH, host_path, userns, read_only, error, &unsupported);
    ::close(userns);
    if (tree < 0 && unsupported) {
      tree = CloneTree(source, "", AT_EMPTY_PATH, host_path, -1, read_only, error, nullptr);
    }
  }
  ::close(source);
  return tree;
}

int AttachTree(int tree_fd, const char* target) {
  return ::syscall(SYS_move_mount, tree_fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) == 0
             ? 0
             : errno;
}

int AttachTree(int tree_fd, int target_fd) {
  return ::syscall(SYS_move_mount, tree_fd, "", target_fd, "",
                   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == 0
             ? 0
             : errno;
}

}  // namespace codeact::internal
