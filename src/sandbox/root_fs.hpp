// RootFs: the filesystem the code sees, built by the sandbox's init process inside its new
// mount and pid namespaces: a read-only tmpfs root holding the read-only system paths, the
// read-only runner directory, /dev with null/zero/full/random/urandom, a fresh /proc of the
// sandbox's pid namespace, a private tmpfs /tmp, the run's working directory at kSandboxWorkDir
// and the configured binds; then pivot_root into it and detach the host's tree. Each step
// succeeds or fails the start (setup_report.hpp).
#pragma once

#include "sandbox/sandbox_config.hpp"

namespace codeact::internal {

void BuildAndEnterRoot(const SandboxConfig& config);

}  // namespace codeact::internal
