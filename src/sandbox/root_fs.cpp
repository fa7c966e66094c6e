#include "sandbox/root_fs.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sandbox/idmap.hpp"
#include "sandbox/mount_steps.hpp"
#include "sandbox/setup_report.hpp"

namespace codeact::internal {
namespace {

// Opens `name` beneath the directory `dir_fd` through no link: a mount point beneath another
// mount lies in that mount's host directory, which a run may have written.
int OpenBeneath(int dir_fd, const std::string& name, int flags) {
  return OpenWithoutLinks(dir_fd, name.c_str(), flags, /*beneath=*/true);
}

// The file systems of the sandbox's own tmpfs mounts (its root, /tmp, the working directory):
// the only ones a mount point is made in. A missing one beneath a bind would be made in the host's
// directory (the host refuses such a layout first: sandbox_plan.hpp CheckSandboxMounts). The
// launcher is single-threaded and builds one root.
std::vector<dev_t> own_filesystems;

void AddOwnFilesystem(const std::string& path) {
  struct stat st {};
  Must(::stat(path.c_str(), &st) == 0, "stat " + path);
  own_filesystems.push_back(st.st_dev);
}

// Whether a mount point may be made in the directory `dir_fd`.
bool OnOwnFilesystem(int dir_fd) {
  struct stat st {};
  return ::fstat(dir_fd, &st) == 0 && std::find(own_filesystems.begin(), own_filesystems.end(),
                                                st.st_dev) != own_filesystems.end();
}

// mkdir -p of `path` (absolute) under `root`, a component at a time and never through a link;
// the parts that exist are left alone. Returns the last directory, open O_PATH.
int MakeDirs(const std::string& root, const std::string& path) {
  int fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  Must(fd >= 0, "open " + root);
  std::string at = root;
  std::size_t pos = 1;
  while (pos < path.size()) {
    std::size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    const std::string name = path.substr(pos, next - pos);
    at += "/" + name;
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (!OnOwnFilesystem(fd))
        FailStep("mount point " + at + " is missing in a host directory", ENOENT);
      if (::mkdirat(fd, name.c_str(), 0755) != 0 && errno != EEXIST) FailStep("mkdir " + at, errno);
    }
    const int sub = OpenBeneath(fd, name, O_PATH | O_DIRECTORY);
    const int err = errno;
    ::close(fd);
    if (sub < 0) FailStep("open " + at + (err == ELOOP ? " (a symbolic link)" : ""), err);
    fd = sub;
    pos = next + 1;
  }
  return fd;
}

// An empty file (or directory) at root+path to bind the host path onto, open O_PATH: mounts go
// onto the fd (/proc/self/fd/N), never through the path again.
int MakeMountPoint(const std::string& root, const std::string& path, bool directory) {
  if (directory) return MakeDirs(root, path);
  const std::size_t slash = path.rfind('/');
  const int dir = MakeDirs(root, path.substr(0, slash));
  const std::string name = path.substr(slash + 1);
  // O_EXCL: made if absent, and an existing file (a bind's, say) is not opened for writing.
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && OnOwnFilesystem(dir)) {
    const int made =
        ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (made >= 0) ::close(made);
  }
  const int fd = OpenBeneath(dir, name, O_PATH);
  const int err = errno;
  ::close(dir);
  if (fd < 0) FailStep("create mount point " + root + path, err);
  return fd;
}

