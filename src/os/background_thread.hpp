// YieldOnWakeUp: for a host thread whose work is off a run's path (the reaper, the warm pool's
// refills, a fork server's reader, a metadata supervisor).
#pragma once

namespace codeact::internal {

// Puts the calling thread in SCHED_BATCH: it keeps its full share of the CPU, but waking it no
// longer preempts the thread that is running. Woken by a run's call worker (a child to reap, a
// refill to schedule), such a thread took the worker's CPU for ~0.1 ms before the reply was
// written: the test VM's scheduler places a wakee on the waker's CPU even while the other one
// idles. Best effort: a kernel that refuses leaves the thread as it was.
void YieldOnWakeUp();

}  // namespace codeact::internal
