// LaunchProcess: fork and exec one program through Boost.Process v2 with a checklist of
// setup steps run in the child between fork and exec. Shared by Child and RunCommand.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "codeact/status.hpp"
#include "os/resource_limits.hpp"
#include "process/child.hpp"
#include "protocol/fork_messages.hpp"

namespace codeact::internal {

inline constexpr int kMaxChildFds = 5;  // 0-2 stdio, 3-4 bridge
// One per cgroup v1 hierarchy, or one for v2: as many as a fork server's child is sent.
inline constexpr int kMaxCgroupJoinFiles = protocol::kMaxForkCgroupFds;

struct LaunchPlan {
  std::string executable;         // exec'd as given (no PATH search)
  std::vector<std::string> args;  // argv[1..]; argv[0] is `executable`
  // "KEY=value" entries, exactly the child's environment; nullopt inherits the host's.
  std::optional<std::vector<std::string>> environment;
  std::string working_dir;  // empty: the host's working directory
  // child_fds[i] becomes fd i in the child (3 or 5 entries, all valid). Every other fd is
  // closed. The sources may be O_CLOEXEC and may have any number, 0-4 included.
  std::vector<int> child_fds;
  std::optional<ResourceLimits> limits;  // nullopt: inherit the host's limits
  // A root host (identity of the process level): the child gives up root before exec — no
  // supplementary groups, gid and uid `run_as_uid` — after, first, entering a private mount
  // namespace in which `working_dir` is a fresh tmpfs of `private_workdir_bytes` (when > 0) owned
  // by that uid, and each of `trees` (detached trees, sandbox/idmap.hpp; the caller keeps the fds
  // open until Start returns) is attached at its path. -1: the child keeps the host's identity.
  std::int64_t run_as_uid = -1;
  std::int64_t private_workdir_bytes = 0;
  std::vector<std::pair<int, std::string>> trees;
  // The run's cgroup's join files, which the child writes "0" to (RunCgroup::join_files).
  std::vector<std::string> cgroup_join;
  // The child is pid 1 of a new pid namespace (cloned with CLONE_NEWPID, and CLONE_NEWUSER on a
  // host that is not root, where the child then sees itself as the overflow uid 65534): when it
  // exits or is killed, the kernel kills every process left in the namespace, so none of its
  // descendants (a double-forked setsid daemon included) outlives it. For command tools on a
  // host without a cgroup for them (RunCommand).
  bool own_pid_namespace = false;
};

// In the child, in order, each step all-or-nothing: signal dispositions to default and an
// empty signal mask; setpgid(0, 0); "0" written to each of the plan's cgroup join files (the
// run's cgroup, while it still has the host's credentials); with run_as_uid: the private mount
// namespace, its tmpfs and trees, then setgroups/setresgid/setresuid (a credential change clears
// the parent-death signal, so it comes first); PR_SET_PDEATHSIG=SIGKILL (and the parent is still
// the same); chdir; the fd layout; every other fd closed; rlimits (RLIMIT_CORE=0 always with
// limits); execve. Returns the pid once the program has been exec'd, or the failing step as
// "<step> failed: <reason>" after the child has been reaped.
//
// The child is in its own process group (pgid == pid) and dies with SIGKILL when the thread
// that called LaunchProcess exits (PR_SET_PDEATHSIG follows the thread, not the process).
StatusOr<pid_t> LaunchProcess(const LaunchPlan& plan);

// A wait4 status and rusage (or CPU seconds reported by a fork server) as an ExitInfo.
ExitInfo ExitInfoFrom(int status, const rusage& usage);
ExitInfo ExitInfoFrom(int status, double cpu_seconds);

}  // namespace codeact::internal