std::string FdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// A bind keeps the flags the kernel locked on the source mount (nodev, nosuid, noexec, atime
// flags): a remount in a user namespace that drops one of them fails with EPERM.
unsigned long LockedFlags(const std::string& target) {
  struct statvfs s {};
  Must(::statvfs(target.c_str(), &s) == 0, "statvfs " + target);
  unsigned long flags = 0;
  if (s.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (s.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (s.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (s.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (s.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

// A tree the launcher prepared while it was root (run_identity.hpp), attached as it is: its
// flags (read-only, nosuid, nodev, idmap) were set then.
void Attach(int tree_fd, const std::string& host, const std::string& root,
            const std::string& path) {
  struct stat st {};
  Must(::fstat(tree_fd, &st) == 0, "fstat the tree of " + host);
  const int point = MakeMountPoint(root, path, S_ISDIR(st.st_mode));
  if (int err = AttachTree(tree_fd, point); err != 0)
    FailStep("attach " + host + " at " + path, err);
  ::close(point);
  ::close(tree_fd);
}

// `mount_source`: a mount's host path, reached through no link (idmap.hpp MountTree says why); a
// system path may be one.
void Bind(const std::string& host, const std::string& root, const std::string& path, bool read_only,
          int tree_fd = -1, bool mount_source = false) {
  if (tree_fd >= 0) return Attach(tree_fd, host, root, path);
  const int source = mount_source ? OpenWithoutLinks(AT_FDCWD, host.c_str(), O_PATH, false)
                                  : ::open(host.c_str(), O_PATH | O_CLOEXEC);
  if (source < 0) {
    const int err = errno;
    FailStep(
        "open the mount source " + host + (err == ELOOP ? " (a symbolic link on its path)" : ""),
        err);
  }
  struct stat st {};
  Must(::fstat(source, &st) == 0, "stat " + host);
  const int point = MakeMountPoint(root, path, S_ISDIR(st.st_mode));
  Must(::mount(FdPath(source).c_str(), FdPath(point).c_str(), nullptr, MS_BIND | MS_REC, nullptr) ==
           0,
       "bind " + host + " at " + path);
  ::close(point);
  ::close(source);
  // The new mount's root, found again the same way (the fd above is the point beneath it).
  const int bound = MakeMountPoint(root, path, S_ISDIR(st.st_mode));
  const std::string target = FdPath(bound);
  const unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | LockedFlags(target) |
                              (read_only ? MS_RDONLY : 0);
  Must(::mount(nullptr, target.c_str(), nullptr, flags, nullptr) == 0,
       std::string("remount ") + path + (read_only ? " read-only" : " nosuid"));
  ::close(bound);
}

// A system path: a symlink is recreated (merged-/usr systems link /bin, /lib, ... into /usr),
// anything else is bound read-only; a path this host lacks is skipped.
void AddSystemPath(const std::string& root, const std::string& path, int tree_fd) {
  if (tree_fd >= 0) return Attach(tree_fd, path, root, path);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    FailStep("lstat " + path, errno);
  }
  if (!S_ISLNK(st.st_mode)) return Bind(path, root, path, /*read_only=*/true);
  char target[4096];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
  Must(n >= 0, "readlink " + path);
  target[n] = '\0';
  const std::size_t slash = path.rfind('/');
  const int dir = MakeDirs(root, path.substr(0, slash));
  Must(::symlinkat(target, dir, path.substr(slash + 1).c_str()) == 0, "symlink " + path);
  ::close(dir);
}

void AddDev(const std::string& root) {
  ::close(MakeDirs(root, "/dev"));
  for (const char* node : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}) {
    const int point = MakeMountPoint(root, node, /*directory=*/false);
    Must(::mount(node, FdPath(point).c_str(), nullptr, MS_BIND, nullptr) == 0,
         std::string("bind ") + node);
    ::close(point);
  }
  const std::pair<const char*, const char*> links[] = {{"/proc/self/fd", "/dev/fd"},
                                                       {"/proc/self/fd/0", "/dev/stdin"},
                                                       {"/proc/self/fd/1", "/dev/stdout"},
                                                       {"/proc/self/fd/2", "/dev/stderr"}};
  for (const auto& [to, at] : links)
    Must(::symlink(to, (root + at).c_str()) == 0, std::string("symlink ") + at);
}

}  // namespace

void BuildAndEnterRoot(const SandboxConfig& c) {
  // Nothing mounted from here on propagates back to the host.
  Must(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0, "make mounts private");
  // The root tmpfs is mounted on the scratch directory itself: a directory made and removed on
  // the host's disk is a journal entry and, on a filesystem mounted with `discard`, an I/O wait
  // at its removal, at the end of every one-shot run.
  const std::string& root = c.scratch_dir;
  MountTmpfs(root, "size=1m,nr_inodes=4096,mode=0755", "mount the root tmpfs");
  AddOwnFilesystem(root);

  for (std::size_t i = 0; i < c.system_paths.size(); ++i) {
    AddSystemPath(root, c.system_paths[i], i < c.system_trees.size() ? c.system_trees[i] : -1);
  }
  AddDev(root);
  ::close(MakeDirs(root, "/proc"));
  // Refused: the sandbox runs without /proc. A zygote's is not masked: it runs none of a run's
  // code, and each child it forks mounts a masked /proc of its own over it (zygote_child.hpp), so
  // that the copy of the zygote's mounts that every child's mount namespace starts from is ~25
  // mounts smaller (made and torn down with each run).
  MountProcUnlessRefused(root, /*masked=*/!IsZygote(c));
  ::close(MakeDirs(root, "/tmp"));
  MountTmpfs(root + "/tmp",
             "size=" + std::to_string(c.tmp_bytes) +
                 ",nr_inodes=" + std::to_string(InodesForBytes(c.tmp_bytes)) + ",mode=1777",
             "mount the /tmp tmpfs");
  AddOwnFilesystem(root + "/tmp");
  // The working directory is memory too (a tmpfs, counted by the run's memory cgroup) and
  // bounded in size and inodes: past them, writes fail with ENOSPC.
  ::close(MakeDirs(root, kSandboxWorkDir));
  MountTmpfs(root + kSandboxWorkDir,
             "size=" + std::to_string(c.work_bytes) +
                 ",nr_inodes=" + std::to_string(InodesForBytes(c.work_bytes)) + ",mode=0700",
             "mount the working directory's tmpfs");
  AddOwnFilesystem(root + kSandboxWorkDir);
  for (const auto& b : c.binds) {
    Bind(b.host_path, root, b.sandbox_path, b.read_only, b.tree_fd, /*mount_source=*/true);
  }
  Must(::mount(nullptr, root.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
               nullptr) == 0,
       "remount the root read-only");

  // pivot_root with the old root stacked on the new one, then detach it: the host's tree is gone.
  Must(::chdir(root.c_str()) == 0, "chdir " + root);
  Must(::syscall(SYS_pivot_root, ".", ".") == 0, "pivot_root");
  Must(::umount2(".", MNT_DETACH) == 0, "detach the host's root");
  Must(::chdir(kSandboxWorkDir) == 0, std::string("chdir ") + kSandboxWorkDir);
}

}  // namespace codeact::internal
