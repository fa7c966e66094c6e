// GuardPlan: how a local executor arms the runner's runtime guard (src/guard,
// docs/threat-model.md) at either isolation level: where the child finds the extension module,
// and what a run may reach, named as the child sees it — host paths at the `process` level, the
// sandbox's own at the `namespaces` level. The same spec goes to a pooled child ahead of its
// request (it arms its OS layers while it waits) and, with the policy's imports, in the request
// itself, unless the child's guard frame had those imports already (child_starter.hpp).
#pragma once

#include <string>
#include <vector>

#include "backends/local/sandbox_plan.hpp"
#include "codeact/executor.hpp"
#include "protocol/runtime_guard_spec.hpp"

namespace codeact::internal {

struct GuardPlan {
  std::string module_path;              // _codeact_guard.so as the child names it (CODEACT_GUARD)
  std::vector<std::string> exec_paths;  // the interpreter's installation and the runner's directory
  int landlock_abi = 0;  // of this kernel (the children's); 0: none, the guard arms without it
};

// `runner_dir`: the executor's private directory holding the runner (a host path); `module`: the
// built _codeact_guard.so (a host path). At the namespaces level (`sandbox` set) the sandbox shows
// only runner_dir of the two, so the module is copied into it first.
StatusOr<GuardPlan> PlanGuard(const std::string& python, const std::string& runner_dir,
                              const std::string& module, const SandboxPlan* sandbox);

// A run's spec without its imports. `scratch_dir`: the run's private directory (a host path).
RuntimeGuardSpec GuardSpecForRun(const GuardPlan& plan, const RunSnapshot& snapshot,
                                 const std::string& scratch_dir, bool sandboxed);

// The `process` level's layout of a run's private directory: work/ is the working directory,
// tmp/ the code's TMPDIR under the guard (beside, so the working directory starts empty).
std::string ProcessWorkDir(const std::string& scratch_dir);
std::string ProcessTmpDir(const std::string& scratch_dir);
Status PrepareProcessScratch(const std::string& scratch_dir);

}  // namespace codeact::internal
