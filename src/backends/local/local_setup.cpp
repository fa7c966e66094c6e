#include "backends/local/local_setup.hpp"

#include <linux/magic.h>
#include <sys/statfs.h>

#include "backends/executor_introspection.hpp"
#include "backends/local/process_level_identity.hpp"
#include "files/scratch_owner.hpp"
#include "process/uid_lease.hpp"

namespace codeact::internal {
namespace {

// Whether the process level's scratch directory (work/ and tmp/, made in ScratchBaseDir) is on a
// tmpfs: what the run writes there is memory RLIMIT_AS does not see.
bool ScratchOnTmpfs() {
  const std::string base = ScratchBaseDir();
  struct statfs info {};
  return ::statfs(base.empty() ? "/" : base.c_str(), &info) == 0 && info.f_type == TMPFS_MAGIC;
}

}  // namespace

LocalSetup MakeLocalSetup(std::string python, std::string runner, const ExecutorOptions& options,
                          std::optional<SandboxPlan> sandbox, std::optional<GuardPlan> guard,
                          bool use_cache) {
  LocalSetup s;
  s.python = std::move(python);
  s.runner = std::move(runner);
  s.site_packages = options.site_packages;
  s.sandbox = std::move(sandbox);
  s.guard = std::move(guard);
  s.validate_in_child = options.validate_in_child && use_cache;
  s.own_uids = RunsNeedOwnUids();
  s.private_mounts = s.own_uids && !s.sandbox && PrivateMountNamespaceWorks();
  s.cgroups = CgroupSite::ForThisProcess();
  s.scratch_in_memory = !s.sandbox && !s.private_mounts && !s.cgroups->memory() && ScratchOnTmpfs();
  return s;
}

ProcessLevelObjects ProcessLevelObjectsHere() {
  const LocalSetup s = MakeLocalSetup("", "", ExecutorOptions{}, std::nullopt, std::nullopt, false);
  const std::string base = ScratchBaseDir();  // "" for "/"
  ProcessLevelObjects objects{base.empty() ? "/" : base, s.own_uids, s.private_mounts, {}};
  for (const auto& h : s.cgroups->hierarchies) objects.cgroup_dirs.push_back(h.dir);
  return objects;
}

}  // namespace codeact::internal
