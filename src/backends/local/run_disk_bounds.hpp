// RunDiskBounds: which trees the host's disk watch (files/disk_watch.hpp) bounds for one run of
// the local backend, and by how much: every read-write directory mount, at both levels (its host
// directory is the run's to write), and at the process level the run's private directory, which
// holds its $TMPDIR and working directory on the host's disk. The namespaces level's /tmp and
// working directory are sized tmpfs mounts of the launcher, which the kernel bounds itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codeact/executor.hpp"
#include "files/disk_watch.hpp"

namespace codeact::internal {

// `scratch_dir`: the run's private directory (a host path); `sandboxed`: the namespaces level;
// `scratch_in_memory`: that directory is on a tmpfs no memory cgroup counts, so its bound is also
// held to ScratchShareOfMemory. A mount at the working directory (--workdir) is held to the
// smaller of its own bound and max_workdir_bytes.
std::vector<DiskBound> RunDiskBounds(const RunSnapshot& snapshot, const std::string& scratch_dir,
                                     bool sandboxed, bool scratch_in_memory = false);

// The part of memory_bytes that a private directory on a tmpfs may hold (the rest is the run's
// RLIMIT_AS): a quarter of it, or max_workdir_bytes where that is smaller.
std::int64_t ScratchShareOfMemory(const ExecutionLimits& limits);

}  // namespace codeact::internal
