// Where the runtime finds its Python package (validator/) and child-side files (resources/).
#pragma once

#include <string>

namespace codeact::internal {

// In order: $CODEACT_DATA_DIR; <binary dir>/../share/codeact when installed next to the binary;
// the source tree for programs inside this build tree; the configured install prefix; the
// source tree. data_dir.cpp explains each step.
std::string DefaultDataDir();

// The `codeact-sandbox` launcher of the namespaces level: $CODEACT_SANDBOX_LAUNCHER when set
// (and then only that); else this build's own for programs inside
// the build tree; <binary dir>/../libexec/codeact when installed next to the binary; the
// configured install prefix. Empty when none exists.
std::string SandboxLauncherPath();

// The runtime guard's extension module (_codeact_guard.so), found like the launcher:
// $CODEACT_GUARD_MODULE when set (and then only that); this build's own for programs inside
// the build tree; <binary dir>/../libexec/codeact; the configured install prefix; this build's
// own. Empty when none exists.
std::string GuardModulePath();

}  // namespace codeact::internal
