#include "sandbox/zygote_child.hpp"

#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <string>

#include "sandbox/mount_steps.hpp"
#include "sandbox/privileges.hpp"
#include "sandbox/sandbox_config.hpp"
#include "sandbox/seccomp_filter.hpp"
#include "sandbox/setup_report.hpp"

namespace codeact::internal {

void ContainZygoteChild(const ZygoteChildSpec& spec) {
  Must(::unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC) == 0,
       "unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC)");
  for (int fd : spec.cgroup_join_fds) {
    const bool joined = ::write(fd, "0", 1) == 1;
    const int err = errno;
    ::close(fd);
    if (!joined) FailStep("join the run's cgroup", err);
  }
  Must(::unshare(CLONE_NEWCGROUP) == 0, "unshare(CLONE_NEWCGROUP)");

  MountMaskedProc("");
  const std::string uid = std::to_string(spec.uid);
  MountTmpfs("/tmp",
             "size=" + std::to_string(spec.tmp_bytes) +
                 ",nr_inodes=" + std::to_string(InodesForBytes(spec.tmp_bytes)) +
                 ",mode=1777,uid=" + uid + ",gid=" + uid,
             "mount the /tmp tmpfs");
  MountTmpfs(kSandboxWorkDir,
             "size=" + std::to_string(spec.work_bytes) +
                 ",nr_inodes=" + std::to_string(InodesForBytes(spec.work_bytes)) +
                 ",mode=0700,uid=" + uid + ",gid=" + uid,
             "mount the working directory's tmpfs");
  Must(::chdir(kSandboxWorkDir) == 0, std::string("chdir ") + kSandboxWorkDir);

  // The zygote emptied its bounding set before its first fork (ServeForks): one check here instead
  // of a drop per capability in every child.
  if (!BoundingSetIsEmpty())
    FailStep("check the capability bounding set inherited from the zygote (not empty)", EPERM);
  ClearAmbientCapabilities();
  Must(::setgroups(0, nullptr) == 0, "setgroups({})");
  Must(::setresgid(spec.uid, spec.uid, spec.uid) == 0, "setresgid(" + uid + ")");
  Must(::setresuid(spec.uid, spec.uid, spec.uid) == 0, "setresuid(" + uid + ")");
  ClearCapabilities();
  Must(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "prctl(PR_SET_NO_NEW_PRIVS)");
  Must(::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0, "prctl(PR_SET_DUMPABLE, 1)");
  Must(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, "prctl(PR_SET_PDEATHSIG)");
  InstallSeccompFilter();
}

}  // namespace codeact::internal
