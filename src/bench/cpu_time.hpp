// CPU time for `codeact bench`'s per-run CPU rows: what one process used itself (the host's
// share, as getrusage(RUSAGE_SELF) in it would say) and what its descendants used (its
// children's, reaped or alive, and theirs: the runs, the fork servers, the sandbox launchers).
// Wall-clock figures on a shared machine move with the load; CPU time moves much less.
#pragma once

#include <sys/types.h>

namespace codeact::bench {

struct CpuSeconds {
  double self = 0;      // the process's own threads
  double children = 0;  // every descendant, alive or reaped (reaped ones as their parent saw them)
  double total() const { return self + children; }
};

// The CPU time of `root` and of its process tree now, from /proc/<pid>/stat (utime and stime of
// each live process, cutime and cstime for what each one reaped). A descendant whose parent died
// before reaping it (reparented outside the tree) stops counting; codeact's processes reap their
// own. Resolution: a clock tick (10 ms) per process, so read it across many runs. Zeros when
// `root` is gone.
CpuSeconds ProcessTreeCpu(pid_t root);

// The machine's CPU time since boot, from /proc/stat: `busy` is the user, nice, system, irq and
// softirq time of every CPU (every process's and the kernel workers'), `total` that and the idle,
// iowait and steal time. Around a stretch of runs, busy / total says how busy the machine was
// (near 1: the runs were bound by CPU, not by waits), and busy per run is a run's CPU seen
// system-wide (a kernel worker tears a run's network namespace down, outside any process tree).
// Zeros where /proc/stat cannot be read.
struct MachineCpu {
  double busy = 0;
  double total = 0;
};
MachineCpu MachineCpuNow();

// The user and system time of this process's children that it has reaped (RUSAGE_CHILDREN), in
// seconds, with microsecond resolution: around a command run to its end, its whole tree's cost.
double ReapedChildrenCpu();

// Makes this process the reaper of its descendants' orphans (PR_SET_CHILD_SUBREAPER), or stops,
// so that the processes a command leaves to exit after it has (a one-shot `codeact run` returns
// before its reaper thread has waited for the run's processes) count in ReapedChildrenCpu.
void AdoptOrphans(bool adopt);
// Waits (up to `timeout_ms`) for every child this process has and reaps it: call it only when
// no child of this process's own is running, after the command that left orphans has ended.
void ReapOrphans(int timeout_ms);

}  // namespace codeact::bench
