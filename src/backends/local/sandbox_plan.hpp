// SandboxPlan: how LocalExecutor starts a child at the `namespaces` isolation level — through
// the `codeact-sandbox` launcher (src/sandbox), with the interpreter's installation shown
// read-only, runner.py at kSandboxResourceDir, the run's scratch directory as the working
// directory and the mounts at their mount paths — and the probe that tells whether this
// kernel allows the level at all.
#pragma once

#include <string>
#include <vector>

#include "codeact/executor.hpp"
#include "process/child.hpp"
#include "process/uid_lease.hpp"

namespace codeact::internal {

struct SandboxPlan {
  std::string launcher;                   // the codeact-sandbox program
  std::vector<std::string> system_paths;  // shown read-only at the same path
  std::string resource_dir;               // host directory holding runner.py
  // The same resolved: bound like a mount, whose source the launcher reaches through no link.
  std::string resource_source;
};

// Finds the launcher and checks that the interpreter's installation can be shown inside.
StatusOr<SandboxPlan> PlanSandbox(const std::string& python, const std::string& resource_dir);

// Starts `python -I -S -c pass` in the sandbox once (cached per plan): OK, or the step that
// failed with its errno text (e.g. "sandbox setup: unshare(CLONE_NEWUSER) failed: ...").
// A pass is also kept in the per-user cache (common/user_cache.hpp) for this boot, this kernel,
// this user and these unchanged launcher and interpreter files, so that a one-shot `codeact run`
// does not start a whole probe interpreter before its own; a failure is probed again each time.
Status ProbeSandbox(const SandboxPlan& plan, const std::string& python);

// Mount paths the sandbox can bind: not over what the sandbox itself provides; and a mount
// beneath another one only where its mount point already is a directory (no link on the way) in
// the outer mount's host directory, which the sandbox never changes to make one.
Status CheckSandboxMounts(const std::vector<FileMount>& mounts);

// Turns `spec` (which runs `python python_args...` with `scratch_dir` as its directory) into the
// same run inside the sandbox; arguments in the resource dir become their paths inside. The
// working directory is a tmpfs inside. `cgroup_join`: the run's cgroup (RunCgroup::join_files),
// which the launcher joins first, or empty. `run_as_uid`: on a root host the child's own
// unprivileged uid, else -1 (the caller's). `zygote_uids`: the child is a root host's zygote
// (SandboxConfig::zygote_uids_first; run_as_uid is its own uid, from that range).
Status ApplySandboxPlan(const SandboxPlan& plan, const RunSnapshot& snapshot,
                        const std::string& scratch_dir, const std::vector<std::string>& cgroup_join,
                        std::int64_t run_as_uid, LaunchSpec& spec,
                        const UidRangeSpec* zygote_uids = nullptr);

}  // namespace codeact::internal
