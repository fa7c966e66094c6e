// SelfTargetFilter: the runtime guard's second seccomp filter, built in each run child for its
// own pid, for the calls that name another process: what the guard's main filter
// (sandbox/seccomp_programs.hpp), fixed at build time, cannot check since it cannot know the pid.
// Each group below lets its calls reach only the process itself, else EPERM:
//   signals    kill (also 0 and its own process group), tkill, tgkill, rt_sigqueueinfo,
//              rt_tgsigqueueinfo and pidfd_open: the process's pid.
//   resources  prlimit64, setpriority and ioprio_set (their `who`: the main filter allows only
//              PRIO_PROCESS / IOPRIO_WHO_PROCESS), sched_setaffinity, sched_setscheduler,
//              sched_setparam, sched_setattr, migrate_pages and move_pages: 0 or the pid.
// A thread's own tid is not known when the filter is built: those calls take 0 (the calling
// thread, or for prlimit64 its process) or the pid. libseccomp cannot say "one of three values"
// in one rule, so this filter is written directly in classic BPF. Only the low 32 bits of the
// argument are compared: the kernel takes these arguments as a 32-bit pid_t or int.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <vector>

namespace codeact::internal {

// `pgid` 0: the process group lies outside this pid namespace (kill(0, ...) still reaches it).
std::vector<sock_filter> SelfTargetFilter(pid_t pid, pid_t pgid);

}  // namespace codeact::internal
