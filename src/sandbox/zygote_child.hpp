// ZygoteChild: what a child forked by the namespaces level's zygote (a root host's fork server
// inside the sandbox, SandboxConfig::zygote_uids_first) does to itself before it says ready, so
// that it is contained as a cold start is and apart from its siblings. The zygote forked it into
// a pid namespace of its own (it is pid 1 there; pid 1 ignores signals it has no handler for, so
// its CPU limit is a hard one: SIGKILL, not SIGXCPU). Then, in this order:
//   new mount, network and IPC namespaces: no abstract socket, SysV object or mount of a sibling
//     is reachable;
//   the run's cgroup, by writing 0 to each join file the host opened and passed; then a new
//     cgroup namespace rooted there;
//   /proc of its own pid namespace (masked as the launcher masks it), and a private /tmp and
//     working directory (kSandboxWorkDir, owned by its uid), each a sized tmpfs;
//   an empty capability bounding set (the zygote emptied its own before its first fork; checked
//     here), then its run's own uid and gid (no groups), which clears the rest; dumpable again (as
//     after an exec), the parent-death signal;
//   the launcher's seccomp filter.
// The zygote itself has run no code of any run. Each step succeeds or fails the start
// (setup_report.hpp: a setup_error frame on the bridge, which must already be at its fd).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace codeact::internal {

struct ZygoteChildSpec {
  uid_t uid = 0;  // the run's own uid (also its gid), mapped to itself in the zygote's namespace
  std::int64_t tmp_bytes = 0;
  std::int64_t work_bytes = 0;
  std::vector<int> cgroup_join_fds;  // closed here
};

// Returns only when every step succeeded.
void ContainZygoteChild(const ZygoteChildSpec& spec);

}  // namespace codeact::internal
