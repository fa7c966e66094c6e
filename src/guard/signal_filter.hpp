// SelfSignalFilter: the runtime guard's second seccomp filter, built in each run child for its
// own pid: kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo and pidfd_open reach only
// the process itself (its pid; for kill also 0 and its own process group), else EPERM. The
// guard's main filter (sandbox/seccomp_programs.hpp) is fixed at build time and cannot know the
// pid; libseccomp cannot say "one of three values" in one rule either, so this one is written
// directly in classic BPF. Only the low 32 bits of the argument are compared: the kernel takes
// these calls' pid arguments as a 32-bit pid_t.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <vector>

namespace codeact::internal {

// `pgid` 0: the process group lies outside this pid namespace (kill(0, ...) still reaches it).
std::vector<sock_filter> SelfSignalFilter(pid_t pid, pid_t pgid);

}  // namespace codeact::internal
