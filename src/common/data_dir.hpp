// Where the runtime finds its Python package (validator/) and child-side files (resources/).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "codeact/status.hpp"

namespace codeact::internal {

// In order: $CODEACT_DATA_DIR; <binary dir>/../share/codeact when installed next to the binary;
// <prefix>/share/codeact of the installation a consumer program was configured against (its
// find_package(codeact) bakes that path into the program: docs/cpp-api.md); the source
// tree for programs inside this build tree; the configured install prefix; the source tree.
// data_dir.cpp explains each step.
std::string DefaultDataDir();

// A child-side file of resources/ (`name`: "runner.py"): RESOURCE_DIR/NAME where a
// `resource_dir` (ExecutorOptions::resource_dir) is given and holds it, else
// RESOURCE_DIR/resources/NAME, or DefaultDataDir()'s without one. NOT_FOUND naming `what` and
// the path when that is no regular file.
StatusOr<std::string> ResourceFile(const std::string& resource_dir, std::string_view name,
                                   std::string_view what);

// The `codeact-sandbox` launcher of the namespaces level: $CODEACT_SANDBOX_LAUNCHER when set
// (and then only that); else this build's own for programs inside
// the build tree; <binary dir>/../libexec/codeact when installed next to the binary; the
// consumer's configured installation (as DefaultDataDir); the configured install prefix. Empty
// when none exists.
std::string SandboxLauncherPath();

// The runtime guard's extension module (_codeact_guard.so), found like the launcher:
// $CODEACT_GUARD_MODULE when set (and then only that); this build's own for programs inside
// the build tree; <binary dir>/../libexec/codeact; the consumer's configured installation; the
// configured install prefix; this build's own. Empty when none exists.
std::string GuardModulePath();

// The embedded interpreter's module (codeact_python.so: validation/embedded_python_api.hpp),
// found like the guard's module; $CODEACT_PYTHON_MODULE when set (and then only that).
std::string EmbeddedPythonModulePath();

// The egress module (codeact_egress.so: egress/egress_module_api.hpp), found likewise;
// $CODEACT_EGRESS_MODULE when set (and then only that).
std::string EgressModulePath();

// The default child interpreter: <prefix>/bin/pythonX.Y of the installation the embedded
// libpython comes from (its prefix and version as this build found them, e.g.
// /usr/bin/python3.11), not whatever python3 is first on PATH. Empty when that file is not an
// executable here (then Validator::InstallationInterpreter, which asks the running embedded
// interpreter, decides).
std::string EmbeddedInstallationInterpreter();

// The embedded libpython's major and minor version, as this build found it.
std::pair<int, int> EmbeddedPythonVersion();

}  // namespace codeact::internal
