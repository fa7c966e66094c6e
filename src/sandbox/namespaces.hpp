// Namespaces: the launcher's first steps. A new user namespace in which the code's uid and gid
// are kSandboxUid (mapped to the host's effective ids, so root in the host is an ordinary user
// inside and the code holds no capability once it execs), then new mount, pid, net, ipc, uts
// and cgroup namespaces. Each step succeeds or fails the start (setup_report.hpp).
#pragma once

#include <string>
#include <vector>

namespace codeact::internal {

// Moves the launcher into the run's cgroup, writing "0" to each of its join files
// (RunCgroup::join_files), before the user namespace, while the host's credentials still own the
// cgroup files; its descendants stay in it.
void JoinCgroup(const std::vector<std::string>& join_files);

void EnterUserNamespace();
// For the children of the caller: the pid namespace applies to the next fork.
void EnterOtherNamespaces();

}  // namespace codeact::internal
