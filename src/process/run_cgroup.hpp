// RunCgroup: one cgroup per run. Its processes are counted together, whatever they do: memory
// (anonymous, memfd, tmpfs and page cache alike, swap off for the group), the number of
// processes, CPU time; and the end of the run kills every one of them — a process cannot outrun
// the kill by forking, leaving the process group or rewriting its environment.
//
// cgroup v1 (a directory per hierarchy: pids, memory, cpu, cpuacct) and v2 (one directory,
// controllers enabled through cgroup.subtree_control) are both supported. A process joins by
// writing its pid to every file of procs_files(): the child itself between fork and exec
// (process level, launch.hpp), the sandbox launcher before anything else (namespaces level), or
// the host for a child a fork server forked (Join, before the child says ready).
//
// CgroupSite says where the groups go: one subtree per user in each hierarchy, so that the
// leftovers of one user never block another — `<hierarchy>/codeact` for root,
// `<hierarchy>/codeact-<uid>` for anyone else (made once by root: `codeact setup-cgroups --user
// NAME`), or on cgroup v2 `.../user@<uid>.service/codeact`, the user's subtree systemd delegates,
// when the host runs inside it. Groups are named `<owner pid>-<owner start time>-<n>`, so a later
// start tells the groups of a dead owner and removes them (killing what is left inside first).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codeact/status.hpp"
#include "os/unique_fd.hpp"

namespace codeact::internal {

// Where this host's run groups go, and what they can hold.
struct CgroupSite {
  struct Hierarchy {
    std::string dir;  // the per-user subtree; run groups are made in it
    bool v2 = false;
    bool pids = false;
    bool memory = false;
    // The group is scheduled as one entity: all of a run's processes together weigh what one
    // process of the host weighs, so a fork storm cannot starve the host's watchdog and kill.
    bool cpu = false;
    bool cpuacct = false;  // v1 cpuacct.usage, or v2 cpu.stat (always there)
    bool kill = false;     // v2 cgroup.kill
  };
  std::vector<Hierarchy> hierarchies;  // empty: no cgroup can be made here
  bool swap_accounted = false;         // v1 memory.memsw.*, v2 memory.swap.max
  std::string missing;                 // why a controller, or everything, is missing

  bool any() const { return !hierarchies.empty(); }
  bool pids() const;
  bool memory() const;

  // The site of this process: under $CODEACT_CGROUP_ROOT (where the hierarchies are mounted;
  // default /sys/fs/cgroup) for the effective uid. Found once per root, when the groups of dead
  // owners are also removed. Never fails: a site without hierarchies says why in `missing`.
  static std::shared_ptr<const CgroupSite> ForThisProcess();

  // Finds the site under `root` for `uid`, whose own cgroup v2 path is `self_v2_path` (from
  // /proc/self/cgroup, "0::<path>"). Makes the per-user subtree where `uid` may (root: always;
  // anyone else: on v2 inside its delegated subtree) and enables the controllers there.
  static CgroupSite Discover(const std::string& root, uid_t uid, const std::string& self_v2_path);
};

// The subtree name of `uid`: "codeact" for root, "codeact-<uid>" otherwise.
std::string CgroupSubtreeName(uid_t uid);

// Removes the run groups under `site` whose owner is dead (killing what is left in them first).
// Returns how many were removed.
int RemoveStaleRunGroups(const CgroupSite& site);

// For `codeact setup-cgroups`, run as root: makes `<hierarchy>/codeact-<uid>` in every cgroup v1
// hierarchy under `root` and gives it (the directory and the files a process moves itself in
// with) to uid:gid. Returns the directories, or why not (cgroup v2: a non-root user uses its
// systemd delegation, since moving a process needs the common ancestor's cgroup.procs).
StatusOr<std::vector<std::string>> SetUpUserCgroups(const std::string& root, uid_t uid, gid_t gid);

struct CgroupUsage {
  std::optional<std::int64_t> cpu_ms;             // all the group's processes
  std::optional<std::int64_t> peak_memory_bytes;  // the group's peak charge
};

class RunCgroup {
 public:
  struct Limits {
    std::int64_t max_processes = 0;  // pids.max
    std::int64_t memory_bytes = 0;   // memory limit, swap off
  };

  // A new group in every hierarchy of `site`, with the limits its controllers hold (a missing
  // controller is the caller's decision: CgroupSite::pids()/memory()). UNAVAILABLE when the site
  // has no hierarchy; on any other failure nothing is left behind.
  static StatusOr<std::unique_ptr<RunCgroup>> Create(std::shared_ptr<const CgroupSite> site,
                                                     const Limits& limits);

  // Kills what is left, waits (up to 20 s) until it has exited, then removes the group.
  ~RunCgroup();
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;

  // The files a process joins the group through, writing "0" (itself), one per hierarchy: v1's
  // `tasks`, v2's cgroup.procs. On v1, "0" written to `tasks` moves the writing thread without
  // the kernel's global lock that cgroup.procs (or any pid) takes, whose first writer after a
  // quiet spell waits for an RCU grace period (5-30 ms); the joiner is single-threaded then (a
  // launcher or a forked child before exec or code), so the thread is the whole process.
  const std::vector<std::string>& join_files() const { return join_files_; }
  // The cgroup.procs files, one per hierarchy: what the group holds, to read.
  const std::vector<std::string>& procs_files() const { return procs_files_; }
  // Moves `pid` into the group (every hierarchy) through cgroup.procs, for a process that cannot
  // join itself (a Hyperlight worker); it takes the global lock that join_files() avoids.
  Status Join(pid_t pid) const;

  // SIGKILL to every process of the group, such that none can fork or run user code again: v2
  // cgroup.kill; else SIGKILL (through a pidfd, so a reused pid is never hit) to every pid in
  // cgroup.procs, again until a pass finds no process it had not signalled. Returns without
  // waiting for the processes to finish exiting (WaitUntilEmpty); false when the kill could not
  // be made certain within a few seconds. A zombie is no longer in the group: the caller still
  // reaps its own child. Thread-safe.
  bool KillAll();
  // Until no process is left in the group (exits take time), or the timeout; true when empty.
  bool WaitUntilEmpty(std::chrono::milliseconds timeout) const;
  // The pids in the group now.
  std::vector<pid_t> Pids() const;

  CgroupUsage Usage() const;
  // The group's OOM-kill counter (v1 memory.oom_control, v2 memory.events `oom_kill`).
  std::int64_t OomKills() const;
  const std::string& name() const { return name_; }

 private:
  friend int RemoveStaleRunGroups(const CgroupSite& site);
  RunCgroup(std::shared_ptr<const CgroupSite> site, std::string name);
  std::string Dir(const CgroupSite::Hierarchy& h) const { return h.dir + "/" + name_; }
  const CgroupSite::Hierarchy* With(bool CgroupSite::Hierarchy::*controller) const;
  void KillMember(pid_t pid) const;
  void OpenUsageFiles();

  std::shared_ptr<const CgroupSite> site_;
  std::string name_;
  std::vector<std::string> procs_files_;
  std::vector<std::string> join_files_;
  // The files Usage() reads, opened by Create (O_CLOEXEC); closed: read by path.
  UniqueFd cpu_usage_fd_;
  UniqueFd peak_memory_fd_;
  std::mutex kill_mu_;
};

}  // namespace codeact::internal
