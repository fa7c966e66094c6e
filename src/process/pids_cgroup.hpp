// PidsCgroup: a pids cgroup for one child, so a fork loop stops at a fixed number of processes
// even where RLIMIT_NPROC does not apply (root, and a user namespace mapped to root). Created
// under the pids hierarchy (cgroup v1 `pids`, or cgroup v2 with the pids controller) with
// pids.max set; the sandbox launcher moves itself in before anything else, and its descendants
// stay there. Removed when the owner is destroyed, after the child's processes are gone.
#pragma once

#include <cstdint>
#include <string>

#include "codeact/status.hpp"

namespace codeact::internal {

class PidsCgroup {
 public:
  // UNAVAILABLE (with the reason) where no pids cgroup can be created here.
  static StatusOr<PidsCgroup> Create(std::int64_t max_processes);
  // Whether Create can succeed on this host (checked once, cached).
  static Status Available();

  PidsCgroup(PidsCgroup&& other) noexcept;
  PidsCgroup& operator=(PidsCgroup&& other) noexcept;
  PidsCgroup(const PidsCgroup&) = delete;
  PidsCgroup& operator=(const PidsCgroup&) = delete;
  // rmdir, retried for up to a second while the last processes of the group are still exiting.
  ~PidsCgroup();

  // The cgroup.procs file a process writes its pid to, to join.
  std::string procs_file() const { return path_ + "/cgroup.procs"; }

 private:
  explicit PidsCgroup(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace codeact::internal
