#include "sandbox/run_identity.hpp"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "sandbox/idmap.hpp"
#include "sandbox/setup_report.hpp"

namespace codeact::internal {
namespace {

[[noreturn]] void FailIdmap(const IdmapError& e) { FailStep(e.step, e.err); }

// A root refused open_tree (EPERM: no CAP_SYS_ADMIN, a container's default profile) takes the
// path of an unprivileged caller, as bubblewrap does: it drops to the run's uid all the same, and
// binds every path itself from inside its user namespace (root_fs.cpp), with the same flags. No
// idmap can be made there: a read-write mount is a plain bind, as on a filesystem that cannot be
// idmapped (docs/threat-model.md, mounts), whose files the run's uid owns and whose directory must
// let it in.
void PrepareUnprivilegedPath(SandboxConfig& c) {
  c.system_trees.assign(c.system_paths.size(), -1);
  Must(::chown(c.scratch_dir.c_str(), static_cast<uid_t>(c.run_as_uid),
               static_cast<gid_t>(c.run_as_uid)) == 0,
       "chown " + c.scratch_dir);
}

}  // namespace

void PrepareTreesAsRoot(SandboxConfig& c) {
  const auto uid = static_cast<uid_t>(c.run_as_uid);
  c.system_trees.assign(c.system_paths.size(), -1);
  bool first = true;
  for (std::size_t i = 0; i < c.system_paths.size(); ++i) {
    struct stat st {};
    if (::lstat(c.system_paths[i].c_str(), &st) != 0 || S_ISLNK(st.st_mode))
      continue;  // see root_fs.cpp
    IdmapError error;
    c.system_trees[i] = DetachedTree(c.system_paths[i], -1, /*read_only=*/true, error);
    if (c.system_trees[i] < 0 && first && error.err == EPERM) {
      return PrepareUnprivilegedPath(c);
    }
    if (c.system_trees[i] < 0) FailIdmap(error);
    first = false;
  }
  // Idmapped so that the run's uid stands for each directory's owner (docs/threat-model.md).
  for (SandboxBind& b : c.binds) {
    IdmapError error;
    b.tree_fd = MountTree(b.host_path, b.read_only, uid, error);
    if (b.tree_fd < 0) FailIdmap(error);
  }
  Must(::chown(c.scratch_dir.c_str(), uid, uid) == 0, "chown " + c.scratch_dir);
}

namespace {

// "inside outside count" lines: the zygote's uid as 0, the run uids as themselves (around it).
std::string ZygoteIdMap(const SandboxConfig& c) {
  const std::int64_t own = c.run_as_uid;
  const std::int64_t first = c.zygote_uids_first;
  const std::int64_t end = first + c.zygote_uids_count;
  std::string map = "0 " + std::to_string(own) + " 1\n";
  if (own > first) {
    map += std::to_string(first) + " " + std::to_string(first) + " " + std::to_string(own - first) +
           "\n";
  }
  if (end > own + 1) {
    map += std::to_string(own + 1) + " " + std::to_string(own + 1) + " " +
           std::to_string(end - own - 1) + "\n";
  }
  return map;
}

// The helper's work: errno of the first write that failed, 0 when both maps are written.
int WriteIdMaps(pid_t target, const std::string& map) {
  for (const char* file : {"uid_map", "gid_map"}) {
    const std::string path = "/proc/" + std::to_string(target) + "/" + file;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    const bool ok = ::write(fd, map.data(), map.size()) == static_cast<ssize_t>(map.size());
    const int err = errno;
    ::close(fd);
    if (!ok) return err != 0 ? err : EIO;
  }
  return 0;
}

}  // namespace

void EnterUserNamespaceAsZygote(const SandboxConfig& c) {
  const std::string map = ZygoteIdMap(c);  // allocated before the fork
  const pid_t self = ::getpid();
  int go[2];
  int done[2];
  Must(::pipe2(go, O_CLOEXEC) == 0 && ::pipe2(done, O_CLOEXEC) == 0, "pipe2");
  const pid_t mapper = ::fork();
  Must(mapper >= 0, "fork the uid mapper");
  if (mapper == 0) {
    char byte = 0;
    int err = ::read(go[0], &byte, 1) == 1 ? WriteIdMaps(self, map) : ECANCELED;
    [[maybe_unused]] ssize_t n = ::write(done[1], &err, sizeof err);
    ::_exit(0);
  }
  ::close(go[0]);
  ::close(done[1]);
  DropToRunUid(static_cast<uid_t>(c.run_as_uid));
  Must(::unshare(CLONE_NEWUSER) == 0, "unshare(CLONE_NEWUSER)");
  const char byte = 1;
  Must(::write(go[1], &byte, 1) == 1, "start the uid mapper");
  int err = ECANCELED;
  const bool told = ::read(done[0], &err, sizeof err) == sizeof err;
  int status = 0;
  while (::waitpid(mapper, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(go[1]);
  ::close(done[0]);
  if (!told || err != 0) FailStep("write the zygote's uid and gid maps", told ? err : EPIPE, map);
}

void DropToRunUid(uid_t uid) {
  Must(::setgroups(0, nullptr) == 0, "setgroups({})");
  Must(::setresgid(uid, uid, uid) == 0, "setresgid(" + std::to_string(uid) + ")");
  Must(::setresuid(uid, uid, uid) == 0, "setresuid(" + std::to_string(uid) + ")");
  // A credential change made the process undumpable, which hands its /proc files (uid_map among
  // them) to root: take them back. Nothing of the host's is in this process to protect.
  Must(::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0, "prctl(PR_SET_DUMPABLE, 1)");
}

}  // namespace codeact::internal
