#include "backends/local/run_disk_bounds.hpp"

#include <algorithm>

#include "sandbox/sandbox_config.hpp"

namespace codeact::internal {

std::vector<DiskBound> RunDiskBounds(const RunSnapshot& snapshot, const std::string& scratch_dir,
                                     bool sandboxed, bool scratch_in_memory) {
  const ExecutionLimits& limits = snapshot.limits;
  std::vector<DiskBound> bounds;
  for (const FileMount& m : snapshot.mounts) {
    // A file mount's one file is bounded by RLIMIT_FSIZE: the run can add no other entry.
    if (m.mode != MountMode::kReadWrite || m.kind != MountKind::kDirectory) continue;
    DiskBound bound{m.host_path, "mount " + m.mount_path, m.disk_bytes_limit, m.disk_files_limit};
    if (m.mount_path == kSandboxWorkDir) {
      bound.max_bytes = std::min(bound.max_bytes, limits.max_workdir_bytes);
      bound.max_files = std::min(bound.max_files, InodesForBytes(limits.max_workdir_bytes));
    }
    bounds.push_back(std::move(bound));
  }
  if (!sandboxed && !scratch_dir.empty()) {
    // work/ and tmp/ together (guard_plan.hpp). Where a root host gives work/ a private tmpfs,
    // the host sees its empty mount point here, and the tmpfs bounds it.
    const std::int64_t bytes =
        scratch_in_memory ? ScratchShareOfMemory(limits) : limits.max_workdir_bytes;
    bounds.push_back(
        {scratch_dir, "the private $TMPDIR and working directory", bytes, InodesForBytes(bytes)});
  }
  return bounds;
}

std::int64_t ScratchShareOfMemory(const ExecutionLimits& limits) {
  return std::min(limits.max_workdir_bytes, limits.memory_bytes / 4);
}

}  // namespace codeact::internal
