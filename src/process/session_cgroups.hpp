// The cgroups of sessions (session.hpp) beyond a run's own RunCgroup: the parent group that holds
// all of one executor's session groups to a total memory budget, and the freezer that pauses one
// session's processes.
//
// SessionParentGroup is a RunCgroup (named, limited and removed like one) whose memory limit is
// the budget; a session's group is made inside it (child_site()), so the kernel charges every
// session's memory to the parent as well. On cgroup v2 the parent passes its controllers down
// (cgroup.subtree_control); on v1 memory accounting is hierarchical (always, since Linux 5.16).
//
// FreezerGroup: on cgroup v2 the session group's own cgroup.freeze; on v1 a group of its own in
// the freezer hierarchy (`<root>/freezer/<CgroupSubtreeName>/<name>`), which the session's child
// joins with its other groups (join_files). Freezing waits until the kernel reports the group
// frozen: then none of its processes runs, and none can leave or fork. Where neither exists (a v1
// host without the freezer hierarchy), ForSignals stops the group's processes with SIGSTOP
// instead (every thread of each, a group stop) and waits until every thread is stopped; SIGCONT
// resumes them. A stopped process cannot fork either, so reading cgroup.procs again until no new
// process shows up leaves none running.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codeact/status.hpp"
#include "process/run_cgroup.hpp"

namespace codeact::internal {

class SessionParentGroup {
 public:
  // FAILED_PRECONDITION, with the reason, where `site` cannot make a group with the memory
  // controller, or cannot account CPU time (sessions renew the CPU limit per run from it).
  static StatusOr<std::shared_ptr<SessionParentGroup>> Create(
      std::shared_ptr<const CgroupSite> site, std::int64_t total_memory_bytes);

  // Where the sessions' groups go: the same hierarchies, inside this group.
  const std::shared_ptr<const CgroupSite>& child_site() const { return child_site_; }
  std::int64_t total_memory_bytes() const { return total_memory_bytes_; }

 private:
  SessionParentGroup(std::unique_ptr<RunCgroup> group, std::shared_ptr<const CgroupSite> child,
                     std::int64_t total)
      : group_(std::move(group)), child_site_(std::move(child)), total_memory_bytes_(total) {}
  std::unique_ptr<RunCgroup> group_;  // removed after every session group (they hold this)
  std::shared_ptr<const CgroupSite> child_site_;
  std::int64_t total_memory_bytes_;
};

class FreezerGroup {
 public:
  // The freezer for `group`, a session's group: its own cgroup.freeze on v2, a new group named
  // like it in the v1 freezer hierarchy under $CODEACT_CGROUP_ROOT (default /sys/fs/cgroup).
  // FAILED_PRECONDITION, with the reason, where neither exists or can be made.
  static StatusOr<std::unique_ptr<FreezerGroup>> Create(const CgroupSite& site,
                                                        const RunCgroup& group);
  // The signal fallback over the processes of `group` (its first hierarchy's cgroup.procs), for
  // a host where Create fails.
  static std::unique_ptr<FreezerGroup> ForSignals(const RunCgroup& group);
  // Thaws and removes the v1 group (its processes are the session group's to kill).
  ~FreezerGroup();
  FreezerGroup(const FreezerGroup&) = delete;
  FreezerGroup& operator=(const FreezerGroup&) = delete;

  // The v1 group's `tasks`, for the child to join with its other groups (RunCgroup::join_files);
  // empty on v2.
  const std::vector<std::string>& join_files() const { return join_files_; }

  // Until the kernel says frozen (or `timeout`: DEADLINE_EXCEEDED, and the group is thawed).
  Status Freeze(std::chrono::milliseconds timeout);
  Status Thaw();
  bool frozen() const { return frozen_; }

 private:
  enum class Kind { kV2, kV1, kSignals };
  FreezerGroup(std::string dir, Kind kind, bool own_dir);
  Status StopAll(std::chrono::milliseconds timeout);
  void ContinueAll();
  std::string dir_;  // kSignals: the group's cgroup.procs
  Kind kind_ = Kind::kV2;
  bool own_dir_ = false;  // v1: made here, removed here
  bool frozen_ = false;
  std::vector<std::string> join_files_;
};

}  // namespace codeact::internal
