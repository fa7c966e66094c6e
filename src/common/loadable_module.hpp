// LoadModuleTable: a module of this build (a shared object the runtime loads on first need)
// opened and asked for its table of functions through its one exported entry point. The modules
// keep dependencies that are heavy to load off every start of a program that links the library:
// libpython (validation/embedded_python_api.hpp) and OpenSSL (egress/egress_module_api.hpp).
// A module is never unloaded.
#pragma once

#include <string>

#include "codeact/status.hpp"

namespace codeact::internal {

// The table `entry()` of the module at `path` returns, or UNAVAILABLE naming `what`, the path and
// why; an empty `path` (none found) names `env`, the variable that points at the module. Every
// table starts with an `int` ABI version, which must be `abi` (a module of another build is
// refused). `global`: the module's dependencies' symbols go into the global scope (CPython's
// extension modules need libpython's there).
StatusOr<const void*> LoadModuleTable(const std::string& path, const char* entry,
                                      const std::string& what, const char* env, int abi,
                                      bool global);

}  // namespace codeact::internal
