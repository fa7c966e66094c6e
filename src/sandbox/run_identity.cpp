#include "sandbox/run_identity.hpp"

#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "sandbox/idmap.hpp"
#include "sandbox/setup_report.hpp"

namespace codeact::internal {
namespace {

[[noreturn]] void FailIdmap(const IdmapError& e) { FailStep(e.step, e.err); }

// A tree for a mount: idmapped so that the run's uid stands for the directory's owner. On a
// filesystem that cannot be idmapped, a plain nosuid/nodev tree: the run's files are then its
// own uid's, and the directory must let that uid in (README, mounts).
int MountTree(const SandboxBind& b, uid_t run_uid) {
  struct stat st {};
  Must(::stat(b.host_path.c_str(), &st) == 0, "stat " + b.host_path);
  IdmapError error;
  const int userns = MakeIdmapUserns(st.st_uid, st.st_gid, run_uid, error);
  if (userns < 0) FailIdmap(error);
  bool unsupported = false;
  int tree = DetachedTree(b.host_path, userns, b.read_only, error, &unsupported);
  ::close(userns);
  if (tree < 0 && unsupported) tree = DetachedTree(b.host_path, -1, b.read_only, error);
  if (tree < 0) FailIdmap(error);
  return tree;
}

}  // namespace

void PrepareTreesAsRoot(SandboxConfig& c) {
  const auto uid = static_cast<uid_t>(c.run_as_uid);
  c.system_trees.assign(c.system_paths.size(), -1);
  for (std::size_t i = 0; i < c.system_paths.size(); ++i) {
    struct stat st {};
    if (::lstat(c.system_paths[i].c_str(), &st) != 0 || S_ISLNK(st.st_mode))
      continue;  // see root_fs.cpp
    IdmapError error;
    c.system_trees[i] = DetachedTree(c.system_paths[i], -1, /*read_only=*/true, error);
    if (c.system_trees[i] < 0) FailIdmap(error);
  }
  for (SandboxBind& b : c.binds) b.tree_fd = MountTree(b, uid);
  Must(::chown(c.scratch_dir.c_str(), uid, uid) == 0, "chown " + c.scratch_dir);
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
