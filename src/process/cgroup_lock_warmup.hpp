// WarmCgroupMigrationLock: takes the kernel's cgroup migration lock once, ahead of a run's
// placement in its cgroups, so that the placement does not wait for it.
//
// Every write to a cgroup v1 `cgroup.procs` or `tasks` file takes a global lock whose first taker
// after a quiet spell waits for an RCU grace period: on the 2-core test VM a one-shot run's
// launcher waited 10-32 ms there in 12 of 20 runs, the largest wall-time item of the run (CPU
// is idle meanwhile). For ~10 ms after a taker is done the next one does not wait. So a one-shot
// `codeact run` calls this on a thread of its own as it starts, overlapping that wait with its
// own setup, and the launcher's placement a few ms later finds the lock warm.
#pragma once

namespace codeact::internal {

// Moves the calling thread into the cgroup v1 `pids` group it is already in (a move to where it
// is, which changes nothing but takes the lock). Call it on a thread that ends right after: the
// group is read from /proc/thread-self/cgroup and written as /sys/fs/cgroup/pids/<it>/tasks, so
// a hierarchy mounted elsewhere could at worst move that thread alone. Does nothing where that
// file cannot be written (cgroup v2, a non-root host) or is not there; never fails.
void WarmCgroupMigrationLock();

}  // namespace codeact::internal
